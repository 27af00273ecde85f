/**
 * Q5: headroom decisions that cannot overspend (docs/design.md, "Headroom under concurrency").
 * - In one process, decisions of a project are serialised and what was admitted is remembered
 *   (`pending`) until the cache shows it or it expires.
 * - Across replicas, a growing allocation or a change of a quota's spec is first recorded in the
 *   ledger with a compare-and-swap write; the decision counts max(observed, reserved) per namespace,
 *   so a reservation only makes it stricter. Dry runs reserve nothing.
 * - A ledger entry leaves only by expiry, and an entry for the same (namespace, quota) never shrinks:
 *   no replica's cache decides for another one (docs/adr/0035-ledger-entries-leave-only-by-expiry.md).
 * - A replica whose cache is not current (a watch re-listing or broken) takes no decision that needs
 *   the project's turn.
 */
import { projectOfNamespace, type ReviewContext, type Verdict } from '../validate/admission.js';
import { quotaTier } from '../validate/tiers.js';
import { budgetOf, budgetPath, countedHard, defaultsOf, formatResources, maxResources, namespaceAllocation, namespaceShare, otherShares, othersTotal, parseResources, quotaHold, sumResources, type PendingAllocations, type QuotaOverlay, type Resources } from '../validate/resources.js';
import { checkFits } from '../validate/rules/quota.js';
import { checkCostFits } from '../validate/rules/cost.js';
import type { Quantity } from '../quantity/quantity.js';
import { cacheNotCurrent, ledgerContended, ledgerTimeout, ledgerWriteFailed } from '../validate/rules/headroom.js';
import { LABEL_PROJECT, type ResourceQuotaObject, type Snapshot, type Violation } from '../validate/types.js';
import { within } from '../deadline.js';
import { LedgerConflict, type LedgerChange, type LedgerEntry, type LedgerQuotaWrite, type LedgerState, type LedgerStore } from '../ledger/ledger.js';
import { holdsEnforcedLimit } from '../fleet/enforced-record.js';
import { handledKind, verdictFor, type AdmissionRequest } from './review.js';
import { enforcedOf } from '../fleet/enforced-record.js';
import { fleetBudgetOn, memberLimits, memberView, reachableLimits } from '../fleet/member-budget.js';
import { FleetGrowth, needBeyond, type FleetGuardOptions } from './fleet-growth.js';

export interface HeadroomGuardOptions {
  ttlMs: number;
  ledger?: LedgerStore;
  maxAttempts?: number;
  now?: () => number;
  /**
   * How long a decision that needs the ledger may take from its arrival, queueing in its project's turn
   * included (default 2 s, well inside the webhooks' 5 s timeout). Past it the request is refused
   * with [Q5]: a slow apiserver must not hold every later decision of the project hostage.
   */
  deadlineMs?: number;
  /** Backoff between ledger conflicts: base × 2^(attempt−1), jittered, at most maxMs (5 ms, 100 ms). */
  backoff?: { baseMs: number; maxMs: number };
  onReservation?: (outcome: ReservationOutcome) => void;
  /** After each ledger write, with the number of admitted changes it recorded (the batch's size). */
  onLedgerWrite?: (records: number) => void;
  /**
   * Whether the watch cache is current (listed, and every watch connected). While it is not, every
   * decision that takes its project's turn is refused with [Q5]: a stale cache could call a growing
   * change non-growing. Default: always current.
   */
  cacheCurrent?: () => boolean;
  /**
   * This cluster as a fleet member (docs/adr/0044-fleet-member-wiring.md; needs `ledger`): a Project
   * whose spec.fleet.clusters names it is budgeted, per fleet-budgeted resource, at the enforced limit
   * E kept in its ledger; a growth beyond E asks the hub for room before it is decided.
   */
  fleet?: FleetGuardOptions;
}

export type ReservationOutcome = 'reserved' | 'conflict' | 'exhausted' | 'error' | 'timeout';

const DEFAULT_DEADLINE_MS = 2000;

class DeadlineExceeded extends Error {}

/**
 * `p`, or a DeadlineExceeded once `ms` have passed or `signal` aborts (every caller left); the call
 * itself is not cancelled: see runBatch.
 */
const withinDeadline = <T>(p: Promise<T>, ms: number, signal?: AbortSignal): Promise<T> => within(p, ms, signal, () => new DeadlineExceeded());

/** A decision waiting for (or in) its project's batch. */
interface Member {
  ctx: ReviewContext;
  request: AdmissionRequest;
  /** Epoch ms after which it is refused with [Q5]. */
  deadline: number;
  settled: boolean;
  settle(verdict: Verdict): void;
  batch?: Batch;
}

interface ProjectQueue {
  waiting: Member[];
  running: boolean;
}

/**
 * The reason a batch's ledger calls are aborted with. A shared value: abort() without a reason builds a
 * DOMException with its stack for every batch (1.6 % of a shipped replica's CPU), and no caller reads it.
 */
const BATCH_SETTLED = new Error('every decision of the batch has settled');

/**
 * The members of one group commit; `abandoned` aborts its ledger calls once every member has settled.
 * A batch that lost a compare-and-swap takes in the decisions that queued meanwhile (absorb): its next
 * round decides them too, so contention makes batches larger instead of queues longer.
 */
class Batch {
  private readonly controller = new AbortController();
  private readonly members: Member[] = [];
  /** Compare-and-swap rounds lost to another writer so far. */
  conflicts = 0;
  constructor(members: readonly Member[]) {
    this.absorb(members);
  }
  absorb(members: readonly Member[]): void {
    for (const m of members) {
      m.batch = this;
      this.members.push(m);
    }
  }
  get abandoned(): AbortSignal {
    return this.controller.signal;
  }
  open(): Member[] {
    return this.members.filter((m) => !m.settled);
  }
  latestDeadline(): number {
    return Math.max(...this.open().map((m) => m.deadline));
  }
  memberSettled(): void {
    if (this.members.every((m) => m.settled)) this.controller.abort(BATCH_SETTLED);
  }
}

interface Pending {
  project: string;
  resources: Resources;
  expires: number;
}

/** An admitted ResourceQuota write (null: a deletion) the cache may not show yet. */
interface PendingWrite {
  project: string;
  quota: ResourceQuotaObject | null;
  /** Every spec the quota may have until the write is shown: the write and the object it replaced. */
  versions: LedgerQuotaWrite[];
  basedOn?: string;
  expires: number;
}

/** The object Q2/Q3 see for a recorded write. */
function quotaOfWrite(namespace: string, name: string, write: LedgerQuotaWrite): ResourceQuotaObject | null {
  return write ? { metadata: { name, namespace }, spec: write.spec } : null;
}

