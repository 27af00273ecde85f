/**
 * Q5: headroom decisions that cannot overspend.
 * - In one process, decisions of a project are serialised and what was admitted is remembered
 *   (`pending`) until the cache shows it or it expires.
 * - Across replicas, a growing allocation is first reserved in the ledger with a compare-and-swap
 *   write; the decision counts max(observed, reserved) per namespace, so a reservation only makes
 *   it stricter. Dry runs reserve nothing.
 */
import { projectOfNamespace, type ReviewContext, type Verdict } from '../validate/admission.js';
import { formatResources, maxResources, namespaceShare, parseResources, type PendingAllocations, type QuotaOverlay, type Resources } from '../validate/resources.js';
import { ledgerContended, ledgerTimeout, ledgerWriteFailed } from '../validate/rules/headroom.js';
import { LABEL_PROJECT, type ResourceQuotaObject, type Violation } from '../validate/types.js';
import { LedgerConflict, type LedgerEntry, type LedgerQuotaWrite, type LedgerState, type LedgerStore } from './ledger.js';
import { handledKind, verdictFor, type AdmissionRequest } from './review.js';

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
}

export type ReservationOutcome = 'reserved' | 'conflict' | 'exhausted' | 'error' | 'timeout';

const DEFAULT_DEADLINE_MS = 2000;
/** At most this many `seen` entries (one per object ADD event within the reservation TTL). */
const MAX_SEEN = 100_000;

class DeadlineExceeded extends Error {}

/**
 * `p`, or a DeadlineExceeded once `ms` have passed or `signal` aborts (every caller left); the call
 * itself is not cancelled: see runBatch.
 */
function within<T>(p: Promise<T>, ms: number, signal?: AbortSignal): Promise<T> {
  if (ms <= 0 || signal?.aborted) return Promise.reject(new DeadlineExceeded());
  return new Promise<T>((resolve, reject) => {
    const stop = () => (clearTimeout(timer), reject(new DeadlineExceeded()));
    const timer = setTimeout(stop, ms);
    signal?.addEventListener('abort', stop, { once: true });
    const done = () => (clearTimeout(timer), signal?.removeEventListener('abort', stop));
    p.then(
      (v) => (done(), resolve(v)),
      (e: unknown) => (done(), reject(e instanceof Error ? e : new Error(String(e)))),
    );
  });
}

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

/** The members of one group commit; `abandoned` aborts its ledger calls once every member has settled. */
class Batch {
  private readonly controller = new AbortController();
  constructor(private readonly members: readonly Member[]) {
    for (const m of members) m.batch = this;
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
    if (this.members.every((m) => m.settled)) this.controller.abort();
  }
}

interface Pending {
  project: string;
  resources: Resources;
  expires: number;
}

/** An admitted ResourceQuota write (null: a deletion) the cache may not show yet. */
interface PendingWrite {
  quota: ResourceQuotaObject | null;
  /** When it was admitted: a later ADD of the quota in the cache supersedes a deletion. */
  created: number;
  expires: number;
}

/** The object Q2/Q3 see for a recorded write. */
function quotaOfWrite(namespace: string, name: string, write: LedgerQuotaWrite): ResourceQuotaObject | null {
  return write ? { metadata: { name, namespace }, spec: write.spec } : null;
}

export class HeadroomGuard {
  private readonly local = new Map<string, Pending>();
  /** The namespaces of `local`, by project (Q1 asks for a project's pending namespaces on every decision). */
  private readonly localByProject = new Map<string, Set<string>>();
  /** Admitted quota writes by namespace and quota name, until the cache shows them or they expire. */
  private readonly writes = new Map<string, Map<string, PendingWrite>>();
  private readonly ledgerCache = new Map<string, LedgerState>();
  /** Per project: the decisions waiting for its next batch, and whether one is running. */
  private readonly queues = new Map<string, ProjectQueue>();
  /** When the cache first showed an object ("ns/quota", or "ns/" for a namespace): its reservation is then spent. */
  private readonly seen = new Map<string, number>();
  private readonly now: () => number;

