/**
 * The member controller's give-back and offer loop (docs/adr/0039-fleet-budgets.md):
 * every replica checks, the leader alone writes. Every `checkEverySeconds` each fleet-budgeted
 * Project this cluster belongs to (or still holds a share of) goes through a rate-limited work queue
 * (one worker: a project's checks never overlap). A check reads the hub's FleetBudget, the enforced
 * limit E and the live reservations from the project's headroom ledger, and the usage-counted
 * allocation from the controller's cache; `decideReturn` (src/fleet/give-back.ts) says what to return.
 * Then, in the protocol's order: lower E first (ledger CAS, never below what is allocated and reserved
 * at that write), then one hub write (offer / give back) through `applyOnHub` with an idempotency key.
 * One pino line per check. What the checks saw feeds the controller's fleet metrics (fleet-metrics.ts).
 * Each round the leader also renews the member's heartbeat Lease on the hub (what `fleet release` reads),
 * and a check that finds the hub's record below E mends it (`mendRecord`, src/fleet/hub-record.ts).
 */
import { getProcessClock, type Clock } from '../clock.js';
import { randomBytes } from 'node:crypto';
import { describeError } from '../kube/errors.js';
import { decodeRecord } from '../fleet/enforced-record.js';
import { lowerEnforced } from '../fleet/enforced-limit.js';
import { parseFleetBudget, type FleetBudgetObject, type ParsedFleetBudget } from '../fleet/fleet-budget-object.js';
import {
  decideReturn,
  fleetProjectBudget,
  movedBy,
  returnRoom,
  type IdleClock,
  type ReturnPolicy,
} from '../fleet/give-back.js';
import type { HubClient } from '../fleet/hub-client.js';
import { aboveRecord, compareHubRecord, enforcedWithinRecord, reassertion } from '../fleet/hub-record.js';
import { applyOnHub } from '../fleet/hub-transaction.js';
import { requestGrowth, type ShareRecord } from '../fleet/shares.js';
import { Quantity } from '../quantity/quantity.js';
import { formatResources, parseResources } from '../validate/resource-lists.js';
import type { Resources } from '../validate/types.js';
import type { Project, Snapshot } from '../validate/types.js';
import type { LedgerEntry, LedgerStore } from '../ledger/ledger.js';
import { WorkQueue, defaultControllerRateLimiter } from './workqueue.js';

const ZERO = Quantity.zero();
/** The hub did not answer a read (distinct from a FleetBudget that does not exist). */
const UNREACHABLE = Symbol('unreachable');

export type ReturnKind = 'offer' | 'give-back';
export type ReturnResult = 'stored' | 'refused' | 'unreachable' | 'failed';

/** What the loop last saw of one project, for the metrics and the budget view. */
export interface FleetProjectObservation {
  /** The hub's share record at the last successful read. */
  record?: ShareRecord;
  /** E at the last read of the headroom ledger. */
  enforced?: Resources;
  /** Epoch ms of that read. */
  at: number;
}

/** What the leader's loop saw: per project, and of the hub as a whole. Read by the metrics at scrape time. */
export class FleetObservations {
  readonly projects = new Map<string, FleetProjectObservation>();
  /** Epoch ms the hub last answered (any answer, 404 included); undefined: never since this term started. */
  lastContact: number | undefined;
  /** Whether the last call to the hub got an answer; undefined: no call yet. */
  reachable: boolean | undefined;
  /** Epoch ms this term started (seconds since contact count from here until the first answer). */
  startedAt: number | undefined;
  /** Counts a return the loop wrote (the metrics' counter). */
  onCount: ((kind: ReturnKind, result: ReturnResult) => void) | undefined;

  count(kind: ReturnKind, result: ReturnResult): void {
    this.onCount?.(kind, result);
  }

  clear(): void {
    this.projects.clear();
    this.lastContact = undefined;
    this.reachable = undefined;
    this.startedAt = undefined;
  }
}