const specKey = (w: LedgerQuotaWrite): string => JSON.stringify(w === null ? null : w.spec ?? {});

/** `versions` with the ones of `more` it lacks (by spec). */
function unionVersions(versions: readonly LedgerQuotaWrite[], more: readonly LedgerQuotaWrite[]): LedgerQuotaWrite[] {
  const out = [...versions];
  const have = new Set(out.map(specKey));
  for (const v of more) if (!have.has(specKey(v))) (have.add(specKey(v)), out.push(v));
  return out;
}

/**
 * The quota the rules count while it may be any of `versions` (docs/design.md, "Headroom under
 * concurrency"): none when one of them is absent or scoped (a missing quota lets the namespace hold
 * more and covers nothing); otherwise the resources every version limits, each at its largest limit.
 * Counting it can only make Q1 stricter (a namespace's hold is the minimum over its quotas) and Q2/Q3
 * stricter (a resource counts as covered only when every version covers it).
 */
function envelope(namespace: string, name: string, versions: readonly LedgerQuotaWrite[]): ResourceQuotaObject | null {
  if (versions.length === 1) return quotaOfWrite(namespace, name, versions[0]!);
  let hard: Map<string, Quantity> | undefined;
  // Versions that all count for the same keys (unscoped, or the same tier: tiers.ts quotaTier) keep that scope.
  let tier: string | undefined;
  let scopeSelector: unknown;
  for (const v of versions) {
    if (v === null) return null;
    const candidate = { metadata: { name, namespace }, spec: v.spec } as ResourceQuotaObject;
    const counted = quotaTier(candidate);
    if (counted === undefined || (tier !== undefined && counted !== tier)) return null;
    if (tier === undefined) (tier = counted), (scopeSelector = v.spec.scopeSelector);
    const limits = parseResources(v.spec.hard);
    if (!hard) {
      hard = new Map(limits);
      continue;
    }
    for (const [r, q] of hard) {
      const other = limits.get(r);
      if (!other) hard.delete(r);
      else if (other.cmp(q) > 0) hard.set(r, other);
    }
  }
  return { metadata: { name, namespace }, spec: { hard: formatResources(hard ?? new Map()), ...(tier ? { scopeSelector } : {}) } };
}

/**
 * The lowest a namespace's quotas may hold as any replica counts them: each quota with recorded
 * versions at the smallest limit any of its versions (or this cache's copy) sets per resource, present
 * when any of them is, and no status (a status lowered a moment ago may not have reached this cache).
 */
function lowestQuotas(snapshot: Snapshot, namespace: string, recorded: ReadonlyMap<string, readonly LedgerQuotaWrite[]>): ResourceQuotaObject[] {
  const candidates = new Map<string, LedgerQuotaWrite[]>();
  for (const q of snapshot.quotasInNamespace(namespace)) candidates.set(q.metadata.name ?? '', [{ spec: q.spec ?? {} }]);
  for (const [name, versions] of recorded) candidates.set(name, [...(candidates.get(name) ?? []), ...versions]);
  const out: ResourceQuotaObject[] = [];
  for (const [name, versions] of candidates) {
    let hard: Map<string, Quantity> | undefined;
    for (const v of versions) {
      // Under the keys each version counts for (tier quotas under tier keys): the result is a list of keys, read as an unscoped quota.
      if (v === null || quotaTier({ metadata: { name }, spec: v.spec } as ResourceQuotaObject) === undefined) continue;
      hard ??= new Map();
      for (const [r, q] of countedHard({ metadata: { name }, spec: v.spec } as ResourceQuotaObject)) {
        const prev = hard.get(r);
        if (!prev || q.cmp(prev) < 0) hard.set(r, q);
      }
    }
    if (hard) out.push({ metadata: { name, namespace }, spec: { hard: formatResources(hard) } });
  }
  return out;
}

/**
 * Per budget resource that no quota of the namespace surely limits after a change of quota
 * `changed.name` (its new object, or null for a delete), the largest limit any other quota may still
 * set: undefined when there is none such (or nothing to raise). The rules count the quotas of a
 * namespace through the overlay, where a quota with a recorded write that may not have landed (a
 * create, a delete, or a version that is scoped) is absent: right for the minimum over the quotas
 * while another one limits the resource, but a namespace left with no limit at all counts
 * namespaceDefaults, and the quota may be there in truth with a far larger limit. Such a resource
 * counts at the largest limit any version of any of those quotas sets.
 */
function uncoveredCeiling(snapshot: Snapshot, namespace: string, overlay: QuotaOverlay, recorded: ReadonlyMap<string, readonly LedgerQuotaWrite[]>, changed: { name: string; quota: ResourceQuotaObject | null }, budget: Resources): Resources | undefined {
  const candidates = quotaCandidates(snapshot, namespace, overlay, recorded, changed, false);
  let out: Map<string, Quantity> | undefined;
  for (const resource of budget.keys()) {
    const { surelyLowest, largest } = limitsAcross(candidates, resource);
    if (surelyLowest || !largest) continue;
    (out ??= new Map()).set(resource, largest);
  }
  return out;
}

/**
 * The most a namespace may hold after a quota change when this cache may show it from before it was
 * deleted and created again: every cached quota may be absent (with every version recorded for it),
 * only the changed quota surely exists. Per budgeted resource: the smallest limit among the quotas
 * that surely limit it (their largest version), else the largest limit any version sets; a resource
 * no version limits is left to the rules (defaults). Undefined when nothing is limited.
 */
function replacedCeiling(snapshot: Snapshot, namespace: string, overlay: QuotaOverlay | undefined, recorded: ReadonlyMap<string, readonly LedgerQuotaWrite[]>, changed: { name: string; quota: ResourceQuotaObject | null }, budget: Resources): Resources | undefined {
  const candidates = quotaCandidates(snapshot, namespace, overlay, recorded, changed, true);
  let out: Map<string, Quantity> | undefined;
  for (const resource of budget.keys()) {
    const { surelyLowest, largest } = limitsAcross(candidates, resource);
    const limit = surelyLowest ?? largest;
    if (limit) (out ??= new Map()).set(resource, limit);
  }
  return out;
}

/**
 * Every quota a namespace may have after a change of quota `changed.name`, with every version it may
 * have (null: absent): the cached ones (`cachedMayBeGone`: possibly absent too), those with recorded
 * writes (the overlay's object and every recorded version), and the changed one as it will be.
 */
