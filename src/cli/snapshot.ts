/**
 * `tenantgate snapshot --context C`: one cluster's Projects, project namespaces and their
 * ResourceQuotas (with status.used), and the objects of those namespaces the allow-lists judge,
 * read-only, into a file `tenantgate plan --snapshot` reads offline.
 */
import * as k8s from '@kubernetes/client-node';
import { writeFile } from 'node:fs/promises';
import pLimit from 'p-limit';
import { describeError } from '../kube/errors.js';
import { loadKubeConfig } from '../kube/kubeconfig.js';
import { ClusterLists, listInPages } from '../kube/lists.js';
import { machine } from '../kubectl/format.js';
import { snapshotOf, type SnapshotDocument } from '../plan/snapshot-file.js';
import type { LiveObject } from '../plan/allow-lists.js';
import { ApiStatusError, LeanApiClient } from '../kube/lean-client.js';
import { LABEL_PROJECT, type NamespaceObject, type Project, type ResourceQuotaObject } from '../validate/types.js';

/** A usage error: the message names the flag and the value (exit status 2). */
export class UsageError extends Error {}

/** The kubeconfig with `context` selected; an unknown context is a usage error listing the known ones. */
export function kubeConfigFor(
  context: string,
  file?: string,
  flag = `--context ${JSON.stringify(context)}`,
): k8s.KubeConfig {
  let kc: k8s.KubeConfig;
  try {
    kc = loadKubeConfig(file);
  } catch (err) {
    throw new UsageError(`--kubeconfig ${JSON.stringify(file ?? '')}: cannot load it: ${(err as Error).message}`);
  }
  if (!kc.getContextObject(context)) {
    const known = kc.getContexts().map((c) => c.name);
    throw new UsageError(
      `${flag}: no such context ${JSON.stringify(context)} in ` +
        `${file ?? 'the default kubeconfig ($KUBECONFIG or ~/.kube/config)'}; known: ` +
        `${known.length ? known.join(', ') : 'none'}`,
    );
  }
  kc.setCurrentContext(context);
  return kc;
}

/** Quota lists of this many namespaces run at once. */
const CONCURRENCY = 8;

/**
 * The kinds the allow-lists judge (src/validate/allow-admission.ts), by the list path of one namespace.
 * A group the cluster does not serve (Gateway API not installed, no resource.k8s.io/v1) answers 404 and
 * contributes nothing.
 */
const ALLOW_LIST_RESOURCES: ReadonlyArray<{ apiVersion: string; kind: string; path: (namespace: string) => string }> = [
  ...(['pods', 'services', 'persistentvolumeclaims'] as const).map((plural, i) => ({
    apiVersion: 'v1',
    kind: ['Pod', 'Service', 'PersistentVolumeClaim'][i]!,
    path: (ns: string) => `/api/v1/namespaces/${ns}/${plural}`,
  })),
  {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    path: (ns) => `/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses`,
  },
  ...(['Gateway', 'HTTPRoute', 'GRPCRoute'] as const).map((kind) => ({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind,
    path: (ns: string) => `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/${kind.toLowerCase()}s`,
  })),
  ...(['TLSRoute', 'TCPRoute', 'UDPRoute'] as const).map((kind) => ({
    apiVersion: 'gateway.networking.k8s.io/v1alpha2',
    kind,
    path: (ns: string) => `/apis/gateway.networking.k8s.io/v1alpha2/namespaces/${ns}/${kind.toLowerCase()}s`,
  })),
  {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'ListenerSet',
    path: (ns) => `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/listenersets`,
  },
  {
    apiVersion: 'gateway.networking.x-k8s.io/v1alpha1',
    kind: 'XListenerSet',
    path: (ns) => `/apis/gateway.networking.x-k8s.io/v1alpha1/namespaces/${ns}/xlistenersets`,
  },
  {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaim',
    path: (ns) => `/apis/resource.k8s.io/v1/namespaces/${ns}/resourceclaims`,
  },
  {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaimTemplate',
    path: (ns) => `/apis/resource.k8s.io/v1/namespaces/${ns}/resourceclaimtemplates`,
  },
];

interface ListPage {
  items?: Array<Record<string, unknown>>;
  metadata?: { continue?: string };
}

