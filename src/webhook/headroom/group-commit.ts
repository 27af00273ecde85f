/**
 * The group commit of the headroom guard (docs/design.md, "Headroom under concurrency"): decisions of
 * one project that need the headroom ledger queue while its write is in flight; when it returns, all of
 * them are decided in arrival order against the same ledger state and persisted with one
 * compare-and-swap write. A lost compare-and-swap backs off, takes in what queued meanwhile and decides
 * the batch again, within the decisions' deadlines. What a decision is and what it records is the
 * guard's (BatchDecider); this file owns the queues, the CAS loop and the deadlines.
 */
import { within } from '../../deadline.js';
import {
  LedgerConflict,
  type LedgerChange,
  type LedgerEntry,
  type LedgerState,
  type LedgerStore,
  type StreamMarks,
} from '../../ledger/ledger.js';
import { LedgerUnreadable } from '../../ledger/ledger-format.js';
import { holdsEnforcedLimit } from '../../fleet/enforced-record.js';
import type { ReviewContext, Verdict } from '../../validate/admission.js';
import { ledgerContended, ledgerTimeout, ledgerUnreadable, ledgerWriteFailed } from '../../validate/rules/headroom.js';
import type { Violation } from '../../validate/types.js';
import { isNewerVersion, type LedgerCache } from './ledger-cache.js';
import { marksLive } from './ledger-settlement.js';
import type { AdmissionRequest } from '../review.js';
import { WriterTurns, type TurnWait } from './writer-turns.js';

/**
 * `behind`: this replica's caches did not reach the ledger's settled marks in time (ADR 0003).
 * `announced`: a batch that kept losing made itself seen (LedgerStore.announce), once per such round.
 */
export type ReservationOutcome = 'reserved' | 'conflict' | 'announced' | 'exhausted' | 'error' | 'timeout' | 'behind';

/**
 * A batch announces itself (LedgerStore.announce) after this many lost rounds in a row, and again
 * after as many more: to a replica that keeps winning, it is another replica's write, which makes it
 * take turns (writer-turns.ts) even when the loser has not won a round for a while.
 */
const ANNOUNCE_EVERY_LOST_ROUNDS = 2;

export const DEFAULT_DEADLINE_MS = 2000;

/**
 * Where a decision's time goes between its arrival and its verdict, phase by phase (reported per batch
 * round, to `onRoundPhase`): `queued` waiting while the project's previous batch runs, `turn` waiting for
 * this replica's turn to write (writer-turns.ts), `read` the ledger read when not cached, `ready`
 * catching up to the settled marks, `decide` the decisions themselves, `write` the compare-and-swap,
 * `lost` the wait after a lost round.
 */
export type RoundPhase = 'queued' | 'turn' | 'read' | 'ready' | 'decide' | 'write' | 'lost';

class DeadlineExceeded extends Error {}

/**
 * `p`, or a DeadlineExceeded once `ms` have passed or `signal` aborts (every caller left); the call
 * itself is not cancelled: see runBatch.
 */
const withinDeadline = <T>(p: Promise<T>, ms: number, signal?: AbortSignal): Promise<T> =>
  within(p, ms, signal, () => new DeadlineExceeded());

/** A decision waiting for (or in) its project's batch. */
export interface QueuedDecision {
  ctx: ReviewContext;
  request: AdmissionRequest;
  /** Epoch ms after which it is refused with [Q5]. */
  deadline: number;
  settled: boolean;
  settle(verdict: Verdict): void;
  batch?: Batch;
}

interface ProjectQueue {
  waiting: QueuedDecision[];
  running: boolean;
}

/**
 * The reason a batch's ledger calls are aborted with. A shared value: abort() without a reason builds a
 * DOMException with its stack for every batch (1.6 % of a shipped replica's CPU), and no caller reads it.
 */
const BATCH_SETTLED = new Error('every decision of the batch has settled');