function quotaCandidates(snapshot: Snapshot, namespace: string, overlay: QuotaOverlay | undefined, recorded: ReadonlyMap<string, readonly LedgerQuotaWrite[]>, changed: { name: string; quota: ResourceQuotaObject | null }, cachedMayBeGone: boolean): Map<string, LedgerQuotaWrite[]> {
  const candidates = new Map<string, LedgerQuotaWrite[]>();
  for (const q of snapshot.quotasInNamespace(namespace)) {
    const name = q.metadata.name ?? '';
    if (!cachedMayBeGone && overlay?.has(name)) continue;
    candidates.set(name, cachedMayBeGone ? [{ spec: q.spec ?? {} }, null] : [{ spec: q.spec ?? {} }]);
  }
  for (const name of overlay?.keys() ?? []) candidates.set(name, [...(recorded.get(name) ?? []), specOf(overlay!.get(name)), ...(cachedMayBeGone ? [null] : [])]);
  candidates.set(changed.name, [specOf(changed.quota)]);
  return candidates;
}

/**
 * For one resource across candidate quotas: the smallest of the largest limits of the quotas that
 * surely limit it (every version present, unscoped and naming it), and the largest limit any version sets.
 */
function limitsAcross(candidates: ReadonlyMap<string, readonly LedgerQuotaWrite[]>, resource: string): { surelyLowest?: Quantity; largest?: Quantity } {
  let surelyLowest: Quantity | undefined;
  let largest: Quantity | undefined;
  for (const versions of candidates.values()) {
    let always = versions.length > 0;
    let mostOfThis: Quantity | undefined;
    for (const v of versions) {
      const limit = v !== null ? countedHard({ metadata: {}, spec: v.spec } as ResourceQuotaObject).get(resource) : undefined;
      if (!limit) {
        always = false;
        continue;
      }
      if (!mostOfThis || limit.cmp(mostOfThis) > 0) mostOfThis = limit;
    }
    if (mostOfThis && (!largest || mostOfThis.cmp(largest) > 0)) largest = mostOfThis;
    if (always && mostOfThis && (!surelyLowest || mostOfThis.cmp(surelyLowest) < 0)) surelyLowest = mostOfThis;
  }
  return { ...(surelyLowest ? { surelyLowest } : {}), ...(largest ? { largest } : {}) };
}

/** Whether `after` asks more than `before` of some resource. */
function growsOver(before: Resources, after: Resources): boolean {
  for (const [r, q] of after) {
    const prev = before.get(r);
    if (!prev || q.cmp(prev) > 0) return true;
  }
  return false;
}

/**
 * Whether this cache shows the newest write of a quota as stored: the same spec (absent for a
 * deletion) at a resourceVersion later than the object the write replaced. Then no older version can
 * come back (every later spec change is recorded too), and the cached object is the one to count.
 */
function shownByCache(snapshot: Snapshot, namespace: string, name: string, write: LedgerQuotaWrite, basedOn: string | undefined): boolean {
  let cached: ResourceQuotaObject | undefined;
  for (const q of snapshot.quotasInNamespace(namespace)) if (q.metadata.name === name) cached = q;
  if (write === null || !cached) return false;
  if (specKey({ spec: cached.spec ?? {} }) !== specKey(write)) return false;
  if (basedOn === undefined) return true;
  const rv = Number(cached.metadata.resourceVersion);
  const base = Number(basedOn);
  return Number.isSafeInteger(rv) && Number.isSafeInteger(base) && rv > base;
}

/** The spec a request's object (or old object) gives its quota: null when there is none. */
function specOf(object: unknown): LedgerQuotaWrite {
  const quota = object as ResourceQuotaObject | null | undefined;
  return quota ? { spec: quota.spec ?? {} } : null;
}

/** A recorded quota write: its name and versions, for the overlay. */
interface OverlayWrite {
  quota: string;
  write: LedgerQuotaWrite;
  versions: LedgerQuotaWrite[];
  basedOn?: string;
  created: number;
}

export class HeadroomGuard {
  private readonly local = new Map<string, Pending>();
  /** The namespaces of `local`, by project (Q1 asks for a project's pending namespaces on every decision). */
  private readonly localByProject = new Map<string, Set<string>>();
  /** Admitted quota writes by namespace and quota name, until the cache shows them or they expire. */
  private readonly writes = new Map<string, Map<string, PendingWrite>>();
  /** The ledger as last read or written, per project, and when (dropped after a TTL, or with the project). */
  private readonly ledgerCache = new Map<string, { state: LedgerState; at: number }>();
  /** Per project: the decisions waiting for its next batch, and whether one is running. */
  private readonly queues = new Map<string, ProjectQueue>();
  /** When the next sweep of expired entries is due. */
  private sweepAt = 0;
  private readonly now: () => number;

  /** The fleet member's growth through the hub (undefined: no fleet member, or no ledger). */
  private readonly fleet: FleetGrowth | undefined;

  constructor(private readonly options: HeadroomGuardOptions) {
    this.now = options.now ?? Date.now;
    if (options.fleet && !options.ledger) throw new Error('a fleet member needs the headroom ledger (crossReplicaReservation: true): its enforced limit lives there');
    this.fleet = options.fleet && options.ledger ? new FleetGrowth(options.fleet, options.ledger) : undefined;
    options.ledger?.subscribe?.((change) => this.observeLedger(change));
  }

  /**
   * A ledger write seen on the ledger's watch (any replica's): a project this process has cached is
   * given the newer state, so its next compare-and-swap does not lose to a write that landed long
   * before it. A project not cached is left alone (it is read when it is next needed).
   */
  observeLedger(change: LedgerChange): void {
    const cached = this.ledgerCache.get(change.project);
    if (!cached) return;
    if ('deleted' in change) return void this.ledgerCache.delete(change.project);
    if (!isNewerVersion(change.resourceVersion, cached.state.resourceVersion)) return;
    const state = change.state();
    // Not the project's ledger after all: forget the cache, the next decision reads it.
    if (state) this.ledgerCache.set(change.project, { state, at: cached.at });
    else this.ledgerCache.delete(change.project);
  }

  /**
   * The snapshot the rules see for `project` decided against `state`: on a fleet member, its
   * fleet-budgeted resources budgeted at min(E, upper bound) (`reachable`: at the most it could be
   * granted, to find what a denied growth needs). Other projects and non-members: the snapshot itself.
   */
  private fleetView(snapshot: Snapshot, project: string, state: LedgerState | undefined, reachable = false): Snapshot {
    const cluster = this.fleet?.cluster;
    if (!cluster) return snapshot;
    const enforced = state ? enforcedOf(state, project) : undefined;
    return memberView(snapshot, cluster, (p) => {
      if (p.metadata.name !== project) {
        // Not the project decided: E as this process last saw it (for warnings), else its bound.
        const cached = this.ledgerCache.get(p.metadata.name ?? '');
        return cached ? memberLimits(p, cluster, enforcedOf(cached.state, p.metadata.name ?? '')) : undefined;
      }
      if (reachable) return reachableLimits(p, cluster);
      return memberLimits(p, cluster, enforced ?? new Map());
    });
  }