/**
 * Every object of one kind in one namespace, page by page, with apiVersion and kind set (a list's items carry neither).
 */
async function listAllowListObjects(
  api: LeanApiClient,
  resource: (typeof ALLOW_LIST_RESOURCES)[number],
  namespace: string,
): Promise<LiveObject[]> {
  const out: LiveObject[] = [];
  let next: string | undefined;
  do {
    let page: ListPage;
    try {
      page = await api.call<ListPage>(
        'GET',
        `${resource.path(encodeURIComponent(namespace))}?limit=500` +
          `${next ? `&continue=${encodeURIComponent(next)}` : ''}`,
      );
    } catch (err) {
      if (err instanceof ApiStatusError && err.statusCode === 404) return out;
      throw err;
    }
    for (const item of page.items ?? []) out.push({ ...item, apiVersion: resource.apiVersion, kind: resource.kind });
    next = page.metadata?.continue || undefined;
  } while (next);
  return out;
}

/** The objects the allow-lists judge in `namespaces` (RBAC: list on each kind; read-only). */
async function readAllowListObjects(kc: k8s.KubeConfig, namespaces: readonly string[]): Promise<LiveObject[]> {
  const api = new LeanApiClient(kc);
  const limit = pLimit(CONCURRENCY);
  try {
    const lists = await Promise.all(
      namespaces.flatMap((ns) => ALLOW_LIST_RESOURCES.map((r) => limit(() => listAllowListObjects(api, r, ns)))),
    );
    return lists.flat();
  } finally {
    api.close();
  }
}

/**
 * Reads the cluster: Projects, namespaces labelled tenantgate.io/project, the ResourceQuotas and the allow-listed
 * objects in those namespaces only.
 */
export async function readSnapshot(
  kc: k8s.KubeConfig,
  cluster: string,
  now: () => Date = () => new Date(),
): Promise<SnapshotDocument> {
  const lists = new ClusterLists(kc);
  const takenAt = now().toISOString();
  const projects = (await lists.listProjects()).items as unknown as Project[];
  const namespaces = (await lists.listNamespaces(LABEL_PROJECT)).items as unknown as NamespaceObject[];
  const limit = pLimit(CONCURRENCY);
  const perNamespace = await Promise.all(
    namespaces.map((n) =>
      limit(() =>
        listInPages('v1', 'ResourceQuotaList', (page) =>
          lists.core.listNamespacedResourceQuota({ namespace: n.metadata.name ?? '', ...page }),
        ),
      ),
    ),
  );
  const quotas = perNamespace.flatMap((list) => list.items as unknown as ResourceQuotaObject[]);
  const objects = await readAllowListObjects(
    kc,
    namespaces.map((n) => n.metadata.name ?? ''),
  );
  return snapshotOf(cluster, takenAt, { projects, namespaces, quotas, objects });
}

export function cannotRead(what: string, err: unknown): Error {
  return new Error(`cannot read ${what}: ${describeError(err)}`);
}

export async function runSnapshot(o: {
  context: string;
  kubeconfig?: string;
  cluster?: string;
  output?: string;
  format: 'yaml' | 'json';
}): Promise<number> {
  let doc: SnapshotDocument;
  try {
    const kc = kubeConfigFor(o.context, o.kubeconfig);
    doc = await readSnapshot(kc, o.cluster ?? o.context).catch((err: unknown) => {
      throw cannotRead(`cluster of context ${o.context}`, err);
    });
  } catch (err) {
    process.stderr.write(`tenantgate snapshot: ${(err as Error).message}\n`);
    return err instanceof UsageError ? 2 : 3;
  }
  const format = o.format === 'json' || (o.output?.endsWith('.json') ?? false) ? 'json' : 'yaml';
  const text = machine(doc, format);
  if (o.output && o.output !== '-') {
    await writeFile(o.output, text);
    process.stderr.write(
      `wrote ${o.output}: cluster ${JSON.stringify(doc.cluster)}, ${doc.projects.length} project(s), ` +
        `${doc.namespaces.length} namespace(s), ${doc.resourceQuotas.length} quota(s), ${doc.objects?.length ?? 0} ` +
        `allow-listed object(s) at ${doc.takenAt}\n`,
    );
  } else {
    process.stdout.write(text);
  }
  return 0;
}
