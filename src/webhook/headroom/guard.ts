/**
 * Q5: headroom decisions that cannot overspend (docs/design.md, "Headroom under concurrency").
 * - In one process, decisions of a project are serialised and what was admitted is remembered
 *   (`pending`) until the cache shows it or it expires.
 * - Across replicas, a growing allocation or a change of a quota's spec is first recorded in the
 *   ledger with a compare-and-swap write; the decision counts max(observed, reserved) per namespace,
 *   so a reservation only makes it stricter. Dry runs reserve nothing.
 * - A ledger entry leaves only by expiry, and an entry for the same (namespace, quota) never shrinks:
 *   no replica's cache decides for another one (docs/adr/0003-headroom-ledger.md).
 * - A replica whose cache is not current (a watch re-listing or broken) takes no decision that needs
 *   the project's turn.
 */
import { projectOfNamespace, type ReviewContext, type Verdict } from '../../validate/admission.js';
import { budgetIn, budgetPathIn, defaultsOf } from '../../validate/budget/layers.js';
import { maxResources, sumResources } from '../../validate/resource-lists.js';
import { namespaceAllocation, quotaHold } from '../../validate/quota-hold.js';
import { namespaceShare, otherShares, othersTotal, type PendingAllocations } from '../../validate/shares.js';
import type { Resources } from '../../validate/types.js';
import { checkBudgetFit, grows } from '../../validate/budget/check.js';
import { cacheBehindLedger, cacheNotCurrent } from '../../validate/rules/headroom.js';
import type { Snapshot, Violation } from '../../validate/types.js';
import type {
  LedgerChange,
  LedgerEntry,
  LedgerQuotaWrite,
  LedgerState,
  LedgerStore,
  StreamMarks,
} from '../../ledger/ledger.js';
import { handledKind, verdictFor, type AdmissionRequest } from '../review.js';
import { enforcedOf } from '../../fleet/enforced-record.js';
import { fleetBudgetOn, memberCapView, memberLimits, reachableLimits } from '../../fleet/member-budget.js';
import { FleetGrowth, needBeyond, type FleetGuardOptions } from './fleet-growth.js';
import { AssumedState } from './assumed-state.js';
import {
  DEFAULT_DEADLINE_MS,
  GroupCommit,
  type DecidedBatch,
  type QueuedDecision,
  type ReservationOutcome,
  type RoundPhase,
} from './group-commit.js';
import { LedgerCache } from './ledger-cache.js';
import { LedgerReservations, entryFor, mustRecord } from './ledger-entries.js';
import { marksReach, settle } from './ledger-settlement.js';
import { lowestQuotas, overlayWrites, replacedCeiling, uncoveredCeiling, type OverlayWrite } from './quota-versions.js';

export type { ReservationOutcome } from './group-commit.js';

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
  /** How long each phase of a ledger round took (group-commit.ts RoundPhase). */
  onRoundPhase?: (phase: RoundPhase, ms: number) => void;
  /**
   * Whether the watch cache is current (listed, and every watch connected). While it is not, every
   * decision that takes its project's turn is refused with [Q5]: a stale cache could call a growing
   * change non-growing. Default: always current.
   */
  cacheCurrent?: () => boolean;
  /**
   * This cluster as a fleet member (docs/adr/0039-fleet-budgets.md; needs `ledger`): a Project
   * whose spec.fleet.clusters names it is budgeted, per fleet-budgeted resource, at the enforced limit
   * E kept in its ledger; a growth beyond E asks the hub for room before it is decided.
   */
  fleet?: FleetGuardOptions;
  /**
   * Settlement (docs/adr/0003-headroom-ledger.md, docs/adr/0003-headroom-ledger.md),
   * on this replica's watch streams. Given, the replica honours the ledger's settled marks: a batch is
   * decided only once its watermarks reach the marks of the ledger it decides from (waiting with
   * `catchUp`, else [Q5]), and its writes carry the marks over. `settles`: its writes also drop the
   * entries its cache shows and record its watermarks as the marks, and its entries carry the
   * watermarks they were admitted at. Absent: marks are neither honoured nor written (a replica must
   * then never run beside one that settles).
   */
  settlement?: { streams: CacheStreams; settles: boolean };
}