  /** What this process admitted and the cache does not show yet (the cache it counts with: `pendingOver`). */
  readonly pending: PendingAllocations = {
    allocation: (namespace) => this.live(namespace)?.resources,
    namespaces: (project) => {
      const names = this.localByProject.get(project);
      return names ? [...names].filter((ns) => this.live(ns)) : [];
    },
    quotaOverlay: (namespace) => this.overlay(namespace, undefined, []),
  };

  /** `pending` for decisions against one snapshot: admitted quota writes count as their envelope until it shows them. */
  private pendingOver(snapshot: Snapshot): PendingAllocations {
    if (this.writes.size === 0) return this.pending;
    return { ...this.pending, quotaOverlay: (namespace) => this.overlay(namespace, snapshot, []) };
  }

  /**
   * The quotas of a namespace the rules count instead of the cached ones: per quota with a live
   * recorded write (this process's, or any replica's in `recorded`), the envelope of the versions it
   * may have — unless `snapshot` shows its newest write stored (undefined: no snapshot to ask).
   */
  private overlay(namespace: string, snapshot: Snapshot | undefined, recorded: readonly OverlayWrite[]): QuotaOverlay | undefined {
    const mine = this.liveWrites(namespace);
    if (!mine && recorded.length === 0) return undefined;
    const byQuota = new Map<string, { newest: OverlayWrite; versions: LedgerQuotaWrite[] }>();
    const add = (w: OverlayWrite) => {
      const prev = byQuota.get(w.quota);
      if (!prev) return void byQuota.set(w.quota, { newest: w, versions: [...w.versions] });
      prev.versions = unionVersions(prev.versions, w.versions);
      if (w.created >= prev.newest.created) prev.newest = w;
    };
    for (const [quota, w] of mine ?? []) add({ quota, write: specOf(w.quota), versions: w.versions, ...(w.basedOn !== undefined ? { basedOn: w.basedOn } : {}), created: w.expires - this.options.ttlMs });
    for (const w of recorded) add(w);
    const out = new Map<string, ResourceQuotaObject | null>();
    for (const [quota, { newest, versions }] of byQuota) {
      if (snapshot && shownByCache(snapshot, namespace, quota, newest.write, newest.basedOn)) continue;
      out.set(quota, envelope(namespace, quota, versions));
    }
    return out.size > 0 ? out : undefined;
  }

  /** This process's admitted quota writes in the namespace that still count (undefined: none). */
  private liveWrites(namespace: string): Map<string, PendingWrite> | undefined {
    const byQuota = this.writes.get(namespace);
    if (!byQuota) return undefined;
    const now = this.now();
    for (const [name, w] of byQuota) if (w.expires <= now) byQuota.delete(name);
    if (byQuota.size === 0) this.writes.delete(namespace);
    return byQuota.size > 0 ? byQuota : undefined;
  }

  private live(namespace: string): Pending | undefined {
    const entry = this.local.get(namespace);
    if (entry && entry.expires <= this.now()) {
      this.forget(namespace);
      return undefined;
    }
    return entry;
  }

  private forget(namespace: string): void {
    const entry = this.local.get(namespace);
    if (!entry) return;
    this.local.delete(namespace);
    const names = this.localByProject.get(entry.project);
    names?.delete(namespace);
    if (names?.size === 0) this.localByProject.delete(entry.project);
  }

  get pendingCount(): number {
    return this.local.size;
  }

  /** How many entries each per-process structure holds (each is pruned by age and when its project goes). */
  get sizes(): { pending: number; writes: number; ledgerCache: number; queues: number } {
    let writes = 0;
    for (const byQuota of this.writes.values()) writes += byQuota.size;
    return { pending: this.local.size, writes, ledgerCache: this.ledgerCache.size, queues: this.queues.size };
  }

  /** Drops what has expired, at most once per TTL (called on decisions and cache events). */
  private sweep(): void {
    const now = this.now();
    if (now < this.sweepAt) return;
    this.sweepAt = now + this.options.ttlMs;
    for (const [namespace, entry] of this.local) if (entry.expires <= now) this.forget(namespace);
    for (const namespace of [...this.writes.keys()]) this.liveWrites(namespace);
    for (const [project, cached] of this.ledgerCache) if (cached.at + this.options.ttlMs <= now) this.ledgerCache.delete(project);
  }

  /** Called when a Project is deleted: nothing of it is needed any more in this process. */
  forgetProject(project: string): void {
    for (const namespace of [...(this.localByProject.get(project) ?? [])]) this.forget(namespace);
    for (const [namespace, byQuota] of this.writes) {
      for (const [name, w] of byQuota) if (w.project === project) byQuota.delete(name);
      if (byQuota.size === 0) this.writes.delete(namespace);
    }
    this.ledgerCache.delete(project);
    const queue = this.queues.get(project);
    if (queue && !queue.running && queue.waiting.length === 0) this.queues.delete(project);
  }

  /**
   * Called on cache events: forget what the cache now shows. This only relaxes this process's own
   * memory: the ledger's entries (its own included) count until they expire whatever any cache shows.
   */
  observe(ctx: Pick<ReviewContext, 'snapshot' | 'config'>, namespace: string): void {
    this.sweep();
    const byQuota = this.writes.get(namespace);
    if (byQuota) {
      for (const [name, w] of byQuota) {
        if (shownByCache(ctx.snapshot, namespace, name, specOf(w.quota), w.basedOn)) byQuota.delete(name);
      }
      if (byQuota.size === 0) this.writes.delete(namespace);
    }
    const entry = this.local.get(namespace);
    if (!entry) return;
    const project = ctx.snapshot.project(entry.project);
    if (!project || ctx.snapshot.namespace(namespace)?.metadata.labels?.[LABEL_PROJECT] !== entry.project) return;
    const observed = namespaceShare(ctx.snapshot, project, ctx.config.clusterName, namespace);
    for (const [r, q] of entry.resources) {
      const seen = observed.resources.get(r);
      if (!seen || seen.cmp(q) < 0) return;
    }
    this.forget(namespace);
  }

  /** A ledger entry counts until it expires, whatever any cache shows: another replica's cache may lag. */
  private isLive(entry: LedgerEntry): boolean {
    return entry.expires > this.now();
  }