/**
 * The decisions of one group commit; `abandoned` aborts its ledger calls once every one has settled.
 * A batch that lost a compare-and-swap takes in the decisions that queued meanwhile (absorb): its next
 * round decides them too, so contention makes batches larger instead of queues longer.
 */
class Batch {
  private readonly controller = new AbortController();
  private readonly decisions: QueuedDecision[] = [];
  /** Compare-and-swap rounds lost to another writer so far. */
  conflicts = 0;
  /** Whether the batch is waiting for this replica's caches to reach the ledger's settled marks. */
  catchingUp = false;
  constructor(decisions: readonly QueuedDecision[]) {
    this.absorb(decisions);
  }
  absorb(decisions: readonly QueuedDecision[]): void {
    for (const d of decisions) {
      d.batch = this;
      this.decisions.push(d);
    }
  }
  get abandoned(): AbortSignal {
    return this.controller.signal;
  }
  open(): QueuedDecision[] {
    return this.decisions.filter((d) => !d.settled);
  }
  latestDeadline(): number {
    return Math.max(...this.open().map((d) => d.deadline));
  }
  decisionSettled(): void {
    if (this.decisions.every((d) => d.settled)) this.controller.abort(BATCH_SETTLED);
  }
}

/** A batch decided against one ledger state. */
export interface DecidedBatch<G> {
  verdicts: Array<[QueuedDecision, Verdict]>;
  /** The admitted changes the write records. */
  records: Array<[Verdict, AdmissionRequest]>;
  /** The ledger's entries after the batch. */
  entries: LedgerEntry[];
  /** The ledger's settled marks after the batch (undefined: as read). */
  settledThrough?: StreamMarks;
  /** A decision that needs room from elsewhere first (a fleet decision's growth beyond its enforced limit). */
  growth?: G;
}

/** What the group commit asks of the guard. */
export interface BatchDecider<G> {
  /** Decides the open decisions in arrival order against `state`. */
  decide(decisions: readonly QueuedDecision[], state: LedgerState, project: string): DecidedBatch<G>;
  /** Gets the room `growth` needs (or settles its decision); the batch is then decided again. */
  grow(project: string, growth: G, leftMs: number, abandoned: AbortSignal): Promise<void>;
  /** An admitted change whose entry the ledger now holds. */
  assume(verdict: Verdict, request: AdmissionRequest): void;
  /** The ledger state a batch is about to be decided against. */
  stateRead?(project: string, state: LedgerState): void;
  /**
   * Whether this replica may decide from `state`: its own caches have reached the ledger's settled
   * marks (waiting for them at most `leftMs`). False: the batch is refused with `behind`'s [Q5].
   */
  ready?(project: string, state: LedgerState, leftMs: number, abandoned: AbortSignal): boolean | Promise<boolean>;
  /** The [Q5] verdict of a batch whose replica's caches stayed behind the ledger's settled marks. */
  behind?(project: string): Verdict;
}

export interface GroupCommitOptions {
  ledger: LedgerStore;
  cache: LedgerCache;
  now: () => number;
  deadlineMs: number;
  maxAttempts?: number;
  backoff?: { baseMs: number; maxMs: number };
  onReservation?: (outcome: ReservationOutcome) => void;
  onLedgerWrite?: (records: number) => void;
  /** How long a phase of a batch round took (ms); `queued` once per batch, for its oldest decision. */
  onRoundPhase?: (phase: RoundPhase, ms: number) => void;
  /**
   * Whether a watch of the ledgers feeds `cache` (LedgerCache.observe). Then writers take turns on its
   * events (writer-turns.ts): a batch starts once the watch has brought this replica's previous write of
   * the project (or, after two in a row while another replica writes it, that replica's next one), and
   * a lost round goes again once it brings the winner's (docs/adr/0003-headroom-ledger.md).
   */
  ledgerWatched?: boolean;
}

