/**
 * What a namespace's ResourceQuotas let it hold, per budget key: the effective quota (the minimum over
 * the quotas that count for a key), the hold (raised by what the apiserver enforces and what is in
 * use), usage, and the same after a quota change or with admitted-but-unseen writes applied. Pure.
 */
import type { Quantity } from '../quantity/quantity.js';
import { parseResources, parseUncached } from './resource-lists.js';
import { quotaTier, tierKey } from './tiers.js';
import type { NamespaceObject, ResourceList, ResourceQuotaObject, Resources, Snapshot } from './types.js';

export function isUnscoped(quota: ResourceQuotaObject): boolean {
  const spec = quota.spec ?? {};
  return !(spec.scopes && spec.scopes.length > 0) && !spec.scopeSelector;
}

/**
 * Effective quota: per budget key, the minimum `hard` over the quotas that count for it: the unscoped
 * ones under their resource names, a quota scoped to one PriorityClass under `<resource>@<class>` and
 * the other-tiers quota under `<resource>@*` (tiers.ts quotaTier); any other scoped quota counts for nothing.
 * `underReview`: the one of them that is the object of an admission review (parsed without the cache).
 */
export function effectiveQuota(quotas: Iterable<ResourceQuotaObject>, underReview?: ResourceQuotaObject): Resources {
  // One unscoped quota (the usual namespace): its parsed list is the minimum already, and that list
  // is cached by object, so a cache event re-deriving the namespace's share allocates nothing.
  const only = soleQuota(quotas);
  if (only && isUnscoped(only)) return hardOf(only, underReview);
  const out = new Map<string, Quantity>();
  for (const quota of quotas) {
    const tier = quotaTier(quota);
    if (tier === undefined) continue;
    for (const [name, q] of hardOf(quota, underReview, tier)) {
      const prev = out.get(name);
      if (!prev || q.cmp(prev) < 0) out.set(name, q);
    }
  }
  return out;
}

/**
 * What a namespace counts against its project's budget: its effective quota, and for every budget
 * resource it does not cover yet, `namespaceDefaults.quota` (the room a default quota will take, CR4).
 */
export function namespaceAllocation(
  effective: ReadonlyMap<string, Quantity>,
  budget: Resources,
  defaults: Resources,
): Resources {
  if (sameKeys(effective, budget)) return effective as Resources;
  const out = new Map<string, Quantity>();
  for (const name of budget.keys()) {
    const q = effective.get(name) ?? defaults.get(name);
    if (q) out.set(name, q);
  }
  return out;
}

function hardOf(quota: ResourceQuotaObject, underReview: ResourceQuotaObject | undefined, tier = ''): Resources {
  return keyed(quota.spec?.hard, tier, quota === underReview);
}

/** Tier-keyed parses of scoped quotas' lists, by list identity (as parsedLists), with the tier they were keyed for. */
const tierKeyedLists = new WeakMap<ResourceList, { tier: string; resources: Resources }>();

/** A quota's list under the keys it counts for: as is for '' (unscoped), else each resource as `<resource>@<tier>`. */
function keyed(list: ResourceList | undefined, tier: string, uncached = false): Resources {
  if (tier === '') return uncached ? parseUncached(list) : parseResources(list);
  if (list && !uncached) {
    const hit = tierKeyedLists.get(list);
    if (hit?.tier === tier) return hit.resources;
  }
  const out = new Map<string, Quantity>();
  for (const [name, q] of uncached ? parseUncached(list) : parseResources(list)) out.set(tierKey(name, tier), q);
  if (list && !uncached) tierKeyedLists.set(list, { tier, resources: out });
  return out;
}

/**
 * What a quota's `spec.hard` counts for under budget keys (nothing for a scoped quota that is no tier's); `uncached`
 * for an object under review.
 */
export function countedHard(quota: ResourceQuotaObject, uncached = false): Resources {
  const tier = quotaTier(quota);
  return tier === undefined ? EMPTY : keyed(quota.spec?.hard, tier, uncached);
}

const EMPTY: Resources = new Map();

/**
 * What a namespace's unscoped quotas let it hold, per resource: the largest of its effective quota
 * (min `spec.hard`), the limit the apiserver still enforces (min `status.hard`: the ResourceQuota
 * admission plugin checks `status.hard`, which the quota controller copies from the spec a moment
 * later) and what is in use (max `status.used`: lowering a quota never evicts anything). A namespace
 * counts against its project's budget with this amount, so shrinking a quota below its usage frees
 * no budget (docs/adr/0002-rule-engine.md). The status of an object under
 * review is the stored one (the apiserver resets it on create and on spec updates).
 */
export function quotaHold(quotas: Iterable<ResourceQuotaObject>, underReview?: ResourceQuotaObject): Resources {
  const only = soleQuota(quotas);
  if (only && isUnscoped(only)) {
    const spec = hardOf(only, underReview);
    const enforced = statusList(only, 'hard');
    const used = statusList(only, 'used');
    // The usual namespace: nothing in use or enforced above the spec, so its parsed (cached) spec is the hold.
    if (within(enforced, spec) && within(used, spec)) return spec;
    return raiseBy(raiseBy(new Map(spec), enforced), used);
  }
  const held = new Map<string, Quantity>(effectiveQuota(quotas, underReview));
  const enforced = new Map<string, Quantity>();
  for (const quota of quotas) {
    const tier = quotaTier(quota);
    if (tier === undefined) continue;
    for (const [name, q] of statusList(quota, 'hard', tier)) {
      const prev = enforced.get(name);
      if (!prev || q.cmp(prev) < 0) enforced.set(name, q);
    }
  }
  return raiseBy(raiseBy(held, enforced), quotaUsed(quotas));
}

