/**
 * `tenantgate snapshot --context C`: one cluster's Projects, project namespaces and their
 * ResourceQuotas (with status.used), read-only, into a file `tenantgate plan --snapshot` reads offline.
 */
import * as k8s from '@kubernetes/client-node';
import { writeFile } from 'node:fs/promises';
import pLimit from 'p-limit';
import { describeError } from '../kube/errors.js';
import { loadKubeConfig } from '../kube/kubeconfig.js';
import { ClusterLists, listInPages } from '../kube/lists.js';
import { machine } from '../kubectl/format.js';
import { snapshotOf, type SnapshotDocument } from '../plan/snapshot-file.js';
import { LABEL_PROJECT, type NamespaceObject, type Project, type ResourceQuotaObject } from '../validate/types.js';

/** A usage error: the message names the flag and the value (exit status 2). */
export class UsageError extends Error {}

/** The kubeconfig with `context` selected; an unknown context is a usage error listing the known ones. */
export function kubeConfigFor(context: string, file?: string, flag = `--context ${JSON.stringify(context)}`): k8s.KubeConfig {
  let kc: k8s.KubeConfig;
  try {
    kc = loadKubeConfig(file);
  } catch (err) {
    throw new UsageError(`--kubeconfig ${JSON.stringify(file ?? '')}: cannot load it: ${(err as Error).message}`);
  }
  if (!kc.getContextObject(context)) {
    const known = kc.getContexts().map((c) => c.name);
    throw new UsageError(`${flag}: no such context ${JSON.stringify(context)} in ${file ?? 'the default kubeconfig ($KUBECONFIG or ~/.kube/config)'}; known: ${known.length ? known.join(', ') : 'none'}`);
  }
  kc.setCurrentContext(context);
  return kc;
}

/** Quota lists of this many namespaces run at once. */
const CONCURRENCY = 8;

/** Reads the cluster: Projects, namespaces labelled tenantgate.io/project, the ResourceQuotas in those namespaces only. */
export async function readSnapshot(kc: k8s.KubeConfig, cluster: string, now: () => Date = () => new Date()): Promise<SnapshotDocument> {
  const lists = new ClusterLists(kc);
  const takenAt = now().toISOString();
  const projects = (await lists.listProjects()).items as unknown as Project[];
  const namespaces = (await lists.listNamespaces(LABEL_PROJECT)).items as unknown as NamespaceObject[];
  const limit = pLimit(CONCURRENCY);
  const perNamespace = await Promise.all(
    namespaces.map((n) => limit(() => listInPages('v1', 'ResourceQuotaList', (page) => lists.core.listNamespacedResourceQuota({ namespace: n.metadata.name ?? '', ...page })))),
  );
  const quotas = perNamespace.flatMap((list) => list.items as unknown as ResourceQuotaObject[]);
  return snapshotOf(cluster, takenAt, { projects, namespaces, quotas });
}

export function cannotRead(what: string, err: unknown): Error {
  return new Error(`cannot read ${what}: ${describeError(err)}`);
}

export async function runSnapshot(o: { context: string; kubeconfig?: string; cluster?: string; output?: string; format: 'yaml' | 'json' }): Promise<number> {
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
    process.stderr.write(`wrote ${o.output}: cluster ${JSON.stringify(doc.cluster)}, ${doc.projects.length} project(s), ${doc.namespaces.length} namespace(s), ${doc.resourceQuotas.length} quota(s) at ${doc.takenAt}\n`);
  } else {
    process.stdout.write(text);
  }
  return 0;
}