export class GroupCommit<G> {
  /** Per project: the decisions waiting for its next batch, and whether one is running. */
  private readonly queues = new Map<string, ProjectQueue>();
  /** Whose turn it is to write each project's ledger (writer-turns.ts). */
  private readonly turns: WriterTurns;

  constructor(
    private readonly options: GroupCommitOptions,
    private readonly decider: BatchDecider<G>,
  ) {
    this.turns = new WriterTurns(options.deadlineMs);
  }

  /** A ledger write the watch brought (any replica's). */
  observed(change: LedgerChange): void {
    if (!('deleted' in change))
      this.turns.observed(change.project, change.resourceVersion, this.now(), change.announced === true);
  }

  get queueCount(): number {
    return this.queues.size;
  }

  /** Drops the project's queue when nothing waits in it, and whose turn it is. */
  forgetProject(project: string): void {
    const queue = this.queues.get(project);
    if (queue && (queue.running || queue.waiting.length > 0)) return;
    this.queues.delete(project);
    this.turns.forget(project);
  }

  /** How many projects' turns this replica tracks (dropped with their project, or after `idleMs` of quiet). */
  get turnCount(): number {
    return this.turns.size;
  }

  sweepTurns(idleMs: number): void {
    this.turns.sweep(this.now(), idleMs);
  }

  /**
   * Waits, within `left`, for this replica's turn to write the project's ledger (writer-turns.ts): its
   * previous write back from the watch, after two in a row another replica's write, or after another
   * replica's announcement that replica's write (ADR 0003).
   */
  private async turn(project: string, left: number): Promise<void> {
    if (!this.options.ledgerWatched) return;
    const end = this.now() + left;
    // The event that ends a wait may be another replica's announcement, which asks for one more wait
    // (its write). A wait that ended on its cap asks for the same again: that is where it stops.
    let previous: TurnWait | undefined;
    for (
      let wait = this.turns.before(project, this.now());
      wait && !sameWait(wait, previous);
      wait = this.turns.before(project, this.now())
    ) {
      const remaining = end - this.now();
      if (remaining <= 0) return;
      await this.ledgerCache.seen(project, wait.version, Math.min(wait.capMs, remaining), wait.strictlyNewer);
      previous = wait;
    }
  }

  /** A ledger entry counts until it expires, whatever any cache shows: another replica's cache may lag. */
  isLive(entry: LedgerEntry): boolean {
    return entry.expires > this.options.now();
  }

  private get deadlineMs(): number {
    return this.options.deadlineMs;
  }

  private get ledgerCache(): LedgerCache {
    return this.options.cache;
  }

  private now(): number {
    return this.options.now();
  }

  /**
   * Queues a decision for its project's next batch. It settles with the batch's verdict, or with
   * [Q5] once its own deadline (from arrival, queueing included) passes or its caller has gone: a
   * slow apiserver must not hold every later decision of the project hostage.
   */
  enqueue(project: string, ctx: ReviewContext, request: AdmissionRequest, signal?: AbortSignal): Promise<Verdict> {
    return new Promise<Verdict>((resolve) => {
      const decision: QueuedDecision = {
        ctx,
        request,
        deadline: this.now() + this.deadlineMs,
        settled: false,
        settle: () => {},
      };
      const timeout = () => {
        if (decision.settled) return;
        // Still catching up at its deadline: refused for that (the catch-up's own verdict, a moment later).
        if (decision.batch?.catchingUp && this.decider.behind) {
          this.options.onReservation?.('behind');
          return decision.settle(this.decider.behind(project));
        }
        const conflicts = decision.batch?.conflicts ?? 0;
        this.options.onReservation?.(conflicts > 0 ? 'exhausted' : 'timeout');
        decision.settle(
          conflicts > 0 ? denyQ5(ledgerContended(project, conflicts, this.deadlineMs)) : this.timedOut(project),
        );
      };
      const timer = setTimeout(timeout, this.deadlineMs);
      signal?.addEventListener('abort', timeout, { once: true });
      decision.settle = (verdict) => {
        if (decision.settled) return;
        decision.settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', timeout);
        resolve(verdict);
        decision.batch?.decisionSettled();
      };
      if (signal?.aborted) return timeout();
      let queue = this.queues.get(project);
      if (!queue) this.queues.set(project, (queue = { waiting: [], running: false }));
      queue.waiting.push(decision);
      this.pump(project, queue);
    });
  }

