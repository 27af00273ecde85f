/**
 * What a namespace holds that neither tenantgate nor Kubernetes made (ADR 0096 step 3). Pure: the
 * controller lists (discovery-inventory.ts) and hands the answers here. Left out: objects labelled
 * `app.kubernetes.io/managed-by: tenantgate`, the `kube-root-ca.crt` ConfigMap, the `default`
 * ServiceAccount, and the derived kinds (their owners are counted). A list that failed is "unknown
 * contents": the namespace waits for a confirmation as if it held data (fails closed).
 */
import { LABEL_MANAGED_BY, MANAGED_BY } from '../../validate/types.js';

/** A namespaced resource discovery offers with the list and delete verbs. */
export interface InventoryResource {
  /** `""` for the core group. */
  group: string;
  /** Plural resource name (`pods`). */
  resource: string;
  kind: string;
}

/** Resources whose objects are made from others (counted through their owners). */
const DERIVED = new Set([
  '/events',
  'events.k8s.io/events',
  '/endpoints',
  'discovery.k8s.io/endpointslices',
  'apps/controllerrevisions',
]);

export function isDerived(r: Pick<InventoryResource, 'group' | 'resource'>): boolean {
  return DERIVED.has(`${r.group}/${r.resource}`);
}

interface ListedObject {
  metadata?: { name?: string; labels?: Record<string, string> };
}

/** One resource's answer in one namespace: the items (at most a few), and whether there were more. */
export type ListAnswer =
  | { resource: InventoryResource; items: ListedObject[]; more: boolean }
  | { resource: InventoryResource; error: string };

export interface NamespaceContents {
  namespace: string;
  /** Kind → objects counted (sorted by kind when described). `more`: at least that many. */
  kinds: Array<{ kind: string; count: number; more: boolean }>;
  /** Resources whose list failed, with why. */
  unknown: string[];
}

/** Whether an object is one tenantgate or Kubernetes made in every namespace. */
function madeByUsOrKubernetes(r: InventoryResource, o: ListedObject): boolean {
  if (o.metadata?.labels?.[LABEL_MANAGED_BY] === MANAGED_BY) return true;
  const name = o.metadata?.name;
  if (r.group === '' && r.resource === 'configmaps' && name === 'kube-root-ca.crt') return true;
  if (r.group === '' && r.resource === 'serviceaccounts' && name === 'default') return true;
  return false;
}

export function classifyContents(namespace: string, answers: ListAnswer[]): NamespaceContents {
  const kinds = new Map<string, { count: number; more: boolean }>();
  const unknown: string[] = [];
  for (const a of answers) {
    if (isDerived(a.resource)) continue;
    const where = a.resource.group ? `${a.resource.resource}.${a.resource.group}` : a.resource.resource;
    if ('error' in a) {
      unknown.push(`${where} (${a.error})`);
      continue;
    }
    const count = a.items.filter((o) => !madeByUsOrKubernetes(a.resource, o)).length;
    if (count === 0 && !a.more) continue;
    const k = kinds.get(a.resource.kind) ?? { count: 0, more: false };
    k.count += count;
    k.more ||= a.more;
    kinds.set(a.resource.kind, k);
  }
  return {
    namespace,
    kinds: [...kinds]
      .map(([kind, k]) => ({ kind, ...k }))
      .sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0)),
    unknown: unknown.sort(),
  };
}

/**
 * The resources (`pods`, `allowlists.tenantgate.io`) with any object in the answers, whoever made it, and
 * those whose list failed; the derived kinds and what `except` names are left out.
 */
export function resourcesHolding(answers: readonly ListAnswer[], except: (r: InventoryResource) => boolean): string[] {
  const where = (r: InventoryResource) => (r.group ? `${r.resource}.${r.group}` : r.resource);
  return answers
    .filter((a) => !isDerived(a.resource) && !except(a.resource))
    .filter((a) => 'error' in a || a.items.length > 0 || a.more)
    .map((a) => ('error' in a ? `${where(a.resource)} (could not list: ${a.error})` : where(a.resource)))
    .sort();
}

/** Whether the namespace may go without a confirmation: it holds nothing, and every list answered. */
export function holdsNothing(c: NamespaceContents): boolean {
  return c.kinds.length === 0 && c.unknown.length === 0;
}

/** `Pod` → `Pods`, `NetworkPolicy` → `NetworkPolicies`, `Ingress` → `Ingresses`. */
function pluralKind(kind: string, count: number): string {
  if (count === 1) return kind;
  if (/[^aeiou]y$/.test(kind)) return `${kind.slice(0, -1)}ies`;
  if (/(s|x|z|ch|sh)$/.test(kind)) return `${kind}es`;
  return `${kind}s`;
}

/** `team-a-data: 1 PersistentVolumeClaim, 2 Pods, 1 Deployment` (unknown lists: `unknown contents of …`). */
export function describeContents(c: NamespaceContents): string {
  const parts = c.kinds.map((k) => `${k.count}${k.more ? '+' : ''} ${pluralKind(k.kind, k.more ? 2 : k.count)}`);
  if (c.unknown.length > 0) parts.push(`unknown contents (could not list ${c.unknown.join(', ')})`);
  return `${c.namespace}: ${parts.join(', ')}`;
}