export interface FleetLoopOptions {
  /** This cluster's name in the Projects' spec.fleet.clusters. */
  cluster: string;
  hub: HubClient;
  ledger: LedgerStore;
  snapshot: () => Snapshot;
  policy: ReturnPolicy;
  checkEveryMs: number;
  observations: FleetObservations;
  log: (message: string, fields?: Record<string, unknown>) => void;
  /** Deadline of one hub transaction (default 10 s: nobody waits on it, unlike the webhook's 2 s). */
  hubDeadlineMs?: number;
  /**
   * Whether this replica may write (it leads). Every replica checks — the budget view and the metrics
   * of a standby show the shares too, and its idle clocks run, so a new leader does not start them
   * again — but only the leader lowers E and writes to the hub. Default: always.
   */
  acts?: () => boolean;
  /**
   * The system clock by default: the heartbeat Lease, the idle clocks and the ledger's expiries. Budgets
   * (bursts) are decided at `clock` instead: the controller's (default: the process clock).
   */
  now?: () => number;
  clock?: Clock;
  newKey?: () => string;
}

/** Whether the loop looks after `project` here: it has spec.fleet and names this cluster (or did: see check). */
function isFleetProjectOn(project: Project, cluster: string): boolean {
  const clusters = project.spec.fleet?.clusters;
  return Array.isArray(clusters) && clusters.includes(cluster);
}

/**
 * The floor no give-back goes below: per fleet-budgeted resource, Σ over the project's namespaces of
 * the larger of what it holds (usage-counted, as the quota rules count it) and what a live ledger
 * reservation says it will hold; reservations for namespaces the cache does not show yet count too.
 */
function floorOf(
  snapshot: Snapshot,
  project: Project,
  cluster: string,
  entries: readonly LedgerEntry[],
  resources: readonly string[],
  now: number,
  budgetAt: number,
): Resources {
  const budget = fleetProjectBudget(snapshot, project, cluster, budgetAt, resources);
  const perNamespace = new Map<string, Map<string, Quantity>>();
  for (const ns of budget.namespaces) perNamespace.set(ns.namespace, new Map(ns.allocated));
  for (const e of entries) {
    if (e.expires <= now) continue;
    const held = perNamespace.get(e.namespace) ?? new Map<string, Quantity>();
    for (const [resource, v] of parseResources(e.allocation))
      if (v.cmp(held.get(resource) ?? ZERO) > 0) held.set(resource, v);
    perNamespace.set(e.namespace, held);
  }
  const out = new Map<string, Quantity>();
  for (const resource of resources) {
    let total = ZERO;
    for (const held of perNamespace.values()) total = total.add(held.get(resource) ?? ZERO);
    out.set(resource, total);
  }
  return out;
}

const text = (r: Resources | undefined): Record<string, string> => formatResources(r ?? new Map());

export class FleetLoop {
  private readonly queue = new WorkQueue<string>({ rateLimiter: defaultControllerRateLimiter<string>({}) });
  private readonly clocks = new Map<string, IdleClock>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private worker: Promise<void> | undefined;

  constructor(private readonly o: FleetLoopOptions) {}

  private now(): number {
    return this.o.now?.() ?? Date.now();
  }

  private budgetAt(): number {
    return (this.o.clock ?? getProcessClock()).now();
  }

  start(): void {
    this.o.observations.clear();
    this.o.observations.startedAt = this.now();
    this.round();
    this.timer = setInterval(() => this.round(), this.o.checkEveryMs);
    this.timer.unref();
    this.worker = this.work();
  }

  /** One round: the leader renews this member's heartbeat on the hub, and every fleet project is queued for a check. */
  private round(): void {
    if (!this.o.acts || this.o.acts()) void this.heartbeat();
    this.enqueueAll();
  }

  /**
   * Renews the Lease member-<cluster> on the hub (src/fleet/member-heartbeat.ts): what `kubectl
   * tenantgate fleet release` reads to refuse releasing a member that still runs. A failure is logged;
   * the next round tries again.
   */
  async heartbeat(): Promise<void> {
    try {
      await this.o.hub.renewHeartbeat(
        this.o.cluster,
        new Date(this.now()),
        Math.max(1, Math.ceil((3 * this.o.checkEveryMs) / 1000)),
      );
    } catch (err) {
      this.o.log(`fleet heartbeat failed: ${describeError(err)}`, {
        cluster: this.o.cluster,
        fleet: 'heartbeat-failed',
      });
    }
  }