  /** Starts the project's next batch unless one is running. */
  private pump(project: string, queue: ProjectQueue): void {
    if (queue.running) return;
    const decisions = queue.waiting.splice(0).filter((m) => !m.settled);
    if (decisions.length === 0) {
      if (this.queues.get(project) === queue) this.queues.delete(project);
      return;
    }
    queue.running = true;
    const batch = new Batch(decisions);
    void this.runBatch(project, batch, queue).finally(() => {
      queue.running = false;
      this.pump(project, queue);
    });
  }

  timedOut(project: string): Verdict {
    return denyQ5(ledgerTimeout(project, this.deadlineMs));
  }

  /**
   * The project's ledger, from this process's cache or read. A ledger marked for deletion whose
   * entries have all expired is released (its finalizer removed) and counts as empty; one with live
   * entries keeps being used as it is.
   */
  private async ledgerState(project: string, left: () => number, abandoned: AbortSignal): Promise<LedgerState> {
    const ledger = this.options.ledger;
    const cached = this.ledgerCache.get(project);
    let state = cached ?? (await withinDeadline(ledger.read(project), left(), abandoned));
    if (
      state.deleting &&
      !state.entries.some((e) => this.isLive(e)) &&
      !marksLive(state.settledThrough, this.now()) &&
      !holdsEnforcedLimit(state)
    ) {
      await withinDeadline(ledger.release(project, state), left(), abandoned);
      state = { entries: [] };
    } else if (cached) return state;
    this.ledgerCache.set(project, state, this.now());
    return state;
  }

  /**
   * Moves the project's ledger version (LedgerStore.announce) and caches the ledger as it then is.
   * False when the store cannot announce, there is no ledger, or the call failed or ran out of time:
   * the batch then waits for the winner's write as after any lost round.
   */
  private async announce(project: string, left: () => number, abandoned: AbortSignal): Promise<boolean> {
    const ledger = this.options.ledger;
    if (!ledger.announce || !this.options.ledgerWatched) return false;
    try {
      const state = await withinDeadline(ledger.announce(project), left(), abandoned);
      if (!state) return false;
      this.ledgerCache.set(project, state, this.now());
      if (state.resourceVersion !== undefined) this.turns.announcedOwn(project, state.resourceVersion, this.now());
      this.options.onReservation?.('announced');
      return true;
    } catch {
      return false;
    }
  }

