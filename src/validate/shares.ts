/**
 * A project's shares on a cluster at an instant: what each namespace counts against the budget (its
 * hold, defaults for what no quota covers, what is pending), and the sums Q1 adds up, memoised per
 * project by a snapshot (`Snapshot.projectSharesOf`). Pure: the instant `at` (ms since the epoch) is
 * the caller's; a share depends on it only through the budget at that instant (bursts).
 */
import { Quantity } from '../quantity/quantity.js';
import { budgetIn, budgetListIn, defaultsOf } from './budget/layers.js';
import {
  heldAfter,
  isUnscoped,
  namespaceAllocation,
  namespaceIsTerminating,
  observedHold,
  quotaUsed,
  type QuotaChange,
  type QuotaOverlay,
} from './quota-hold.js';
import { maxResources, sumResources } from './resource-lists.js';
import type { NamespaceShare, Project, ProjectShares, ResourceList, Resources, Snapshot } from './types.js';

/**
 * Q5: allocations admitted (or reserved by another replica) that the snapshot may not show yet. A
 * namespace counts with max(observed, pending) — including one the snapshot does not have at all.
 */
export interface PendingAllocations {
  allocation(namespace: string): Resources | undefined;
  /** Namespaces of the project with a pending allocation. */
  namespaces(project: string): Iterable<string>;
  /**
   * Every namespace with a pending allocation, of any project (expired ones may be among them: each
   * is asked `allocation` again). Absent: a decision asks `allocation` of every namespace it counts.
   */
  allocated?(): Iterable<string>;
  /** Quota writes and deletions admitted in the namespace that the snapshot may not show yet. */
  quotaOverlay?(namespace: string): QuotaOverlay | undefined;
  /**
   * Uids of older namespaces of this name that a live Namespace CREATE may have replaced (quotas
   * cached there may be theirs).
   */
  replacedNamespaces?(namespace: string): ReadonlySet<string> | undefined;
}

export interface ShareOptions {
  change?: QuotaChange;
  pending?: PendingAllocations;
}