/** Where a replica's watch caches stand, and a way to make them catch up. */
export interface CacheStreams {
  /**
   * Per stream, the highest resourceVersion delivered (events, bookmarks, the initial list);
   * undefined while not synced.
   */
  marks(): StreamMarks | undefined;
  /** Resolves true once `marks()` reaches `needed` on every stream, false after `ms` or on `signal`. */
  catchUp(needed: StreamMarks, ms: number, signal: AbortSignal): Promise<boolean>;
}

/**
 * The headroom guard: Q5 over the rules' verdicts. Its jobs live beside it: the group commit
 * (group-commit.ts), the quota-version algebra (quota-versions.ts), this replica's assumed state
 * (assumed-state.ts), the ledger cache fed by the watch (ledger-cache.ts), the ledger entries
 * (ledger-entries.ts) and the fleet member's growth through the hub (fleet-growth.ts).
 */
export class HeadroomGuard {
  /** What this process admitted that its cache does not show yet. */
  private readonly assumed: AssumedState;
  /** The ledger as last read or written, per project, and when (dropped after a TTL, or with the project). */
  private readonly ledgerCache = new LedgerCache();
  /** The group commit of decisions that need the ledger (undefined: no ledger). */
  private readonly commit: GroupCommit<FleetGrowthNeed> | undefined;
  /** When the next sweep of expired entries is due. */
  private sweepAt = 0;
  private readonly now: () => number;

  /** The fleet member's growth through the hub (undefined: no fleet member, or no ledger). */
  private readonly fleet: FleetGrowth | undefined;

