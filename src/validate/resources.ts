/** Resource lists, budgets and allocations: exact quantity arithmetic over the domain types. */
import { processNow } from '../clock.js';
import { Quantity } from '../quantity/quantity.js';
import { withActiveBursts } from './bursts.js';
import { quotaTier, tierKey, withTierBudgets, withTierDefaults } from './tiers.js';
import type { FieldPath, NamespaceObject, NamespaceShare, Project, ProjectShares, ResourceList, ResourceQuotaObject, Resources, Snapshot, Violation } from './types.js';
export type { NamespaceShare, ProjectShares, Resources } from './types.js';

/**
 * Parsed lists of cached objects, by list identity: objects from the watch caches are replaced, never
 * edited, so a list parses once however many decisions read it. The result is read-only (`Resources` is a ReadonlyMap).
 */
const parsedLists = new WeakMap<ResourceList, Resources>();

/** Parses a ResourceList; unparsable entries become S1 violations (when a sink is given) and are left out. */
export function parseResources(list: ResourceList | undefined, path: FieldPath = [], sink?: Violation[], owner = 'object'): Resources {
  if (!sink && list) {
    let cached = parsedLists.get(list);
    if (!cached) parsedLists.set(list, (cached = parseUncached(list, path, [], owner)));
    return cached;
  }
  return parseUncached(list, path, sink, owner);
}

/**
 * parseResources without the cache, for a list that lives no longer than one decision (the object
 * under review): caching it would only add a WeakMap entry that dies young, and a WeakMap whose
 * entries come and go is rebuilt from time to time, in the young generation.
 */
function parseUncached(list: ResourceList | undefined, path: FieldPath = [], sink?: Violation[], owner = 'object'): Resources {
  const out = new Map<string, Quantity>();
  if (!list) return out;
  for (const name of Object.keys(list)) {
    const raw = list[name];
    const q = Quantity.tryParse(raw);
    if (q === undefined) {
      sink?.push({
        rule: 'S1',
        path: [...path, name],
        message: `${owner}: ${[...path, name].join('.')} is ${JSON.stringify(raw)}, which is not a Kubernetes quantity (allowed: e.g. 500m, 2, 1.5Gi, 1e3)`,
      });
      continue;
    }
    out.set(name, q);
  }
  return out;
}

export function formatResources(resources: Resources): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of [...resources.keys()].sort()) out[name] = resources.get(name)!.toString();
  return out;
}

/**
 * The raw budget of a project on a cluster at instant `at` (ms since the epoch; default: the process
 * clock, src/clock.ts): `spec.clusters[c].quota.hard`
 * when declared, else `spec.quota.hard`; with the tiers' budgets (`<resource>@<priorityClass>` keys,
 * tiers.ts) and the bursts active at `at` (bursts.ts) added. The same object for the same project,
 * cluster and active bursts, so its parse is cached.
 */
export function budgetList(project: Project, cluster: string, at: number = processNow()): ResourceList {
  return withActiveBursts(project, cluster, withTierBudgets(project, declaredBudgetList(project, cluster)), at);
}

/** The budget of a project that declares none: one object, so that what is derived from it is cached too. */
const NO_BUDGET: ResourceList = Object.freeze({});

/** The budget as declared for a cluster, without tiers or bursts. */
export function declaredBudgetList(project: Project, cluster: string): ResourceList {
  const perCluster = cluster ? project.spec.clusters?.[cluster]?.quota?.hard : undefined;
  return perCluster ?? project.spec.quota?.hard ?? NO_BUDGET;
}

export function budgetPath(project: Project, cluster: string): FieldPath {
  return cluster && project.spec.clusters?.[cluster]?.quota?.hard ? ['spec', 'clusters', cluster, 'quota', 'hard'] : ['spec', 'quota', 'hard'];
}

export function budgetOf(project: Project, cluster: string, at: number = processNow()): Resources {
  return parseResources(budgetList(project, cluster, at));
}

/** `namespaceDefaults.quota.hard`, with `namespaceDefaults.tiers` under tier keys and `pods@*` = 0 when the project has tiers (tiers.ts). */
export function defaultsOf(project: Project): Resources {
  return parseResources(withTierDefaults(project, project.spec.namespaceDefaults?.quota?.hard));
}

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
 * resource it does not cover yet, `namespaceDefaults.quota` (the room a default quota will take, C4).
 */