  /**
   * One group commit: read the ledger (cached), decide every decision against it in order, write the
   * new entries with one compare-and-swap. A conflict (another replica wrote first) backs off, takes in
   * the project's decisions that queued meanwhile, re-reads and re-decides the whole batch, until the
   * decisions' deadlines: under contention one of the writers wins every round, so a round is lost only
   * to progress elsewhere (`maxAttempts` caps the rounds when set). An error or a write that does not
   * answer in time denies the whole batch with [Q5] (such a write may still land: its entries can only
   * make later decisions stricter until they expire).
   */
  private async runBatch(project: string, batch: Batch, queue: ProjectQueue): Promise<void> {
    const run = this.startRun(project, batch, queue);
    const oldest = batch.open()[0];
    if (this.options.onRoundPhase && oldest)
      this.options.onRoundPhase('queued', run.mark - (oldest.deadline - this.deadlineMs));
    await this.turn(project, run.left());
    run.ended('turn');
    const maxAttempts = this.options.maxAttempts ?? Number.POSITIVE_INFINITY;
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      if (batch.open().length === 0) return;
      const outcome = await this.round(run, attempt);
      if (outcome === 'settled') return;
      if (outcome === 'transferred') {
        attempt -= 1; // a transfer is no lost round of the ledger's CAS; its own count bounds it
        if (++run.transfers > run.maxTransfers) return this.denyAll(batch, this.contended(run));
      }
    }
    this.options.onReservation?.('exhausted');
    this.denyAll(batch, this.contended(run));
  }

  /** The bookkeeping of one batch's rounds: its deadline, its phases' clock, its transfers. */
  private startRun(project: string, batch: Batch, queue: ProjectQueue): BatchRun {
    const run: BatchRun = {
      project,
      batch,
      queue,
      left: () => batch.latestDeadline() - this.now(),
      mark: this.now(),
      ended: (name) => {
        const at = this.now();
        this.options.onRoundPhase?.(name, at - run.mark);
        run.mark = at;
      },
      step: 'read',
      transfers: 0,
      maxTransfers: batch.open().length + 2,
    };
    return run;
  }

  /**
   * One round of a batch: read, ready, decide, write. `settled`: every open decision has its verdict;
   * `transferred`: room came from the hub, decide again; `lost`: another replica wrote first.
   */
  private async round(run: BatchRun, attempt: number): Promise<RoundOutcome> {
    run.lostAt = undefined;
    run.step = 'read';
    try {
      const state = await this.ledgerState(run.project, run.left, run.batch.abandoned);
      run.ended('read');
      run.step = 'ready';
      if (!(await this.readyPhase(run, state))) return 'settled';
      const decided = this.decider.decide(run.batch.open(), state, run.project);
      run.ended('decide');
      if (decided.growth) {
        // A growth beyond this decision's enforced limit: room from the hub first, then decide again.
        await this.decider.grow(run.project, decided.growth, run.left(), run.batch.abandoned);
        this.ledgerCache.delete(run.project);
        return 'transferred';
      }
      if (decided.records.length > 0) await this.writePhase(run, state, decided);
      decided.verdicts.forEach(([m, v]) => m.settle(v));
      return 'settled';
    } catch (err) {
      run.ended(run.step);
      if (err instanceof LedgerConflict) return this.lostRound(run, attempt);
      this.ledgerCache.delete(run.project);
      this.roundFailed(run, err);
      return 'settled';
    }
  }

  /**
   * Whether this replica's caches have reached the ledger's settled marks (ADR 0003); when not, the
   * batch is refused with `behind`'s [Q5].
   */
  private async readyPhase(run: BatchRun, state: LedgerState): Promise<boolean> {
    const { batch, project } = run;
    this.decider.stateRead?.(project, state);
    let ready = true;
    if (this.decider.ready) {
      batch.catchingUp = true;
      try {
        ready = await this.decider.ready(project, state, run.left(), batch.abandoned);
      } finally {
        batch.catchingUp = false;
      }
    }
    run.ended('ready');
    if (ready) return true;
    for (let n = batch.open().length; n > 0; n--) this.options.onReservation?.('behind');
    this.denyAll(batch, this.decider.behind!(project));
    return false;
  }

  /** The batch's one compare-and-swap write; what it recorded is assumed. Throws LedgerConflict when it lost. */
  private async writePhase(run: BatchRun, state: LedgerState, decided: DecidedBatch<G>): Promise<void> {
    const { project } = run;
    run.lostAt = state.resourceVersion;
    run.step = 'write';
    const written = await withinDeadline(
      this.options.ledger.write(project, state, decided.entries, decided.settledThrough),
      run.left(),
      run.batch.abandoned,
    );
    run.ended('write');
    this.ledgerCache.set(project, written, this.now());
    if (written.resourceVersion !== undefined) this.turns.wrote(project, written.resourceVersion, this.now());
    this.options.onLedgerWrite?.(decided.records.length);
    for (const [verdict, request] of decided.records) {
      this.options.onReservation?.('reserved');
      this.decider.assume(verdict, request);
    }
  }

  /** A round that ended in an error or a lost deadline: the whole batch is refused with [Q5]. */
  private roundFailed(run: BatchRun, err: unknown): void {
    const { batch, project } = run;
    if (err instanceof DeadlineExceeded) {
      const outcome = batch.conflicts > 0 ? 'exhausted' : 'timeout';
      for (const m of batch.open()) {
        this.options.onReservation?.(outcome);
        m.settle(outcome === 'exhausted' ? this.contended(run) : this.timedOut(project));
      }
      return;
    }
    this.options.onReservation?.('error');
    const violation =
      err instanceof LedgerUnreadable
        ? ledgerUnreadable(project, err.message)
        : ledgerWriteFailed(project, (err as Error).message);
    this.denyAll(batch, denyQ5(violation));
  }

  /**
   * Another replica won this round. Every other lost round the batch announces itself and goes again at
   * once; otherwise it goes again once the watch brings the winner's write (the winner waits for the same
   * event before its next round), else after a jittered back-off, within the deadline. Either way the
   * project's decisions that queued meanwhile join the batch.
   */
  private async lostRound(run: BatchRun, attempt: number): Promise<RoundOutcome> {
    const { batch, project, lostAt } = run;
    batch.conflicts += 1;
    this.options.onReservation?.('conflict');
    const announced =
      batch.conflicts % ANNOUNCE_EVERY_LOST_ROUNDS === 0 && (await this.announce(project, run.left, batch.abandoned));
    // Announced: decided next against the announced version, at once: the winner's next write, decided
    // against the version before it, loses this time.
    if (!announced) {
      const backoff = this.options.backoff ?? { baseMs: 5, maxMs: 100 };
      const pause = Math.min(backoff.maxMs, backoff.baseMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
      const wait = Math.min(pause, Math.max(0, run.left()));
      if (this.options.ledgerWatched && lostAt !== undefined) await this.ledgerCache.seen(project, lostAt, wait, true);
      else await new Promise((r) => setTimeout(r, wait));
      // The winner's write is usually in the cache by now (observeLedger): decide against it without a
      // read, as the winner does. Otherwise read it.
      const cached = this.ledgerCache.get(project);
      if (!cached?.resourceVersion || lostAt === undefined || !isNewerVersion(cached.resourceVersion, lostAt))
        this.ledgerCache.delete(project);
    }
    run.ended('lost');
    const joining = run.queue.waiting.splice(0).filter((m) => !m.settled);
    batch.absorb(joining);
    run.maxTransfers += joining.length;
    return 'lost';
  }

  private contended(run: BatchRun): Verdict {
    return denyQ5(ledgerContended(run.project, run.batch.conflicts, this.deadlineMs));
  }

  private denyAll(batch: Batch, verdict: Verdict): void {
    batch.open().forEach((m) => m.settle(verdict));
  }
}

/** How a batch round ended (GroupCommit.round). */
type RoundOutcome = 'settled' | 'transferred' | 'lost';

/** One batch's run, shared by its rounds (GroupCommit.startRun). */
interface BatchRun {
  project: string;
  batch: Batch;
  queue: ProjectQueue;
  /** Milliseconds left until the batch's latest deadline. */
  left: () => number;
  /** When the previous phase ended (epoch ms). */
  mark: number;
  /** Reports the phase that ended now, since the previous one ended. */
  ended: (phase: RoundPhase) => void;
  /** The phase an error or a lost deadline interrupts. */
  step: RoundPhase;
  /** The ledger version a write lost against (the watch usually brings the newer one during the back-off). */
  lostAt?: string;
  /** Rounds that got room from the hub, and how many the batch may have (its decisions + 2). */
  transfers: number;
  maxTransfers: number;
}

const sameWait = (a: TurnWait, b: TurnWait | undefined): boolean =>
  b !== undefined && a.version === b.version && a.strictlyNewer === b.strictlyNewer;

function denyQ5(violation: Violation): Verdict {
  return { violations: [violation], warnings: [] };
}