  /**
   * Decisions that may grow a project's allocation or take coverage away (Namespace CREATE,
   * ResourceQuota CREATE/UPDATE/DELETE in a project namespace) are decided one project at a time.
   * With a ledger they are group-committed: while a project's ledger write is in flight its next
   * decisions queue; when it returns, all of them are decided in arrival order against the same
   * ledger state (each seeing the ones before it) and persisted with one compare-and-swap write.
   * Synchronous unless the decision needs the ledger: most decisions create no promise at all.
   */
  readonly decide = (ctx: ReviewContext, request: AdmissionRequest, signal?: AbortSignal): Verdict | Promise<Verdict> => {
    this.sweep();
    const withLocal: ReviewContext = { ...ctx, pending: this.pendingOver(ctx.snapshot) };
    if (this.options.cacheCurrent && !this.options.cacheCurrent()) return this.decideWithStaleCache(withLocal, request);
    // Without a ledger a decision awaits nothing: it runs to completion, which serialises it with
    // every other decision of the project without any queue. Which project it may grow need not be
    // known then: the verdict's allocation says what it grew.
    if (!this.options.ledger) return this.decideLocally(withLocal, request);
    const project = mayGrow(withLocal, request);
    if (!project) return verdictFor(this.fleet ? { ...withLocal, snapshot: this.fleetView(withLocal.snapshot, '', undefined) } : withLocal, request);
    return this.enqueue(project, withLocal, request, signal);
  };

  /**
   * The rules' verdict, made stricter for a quota write they call non-growing: "growing" is judged
   * against this cache, but another replica may count the namespace lower (a quota created or lowered
   * a moment ago that this cache does not show yet, a status the quota controller just lowered). When
   * the namespace's new share is above the lowest count any replica may hold — the lowest versions of
   * its recorded quotas without status, or what the ledger reserves for it — the change is judged as
   * growing: Q1 checks that it fits, and it reserves its share. And where the rules counted the
   * namespace as limited by no quota after the change although a quota with recorded writes may still
   * be there, its share counts that quota's largest possible limit (uncoveredCeiling, ADR 0050).
   */
  private judged(ctx: ReviewContext, request: AdmissionRequest, recorded: readonly OverlayWrite[]): Verdict {
    const verdict = verdictFor(ctx, request);
    const a = verdict.allocation;
    if (!a || !a.quotaWrite || verdict.violations.length > 0) return verdict;
    const overlay = ctx.pending?.quotaOverlay?.(a.namespace);
    if (a.grows && !overlay && !ctx.pending?.replacedNamespaces?.(a.namespace)) return verdict;
    const project = ctx.snapshot.project(a.project);
    if (!project) return verdict;
    const cluster = ctx.config.clusterName;
    const versions = new Map<string, LedgerQuotaWrite[]>();
    for (const [name, w] of this.writes.get(a.namespace) ?? []) versions.set(name, [...w.versions]);
    for (const w of recorded) versions.set(w.quota, [...(versions.get(w.quota) ?? []), ...w.versions]);
    const budget = budgetOf(project, cluster);
    // The share after the change: raised where the rules counted the namespace as uncovered although a
    // quota with recorded writes may still be there (uncoveredCeiling).
    // A namespace created while a cache still showed an older one of that name: for as long as that
    // reservation lives, the quotas this cache shows there may be the old namespace's (quota and namespace
    // events arrive apart, so neither the namespace shown nor its absence says which), so none of them may
    // cap the share after the change.
    const replacedHere = (ctx.pending?.replacedNamespaces?.(a.namespace)?.size ?? 0) > 0;
    const ceiling = replacedHere
      ? replacedCeiling(ctx.snapshot, a.namespace, overlay, versions, a.quotaWrite, budget)
      : overlay
        ? uncoveredCeiling(ctx.snapshot, a.namespace, overlay, versions, a.quotaWrite, budget)
        : undefined;
    const raised = ceiling !== undefined && growsOver(a.resources, ceiling);
    const share = raised ? maxResources(a.resources, ceiling) : a.resources;
    if (a.grows && !raised) return verdict;
    if (!a.grows) {
      let lowest = namespaceAllocation(quotaHold(lowestQuotas(ctx.snapshot, a.namespace, versions)), budget, defaultsOf(project));
      const reserved = ctx.pending?.allocation(a.namespace);
      if (reserved) lowest = maxResources(lowest, reserved);
      if (!growsOver(lowest, share)) return verdict;
    }
    const subject = `ResourceQuota ${a.namespace}/${a.quotaWrite.name}`;
    const others = othersTotal(ctx.snapshot, project, cluster, a.namespace, ctx.pending);
    const violations = checkFits({ project: a.project, cluster, budget, budgetPath: budgetPath(project, cluster) }, subject, { namespace: a.namespace, resources: share, defaulted: false }, others, ['spec', 'hard']);
    // C1 as strictly as Q1 here: the ledger's reservations are in `others`, and the share is checked whatever this cache counted before.
    if (project.spec.costBudget) {
      const before = namespaceShare(ctx.snapshot, project, cluster, a.namespace, ctx.pending ? { pending: ctx.pending } : {}).resources;
      violations.push(...checkCostFits(ctx.config.pricing, project, cluster, { subject, after: share, before, others, otherShares: () => otherShares(ctx.snapshot, project, cluster, a.namespace, ctx.pending).map((s) => s.resources), always: true, path: ['spec', 'hard'] }));
    }
    if (violations.length > 0) return { violations, warnings: [] };
    return { ...verdict, allocation: { ...a, resources: share, grows: true } };
  }

  /** While the cache is not current: decisions that need their project's turn are refused, the rest proceed. */
  private decideWithStaleCache(ctx: ReviewContext, request: AdmissionRequest): Verdict {
    const project = mayGrow(ctx, request);
    return project ? denyQ5(cacheNotCurrent(project)) : verdictFor(ctx, request);
  }

  private decideLocally(ctx: ReviewContext, request: AdmissionRequest): Verdict {
    const verdict = this.judged(ctx, request, []);
    if (!request.dryRun && mustRecord(verdict, request)) this.remember(verdict, request);
    return verdict;
  }

  private get deadlineMs(): number {
    return this.options.deadlineMs ?? DEFAULT_DEADLINE_MS;
  }