  constructor(private readonly options: HeadroomGuardOptions) {
    this.now = options.now ?? Date.now;
    this.assumed = new AssumedState(options.ttlMs, this.now);
    if (options.fleet && !options.ledger)
      throw new Error(
        'a fleet member needs the headroom ledger (crossReplicaReservation: true): its enforced limit lives there',
      );
    this.fleet = options.fleet && options.ledger ? new FleetGrowth(options.fleet, options.ledger) : undefined;
    this.commit = options.ledger
      ? new GroupCommit<FleetGrowthNeed>(
          {
            ledger: options.ledger,
            cache: this.ledgerCache,
            now: this.now,
            deadlineMs: options.deadlineMs ?? DEFAULT_DEADLINE_MS,
            ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}),
            ...(options.backoff ? { backoff: options.backoff } : {}),
            ...(options.onReservation ? { onReservation: options.onReservation } : {}),
            ...(options.onLedgerWrite ? { onLedgerWrite: options.onLedgerWrite } : {}),
            ...(options.onRoundPhase ? { onRoundPhase: options.onRoundPhase } : {}),
            ledgerWatched: options.ledger.subscribe !== undefined,
          },
          {
            decide: (decisions, state, project) => this.decideBatch(decisions, state, project),
            grow: (project, growth, leftMs, abandoned) => this.growThroughHub(project, growth, leftMs, abandoned),
            assume: (verdict, request) => this.assumed.assume(verdict, request),
            ...(options.settlement
              ? {
                  ready: (_project: string, state: LedgerState, leftMs: number, abandoned: AbortSignal) =>
                    this.ready(state, leftMs, abandoned),
                  behind: (project: string) =>
                    denyQ5(cacheBehindLedger(project, options.deadlineMs ?? DEFAULT_DEADLINE_MS)),
                }
              : {}),
            stateRead: (project, state) => {
              if (this.fleet && state.fleet !== undefined)
                this.fleet.options.onEnforced?.(project, enforcedOf(state, project));
            },
          },
        )
      : undefined;
    options.ledger?.subscribe?.((change) => this.observeLedger(change));
  }

  /**
   * A ledger write seen on the ledger's watch (any replica's): a project this process has cached is
   * given the newer state, so its next compare-and-swap does not lose to a write that landed long
   * before it. A project not cached is left alone (it is read when it is next needed).
   */
  observeLedger(change: LedgerChange): void {
    this.ledgerCache.observe(change);
    this.commit?.observed(change);
  }

  /**
   * The snapshot the rules see for `project` decided against `state`: on a fleet member, its
   * fleet-budgeted resources capped at min(E, upper bound) (the budget's fleet-cap layer) (`reachable`: at the most it
   * could be granted, to find what a denied growth needs). Other projects and non-members: the snapshot itself.
   */
  private fleetView(
    snapshot: Snapshot,
    at: number,
    project: string,
    state: LedgerState | undefined,
    reachable = false,
  ): Snapshot {
    const cluster = this.fleet?.cluster;
    if (!cluster) return snapshot;
    const enforced = state ? enforcedOf(state, project) : undefined;
    return memberCapView(snapshot, cluster, (p) => {
      // Only the Projects the snapshot holds: a Project under review is judged as written.
      if (snapshot.project(p.metadata.name ?? '') !== p) return undefined;
      if (p.metadata.name !== project) {
        // Not the project decided: E as this process last saw it (for warnings), else its bound.
        const cached = this.ledgerCache.get(p.metadata.name ?? '');
        return cached ? memberLimits(p, cluster, at, enforcedOf(cached, p.metadata.name ?? '')) : undefined;
      }
      if (reachable) return reachableLimits(p, cluster, at);
      return memberLimits(p, cluster, at, enforced ?? new Map());
    });
  }

  /** What this process admitted and the cache does not show yet. */
  get pending(): PendingAllocations {
    return this.assumed.pending;
  }

  get pendingCount(): number {
    return this.assumed.shareCount;
  }

  /** How many entries each per-process structure holds (each is pruned by age and when its project goes). */
  get sizes(): { pending: number; writes: number; ledgerCache: number; queues: number; turns: number } {
    return {
      pending: this.assumed.shareCount,
      writes: this.assumed.writeCount,
      ledgerCache: this.ledgerCache.size,
      queues: this.commit?.queueCount ?? 0,
      turns: this.commit?.turnCount ?? 0,
    };
  }

  /** Drops what has expired, at most once per TTL (called on decisions and cache events). */
  private sweep(): void {
    const now = this.now();
    if (now < this.sweepAt) return;
    this.sweepAt = now + this.options.ttlMs;
    this.assumed.sweep();
    this.ledgerCache.sweep(now, this.options.ttlMs);
    this.commit?.sweepTurns(this.options.ttlMs);
  }

  /** Called when a Project is deleted: nothing of it is needed any more in this process. */
  forgetProject(project: string): void {
    this.assumed.forgetProject(project);
    this.ledgerCache.delete(project);
    this.commit?.forgetProject(project);
  }

  /**
   * Called on cache events: forget what the cache now shows. This only relaxes this process's own
   * memory: the ledger's entries (its own included) count until they expire whatever any cache shows.
   */
  observe(ctx: Pick<ReviewContext, 'snapshot' | 'config' | 'at'>, namespace: string): void {
    this.sweep();
    this.assumed.observe(ctx, namespace);
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
  readonly decide = (
    ctx: ReviewContext,
    request: AdmissionRequest,
    signal?: AbortSignal,
  ): Verdict | Promise<Verdict> => {
    this.sweep();
    const withLocal: ReviewContext = { ...ctx, pending: this.assumed.pendingOver(ctx.snapshot) };
    if (this.options.cacheCurrent && !this.options.cacheCurrent()) return this.decideWithStaleCache(withLocal, request);
    // Without a ledger a decision awaits nothing: it runs to completion, which serialises it with
    // every other decision of the project without any queue. Which project it may grow need not be
    // known then: the verdict's allocation says what it grew.
    if (!this.options.ledger) return this.decideLocally(withLocal, request);
    const project = mayGrow(withLocal, request);
    if (!project)
      return verdictFor(
        this.fleet
          ? { ...withLocal, snapshot: this.fleetView(withLocal.snapshot, withLocal.at, '', undefined) }
          : withLocal,
        request,
      );
    return this.commit!.enqueue(project, withLocal, request, signal);
  };

  /**
   * The rules' verdict, made stricter for a quota write they call non-growing: "growing" is judged
   * against this cache, but another replica may count the namespace lower (a quota created or lowered
   * a moment ago that this cache does not show yet, a status the quota controller just lowered). When
   * the namespace's new share is above the lowest count any replica may hold — the lowest versions of
   * its recorded quotas without status, or what the ledger reserves for it — the change is judged as
   * growing: Q1 checks that it fits, and it reserves its share. And where the rules counted the
   * namespace as limited by no quota after the change although a quota with recorded writes may still
   * be there, its share counts that quota's largest possible limit (uncoveredCeiling, ADR 0002).
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
    const versions: Map<string, LedgerQuotaWrite[]> = this.assumed.writeVersionsIn(a.namespace);
    for (const w of recorded) versions.set(w.quota, [...(versions.get(w.quota) ?? []), ...w.versions]);
    const budget = budgetIn(ctx.snapshot, project, cluster, ctx.at);
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
    const raised = ceiling !== undefined && grows(a.resources, ceiling);
    const share = raised ? maxResources(a.resources, ceiling) : a.resources;
    if (a.grows && !raised) return verdict;
    if (!a.grows) {
      let lowest = namespaceAllocation(
        quotaHold(lowestQuotas(ctx.snapshot, a.namespace, versions)),
        budget,
        defaultsOf(project),
      );
      const reserved = ctx.pending?.allocation(a.namespace);
      if (reserved) lowest = maxResources(lowest, reserved);
      if (!grows(lowest, share)) return verdict;
    }
    const subject = `ResourceQuota ${a.namespace}/${a.quotaWrite.name}`;
    const others = othersTotal(ctx.snapshot, project, cluster, ctx.at, a.namespace, ctx.pending);
    const scope = {
      project: a.project,
      cluster,
      at: ctx.at,
      budget,
      budgetPath: budgetPathIn(ctx.snapshot, project, cluster),
    };
    // C1 as strictly as Q1 here: the ledger's reservations are in `others`, and the share is checked whatever this
    // cache counted before.
    const violations = checkBudgetFit({
      scope,
      project,
      pricing: ctx.config.pricing,
      subject,
      share: { namespace: a.namespace, resources: share, defaulted: false },
      before: () =>
        namespaceShare(ctx.snapshot, project, cluster, ctx.at, a.namespace, ctx.pending ? { pending: ctx.pending } : {})
          .resources,
      others,
      otherShares: () =>
        otherShares(ctx.snapshot, project, cluster, ctx.at, a.namespace, ctx.pending).map((s) => s.resources),
      path: ['spec', 'hard'],
      always: true,
    });
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
    if (!request.dryRun && mustRecord(verdict, request)) this.assumed.assume(verdict, request);
    return verdict;
  }
  /**
   * Decides the decisions in arrival order against one ledger state: each admitted change that must be
   * recorded becomes an entry the later decisions count. An entry for a (namespace, quota) that has one
   * already is merged into it (mergeEntry): it never shrinks. Dry runs are decided the same way and record nothing.
   */
  private decideBatch(
    decisions: readonly QueuedDecision[],
    state: LedgerState,
    project: string,
  ): DecidedBatch<FleetGrowthNeed> {
    const live = state.entries.filter((e) => this.isLive(e));
    // Entries this replica's own cache shows leave with this write (ledger-settlement.ts); the decisions
    // below count them from the cache. Only when ready() let this replica decide from `state`.
    const settler = this.options.settlement?.settles ? this.options.settlement.streams : undefined;
    const settlement =
      settler && decisions.length > 0
        ? settle(
            live,
            decisions[0]!.ctx.snapshot,
            settler.marks(),
            state.settledThrough,
            project,
            decisions[0]!.ctx.config.clusterName,
            decisions[0]!.ctx.at,
          )
        : undefined;
    // The reservations are counted once per batch, then entry by entry as the batch records them, not
    // again for each decision.
    const ledger = new LedgerReservations(settlement?.kept ?? live);
    const verdicts: Array<[QueuedDecision, Verdict]> = [];
    const records: Array<[Verdict, AdmissionRequest]> = [];
    for (const m of decisions) {
      const snapshot = this.fleetView(m.ctx.snapshot, m.ctx.at, project, state);
      const verdict = this.judged(
        { ...m.ctx, snapshot, pending: this.withReservations(ledger, snapshot) },
        m.request,
        overlayWrites(ledger.entries, m.request.namespace ?? ''),
      );
      if (verdict.violations.length > 0 && this.fleet) {
        const growth = this.beyondEnforced(m, state, project, ledger);
        if (growth) return { verdicts, records, entries: ledger.entries, growth };
      }
      verdicts.push([m, verdict]);
      if (verdict.violations.length > 0 || !mustRecord(verdict, m.request) || m.request.dryRun) continue;
      ledger.record(entryFor(m.request, verdict, snapshot, this.now(), this.options.ttlMs, settler?.marks()));
      records.push([verdict, m.request]);
    }
    return {
      verdicts,
      records,
      entries: ledger.entries,
      ...(settlement?.settledThrough ? { settledThrough: settlement.settledThrough } : {}),
    };
  }

  /** Whether this replica's caches have reached the settled marks of `state` (waiting for them within `leftMs`). */
  private ready(state: LedgerState, leftMs: number, abandoned: AbortSignal): boolean | Promise<boolean> {
    const { streams } = this.options.settlement!;
    if (marksReach(streams.marks(), state.settledThrough)) return true;
    return streams.catchUp(state.settledThrough!, leftMs, abandoned);
  }

  /**
   * Whether a denied member would be admitted if its project's fleet-budgeted resources were budgeted
   * at the most this member could be granted, and by how much it is then beyond E: a growth to ask the
   * hub for. Undefined when it is denied for another reason, or its project is not fleet-budgeted here.
   */
  private beyondEnforced(
    m: QueuedDecision,
    state: LedgerState,
    project: string,
    ledger: LedgerReservations,
  ): FleetGrowthNeed | undefined {
    const cluster = this.fleet!.cluster;
    const source = m.ctx.snapshot.project(project);
    if (!source || !fleetBudgetOn(source, cluster)) return undefined;
    const snapshot = this.fleetView(m.ctx.snapshot, m.ctx.at, project, state, true);
    const pending = this.withReservations(ledger, snapshot);
    const relaxed = this.judged(
      { ...m.ctx, snapshot, pending },
      m.request,
      overlayWrites(ledger.entries, m.request.namespace ?? ''),
    );
    const a = relaxed.allocation;
    if (relaxed.violations.length > 0 || !a) return undefined;
    const enforced = memberLimits(source, cluster, m.ctx.at, enforcedOf(state, project))!;
    const viewed = snapshot.project(project)!;
    const after = sumResources([othersTotal(snapshot, viewed, cluster, m.ctx.at, a.namespace, pending), a.resources]);
    const need = needBeyond(enforced, after);
    return need ? { member: m, need, enforced, relaxed } : undefined;
  }

  /**
   * Asks the hub for a member's growth beyond E (FleetGrowth). Granted: E was raised, the batch is
   * decided again (a dry run is answered with its verdict against the room the hub would grant).
   * Refused or no answer: the member is denied with F2.
   */
  private async growThroughHub(
    project: string,
    growth: FleetGrowthNeed,
    leftMs: number,
    abandoned: AbortSignal,
  ): Promise<void> {
    const dryRun = growth.member.request.dryRun === true;
    const outcome = await this.fleet!.request(project, growth.need, growth.enforced, leftMs, dryRun, abandoned);
    if (!outcome.ok) return growth.member.settle({ violations: [outcome.violation], warnings: [] });
    if (dryRun) growth.member.settle(growth.relaxed);
  }

  /**
   * This process's pending allocations, raised by the ledger's live reservations (other replicas' too),
   * read from `ledger` when a decision asks (within the decision, synchronously).
   */
  private withReservations(ledger: LedgerReservations, snapshot: Snapshot): PendingAllocations {
    const live = ledger.entries;
    return {
      replacedNamespaces: (namespace) => ledger.replaced(namespace),
      quotaOverlay: (namespace) => this.assumed.overlay(namespace, snapshot, overlayWrites(live, namespace)),
      allocation: (namespace) => {
        const mine = this.assumed.pending.allocation(namespace);
        const theirs = ledger.allocation(namespace);
        return mine && theirs ? maxResources(mine, theirs) : (mine ?? theirs);
      },
      // A ledger holds one project's entries only.
      namespaces: (project) => new Set([...this.assumed.pending.namespaces(project), ...ledger.namespaces()]),
      allocated: () => new Set([...this.assumed.allocatedNamespaces(), ...ledger.namespaces()]),
    };
  }
}

/** The project whose headroom a request may grow, or undefined when it cannot grow any. */
function mayGrow(ctx: ReviewContext, request: AdmissionRequest): string | undefined {
  const kind = handledKind(request);
  const metadata = request.object?.metadata as { name?: string; labels?: Record<string, string> } | undefined;
  if (kind === 'Namespace' && request.operation === 'CREATE')
    return projectOfNamespace(ctx, metadata?.name ?? '', metadata?.labels).project?.metadata.name;
  if (
    kind === 'ResourceQuota' &&
    (request.operation === 'CREATE' || request.operation === 'UPDATE' || request.operation === 'DELETE')
  ) {
    const namespace = request.namespace ?? '';
    return projectOfNamespace(ctx, namespace, ctx.snapshot.namespace(namespace)?.metadata.labels).project?.metadata
      .name;
  }
  return undefined;
}
/** A member of a batch whose growth is beyond its project's enforced fleet limit. */
interface FleetGrowthNeed {
  member: QueuedDecision;
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