/** One namespace's share of its project's budget on a cluster at instant `at`, optionally after a quota change. */
export function namespaceShare(
  snapshot: Snapshot,
  project: Project,
  cluster: string,
  at: number,
  namespace: string,
  options: ShareOptions = {},
): NamespaceShare {
  const budget = budgetIn(snapshot, project, cluster, at);
  const defaults = defaultsOf(project);
  const change = options.change?.namespace === namespace ? options.change : undefined;
  let held = change ? heldAfter(snapshot, change) : observedHold(snapshot, namespace);
  if (held.size === 0 && isTerminating(snapshot, namespace))
    held = terminatingWithoutQuota(snapshot, namespace, budget);
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
 * meanwhile (fail closed, ADR 0077).
 */
function terminatingWithoutQuota(snapshot: Snapshot, namespace: string, budget: Resources): Resources {
  const current = snapshot.quotasInNamespace(namespace);
  for (const quota of current) if (isUnscoped(quota)) return quotaUsed(current);
  return snapshot.lastQuotaUsageOf?.(namespace) ?? budget;
}

/** Per-namespace shares of a project in the cluster (labelled for it, or pending), optionally after a change. */
export function clusterShares(
  snapshot: Snapshot,
  project: Project,
  cluster: string,
  at: number,
  options: ShareOptions & { extraNamespace?: string } = {},
): NamespaceShare[] {
  const projectName = project.metadata.name ?? '';
  const names = new Set<string>();
  for (const ns of snapshot.namespacesOfProject(projectName)) names.add(ns.metadata.name ?? '');
  for (const name of options.pending?.namespaces(projectName) ?? []) names.add(name);
  if (options.extraNamespace) names.add(options.extraNamespace);
  return [...names].sort().map((name) => namespaceShare(snapshot, project, cluster, at, name, options));
}

/**
 * A project's observed shares at instant `at` (no change, nothing pending: what the snapshot shows),
 * sorted by namespace, and the sum of all of them but one, computed on first use. A snapshot memoises
 * this per project (`Snapshot.projectSharesOf`), so a decision adds up the other namespaces once per
 * cache change instead of once per request. The memo carries the instant it was computed at and the
 * budget list in force then (`budget`): it answers for another instant only when the budget there is
 * that same list (`sharesHoldAt`), since a share depends on the instant through the budget alone.
 */
export function projectShares(snapshot: Snapshot, project: Project, cluster: string, at: number): ProjectShares {
  return new SharesMemo(
    project,
    cluster,
    at,
    budgetListIn(snapshot, project, cluster, at),
    clusterShares(snapshot, project, cluster, at),
  );
}

/**
 * Whether `memo` holds the shares of `project` on `cluster` at instant `at`: made for that Project
 * object and cluster, and the budget at `at` is the list it was computed with (budget lists are the
 * same object for the same project, cluster, cap and active bursts: budget/layers.ts). A burst that
 * started or ended since makes it stale.
 */
export function sharesHoldAt(
  memo: ProjectShares,
  snapshot: Snapshot,
  project: Project,
  cluster: string,
  at: number,
): boolean {
  return (
    memo.project === project &&
    memo.cluster === cluster &&
    (memo.at === at || memo.budget === budgetListIn(snapshot, project, cluster, at))
  );
}

/**
 * The memo after one namespace joined or changed (`share` given: its new share) or left the project
 * (no share); the other namespaces' shares are kept, in namespace order, and the sums start afresh.
 */
export function withNamespaceShare(memo: ProjectShares, namespace: string, share?: NamespaceShare): ProjectShares {
  const { shares } = memo;
  const at = insertionPoint(shares, namespace);
  const present = at < shares.length && shares[at]!.namespace === namespace;
  // One new array of the final length: a cache event replaces the memo of a project, and whatever it
  // allocates lives until the project's next change, long enough for the scavenger to copy it.
  let next: readonly NamespaceShare[];
  if (share) next = present ? shares.with(at, share) : shares.toSpliced(at, 0, share);
  else next = present ? shares.toSpliced(at, 1) : shares;
  return new SharesMemo(memo.project, memo.cluster, memo.at, memo.budget, next);
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
    readonly at: number,
    readonly budget: ResourceList,
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
export function othersTotal(
  snapshot: Snapshot,
  project: Project,
  cluster: string,
  at: number,
  namespace: string,
  pending?: PendingAllocations,
): Resources {
  const memo = snapshot.projectSharesOf?.(project, cluster, at);
  if (!memo)
    return sumShares(
      clusterShares(snapshot, project, cluster, at, { extraNamespace: namespace, ...(pending ? { pending } : {}) }),
      namespace,
    );
  const observed = memo.othersTotal(namespace);
  const raises = pending ? pendingRaises(snapshot, memo, namespace, pending) : [];
  return raises.length === 0 ? observed : withRaises(memo, namespace, observed, raises);
}

/**
 * The terms of othersTotal one by one: the shares of the project's namespaces other than
 * `namespace`, pending ones included.
 */
export function otherShares(
  snapshot: Snapshot,
  project: Project,
  cluster: string,
  at: number,
  namespace: string,
  pending?: PendingAllocations,
): NamespaceShare[] {
  return clusterShares(snapshot, project, cluster, at, pending ? { pending } : {}).filter(
    (share) => share.namespace !== namespace,
  );
}

/** How a pending allocation changes one namespace's term of the sum. */
interface PendingRaise {
  namespace: string;
  /** max(observed share, pending) − observed share (the whole share for a namespace the memo does not hold). */
  raise: Resources;
  /** max(observed share, pending): the namespace's term in the sum. */
  term: Resources;
}

/**
 * Per namespace of the project other than `namespace` whose pending allocation raises its observed share: by how much.
 */
function pendingRaises(
  snapshot: Snapshot,
  memo: ProjectShares,
  namespace: string,
  pending: PendingAllocations,
): PendingRaise[] {
  const raises: PendingRaise[] = [];
  const considered = new Set<string>([namespace]);
  const consider = (name: string): void => {
    considered.add(name);
    const share = memo.shareOf(name);
    if (!share) {
      const term = namespaceShare(snapshot, memo.project, memo.cluster, memo.at, name, { pending }).resources;
      raises.push({ namespace: name, raise: term, term });
      return;
    }
    const allocation = pending.allocation(name);
    const raise = allocation && raiseOver(share.resources, allocation);
    if (raise) raises.push({ namespace: name, raise, term: maxResources(share.resources, allocation) });
  };
  for (const name of pending.namespaces(memo.project.metadata.name ?? '')) if (!considered.has(name)) consider(name);
  // A namespace observed in the project whose pending allocation was recorded under another project:
  // found among what is pending when the pending allocations can be listed (a few, in flight), else
  // among the project's namespaces (all of them).
  const allocated = pending.allocated?.();
  if (allocated) {
    for (const name of allocated)
      if (!considered.has(name) && memo.shareOf(name) && pending.allocation(name)) consider(name);
  } else
    for (const share of memo.shares)
      if (!considered.has(share.namespace) && pending.allocation(share.namespace)) consider(share.namespace);
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
function withRaises(
  memo: ProjectShares,
  namespace: string,
  observed: Resources,
  raises: readonly PendingRaise[],
): Resources {
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