  /**
   * Queues a decision for its project's next batch. It settles with the batch's verdict, or with
   * [Q5] once its own deadline (from arrival, queueing included) passes or its caller has gone: a
   * slow apiserver must not hold every later decision of the project hostage.
   */
  private enqueue(project: string, ctx: ReviewContext, request: AdmissionRequest, signal?: AbortSignal): Promise<Verdict> {
    return new Promise<Verdict>((resolve) => {
      const member: Member = { ctx, request, deadline: this.now() + this.deadlineMs, settled: false, settle: () => {} };
      const timeout = () => {
        if (member.settled) return;
        const conflicts = member.batch?.conflicts ?? 0;
        this.options.onReservation?.(conflicts > 0 ? 'exhausted' : 'timeout');
        member.settle(conflicts > 0 ? denyQ5(ledgerContended(project, conflicts, this.deadlineMs)) : this.timedOut(project));
      };
      const timer = setTimeout(timeout, this.deadlineMs);
      signal?.addEventListener('abort', timeout, { once: true });
      member.settle = (verdict) => {
        if (member.settled) return;
        member.settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', timeout);
        resolve(verdict);
        member.batch?.memberSettled();
      };
      if (signal?.aborted) return timeout();
      let queue = this.queues.get(project);
      if (!queue) this.queues.set(project, (queue = { waiting: [], running: false }));
      queue.waiting.push(member);
      this.pump(project, queue);
    });
  }

  /** Starts the project's next batch unless one is running. */
  private pump(project: string, queue: ProjectQueue): void {
    if (queue.running) return;
    const members = queue.waiting.splice(0).filter((m) => !m.settled);
    if (members.length === 0) {
      if (this.queues.get(project) === queue) this.queues.delete(project);
      return;
    }
    queue.running = true;
    const batch = new Batch(members);
    void this.runBatch(project, batch, queue).finally(() => {
      queue.running = false;
      this.pump(project, queue);
    });
  }

  private timedOut(project: string): Verdict {
    return denyQ5(ledgerTimeout(project, this.deadlineMs));
  }

  /**
   * The project's ledger, from this process's cache or read. A ledger marked for deletion whose
   * entries have all expired is released (its finalizer removed) and counts as empty; one with live
   * entries keeps being used as it is.
   */
  private async ledgerState(project: string, left: () => number, abandoned: AbortSignal): Promise<LedgerState> {
    const ledger = this.options.ledger!;
    const cached = this.ledgerCache.get(project);
    let state = cached ? cached.state : await withinDeadline(ledger.read(project), left(), abandoned);
    if (state.deleting && !state.entries.some((e) => this.isLive(e)) && !holdsEnforcedLimit(state)) {
      await withinDeadline(ledger.release(project, state), left(), abandoned);
      state = { entries: [] };
    } else if (cached) return state;
    this.ledgerCache.set(project, { state, at: this.now() });
    return state;
  }

  /**
   * One group commit: read the ledger (cached), decide every member against it in order, write the
   * new entries with one compare-and-swap. A conflict (another replica wrote first) backs off, takes in
   * the project's decisions that queued meanwhile, re-reads and re-decides the whole batch, until the
   * members' deadlines: under contention one of the writers wins every round, so a round is lost only
   * to progress elsewhere (`maxAttempts` caps the rounds when set). An error or a write that does not
   * answer in time denies the whole batch with [Q5] (such a write may still land: its entries can only
   * make later decisions stricter until they expire).
   */
  private async runBatch(project: string, batch: Batch, queue: ProjectQueue): Promise<void> {
    const ledger = this.options.ledger!;
    const maxAttempts = this.options.maxAttempts ?? Number.POSITIVE_INFINITY;
    const backoff = this.options.backoff ?? { baseMs: 5, maxMs: 100 };
    const left = () => batch.latestDeadline() - this.now();
    const denyAll = (verdict: Verdict) => batch.open().forEach((m) => m.settle(verdict));
    const contended = () => denyQ5(ledgerContended(project, batch.conflicts, this.deadlineMs));
    let transfers = 0;
    let maxTransfers = batch.open().length + 2;
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      if (batch.open().length === 0) return;
      /** The ledger version a write lost against (the watch usually brings the newer one during the back-off). */
      let lostAt: string | undefined;
      try {
        const state = await this.ledgerState(project, left, batch.abandoned);
        if (this.fleet && state.fleet !== undefined) this.fleet.options.onEnforced?.(project, enforcedOf(state, project));
        const decided = this.decideBatch(batch.open(), state, project);
        if (decided.growth) {
          // A growth beyond this member's enforced limit: room from the hub first, then decide again.
          await this.growThroughHub(project, decided.growth, left(), batch.abandoned);
          this.ledgerCache.delete(project);
          attempt -= 1; // a transfer is no lost round of the ledger's CAS; its own count bounds it
          if (++transfers > maxTransfers) return denyAll(contended());
          continue;
        }
        if (decided.records.length === 0) return decided.verdicts.forEach(([m, v]) => m.settle(v));
        lostAt = state.resourceVersion;
        const written = await withinDeadline(ledger.write(project, state, decided.entries), left(), batch.abandoned);
        this.ledgerCache.set(project, { state: written, at: this.now() });
        this.options.onLedgerWrite?.(decided.records.length);
        for (const [verdict, request] of decided.records) {
          this.options.onReservation?.('reserved');
          this.remember(verdict, request);
        }
        return decided.verdicts.forEach(([m, v]) => m.settle(v));
      } catch (err) {
        if (!(err instanceof LedgerConflict)) this.ledgerCache.delete(project);
        if (err instanceof DeadlineExceeded) {
          const outcome = batch.conflicts > 0 ? 'exhausted' : 'timeout';
          for (const m of batch.open()) {
            this.options.onReservation?.(outcome);
            m.settle(outcome === 'exhausted' ? contended() : this.timedOut(project));
          }
          return;
        }
        if (!(err instanceof LedgerConflict)) {
          this.options.onReservation?.('error');
          return denyAll(denyQ5(ledgerWriteFailed(project, (err as Error).message)));
        }
        batch.conflicts += 1;
        this.options.onReservation?.('conflict');
        // Another replica won this round: back off (jittered) before trying again, within the deadline.
        const pause = Math.min(backoff.maxMs, backoff.baseMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
        await new Promise((r) => setTimeout(r, Math.min(pause, Math.max(0, left()))));
        // The winner's write is usually in the cache by now (observeLedger): decide against it without a
        // read, as the winner does. Otherwise read it.
        const cached = this.ledgerCache.get(project);
        if (!cached?.state.resourceVersion || lostAt === undefined || !isNewerVersion(cached.state.resourceVersion, lostAt)) this.ledgerCache.delete(project);
        const joining = queue.waiting.splice(0).filter((m) => !m.settled);
        batch.absorb(joining);
        maxTransfers += joining.length;
      }
    }
    this.options.onReservation?.('exhausted');
    denyAll(contended());
  }