  /** Every Project with spec.fleet: members are checked, and a former member may still hold a share to return. */
  enqueueAll(): void {
    for (const p of this.o.snapshot().projects()) if (p.metadata.name && p.spec.fleet) this.queue.add(p.metadata.name);
    // Projects seen holding a share that lost spec.fleet or were deleted: their share goes back.
    for (const name of this.o.observations.projects.keys()) this.queue.add(name);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.queue.shutDownWithDrain();
    await this.worker;
    this.o.observations.clear();
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      try {
        await this.check(key);
        this.queue.forget(key);
      } catch (err) {
        const delay = this.queue.addRateLimited(key);
        this.o.log(`fleet check failed: ${describeError(err)}`, { project: key, fleet: 'error', retryInMs: delay });
      } finally {
        this.queue.done(key);
      }
    }
  }

  /**
   * Reads a project's FleetBudget from the hub, parsed (undefined: there is none), and records whether the hub
   * answered (UNREACHABLE: it did not, and `done` said so).
   */
  private async readHub(
    name: string,
    done: (result: string, extra?: Record<string, unknown>) => void,
  ): Promise<ParsedFleetBudget | undefined | typeof UNREACHABLE> {
    const o = this.o;
    let object: FleetBudgetObject | undefined;
    try {
      object = await o.hub.read(name);
      o.observations.reachable = true;
      o.observations.lastContact = this.now();
    } catch (err) {
      o.observations.reachable = false;
      done('hub-unreachable', { reason: describeError(err) });
      return UNREACHABLE;
    }
    return object ? parseFleetBudget(object) : undefined;
  }

  /**
   * A Project that lost spec.fleet (or is gone): the member no longer enforces E for it (its static
   * budget applies), so E goes to 0 and its whole share, offered part included, goes back — what the
   * FleetBudget's finalizer on the hub waits for (docs/fleet.md, "Deleting a fleet budget").
   */
  private async returnAll(
    name: string,
    done: (result: string, extra?: Record<string, unknown>) => void,
  ): Promise<void> {
    const o = this.o;
    const parsed = await this.readHub(name, done);
    if (parsed === UNREACHABLE) return;
    const entry = parsed?.ok ? parsed.record.shares.get(o.cluster) : undefined;
    const held = entry ? [...entry.share.values()].some((q) => q.sign() > 0) : false;
    if (!parsed?.ok || !held) {
      o.observations.projects.delete(name);
      if (parsed && !parsed.ok) done('fleet-budget-unreadable', { problems: parsed.problems });
      return;
    }
    if (o.acts && !o.acts()) {
      done('observed', { wouldReturn: 'all' });
      return;
    }
    const hubRecord = parsed.record;
    const zero = new Map([...hubRecord.budget.keys()].map((r) => [r, ZERO] as const));
    const lowered = await lowerEnforced(o.ledger, name, () => zero);
    const step = {
      reason: 'not-fleet-budgeted' as const,
      modes: new Map([...hubRecord.budget.keys()].map((r) => [r, 'give-back' as const])),
      lowerTo: zero,
    };
    const key = o.newKey?.() ?? `${o.cluster}-r-${randomBytes(6).toString('hex')}`;
    const outcome = await applyOnHub(
      o.hub,
      name,
      (l) => returnRoom(l, o.cluster, key, step, lowered.record.enforced, new Map(), hubRecord),
      { member: o.cluster, key, deadlineMs: o.hubDeadlineMs ?? 10_000 },
    );
    o.observations.count(
      'give-back',
      outcome.kind === 'stored'
        ? 'stored'
        : outcome.kind === 'unreachable'
          ? 'unreachable'
          : outcome.kind === 'refused'
            ? 'refused'
            : 'failed',
    );
    if (outcome.kind === 'stored') {
      o.observations.projects.delete(name);
      done('returned', { reason: step.reason, share: text(movedBy(hubRecord, outcome.record, o.cluster).share), key });
    } else done(outcome.kind, { reason: step.reason, key });
  }

  /**
   * The hub's record (share − lendable) is below E, or this member was released
   * (src/fleet/hub-record.ts): the hub would grant that room to others while this member enforces it.
   * E was read after the hub, so read the hub again first (a growth between the reads raised both).
   * Then the leader re-asserts the gap from the pool and the offers (one growth on the hub); when there
   * is no room, or the member was released, it lowers E to the record (0 when released), never below
   * what the namespaces hold and reservations promise, and says what stays above the record.
   */
  private async mendRecord(
    name: string,
    project: Project,
    enforced: Resources,
    resources: readonly string[],
    done: (result: string, extra?: Record<string, unknown>) => void,
  ): Promise<void> {
    const o = this.o;
    const parsed = await this.readHub(name, done);
    if (parsed === UNREACHABLE) return;
    if (!parsed?.ok) {
      done(
        parsed ? 'fleet-budget-unreadable' : 'no-fleet-budget',
        parsed && !parsed.ok ? { problems: parsed.problems } : {},
      );
      return;
    }
    const hubRecord = parsed.record;
    o.observations.projects.set(name, { record: hubRecord, enforced, at: this.now() });
    const verdict = compareHubRecord(hubRecord, o.cluster, enforced);
    if (verdict.kind === 'covers') {
      done('kept', { recheckedHub: true });
      return;
    }
    const gapFields = verdict.kind === 'released' ? { released: true } : { recordBelowEnforced: text(verdict.gap) };
    if (o.acts && !o.acts()) {
      done('observed', gapFields);
      return;
    }
    if (verdict.kind === 'below-enforced') {
      const key = o.newKey?.() ?? `${o.cluster}-a-${randomBytes(6).toString('hex')}`;
      const outcome = await applyOnHub(
        o.hub,
        name,
        (l) => {
          const need = reassertion(l, o.cluster, enforced);
          if (need.size === 0)
            return {
              ok: true as const,
              record: l,
              duplicate: true,
              granted: new Map(),
              fromOwnOffer: new Map(),
              fromPool: new Map(),
              fromLenders: new Map(),
            };
          return requestGrowth(l, o.cluster, { id: key, need });
        },
        { member: o.cluster, key, deadlineMs: o.hubDeadlineMs ?? 10_000 },
      );
      if (outcome.kind === 'stored') {
        o.observations.projects.set(name, { record: outcome.record, enforced, at: this.now() });
        done('re-asserted', { ...gapFields, key });
        return;
      }
      if (outcome.kind === 'unreachable') {
        o.observations.reachable = false;
        done('hub-unreachable', { ...gapFields, reason: outcome.reason });
        return;
      }
      Object.assign(
        gapFields,
        outcome.kind === 'refused' ? { refusal: outcome.refusal.reason } : { problems: outcome.problems },
      );
    }
    const recorded = verdict.kind === 'released' ? new Map(resources.map((r) => [r, ZERO] as const)) : verdict.recorded;
    const lowered = await lowerEnforced(o.ledger, name, (st, current) =>
      enforcedWithinRecord(
        current.enforced,
        recorded,
        floorOf(o.snapshot(), project, o.cluster, st.entries, resources, this.now(), this.budgetAt()),
      ),
    );
    o.observations.projects.set(name, { record: hubRecord, enforced: lowered.record.enforced, at: this.now() });
    done(verdict.kind === 'released' ? 'released' : 'record-below-enforced', {
      ...gapFields,
      enforcedNow: text(lowered.record.enforced),
      aboveRecord: text(aboveRecord(lowered.record.enforced, recorded)),
    });
  }

  /** One check of one project (exported for tests through the class). */
  async check(name: string): Promise<void> {
    const o = this.o;
    const started = this.now();
    const fields: Record<string, unknown> = { project: name };
    const done = (result: string, extra: Record<string, unknown> = {}) =>
      o.log('fleet checked', { ...fields, fleet: result, ...extra, ms: this.now() - started });
    const project = o.snapshot().project(name);
    if (!project?.spec.fleet) {
      this.clocks.delete(name);
      // Only a project this loop saw as fleet-budgeted can hold a share here.
      if (o.observations.projects.has(name)) await this.returnAll(name, done);
      return;
    }
    const parsed = await this.readHub(name, done);
    if (parsed === UNREACHABLE) return;
    if (!parsed) {
      if (isFleetProjectOn(project, o.cluster)) done('no-fleet-budget');
      return;
    }
    if (!parsed.ok) {
      done('fleet-budget-unreadable', { problems: parsed.problems });
      return;
    }
    const hubRecord = parsed.record;
    const inFleet = isFleetProjectOn(project, o.cluster);
    if (!inFleet && !hubRecord.shares.has(o.cluster)) {
      o.observations.projects.delete(name);
      return;
    }
    const state = await o.ledger.read(name);
    const record = decodeRecord(state.fleet, name);
    if (!record.ok) {
      // Fail closed: no decision from a limit nobody can read (the webhook counts it as E = 0).
      o.observations.projects.set(name, { record: hubRecord, at: this.now() });
      done('enforced-limit-unreadable', { problem: record.problem });
      return;
    }
    const resources = [...hubRecord.budget.keys()];
    const floor = floorOf(o.snapshot(), project, o.cluster, state.entries, resources, this.now(), this.budgetAt());
    o.observations.projects.set(name, { record: hubRecord, enforced: record.record.enforced, at: this.now() });
    if (compareHubRecord(hubRecord, o.cluster, record.record.enforced).kind !== 'covers') {
      await this.mendRecord(name, project, record.record.enforced, resources, done);
      return;
    }
    const declaredBudget = parseResources(project.spec.fleet.quota?.hard);
    const decision = decideReturn(
      { member: o.cluster, enforced: record.record.enforced, floor, record: hubRecord, declaredBudget, inFleet },
      o.policy,
      this.clocks.get(name) ?? new Map(),
      this.now(),
    );
    this.clocks.set(name, decision.clock);
    Object.assign(fields, { enforced: text(record.record.enforced), floor: text(floor) });
    const step = decision.step;
    if (step && o.acts && !o.acts()) {
      done('observed', { wouldReturn: Object.fromEntries(step.modes) });
      return;
    }
    if (!step) {
      done('kept', {
        idleSince: Object.fromEntries([...decision.clock].map(([r, t]) => [r, new Date(t).toISOString()])),
      });
      return;
    }
    // 1. Lower E first, against the reservations the ledger holds at that write (never below them).
    const lowered = await lowerEnforced(o.ledger, name, (st) => {
      const atWrite = floorOf(o.snapshot(), project, o.cluster, st.entries, resources, this.now(), this.budgetAt());
      const to = new Map<string, Quantity>();
      for (const [resource, target] of step.lowerTo) {
        const f = atWrite.get(resource) ?? ZERO;
        to.set(resource, target.cmp(f) >= 0 ? target : f);
      }
      return to;
    });
    const enforced = lowered.record.enforced;
    o.observations.projects.set(name, { record: hubRecord, enforced, at: this.now() });
    const floorAtWrite = floorOf(
      o.snapshot(),
      project,
      o.cluster,
      lowered.state.entries,
      resources,
      this.now(),
      this.budgetAt(),
    );
    // 2. Then the hub write, recomputed from the hub's share record on every attempt.
    const key = o.newKey?.() ?? `${o.cluster}-r-${randomBytes(6).toString('hex')}`;
    const kinds = [...new Set(step.modes.values())];
    const outcome = await applyOnHub(
      o.hub,
      name,
      (l) => returnRoom(l, o.cluster, key, step, enforced, floorAtWrite, hubRecord),
      { member: o.cluster, key, deadlineMs: o.hubDeadlineMs ?? 10_000 },
    );
    Object.assign(fields, {
      reason: step.reason,
      modes: Object.fromEntries(step.modes),
      enforcedNow: text(enforced),
      key,
    });
    if (outcome.kind === 'stored') {
      o.observations.reachable = true;
      o.observations.lastContact = this.now();
      o.observations.projects.set(name, { record: outcome.record, enforced, at: this.now() });
      for (const k of kinds) o.observations.count(k, 'stored');
      const moved = movedBy(hubRecord, outcome.record, o.cluster);
      done('returned', { share: text(moved.share), lendable: text(moved.lendable), confirmedBy: outcome.confirmedBy });
      return;
    }
    if (outcome.kind === 'unreachable') {
      o.observations.reachable = false;
      for (const k of kinds) o.observations.count(k, 'unreachable');
      // E stays lowered: the share is only unused until the next check returns it.
      done('hub-unreachable', { reason: outcome.reason });
      return;
    }
    for (const k of kinds) o.observations.count(k, outcome.kind === 'refused' ? 'refused' : 'failed');
    done(
      outcome.kind,
      outcome.kind === 'refused' ? { refusal: outcome.refusal.reason } : { problems: outcome.problems },
    );
  }
}