  constructor(private readonly options: HeadroomGuardOptions) {
    this.now = options.now ?? Date.now;
  }

  /** What this process admitted and the cache does not show yet. */
  readonly pending: PendingAllocations = {
    allocation: (namespace) => this.live(namespace)?.resources,
    namespaces: (project) => {
      const names = this.localByProject.get(project);
      return names ? [...names].filter((ns) => this.live(ns)) : [];
    },
    quotaOverlay: (namespace) => this.liveWrites(namespace),
  };

  /** This process's admitted quota writes in the namespace that still count (undefined: none). */
  private liveWrites(namespace: string): QuotaOverlay | undefined {
    const byQuota = this.writes.get(namespace);
    if (!byQuota) return undefined;
    const now = this.now();
    let out: Map<string, ResourceQuotaObject | null> | undefined;
    for (const [name, w] of byQuota) {
      if (w.expires <= now || (w.quota === null && this.seenSince(namespace, name, w.created))) {
        byQuota.delete(name);
        continue;
      }
      (out ??= new Map()).set(name, w.quota);
    }
    if (byQuota.size === 0) this.writes.delete(namespace);
    return out;
  }

  /** Whether the cache showed the quota (ADD) after `since`. */
  private seenSince(namespace: string, quota: string, since: number): boolean {
    const at = this.seen.get(`${namespace}/${quota}`);
    return at !== undefined && at >= since;
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

  /** Objects remembered as seen (for ledger entries); bounded by MAX_SEEN. */
  get seenCount(): number {
    return this.seen.size;
  }

  /** Called on cache events: forget what the cache now shows (observed ≥ admitted). */
  observe(ctx: Pick<ReviewContext, 'snapshot' | 'config'>, namespace: string): void {
    const byQuota = this.writes.get(namespace);
    if (byQuota) {
      const cached = new Map([...ctx.snapshot.quotasInNamespace(namespace)].map((q) => [q.metadata.name ?? '', q]));
      for (const [name, w] of byQuota) {
        const seen = cached.get(name);
        const shown = w.quota === null ? seen === undefined : seen !== undefined && JSON.stringify(seen.spec ?? {}) === JSON.stringify(w.quota.spec ?? {});
        if (shown) byQuota.delete(name);
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

  /**
   * Called on cache ADD events of ResourceQuotas and Namespaces. Only ledger entries ask when an object
   * appeared, so without a ledger nothing is kept. Entries are kept in arrival order, so the expired
   * ones are at the front; past MAX_SEEN the oldest go even before they expire, which can only make a
   * reservation count a little longer (until its own expiry), never shorter.
   */
  markSeen(namespace: string, quota?: string): void {
    if (!this.options.ledger && !(quota !== undefined && this.writes.has(namespace))) return;
    const key = `${namespace}/${quota ?? ''}`;
    this.seen.delete(key);
    this.seen.set(key, this.now());
    if (this.seen.size <= MAX_SEEN) return;
    const horizon = this.now() - this.options.ttlMs;
    for (const [k, at] of this.seen) {
      if (at >= horizon && this.seen.size <= MAX_SEEN) break;
      this.seen.delete(k);
    }
  }

  /** A ledger entry counts until it expires or the object it reserved for has appeared. */
  private isLive(entry: LedgerEntry): boolean {
    if (entry.expires <= this.now()) return false;
    const seenAt = this.seen.get(`${entry.namespace}/${entry.quota ?? ''}`);
    return seenAt === undefined || seenAt < (entry.created ?? 0);
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
    const withLocal: ReviewContext = { ...ctx, pending: this.pending };
    // Without a ledger a decision awaits nothing: it runs to completion, which serialises it with
    // every other decision of the project without any queue. Which project it may grow need not be
    // known then: the verdict's allocation says what it grew.
    if (!this.options.ledger) return this.decideLocally(withLocal, request);
    const project = mayGrow(withLocal, request);
    if (!project) return verdictFor(withLocal, request);
    return this.enqueue(project, withLocal, request, signal);
  };

  private decideLocally(ctx: ReviewContext, request: AdmissionRequest): Verdict {
    const verdict = verdictFor(ctx, request);
    if (!request.dryRun && mustRecord(verdict)) this.remember(verdict);
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
        this.options.onReservation?.('timeout');
        member.settle(this.timedOut(project));
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
      this.queues.delete(project);
      return;
    }
    queue.running = true;
    const batch = new Batch(members);
    void this.runBatch(project, batch).finally(() => {
      queue.running = false;
      this.pump(project, queue);
    });
  }

  private timedOut(project: string): Verdict {
    return denyQ5(ledgerTimeout(project, this.deadlineMs));
  }

  /**
   * One group commit: read the ledger (cached), decide every member against it in order, write the
   * new entries with one compare-and-swap. A conflict re-reads and re-decides the whole batch; an
   * error or a write that does not answer in time denies the whole batch with [Q5] (such a write may
   * still land: its entries can only make later decisions stricter until they expire).
   */
  private async runBatch(project: string, batch: Batch): Promise<void> {
    const ledger = this.options.ledger!;
    const maxAttempts = this.options.maxAttempts ?? 10;
    const backoff = this.options.backoff ?? { baseMs: 5, maxMs: 100 };
    const left = () => batch.latestDeadline() - this.now();
    const denyAll = (verdict: Verdict) => batch.open().forEach((m) => m.settle(verdict));
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      if (batch.open().length === 0) return;
      try {
        let state = this.ledgerCache.get(project);
        if (!state) {
          state = await within(ledger.read(project), left(), batch.abandoned);
          this.ledgerCache.set(project, state);
        }
        const decided = this.decideBatch(batch.open(), state);
        if (decided.records.length === 0) return decided.verdicts.forEach(([m, v]) => m.settle(v));
        const written = await within(ledger.write(project, state, decided.entries), left(), batch.abandoned);
        this.ledgerCache.set(project, written);
        this.options.onLedgerWrite?.(decided.records.length);
        for (const verdict of decided.records) {
          this.options.onReservation?.('reserved');
          this.remember(verdict);
        }
        return decided.verdicts.forEach(([m, v]) => m.settle(v));
      } catch (err) {
        this.ledgerCache.delete(project);
        if (err instanceof DeadlineExceeded) {
          for (const m of batch.open()) {
            this.options.onReservation?.('timeout');
            m.settle(this.timedOut(project));
          }
          return;
        }
        if (!(err instanceof LedgerConflict)) {
          this.options.onReservation?.('error');
          return denyAll(denyQ5(ledgerWriteFailed(project, (err as Error).message)));
        }
        this.options.onReservation?.('conflict');
        // Another replica won this round: back off (jittered) before reading again, within the deadline.
        const pause = Math.min(backoff.maxMs, backoff.baseMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
        await new Promise((r) => setTimeout(r, Math.min(pause, Math.max(0, left()))));
      }
    }
    this.options.onReservation?.('exhausted');
    denyAll(denyQ5(ledgerContended(project, maxAttempts)));
  }

  /**
   * Decides the members in arrival order against one ledger state: each admitted change that must be
   * recorded becomes an entry the later members count. Dry runs are decided the same way and record nothing.
   */
  private decideBatch(members: readonly Member[], state: LedgerState): { verdicts: Array<[Member, Verdict]>; records: Verdict[]; entries: LedgerEntry[] } {
    let entries = state.entries.filter((e) => this.isLive(e));
    const verdicts: Array<[Member, Verdict]> = [];
    const records: Verdict[] = [];
    for (const m of members) {
      const verdict = verdictFor({ ...m.ctx, pending: this.withReservations(entries) }, m.request);
      verdicts.push([m, verdict]);
      if (verdict.violations.length > 0 || !mustRecord(verdict) || m.request.dryRun) continue;
      const entry = this.entryFor(m.request, verdict);
      entries = [...entries.filter((e) => !(e.namespace === entry.namespace && e.quota === entry.quota)), entry];
      records.push(verdict);
    }
    return { verdicts, records, entries };
  }

  private entryFor(request: AdmissionRequest, verdict: Verdict): LedgerEntry {
    const { namespace, resources, quotaWrite } = verdict.allocation!;
    const quota = handledKind(request) === 'ResourceQuota' ? (quotaWrite?.name ?? request.name) : undefined;
    return {
      namespace,
      quota,
      allocation: formatResources(resources),
      created: this.now(),
      expires: this.now() + this.options.ttlMs,
      ...(quotaWrite ? { write: quotaWrite.quota ? { spec: quotaWrite.quota.spec ?? {} } : null } : {}),
    };
  }

  /** This process's pending allocations, raised by the ledger's live reservations (other replicas' too). */
  private withReservations(live: LedgerEntry[]): PendingAllocations {
    const reserved = new Map<string, Resources>();
    const written = new Map<string, Array<LedgerEntry & { quota: string }>>();
    for (const e of live) {
      const r = parseResources(e.allocation);
      const prev = reserved.get(e.namespace);
      reserved.set(e.namespace, prev ? maxResources(prev, r) : r);
      if (e.write !== undefined && e.quota) {
        let list = written.get(e.namespace);
        if (!list) written.set(e.namespace, (list = []));
        list.push(e as LedgerEntry & { quota: string });
      }
    }
    return {
      quotaOverlay: (namespace) => {
        const mine = this.liveWrites(namespace);
        const theirs = written.get(namespace);
        if (!theirs) return mine;
        // The ledger's newest entry per quota wins; this process's own writes are in the ledger too.
        const out = new Map<string, ResourceQuotaObject | null>(mine);
        for (const e of [...theirs].sort((a, b) => a.created - b.created)) out.set(e.quota, quotaOfWrite(namespace, e.quota, e.write!));
        return out;
      },
      allocation: (namespace) => {
        const mine = this.pending.allocation(namespace);
        const theirs = reserved.get(namespace);
        return mine && theirs ? maxResources(mine, theirs) : (mine ?? theirs);
      },
      // A ledger holds one project's entries only.
      namespaces: (project) => new Set([...this.pending.namespaces(project), ...reserved.keys()]),
    };
  }

  private remember(verdict: Verdict): void {
    const a = verdict.allocation;
    if (!a || verdict.violations.length > 0) return;
    if (a.quotaWrite) {
      let byQuota = this.writes.get(a.namespace);
      if (!byQuota) this.writes.set(a.namespace, (byQuota = new Map()));
      byQuota.set(a.quotaWrite.name, { quota: a.quotaWrite.quota, created: this.now(), expires: this.now() + this.options.ttlMs });
    }
    if (!a.grows) return;
    const prev = this.local.get(a.namespace);
    const resources = prev ? maxResources(prev.resources, a.resources) : a.resources;
    if (prev && prev.project !== a.project) this.forget(a.namespace);
    this.local.set(a.namespace, { project: a.project, resources, expires: this.now() + this.options.ttlMs });
    let names = this.localByProject.get(a.project);
    if (!names) this.localByProject.set(a.project, (names = new Set()));
    names.add(a.namespace);
  }
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
 * grows the namespace's share (Q1), or it is a quota write that takes a budgeted resource away from
 * a quota (another quota's Q2/Q3 decision may rely on it).
 */
function mustRecord(verdict: Verdict): boolean {
  const a = verdict.allocation;
  return a !== undefined && (a.grows || a.quotaWrite?.removesCoverage === true);
}

function denyQ5(violation: Violation): Verdict {
  return { violations: [violation], warnings: [] };
}