  /**
   * Decides the members in arrival order against one ledger state: each admitted change that must be
   * recorded becomes an entry the later members count. An entry for a (namespace, quota) that has one
   * already is merged into it (mergeEntry): it never shrinks. Dry runs are decided the same way and record nothing.
   */
  private decideBatch(members: readonly Member[], state: LedgerState, project: string): { verdicts: Array<[Member, Verdict]>; records: Array<[Verdict, AdmissionRequest]>; entries: LedgerEntry[]; growth?: FleetGrowthNeed } {
    let entries = state.entries.filter((e) => this.isLive(e));
    const verdicts: Array<[Member, Verdict]> = [];
    const records: Array<[Verdict, AdmissionRequest]> = [];
    for (const m of members) {
      const snapshot = this.fleetView(m.ctx.snapshot, project, state);
      const verdict = this.judged({ ...m.ctx, snapshot, pending: this.withReservations(entries, snapshot) }, m.request, overlayWrites(entries, m.request.namespace ?? ''));
      if (verdict.violations.length > 0 && this.fleet) {
        const growth = this.beyondEnforced(m, state, project, entries);
        if (growth) return { verdicts, records, entries, growth };
      }
      verdicts.push([m, verdict]);
      if (verdict.violations.length > 0 || !mustRecord(verdict, m.request) || m.request.dryRun) continue;
      entries = mergeEntry(entries, this.entryFor(m.request, verdict, snapshot));
      records.push([verdict, m.request]);
    }
    return { verdicts, records, entries };
  }

  /**
   * Whether a denied member would be admitted if its project's fleet-budgeted resources were budgeted
   * at the most this member could be granted, and by how much it is then beyond E: a growth to ask the
   * hub for. Undefined when it is denied for another reason, or its project is not fleet-budgeted here.
   */
  private beyondEnforced(m: Member, state: LedgerState, project: string, entries: LedgerEntry[]): FleetGrowthNeed | undefined {
    const cluster = this.fleet!.cluster;
    const source = m.ctx.snapshot.project(project);
    if (!source || !fleetBudgetOn(source, cluster)) return undefined;
    const snapshot = this.fleetView(m.ctx.snapshot, project, state, true);
    const pending = this.withReservations(entries, snapshot);
    const relaxed = this.judged({ ...m.ctx, snapshot, pending }, m.request, overlayWrites(entries, m.request.namespace ?? ''));
    const a = relaxed.allocation;
    if (relaxed.violations.length > 0 || !a) return undefined;
    const enforced = memberLimits(source, cluster, enforcedOf(state, project))!;
    const viewed = snapshot.project(project)!;
    const after = sumResources([othersTotal(snapshot, viewed, cluster, a.namespace, pending), a.resources]);
    const need = needBeyond(enforced, after);
    return need ? { member: m, need, enforced, relaxed } : undefined;
  }

  /**
   * Asks the hub for a member's growth beyond E (FleetGrowth). Granted: E was raised, the batch is
   * decided again (a dry run is answered with its verdict against the room the hub would grant).
   * Refused or no answer: the member is denied with F2.
   */
  private async growThroughHub(project: string, growth: FleetGrowthNeed, leftMs: number, abandoned: AbortSignal): Promise<void> {
    const dryRun = growth.member.request.dryRun === true;
    const outcome = await this.fleet!.request(project, growth.need, growth.enforced, leftMs, dryRun, abandoned);
    if (!outcome.ok) return growth.member.settle({ violations: [outcome.violation], warnings: [] });
    if (dryRun) growth.member.settle(growth.relaxed);
  }

  private entryFor(request: AdmissionRequest, verdict: Verdict, snapshot: Snapshot): LedgerEntry {
    const { namespace, resources, quotaWrite } = verdict.allocation!;
    // A Namespace CREATE while this cache still shows a namespace of that name: the uid it may replace.
    const shown = request.operation === 'CREATE' && handledKind(request) === 'Namespace' ? snapshot.namespace(namespace)?.metadata.uid : undefined;
    const quota = handledKind(request) === 'ResourceQuota' ? (quotaWrite?.name ?? request.name) : undefined;
    const write = quotaWrite ? (quotaWrite.quota ? { spec: quotaWrite.quota.spec ?? {} } : null) : undefined;
    const basedOn = (request.oldObject as ResourceQuotaObject | undefined)?.metadata?.resourceVersion;
    return {
      namespace,
      quota,
      // A change that does not grow the namespace reserves nothing: it is recorded for its quota write only.
      allocation: reserves(verdict, request) ? formatResources(resources) : {},
      created: this.now(),
      expires: this.now() + this.options.ttlMs,
      ...(write !== undefined ? { write, versions: writeVersions(request, write), ...(basedOn !== undefined ? { basedOn } : {}) } : {}),
      ...(shown ? { replaces: [shown] } : {}),
    };
  }

  /** This process's pending allocations, raised by the ledger's live reservations (other replicas' too). */
  private withReservations(live: LedgerEntry[], snapshot: Snapshot): PendingAllocations {
    const reserved = new Map<string, Resources>();
    const replaced = new Map<string, Set<string>>();
    for (const e of live) {
      const r = allocationOf(e);
      const prev = reserved.get(e.namespace);
      if (r.size > 0 || e.quota === undefined) reserved.set(e.namespace, prev ? maxResources(prev, r) : r);
      if (e.quota === undefined && e.replaces?.length) {
        const uids = replaced.get(e.namespace) ?? new Set<string>();
        for (const uid of e.replaces) uids.add(uid);
        replaced.set(e.namespace, uids);
      }
    }
    return {
      replacedNamespaces: (namespace) => replaced.get(namespace),
      quotaOverlay: (namespace) => this.overlay(namespace, snapshot, overlayWrites(live, namespace)),
      allocation: (namespace) => {
        const mine = this.pending.allocation(namespace);
        const theirs = reserved.get(namespace);
        return mine && theirs ? maxResources(mine, theirs) : (mine ?? theirs);
      },
      // A ledger holds one project's entries only.
      namespaces: (project) => new Set([...this.pending.namespaces(project), ...reserved.keys()]),
    };
  }