export function namespaceAllocation(effective: ReadonlyMap<string, Quantity>, budget: Resources, defaults: Resources): Resources {
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

/** What a quota's `spec.hard` counts for under budget keys (nothing for a scoped quota that is no tier's); `uncached` for an object under review. */
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
 * no budget (docs/adr/0021-kubernetes-controllers-and-usage.md). The status of an object under
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

/** A quota's status.hard or status.used, parsed under the keys it counts for (cached by list: cached objects are never edited). */
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
  for (const q of quotas) if (n++ === 0) first = q; else return undefined;
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
  return snapshot.effectiveQuotaOf ? snapshot.effectiveQuotaOf(namespace) : effectiveQuota(snapshot.quotasInNamespace(namespace));
}

export function quotasAfter(snapshot: Snapshot, namespace: string, change?: QuotaChange): ResourceQuotaObject[] {
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

/**
 * Q5: allocations admitted (or reserved by another replica) that the snapshot may not show yet. A
 * namespace counts with max(observed, pending) — including one the snapshot does not have at all.
 */
export interface PendingAllocations {
  allocation(namespace: string): Resources | undefined;
  /** Namespaces of the project with a pending allocation. */
  namespaces(project: string): Iterable<string>;
  /** Quota writes and deletions admitted in the namespace that the snapshot may not show yet. */
  quotaOverlay?(namespace: string): QuotaOverlay | undefined;
  /** Uids of older namespaces of this name that a live Namespace CREATE may have replaced (quotas cached there may be theirs). */
  replacedNamespaces?(namespace: string): ReadonlySet<string> | undefined;
}

export interface ShareOptions {
  change?: QuotaChange;
  pending?: PendingAllocations;
}

/** One namespace's share of its project's budget on a cluster, optionally after a quota change. */
export function namespaceShare(snapshot: Snapshot, project: Project, cluster: string, namespace: string, options: ShareOptions = {}): NamespaceShare {
  const budget = budgetOf(project, cluster);
  const defaults = defaultsOf(project);
  const change = options.change?.namespace === namespace ? options.change : undefined;
  let held = change ? heldAfter(snapshot, change) : observedHold(snapshot, namespace);
  if (held.size === 0 && isTerminating(snapshot, namespace)) held = terminatingWithoutQuota(snapshot, namespace, budget);
  let resources = namespaceAllocation(held, budget, defaults);
  let defaulted = false;
  for (const r of budget.keys()) if (!held.has(r) && defaults.has(r)) defaulted = true;
  // The namespace under review counts with what the change leaves it; its own pending entry is what
  // an earlier decision admitted for it, superseded by this one.
  const pending = options.change?.namespace === namespace ? undefined : options.pending?.allocation(namespace);
  if (pending) resources = maxResources(resources, pending);
  return { namespace, resources, defaulted };
}

function isTerminating(snapshot: Snapshot, namespace: string): boolean {
  const ns = snapshot.namespace(namespace);
  return ns !== undefined && namespaceIsTerminating(ns);
}

/**
 * What a terminating namespace without an unscoped quota still holds: what its pods requested when its
 * last quota was seen (the quotas' last `status.used`, `Snapshot.lastQuotaUsageOf`; for a review that
 * deletes that quota, what the quotas it has now report; a quota without status admitted no pod), else
 * the whole budget. Before Kubernetes 1.33 the
 * namespace controller may delete the quotas while pods with a long grace period still run, and those
 * pods keep what they requested until they are gone. A process that first saw the namespace already
 * terminating and without quotas (it may have started after they went) cannot know what the pods use
 * and counts the namespace as holding the whole budget until it is gone: the project grows nowhere
 * meanwhile (fail closed, ADR 0046).
 */
export function terminatingWithoutQuota(snapshot: Snapshot, namespace: string, budget: Resources): Resources {
  const current = snapshot.quotasInNamespace(namespace);
  for (const quota of current) if (isUnscoped(quota)) return quotaUsed(current);
  return snapshot.lastQuotaUsageOf?.(namespace) ?? budget;
}

/** Per-namespace shares of a project in the cluster (labelled for it, or pending), optionally after a change. */
export function clusterShares(snapshot: Snapshot, project: Project, cluster: string, options: ShareOptions & { extraNamespace?: string } = {}): NamespaceShare[] {
  const projectName = project.metadata.name ?? '';
  const names = new Set<string>();
  for (const ns of snapshot.namespacesOfProject(projectName)) names.add(ns.metadata.name ?? '');
  for (const name of options.pending?.namespaces(projectName) ?? []) names.add(name);
  if (options.extraNamespace) names.add(options.extraNamespace);
  return [...names].sort().map((name) => namespaceShare(snapshot, project, cluster, name, options));
}

/**
 * A project's observed shares (no change, nothing pending: what the snapshot shows), sorted by
 * namespace, and the sum of all of them but one, computed on first use. A snapshot memoises this per
 * project (`Snapshot.projectSharesOf`), so a decision adds up the other namespaces once per cache
 * change instead of once per request.
 */

export function projectShares(snapshot: Snapshot, project: Project, cluster: string): ProjectShares {
  return new SharesMemo(project, cluster, clusterShares(snapshot, project, cluster));
}

/**
 * The memo after one namespace joined or changed (`share` given: its new share) or left the project
 * (no share); the other namespaces' shares are kept, in namespace order, and the sums start afresh.
 */
export function withNamespaceShare(memo: ProjectShares, namespace: string, share?: NamespaceShare): ProjectShares {
  const { shares } = memo;
  const at = insertionPoint(shares, namespace);
  const member = at < shares.length && shares[at]!.namespace === namespace;
  // One new array of the final length: a cache event replaces the memo of a project, and whatever it
  // allocates lives until the project's next change, long enough for the scavenger to copy it.
  let next: readonly NamespaceShare[];
  if (share) next = member ? shares.with(at, share) : shares.toSpliced(at, 0, share);
  else next = member ? shares.toSpliced(at, 1) : shares;
  return new SharesMemo(memo.project, memo.cluster, next);
}

/** The index of the first share whose namespace is not before `namespace` (shares sorted by namespace). */
function insertionPoint(shares: readonly NamespaceShare[], namespace: string): number {
  let lo = 0;
  let hi = shares.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (shares[mid]!.namespace < namespace) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

class SharesMemo implements ProjectShares {
  // Built on first use: a memo replaced by the next cache event before any decision reads it (a
  // quota changed twice in a row) never needs them.
  /** One entry per observed namespace: bounded by the project's size. */
  private totals: Map<string, Resources> | undefined;
  /** The sum for a namespace that has no share (all of them). */
  private total: Resources | undefined;

  constructor(
    readonly project: Project,
    readonly cluster: string,
    readonly shares: readonly NamespaceShare[],
  ) {}

  shareOf(namespace: string): NamespaceShare | undefined {
    const share = this.shares[insertionPoint(this.shares, namespace)];
    return share?.namespace === namespace ? share : undefined;
  }

  othersTotal(namespace: string): Resources {
    if (!this.shareOf(namespace)) return (this.total ??= sumShares(this.shares));
    this.totals ??= new Map();
    let t = this.totals.get(namespace);
    if (!t) this.totals.set(namespace, (t = sumShares(this.shares, namespace)));
    return t;
  }
}

/**
 * Σ of the shares of a project's namespaces other than `namespace` — observed, or pending where an
 * admitted allocation is not in the snapshot yet (max of both). With the snapshot's memo this is the
 * memo's observed sum plus, for each pending namespace, how far its pending allocation raises its
 * observed share: a decision costs the pending namespaces, not the project's size. Without a memo
 * every share is computed afresh. Both give the same value. The result is read-only (`Resources` is a ReadonlyMap).
 */
export function othersTotal(snapshot: Snapshot, project: Project, cluster: string, namespace: string, pending?: PendingAllocations): Resources {
  const memo = snapshot.projectSharesOf?.(project, cluster);
  if (!memo) return sumShares(clusterShares(snapshot, project, cluster, { extraNamespace: namespace, ...(pending ? { pending } : {}) }), namespace);
  const observed = memo.othersTotal(namespace);
  const raises = pending ? pendingRaises(snapshot, memo, namespace, pending) : [];
  return raises.length === 0 ? observed : withRaises(memo, namespace, observed, raises);
}

/** The terms of othersTotal one by one: the shares of the project's namespaces other than `namespace`, pending ones included. */
export function otherShares(snapshot: Snapshot, project: Project, cluster: string, namespace: string, pending?: PendingAllocations): NamespaceShare[] {
  return clusterShares(snapshot, project, cluster, pending ? { pending } : {}).filter((share) => share.namespace !== namespace);
}

/** How a pending allocation changes one namespace's term of the sum. */
interface PendingRaise {
  namespace: string;
  /** max(observed share, pending) − observed share (the whole share for a namespace the memo does not hold). */
  raise: Resources;
  /** max(observed share, pending): the namespace's term in the sum. */
  term: Resources;
}

/** Per namespace of the project other than `namespace` whose pending allocation raises its observed share: by how much. */
function pendingRaises(snapshot: Snapshot, memo: ProjectShares, namespace: string, pending: PendingAllocations): PendingRaise[] {
  const raises: PendingRaise[] = [];
  const considered = new Set<string>([namespace]);
  const consider = (name: string): void => {
    considered.add(name);
    const share = memo.shareOf(name);
    if (!share) {
      const term = namespaceShare(snapshot, memo.project, memo.cluster, name, { pending }).resources;
      raises.push({ namespace: name, raise: term, term });
      return;
    }
    const allocation = pending.allocation(name);
    const raise = allocation && raiseOver(share.resources, allocation);
    if (raise) raises.push({ namespace: name, raise, term: maxResources(share.resources, allocation) });
  };
  for (const name of pending.namespaces(memo.project.metadata.name ?? '')) if (!considered.has(name)) consider(name);
  // A namespace observed in the project whose pending allocation was recorded under another project.
  for (const share of memo.shares) if (!considered.has(share.namespace) && pending.allocation(share.namespace)) consider(share.namespace);
  return raises;
}

/** maxResources(observed, pending) − observed, or undefined when pending raises nothing. */
function raiseOver(observed: Resources, pending: Resources): Resources | undefined {
  let raise: Map<string, Quantity> | undefined;
  for (const [name, q] of pending) {
    const before = observed.get(name);
    if (before && q.cmp(before) <= 0) continue;
    (raise ??= new Map()).set(name, before ? q.sub(before) : q);
  }
  return raise;
}

/**
 * The observed sum plus the raises. Each raised resource takes the Format a sum of the terms in
 * namespace order takes (sumShares: the first non-zero term's), so a message prints the same total
 * ("2Gi", not "2147483648") whichever way it was added up.
 */
function withRaises(memo: ProjectShares, namespace: string, observed: Resources, raises: readonly PendingRaise[]): Resources {
  const total = new Map(sumResources([observed, ...raises.map((r) => r.raise)]));
  const resources = new Set<string>();
  for (const { raise } of raises) for (const name of raise.keys()) resources.add(name);
  for (const resource of resources) {
    let first: { namespace: string; term: Quantity } | undefined;
    for (const share of memo.shares) {
      const q = share.namespace === namespace ? undefined : share.resources.get(resource);
      if (q && !q.isZero()) {
        first = { namespace: share.namespace, term: q };
        break;
      }
    }
    for (const r of raises) {
      const q = r.term.get(resource);
      if (q && !q.isZero() && (!first || r.namespace <= first.namespace)) first = { namespace: r.namespace, term: q };
    }
    const sum = total.get(resource)!;
    if (first && first.term.format !== sum.format) total.set(resource, sum.withFormat(first.term.format));
  }
  return total;
}

/** Σ of the lists, resource by resource, added in their order. */
export function sumResources(lists: Iterable<Resources>): Resources {
  const total = new Map<string, Quantity>();
  for (const list of lists) for (const [r, v] of list) total.set(r, total.has(r) ? total.get(r)!.add(v) : v);
  return total;
}

export function maxResources(a: Resources, b: Resources): Resources {
  const out = new Map<string, Quantity>(a);
  for (const [name, q] of b) {
    const prev = out.get(name);
    if (!prev || q.cmp(prev) > 0) out.set(name, q);
  }
  return out;
}

/** Σ of the shares, in their order; `except`: leaving that namespace's share out. */
export function sumShares(shares: Iterable<NamespaceShare>, except?: string): Resources {
  const list = Array.isArray(shares) ? (shares as readonly NamespaceShare[]) : [...shares];
  const total = new Map<string, Quantity>();
  // Resource by resource, in order of first appearance, each added up in share order: the same sums
  // as adding share after share, without a quantity for every partial sum.
  for (const share of list) {
    if (share.namespace === except) continue;
    for (const name of share.resources.keys()) {
      if (total.has(name)) continue;
      const terms: Quantity[] = [];
      for (const other of list) {
        const q = other.namespace === except ? undefined : other.resources.get(name);
        if (q) terms.push(q);
      }
      total.set(name, Quantity.addAll(terms));
    }
  }
  return total;
}

export function namespaceIsTerminating(ns: NamespaceObject): boolean {
  return Boolean(ns.metadata.deletionTimestamp) || ns.status?.phase === 'Terminating';
}
