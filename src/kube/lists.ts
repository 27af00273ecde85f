/**
 * Lists of the three kinds tenantgate watches, as plain JSON (what watches deliver), in pages and
 * slimmed (see `slim`): at 50,000 objects a single list response is ≈ 100 MB of JSON, and the typed
 * list, that string and a plain copy alive at once made V8 grow its heap for good.
 */
import * as k8s from '@kubernetes/client-node';
import { API_GROUP } from '../validate/types.js';

export const PROJECT_VERSION = 'v1alpha1';
export const PROJECT_PLURAL = 'projects';
export const PROJECTS_PATH = `/apis/${API_GROUP}/${PROJECT_VERSION}/${PROJECT_PLURAL}`;

/** Items per list request. */
export const LIST_PAGE_SIZE = 500;

/** Plain JSON, as a watch would deliver it (client-node's typed lists hold Date objects). */
export function plain<T>(obj: unknown): T {
  return JSON.parse(JSON.stringify(obj)) as T;
}

/**
 * The metadata fields something in tenantgate reads (src/validate, src/controller, src/webhook); the rest is dropped.
 */
// creationTimestamp: the controller leaves a namespace Argo CD just created to its sync
// (src/controller/argocd-grace.ts).
const KEPT_METADATA = [
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'labels',
  'annotations',
  'finalizers',
  'deletionTimestamp',
] as const;

/** `kubectl apply`'s copy of the whole object: often the largest annotation, and nobody here reads it. */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * Cuts an object down to what tenantgate reads, in place, and returns it. `metadata` is replaced by
 * one with only KEPT_METADATA (no managedFields — about half of each object as served —, no
 * ownerReferences, generateName…) and its annotations lose the last-applied
 * configuration; everything outside `metadata` (apiVersion, kind, spec, status) is kept as it is.
 * The metadata is rebuilt rather than `delete`d from, so V8 keeps the objects in compact
 * (non-dictionary) form. Idempotent.
 */
export function slim<T extends { metadata?: object }>(object: T): T {
  const meta = object.metadata as Record<string, unknown> | undefined;
  if (!meta || typeof meta !== 'object' || isSlim(meta)) return object;
  const kept: Record<string, unknown> = {};
  for (const key of KEPT_METADATA) {
    let value = meta[key];
    if (key === 'annotations' && value && Object.prototype.hasOwnProperty.call(value, LAST_APPLIED_ANNOTATION))
      value = withoutLastApplied(value as Record<string, string>);
    if (value !== undefined && value !== null) kept[key] = value;
  }
  (object as { metadata?: object }).metadata = kept;
  return object;
}

/** The annotations without the last-applied configuration; undefined when nothing else is left. */
function withoutLastApplied(annotations: Record<string, string>): Record<string, string> | undefined {
  const rest: Record<string, string> = {};
  let any = false;
  for (const [k, v] of Object.entries(annotations)) {
    if (k === LAST_APPLIED_ANNOTATION) continue;
    rest[k] = v;
    any = true;
  }
  return any ? rest : undefined;
}

const KEPT = new Set<string>(KEPT_METADATA);

/** Nothing to drop (e.g. a listed object, already slimmed, arriving at the informer's handler). */
function isSlim(meta: Record<string, unknown>): boolean {
  for (const key in meta) if (!KEPT.has(key) || meta[key] === undefined || meta[key] === null) return false;
  const annotations = meta.annotations as Record<string, string> | undefined;
  return !annotations || !Object.prototype.hasOwnProperty.call(annotations, LAST_APPLIED_ANNOTATION);
}

type List = k8s.KubernetesListObject<k8s.KubernetesObject>;

/** One page as either client returns it: typed lists carry `_continue`, raw (custom object) lists `continue`. */
interface Page {
  metadata?: { resourceVersion?: string; _continue?: string; continue?: string };
  items?: unknown[];
}

/**
 * Lists in pages of LIST_PAGE_SIZE (`limit` / `continue`), turning each page into slimmed plain JSON
 * before asking for the next one, and returns one list. The pages of one paged list are a consistent
 * snapshot and carry its resourceVersion, which the returned list has (the informer watches from it).
 * An expired continue token (410) fails the whole list; the informer lists again from scratch.
 */
/** Called after each page; it may throw to abandon the list (the informer's progress timeout does). */
export type OnPage = () => void;

export async function listInPages(
  apiVersion: string,
  kind: string,
  fetchPage: (params: { limit: number; _continue?: string }) => Promise<Page>,
  onPage?: OnPage,
): Promise<List> {
  const items: k8s.KubernetesObject[] = [];
  let resourceVersion: string | undefined;
  let token: string | undefined;
  do {
    const page = await fetchPage({ limit: LIST_PAGE_SIZE, ...(token ? { _continue: token } : {}) });
    resourceVersion ??= page.metadata?.resourceVersion;
    for (const item of plain<k8s.KubernetesObject[]>((page.items ?? []).map((i) => slim(i as k8s.KubernetesObject))))
      items.push(item);
    token = page.metadata?._continue || page.metadata?.continue || undefined;
    onPage?.();
  } while (token);
  return { apiVersion, kind, metadata: resourceVersion !== undefined ? { resourceVersion } : {}, items };
}

export class ClusterLists {
  readonly core: k8s.CoreV1Api;
  readonly custom: k8s.CustomObjectsApi;

  constructor(readonly kubeConfig: k8s.KubeConfig) {
    this.core = kubeConfig.makeApiClient(k8s.CoreV1Api);
    this.custom = kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  }

  async listProjects(labelSelector?: string, onPage?: OnPage): Promise<List> {
    return listInPages(
      `${API_GROUP}/${PROJECT_VERSION}`,
      'ProjectList',
      async (page) =>
        (await this.custom.listClusterCustomObject({
          group: API_GROUP,
          version: PROJECT_VERSION,
          plural: PROJECT_PLURAL,
          ...page,
          ...(labelSelector ? { labelSelector } : {}),
        })) as Page,
      onPage,
    );
  }
  async listNamespaces(labelSelector?: string, onPage?: OnPage): Promise<List> {
    return listInPages(
      'v1',
      'NamespaceList',
      (page) => this.core.listNamespace({ ...page, ...(labelSelector ? { labelSelector } : {}) }),
      onPage,
    );
  }
  async listQuotas(onPage?: OnPage): Promise<List> {
    return listInPages('v1', 'ResourceQuotaList', (page) => this.core.listResourceQuotaForAllNamespaces(page), onPage);
  }
}