  private remember(verdict: Verdict, request: AdmissionRequest): void {
    const a = verdict.allocation;
    if (!a || verdict.violations.length > 0) return;
    if (a.quotaWrite) {
      let byQuota = this.writes.get(a.namespace);
      if (!byQuota) this.writes.set(a.namespace, (byQuota = new Map()));
      const write = a.quotaWrite.quota ? { spec: a.quotaWrite.quota.spec ?? {} } : null;
      const prev = byQuota.get(a.quotaWrite.name);
      const basedOn = (request.oldObject as ResourceQuotaObject | undefined)?.metadata?.resourceVersion;
      byQuota.set(a.quotaWrite.name, {
        project: a.project,
        quota: a.quotaWrite.quota,
        versions: unionVersions(prev?.versions ?? [], writeVersions(request, write)),
        ...(basedOn !== undefined ? { basedOn } : {}),
        expires: this.now() + this.options.ttlMs,
      });
    }
    if (!reserves(verdict, request)) return;
    const prev = this.local.get(a.namespace);
    const resources = prev ? maxResources(prev.resources, a.resources) : a.resources;
    if (prev && prev.project !== a.project) this.forget(a.namespace);
    this.local.set(a.namespace, { project: a.project, resources, expires: this.now() + this.options.ttlMs });
    let names = this.localByProject.get(a.project);
    if (!names) this.localByProject.set(a.project, (names = new Set()));
    names.add(a.namespace);
  }
}

/**
 * Whether a ledger version seen on the watch is newer than the cached one. The ledger lives in one
 * apiserver whose versions are etcd revisions (increasing integers); anything else counts as newer,
 * which at worst costs one lost compare-and-swap.
 */
function isNewerVersion(seen: string, cached: string | undefined): boolean {
  if (cached === undefined) return true;
  if (/^\d+$/.test(seen) && /^\d+$/.test(cached)) return BigInt(seen) > BigInt(cached);
  return seen !== cached;
}

/**
 * An entry's allocation, parsed once per entry object: every decision of a batch, and of the batches
 * after it while the ledger stays cached, reads all the project's live entries.
 */
const parsedAllocations = new WeakMap<LedgerEntry['allocation'], Resources>();
function allocationOf(entry: LedgerEntry): Resources {
  let parsed = parsedAllocations.get(entry.allocation);
  if (!parsed) parsedAllocations.set(entry.allocation, (parsed = parseResources(entry.allocation)));
  return parsed;
}

/** The recorded quota writes of a namespace among ledger entries. */
function overlayWrites(entries: readonly LedgerEntry[], namespace: string): OverlayWrite[] {
  const out: OverlayWrite[] = [];
  for (const e of entries) {
    if (e.namespace !== namespace || e.write === undefined || !e.quota) continue;
    out.push({ quota: e.quota, write: e.write, versions: e.versions ?? [e.write], ...(e.basedOn !== undefined ? { basedOn: e.basedOn } : {}), created: e.created });
  }
  return out;
}

/** The versions a quota may have once a write is admitted: the write, and the object it replaces (none for a create). */
function writeVersions(request: AdmissionRequest, write: LedgerQuotaWrite): LedgerQuotaWrite[] {
  return unionVersions([write], [request.operation === 'CREATE' ? null : specOf(request.oldObject)]);
}

/**
 * `entries` with `entry` merged in: an entry for the same (namespace, quota) keeps the larger
 * allocation of every resource, the later expiry and every version; the newest write is the new one's.
 */
export function mergeEntry(entries: readonly LedgerEntry[], entry: LedgerEntry): LedgerEntry[] {
  const at = entries.findIndex((e) => e.namespace === entry.namespace && e.quota === entry.quota);
  if (at < 0) return [...entries, entry];
  const old = entries[at]!;
  const merged: LedgerEntry = {
    ...entry,
    allocation: formatResources(maxResources(allocationOf(old), allocationOf(entry))),
    expires: Math.max(old.expires, entry.expires),
  };
  const replaces = [...new Set([...(old.replaces ?? []), ...(entry.replaces ?? [])])];
  if (replaces.length > 0) merged.replaces = replaces;
  if (old.write !== undefined || entry.write !== undefined) {
    merged.versions = unionVersions(old.versions ?? (old.write !== undefined ? [old.write] : []), entry.versions ?? (entry.write !== undefined ? [entry.write] : []));
    if (entry.write === undefined) merged.write = old.write;
  }
  return entries.toSpliced(at, 1, merged);
}

/**
 * Whether an admitted change reserves its namespace's share: when it grows it, and for every
 * Namespace CREATE (a cache may still show an older namespace of that name, being deleted, and then
 * miss the new one between the old one's deletion and the new one's creation).
 */
function reserves(verdict: Verdict, request: AdmissionRequest): boolean {
  return verdict.allocation?.grows === true || (request.operation === 'CREATE' && handledKind(request) === 'Namespace');
}

/** The project whose headroom a request may grow, or undefined when it cannot grow any. */
function mayGrow(ctx: ReviewContext, request: AdmissionRequest): string | undefined {
  const kind = handledKind(request);
  const metadata = request.object?.metadata as { name?: string; labels?: Record<string, string> } | undefined;
  if (kind === 'Namespace' && request.operation === 'CREATE') return projectOfNamespace(ctx, metadata?.name ?? '', metadata?.labels).project?.metadata.name;
  if (kind === 'ResourceQuota' && (request.operation === 'CREATE' || request.operation === 'UPDATE' || request.operation === 'DELETE')) {
    const namespace = request.namespace ?? '';
    return projectOfNamespace(ctx, namespace, ctx.snapshot.namespace(namespace)?.metadata.labels).project?.metadata.name;
  }
  return undefined;
}

/**
 * Whether later decisions of the project must see this admitted change before the cache shows it: it
 * grows the namespace's share (Q1), takes a budgeted resource away from a quota (another quota's
 * Q2/Q3 decision may rely on it), or changes a quota's spec at all (creates, deletes, any other spec
 * change): a namespace holds the minimum over its quotas, so whether a later change of another quota
 * grows the namespace depends on this one (two raises, each capped by the other quota, would
 * otherwise both look non-growing).
 */
function mustRecord(verdict: Verdict, request: AdmissionRequest): boolean {
  const a = verdict.allocation;
  if (a === undefined) return false;
  if (reserves(verdict, request) || a.quotaWrite?.removesCoverage === true) return true;
  if (!a.quotaWrite) return false;
  return request.operation !== 'UPDATE' || specKey(specOf(request.object)) !== specKey(specOf(request.oldObject));
}

/** A member of a batch whose growth is beyond its project's enforced fleet limit. */
interface FleetGrowthNeed {
  member: Member;
  /** Per fleet-budgeted resource, how far the allocation after the change is above E. */
  need: Resources;
  /** min(E, upper bound) the growth was judged against. */
  enforced: Resources;
  /** The verdict with the fleet-budgeted resources at the most this member could be granted. */
  relaxed: Verdict;
}

function denyQ5(violation: Violation): Verdict {
  return { violations: [violation], warnings: [] };
}