/**
 * What a namespace's quotas report in use, per budget key: the largest `status.used` of the unscoped
 * ones (they all count the same pods), and of the tier quotas under their tier keys (effectiveQuota).
 */
export function quotaUsed(quotas: Iterable<ResourceQuotaObject>): Resources {
  const used = new Map<string, Quantity>();
  for (const quota of quotas) {
    const tier = quotaTier(quota);
    if (tier !== undefined) raiseBy(used, statusList(quota, 'used', tier));
  }
  return used;
}

/**
 * A quota's status.hard or status.used, parsed under the keys it counts for (cached by list: cached
 * objects are never edited).
 */
function statusList(quota: ResourceQuotaObject, which: 'hard' | 'used', tier = ''): Resources {
  return keyed(quota.status?.[which], tier);
}

/** Whether every entry of `list` is in `limit` and not above it. */
function within(list: Resources, limit: Resources): boolean {
  for (const [name, q] of list) {
    const bound = limit.get(name);
    if (!bound || q.cmp(bound) > 0) return false;
  }
  return true;
}

/** `target`, each entry raised to the one of `by` when that is larger (a new entry where it has none). */
function raiseBy(target: Map<string, Quantity>, by: Resources): Map<string, Quantity> {
  for (const [name, q] of by) {
    const prev = target.get(name);
    if (!prev || q.cmp(prev) > 0) target.set(name, q);
  }
  return target;
}

/** The one quota of `quotas`, if there is exactly one (an array is read without an iterator). */
function soleQuota(quotas: Iterable<ResourceQuotaObject>): ResourceQuotaObject | undefined {
  if (Array.isArray(quotas)) return quotas.length === 1 ? (quotas[0] as ResourceQuotaObject) : undefined;
  let first: ResourceQuotaObject | undefined;
  let n = 0;
  for (const q of quotas)
    if (n++ === 0) first = q;
    else return undefined;
  return first;
}

/** Whether a and b have the same keys in the same order. */
function sameKeys(a: ReadonlyMap<string, unknown>, b: ReadonlyMap<string, unknown>): boolean {
  if (a.size !== b.size) return false;
  const other = b.keys();
  for (const key of a.keys()) if (other.next().value !== key) return false;
  return true;
}

/** Replaces or removes one quota of one namespace, for "what if" decisions. */
export interface QuotaChange {
  namespace: string;
  /** Name of the quota replaced or removed. */
  name: string;
  /** The new object, or undefined for a deletion. */
  quota?: ResourceQuotaObject;
  /**
   * The namespace's effective quota with the change applied, when the caller has computed it already
   * from the same snapshot in the same decision (Q2 needs it before Q1 does).
   */
  effective?: ReadonlyMap<string, Quantity>;
  /** Quotas admitted but not in the snapshot yet (Q5), applied before the change. */
  overlay?: QuotaOverlay;
}

/** Quota writes admitted but not yet in the snapshot: name → the new object, or null for a deletion. */
export type QuotaOverlay = ReadonlyMap<string, ResourceQuotaObject | null>;

/** The effective quota of `change.namespace` with the change applied (`change.effective` when the caller has it). */
export function effectiveQuotaAfter(snapshot: Snapshot, change: QuotaChange): ReadonlyMap<string, Quantity> {
  return change.effective ?? effectiveQuota(quotasAfter(snapshot, change.namespace, change), change.quota);
}

/** What the namespace's quotas let it hold with the change applied (quotaHold). */
export function heldAfter(snapshot: Snapshot, change: QuotaChange): ReadonlyMap<string, Quantity> {
  return quotaHold(quotasAfter(snapshot, change.namespace, change), change.quota);
}

/** What the snapshot's quotas let a namespace hold (its memo when it has one). */
export function observedHold(snapshot: Snapshot, namespace: string): ReadonlyMap<string, Quantity> {
  return snapshot.heldQuotaOf ? snapshot.heldQuotaOf(namespace) : quotaHold(snapshot.quotasInNamespace(namespace));
}

/** The effective quota the snapshot shows for a namespace (its memo when it has one). */
export function observedEffectiveQuota(snapshot: Snapshot, namespace: string): ReadonlyMap<string, Quantity> {
  return snapshot.effectiveQuotaOf
    ? snapshot.effectiveQuotaOf(namespace)
    : effectiveQuota(snapshot.quotasInNamespace(namespace));
}

function quotasAfter(snapshot: Snapshot, namespace: string, change?: QuotaChange): ResourceQuotaObject[] {
  let current = [...snapshot.quotasInNamespace(namespace)];
  if (!change || change.namespace !== namespace) return current;
  if (change.overlay) current = withOverlay(current, change.overlay);
  const kept = current.filter((q) => q.metadata.name !== change.name);
  return change.quota ? [...kept, change.quota] : kept;
}

/** The quotas of a namespace with admitted-but-unseen writes applied. */
export function withOverlay(quotas: readonly ResourceQuotaObject[], overlay: QuotaOverlay): ResourceQuotaObject[] {
  const out = quotas.filter((q) => !overlay.has(q.metadata.name ?? ''));
  for (const q of overlay.values()) if (q) out.push(q);
  return out;
}

export function namespaceIsTerminating(ns: NamespaceObject): boolean {
  return Boolean(ns.metadata.deletionTimestamp) || ns.status?.phase === 'Terminating';
}
