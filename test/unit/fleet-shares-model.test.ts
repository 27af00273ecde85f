/**
 * Fleet budgets against a model of the fleet (docs/adr/0039-fleet-budgets.md): a hub that
 * stores one share record (src/fleet/shares.ts) and applies a write only when its precondition is the
 * resourceVersion it holds (compare-and-swap), and 2–4 members, each with an enforced limit and an
 * allocation that live in its own cluster (they survive a crash) and a memory that does not (its last
 * read of the hub, its write in flight). Writes and replies travel through a network that delays them,
 * reorders them and loses some; the hub goes down and comes back (a write that reaches a down hub is
 * lost); members crash, time out and retry with the same idempotency key, vanish; an operator
 * releases vanished members and changes the fleet budget.
 *
 * The member follows the protocol: growth that fits its enforced limit is admitted without the hub
 * (decideLocally); beyond it, it asks the hub (requestGrowth on its last read, a CAS write) and raises
 * its limit only once its write is stored (the reply, or a later read showing the write's key), by
 * what the write granted; to give back or offer, it lowers its limit first, then writes.
 *
 * After every step:
 *   Σ over members of share ≤ fleet budget, 0 ≤ lendable ≤ share (judged by arithmetic of its own, `check`);
 *   for every member not released (vanished ones too: nobody but the operator takes their share),
 *   allocation ≤ enforced limit ≤ share − lendable in the hub;
 * and a growth that fits a member's enforced limit is admitted while the hub is down.
 *
 * Each protocol break below makes fast-check find a counterexample (the last describe block).
 * FLEET_MODEL_RUNS scales the runs (default 500; `npm run models` runs 5,000), FLEET_MODEL_SEED replays one.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decideReturn, returnRoom, type ReturnPolicy } from '../../src/fleet/give-back.js';
import { decideLocally, growthWant, type GiveBackPolicy } from '../../src/fleet/member.js';
import {
  emptyShareRecord,
  enforceableLimit,
  memberShare,
  offer,
  releaseMember,
  requestGrowth,
  setBudget,
  withdrawOffer,
  type ShareRecord,
} from '../../src/fleet/shares.js';
import { Quantity } from '../../src/quantity/quantity.js';
import { fleetGrowthRefusal } from '../../src/validate/rules/fleet.js';
import { formatResources, parseResources } from '../../src/validate/resource-lists.js';
import type { Resources } from '../../src/validate/types.js';

const RUNS = Number(process.env.FLEET_MODEL_RUNS ?? 500);
const SEED = process.env.FLEET_MODEL_SEED ? Number(process.env.FLEET_MODEL_SEED) : undefined;

const CPU = 'requests.cpu';
const MEM = 'requests.memory';
const RESOURCES = [CPU, MEM] as const;
type Resource = (typeof RESOURCES)[number];
const BUDGET = parseResources({ [CPU]: '6', [MEM]: '8Gi' });
const POLICY: GiveBackPolicy = {
  keep: parseResources({ [CPU]: '500m', [MEM]: '1Gi' }),
  above: parseResources({ [CPU]: '1', [MEM]: '2Gi' }),
};
/** The controller's give-back decision with its clock already expired: the model's `giveBack` action is the moment it fires. */
const RETURN_NOW: ReturnPolicy = { ...POLICY, offerAfterMs: 0, giveBackAfterMs: 0 };
const ZERO = Quantity.zero();
/** k steps of a resource: 500m of CPU, 1Gi of memory. */
const amount = (resource: Resource, k: number): Quantity =>
  resource === CPU ? Quantity.fromMilli(500 * k) : Quantity.parse(`${k}Gi`);
const at = (r: Resources | undefined, resource: string): Quantity => r?.get(resource) ?? ZERO;
const one = (resource: Resource, v: Quantity): Resources => new Map([[resource, v]]);
const minQ = (a: Quantity, b: Quantity): Quantity => (a.cmp(b) <= 0 ? a : b);
const maxQ = (a: Quantity, b: Quantity): Quantity => (a.cmp(b) >= 0 ? a : b);
function plus(a: Resources, b: Resources): Resources {
  const out = new Map(a);
  for (const [r, v] of b) out.set(r, at(out, r).add(v));
  return out;
}

/** A protocol break the model must catch. */
type ProtocolBreak =
  /** The member raises its enforced limit when it sends a growth write, before the hub stored it. */
  | 'raise-before-write'
  /** The hub stores a write whatever its precondition (last writer wins, no compare-and-swap). */
  | 'no-cas'
  /** The member lowers its enforced limit only after the hub stored its give-back or offer. */
  | 'lower-after-write'
  /** The member raises its limit to what a read of the hub shows when it waits for no reply (after a crash or a timeout), without a write of its own. */
  | 'raise-to-read'
  /** The member asks the hub even for growth that fits its enforced limit, and refuses it when the hub is down. */
  | 'hub-for-every-growth';

type Action =
  | { t: 'grow'; m: number; r: Resource; k: number }
  | { t: 'shrink'; m: number; r: Resource; k: number }
  | { t: 'read'; m: number }
  | { t: 'giveBack'; m: number }
  | { t: 'offer'; m: number; r: Resource; k: number }
  | { t: 'withdraw'; m: number; r: Resource; k: number }
  | { t: 'deliver'; i: number }
  | { t: 'reply'; i: number }
  | { t: 'lose'; i: number; write: boolean }
  | { t: 'timeout'; m: number }
  | { t: 'retry'; m: number }
  | { t: 'crash'; m: number }
  | { t: 'hub'; up: boolean }
  | { t: 'vanish'; m: number }
  | { t: 'release'; m: number }
  | { t: 'budget'; r: Resource; delta: number };

const member = fc.nat(3);
const resource = fc.constantFrom(...RESOURCES);
const steps = fc.integer({ min: 1, max: 4 });
const actionArb: fc.Arbitrary<Action> = fc.oneof(
  { arbitrary: fc.record({ t: fc.constant('grow' as const), m: member, r: resource, k: steps }), weight: 30 },
  { arbitrary: fc.record({ t: fc.constant('shrink' as const), m: member, r: resource, k: steps }), weight: 10 },
  { arbitrary: fc.record({ t: fc.constant('read' as const), m: member }), weight: 12 },
  { arbitrary: fc.record({ t: fc.constant('giveBack' as const), m: member }), weight: 10 },
  { arbitrary: fc.record({ t: fc.constant('offer' as const), m: member, r: resource, k: steps }), weight: 10 },
  { arbitrary: fc.record({ t: fc.constant('withdraw' as const), m: member, r: resource, k: steps }), weight: 6 },
  { arbitrary: fc.record({ t: fc.constant('deliver' as const), i: fc.nat(7) }), weight: 30 },
  { arbitrary: fc.record({ t: fc.constant('reply' as const), i: fc.nat(7) }), weight: 24 },
  { arbitrary: fc.record({ t: fc.constant('lose' as const), i: fc.nat(7), write: fc.boolean() }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant('timeout' as const), m: member }), weight: 5 },
  { arbitrary: fc.record({ t: fc.constant('retry' as const), m: member }), weight: 6 },
  { arbitrary: fc.record({ t: fc.constant('crash' as const), m: member }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant('hub' as const), up: fc.constantFrom(true, true, false) }), weight: 5 },
  { arbitrary: fc.record({ t: fc.constant('vanish' as const), m: member }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant('release' as const), m: member }), weight: 2 },
  {
    arbitrary: fc.record({ t: fc.constant('budget' as const), r: resource, delta: fc.integer({ min: -3, max: 3 }) }),
    weight: 4,
  },
);

interface Write {
  readonly from: number;
  readonly incarnation: number;
  readonly id: string;
  readonly precondition: number;
  readonly next: ShareRecord;
}
interface Reply {
  readonly to: number;
  readonly incarnation: number;
  readonly id: string;
  readonly stored: boolean;
  readonly rv: number;
  readonly ledger: ShareRecord;
}
interface Pending {
  readonly id: string;
  readonly kind: 'grow' | 'giveBack' | 'offer' | 'withdraw';
  readonly precondition: number;
  readonly next: ShareRecord;
  /** What the member may add to its enforced limit once the write is stored (grow, withdraw). */
  readonly raiseBy: Resources;
  /** The allocation a growth waits to reach (admitted if the reply comes before the deadline). */
  readonly after?: Resources;
  /** lower-after-write: the limit to lower to once stored. */
  readonly lowerTo?: Resources;
  /** raise-before-write: already raised. */
  readonly raised?: boolean;
}
interface Member {
  readonly name: string;
  // In the member's cluster: survives a crash.
  enforced: Resources;
  allocation: Resources;
  gone: boolean;
  // In the member's process: lost in a crash.
  incarnation: number;
  view?: { ledger: ShareRecord; rv: number };
  pending?: Pending;
  unresolved?: Pending;
}

/** How often each path ran, over all runs (the model must reach them, or it proves little). */
interface Coverage {
  grantedFromPool: number;
  grantedFromOffers: number;
  refusedNoRoom: number;
  admittedWhileHubDown: number;
  givenBack: number;
  conflicts: number;
  resolvedByKey: number;
  released: number;
  budgetRefused: number;
}

class Fleet {
  hub: { ledger: ShareRecord; rv: number; up: boolean };
  readonly members: Member[];
  writes: Write[] = [];
  replies: Reply[] = [];
  private ids = 0;
  readonly log: string[] = [];

  constructor(
    size: number,
    private readonly broken: ProtocolBreak | undefined,
    private readonly coverage: Coverage,
  ) {
    const names = Array.from({ length: size }, (_, i) => `c${i}`);
    this.hub = {
      ledger: emptyShareRecord(BUDGET, names, new Map([['c0', parseResources({ [CPU]: '4' })]])),
      rv: 1,
      up: true,
    };
    this.members = names.map((name) => ({
      name,
      enforced: new Map(RESOURCES.map((r) => [r, ZERO])),
      allocation: new Map(),
      gone: false,
      incarnation: 0,
    }));
  }

  private live(m: number): Member | undefined {
    const x = this.members[m % this.members.length]!;
    return x.gone ? undefined : x;
  }

  /** Nothing in flight, and a read of the hub: a fresh one when the hub answers, else the last one. */
  private idle(x: Member): boolean {
    if (x.pending || x.unresolved) return false;
    if (this.hub.up) x.view = { ledger: this.hub.ledger, rv: this.hub.rv };
    return x.view !== undefined;
  }

  private send(x: Member, pending: Pending): void {
    x.pending = pending;
    this.writes.push({
      from: this.members.indexOf(x),
      incarnation: x.incarnation,
      id: pending.id,
      precondition: pending.precondition,
      next: pending.next,
    });
  }

  /** The member's write is stored: raise by what it granted, admit the growth that waited, forget it. */
  private stored(x: Member, p: Pending, admitWaiting: boolean): void {
    if (!p.raised && p.raiseBy.size > 0) x.enforced = plus(x.enforced, p.raiseBy);
    if (p.lowerTo) x.enforced = p.lowerTo;
    if (admitWaiting && p.after && decideLocally(x.enforced, p.after).fits) x.allocation = p.after;
  }

  step(a: Action): string | undefined {
    switch (a.t) {
      case 'grow': {
        const x = this.live(a.m);
        if (!x) return;
        const after = plus(x.allocation, one(a.r, amount(a.r, a.k)));
        const fits = at(after, a.r).cmp(at(x.enforced, a.r)) <= 0;
        const local =
          this.broken === 'hub-for-every-growth' && !this.hub.up
            ? { fits: false as const, need: new Map() }
            : decideLocally(x.enforced, after);
        if (local.fits) {
          x.allocation = after;
          if (!this.hub.up) this.coverage.admittedWhileHubDown++;
          return;
        }
        if (fits && !this.hub.up)
          return `${x.name}: a growth of ${a.r} to ${at(after, a.r).toString()} fits its enforced limit ${at(x.enforced, a.r).toString()} but was refused while the hub is down`;
        if (!this.idle(x) || local.need.size === 0) return;
        const id = `${x.name}-${++this.ids}`;
        const result = requestGrowth(x.view!.ledger, x.name, {
          id,
          need: local.need,
          want: growthWant(local.need, POLICY),
        });
        if (!result.ok) {
          const violation = fleetGrowthRefusal('p', x.name, result);
          if (violation.rule !== 'F2' || !violation.message.includes(x.name))
            return `refusal without F2 or the cluster: ${JSON.stringify(violation)}`;
          if (result.reason === 'no-room') this.coverage.refusedNoRoom++;
          return;
        }
        if (result.fromPool.size > 0) this.coverage.grantedFromPool++;
        if (result.fromLenders.size > 0) this.coverage.grantedFromOffers++;
        const raised = this.broken === 'raise-before-write';
        if (raised) x.enforced = plus(x.enforced, result.granted);
        this.send(x, {
          id,
          kind: 'grow',
          precondition: x.view!.rv,
          next: result.record,
          raiseBy: result.granted,
          after,
          raised,
        });
        return;
      }
      case 'shrink': {
        const x = this.live(a.m);
        if (!x) return;
        x.allocation = new Map(x.allocation).set(a.r, maxQ(ZERO, at(x.allocation, a.r).sub(amount(a.r, a.k))));
        return;
      }
      case 'read': {
        const x = this.live(a.m);
        if (!x || !this.hub.up) return;
        x.view = { ledger: this.hub.ledger, rv: this.hub.rv };
        if (this.broken === 'raise-to-read' && !x.pending) {
          const limit = enforceableLimit(this.hub.ledger, x.name);
          x.enforced = new Map(RESOURCES.map((r) => [r, maxQ(at(x.enforced, r), at(limit, r))]));
        }
        return;
      }
      case 'giveBack': {
        const x = this.live(a.m);
        if (!x || !this.idle(x)) return;
        const ledger = x.view!.ledger;
        const state = {
          member: x.name,
          enforced: x.enforced,
          floor: x.allocation,
          record: ledger,
          declaredBudget: ledger.budget,
          inFleet: true,
        };
        const { step } = decideReturn(state, RETURN_NOW, new Map(), 0);
        if (!step) return;
        const id = `${x.name}-${++this.ids}`;
        const lowerTo = new Map([...x.enforced, ...step.lowerTo]);
        const t = returnRoom(ledger, x.name, id, step, lowerTo, x.allocation, ledger);
        if (!t.ok || t.duplicate) return;
        const later = this.broken === 'lower-after-write';
        if (!later) x.enforced = lowerTo;
        this.send(x, {
          id,
          kind: 'giveBack',
          precondition: x.view!.rv,
          next: t.record,
          raiseBy: new Map(),
          ...(later ? { lowerTo } : {}),
        });
        return;
      }
      case 'offer': {
        const x = this.live(a.m);
        if (!x || !this.idle(x)) return;
        const free = at(x.enforced, a.r).sub(at(x.allocation, a.r));
        const lent = minQ(amount(a.r, a.k), free);
        if (lent.sign() <= 0) return;
        const id = `${x.name}-${++this.ids}`;
        const t = offer(x.view!.ledger, x.name, { id, amount: one(a.r, lent) });
        if (!t.ok) return;
        const lowerTo = new Map(x.enforced).set(a.r, at(x.enforced, a.r).sub(lent));
        const later = this.broken === 'lower-after-write';
        if (!later) x.enforced = lowerTo;
        this.send(x, {
          id,
          kind: 'offer',
          precondition: x.view!.rv,
          next: t.record,
          raiseBy: new Map(),
          ...(later ? { lowerTo } : {}),
        });
        return;
      }
      case 'withdraw': {
        const x = this.live(a.m);
        if (!x || !this.idle(x)) return;
        const back = minQ(amount(a.r, a.k), at(memberShare(x.view!.ledger, x.name).lendable, a.r));
        if (back.sign() <= 0) return;
        const id = `${x.name}-${++this.ids}`;
        const t = withdrawOffer(x.view!.ledger, x.name, { id, amount: one(a.r, back) });
        if (!t.ok) return;
        const raised = this.broken === 'raise-before-write';
        if (raised) x.enforced = plus(x.enforced, one(a.r, back));
        this.send(x, {
          id,
          kind: 'withdraw',
          precondition: x.view!.rv,
          next: t.record,
          raiseBy: one(a.r, back),
          raised,
        });
        return;
      }
      case 'deliver': {
        if (this.writes.length === 0) return;
        const [w] = this.writes.splice(a.i % this.writes.length, 1);
        if (!this.hub.up) return; // lost: the hub never saw it
        const matches = w!.precondition === this.hub.rv;
        if (matches || this.broken === 'no-cas') {
          this.hub = { ...this.hub, ledger: w!.next, rv: this.hub.rv + 1 };
          this.replies.push({
            to: w!.from,
            incarnation: w!.incarnation,
            id: w!.id,
            stored: true,
            rv: this.hub.rv,
            ledger: w!.next,
          });
        } else {
          this.coverage.conflicts++;
          this.replies.push({
            to: w!.from,
            incarnation: w!.incarnation,
            id: w!.id,
            stored: false,
            rv: this.hub.rv,
            ledger: this.hub.ledger,
          });
        }
        return;
      }
      case 'reply': {
        if (this.replies.length === 0) return;
        const [r] = this.replies.splice(a.i % this.replies.length, 1);
        const x = this.members[r!.to]!;
        if (x.gone || x.incarnation !== r!.incarnation || x.pending?.id !== r!.id) return; // nobody waits for it any more
        const p = x.pending;
        x.pending = undefined;
        x.view = { ledger: r!.ledger, rv: r!.rv };
        if (r!.stored) {
          this.stored(x, p, true);
          if (p.kind === 'giveBack') this.coverage.givenBack++;
        }
        // A 409 means the hub's resourceVersion moved past the precondition: this write can never be stored.
        return;
      }
      case 'lose': {
        const list = a.write ? this.writes : this.replies;
        if (list.length > 0) list.splice(a.i % list.length, 1);
        return;
      }
      case 'timeout': {
        const x = this.live(a.m);
        if (!x?.pending) return;
        // The deadline passed: the growth that waited is refused; whether the write was stored is unknown.
        x.unresolved = x.pending;
        x.pending = undefined;
        return;
      }
      case 'retry': {
        const x = this.live(a.m);
        const p = x?.unresolved;
        if (!x || !p || !this.hub.up) return;
        x.view = { ledger: this.hub.ledger, rv: this.hub.rv };
        x.unresolved = undefined;
        if (memberShare(this.hub.ledger, x.name).lastRequest === p.id) {
          this.coverage.resolvedByKey++;
          this.stored(x, p, false);
        } else if (this.hub.rv === p.precondition) {
          this.send(x, { ...p, after: undefined }); // still applicable: send the same write again (same key)
        } // else: the resourceVersion moved and the key is not there: it can never be stored.
        return;
      }
      case 'crash': {
        const x = this.live(a.m);
        if (!x) return;
        x.incarnation++;
        x.view = undefined;
        x.pending = undefined;
        x.unresolved = undefined;
        return;
      }
      case 'hub':
        this.hub = { ...this.hub, up: a.up };
        return;
      case 'vanish': {
        const x = this.live(a.m);
        if (x) x.gone = true;
        return;
      }
      case 'release': {
        const x = this.members[a.m % this.members.length]!;
        if (!x.gone || !this.hub.up || this.hub.ledger.released.has(x.name)) return;
        // The operator's tool: read, releaseMember, CAS write (atomic here: one step).
        this.hub = { ...this.hub, ledger: releaseMember(this.hub.ledger, x.name).record, rv: this.hub.rv + 1 };
        this.coverage.released++;
        return;
      }
      case 'budget': {
        if (!this.hub.up) return;
        const next = maxQ(
          ZERO,
          at(this.hub.ledger.budget, a.r).add(amount(a.r, Math.abs(a.delta)).mul(Math.sign(a.delta))),
        );
        const t = setBudget(this.hub.ledger, new Map(this.hub.ledger.budget).set(a.r, next));
        if (!t.ok) {
          this.coverage.budgetRefused++;
          return;
        }
        this.hub = { ...this.hub, ledger: t.record, rv: this.hub.rv + 1 };
        return;
      }
    }
  }

  /**
   * The invariant, in words; empty when it holds. Judged from the hub's record (its entries' share and
   * lendable, the budget, the released members) and each member's own limit and allocation, with the
   * arithmetic written here: not the product's shareRecordProblems or enforceableLimit, which the hub and
   * the members decide with.
   */
  check(): string[] {
    const out: string[] = [];
    const { budget, shares, released } = this.hub.ledger;
    for (const r of RESOURCES) {
      const sum = [...shares.values()].reduce((s, e) => s.add(at(e.share, r)), ZERO);
      if (sum.cmp(at(budget, r)) > 0)
        out.push(`${r}: the shares sum to ${sum.toString()}, above the fleet budget ${at(budget, r).toString()}`);
      for (const [m, e] of shares) {
        if (at(e.share, r).sign() < 0 || at(e.lendable, r).sign() < 0 || at(e.lendable, r).cmp(at(e.share, r)) > 0)
          out.push(
            `${m}: ${r} share ${at(e.share, r).toString()}, lendable ${at(e.lendable, r).toString()} (0 ≤ lendable ≤ share)`,
          );
      }
    }
    for (const m of shares.keys()) if (released.has(m)) out.push(`${m} was released but still has an entry`);
    for (const x of this.members) {
      if (released.has(x.name)) continue;
      const e = shares.get(x.name);
      for (const r of RESOURCES) {
        if (at(x.allocation, r).cmp(at(x.enforced, r)) > 0)
          out.push(
            `${x.name}: allocation ${r} ${at(x.allocation, r).toString()} above its enforced limit ${at(x.enforced, r).toString()}`,
          );
        if (at(x.enforced, r).cmp(at(e?.share, r).sub(at(e?.lendable, r))) > 0) {
          out.push(
            `${x.name}: enforces ${r} ${at(x.enforced, r).toString()}, above its share ${at(e?.share, r).toString()} − lendable ${at(e?.lendable, r).toString()} in the hub`,
          );
        }
      }
    }
    return out;
  }

  describe(): string {
    return [
      `hub rv ${this.hub.rv} ${this.hub.up ? 'up' : 'down'} budget ${JSON.stringify(formatResources(this.hub.ledger.budget))}`,
      ...[...this.hub.ledger.shares].map(
        ([m, e]) =>
          `  ${m}: share ${JSON.stringify(formatResources(e.share))} lendable ${JSON.stringify(formatResources(e.lendable))} last ${e.lastRequest ?? '-'}`,
      ),
      ...this.members.map(
        (x) =>
          `member ${x.name}${x.gone ? ' (gone)' : ''}: enforced ${JSON.stringify(formatResources(x.enforced))} allocation ${JSON.stringify(formatResources(x.allocation))}`,
      ),
    ].join('\n');
  }
}

function newCoverage(): Coverage {
  return {
    grantedFromPool: 0,
    grantedFromOffers: 0,
    refusedNoRoom: 0,
    admittedWhileHubDown: 0,
    givenBack: 0,
    conflicts: 0,
    resolvedByKey: 0,
    released: 0,
    budgetRefused: 0,
  };
}

function property(broken: ProtocolBreak | undefined, coverage: Coverage): fc.IProperty<[number, Action[]]> {
  return fc.property(
    fc.integer({ min: 2, max: 4 }),
    fc.array(actionArb, { minLength: 1, maxLength: 150, size: 'max' }),
    (size, actions) => {
      const fleet = new Fleet(size, broken, coverage);
      for (const [i, a] of actions.entries()) {
        const refused = fleet.step(a);
        const problems = refused ? [refused, ...fleet.check()] : fleet.check();
        if (problems.length > 0)
          throw new Error(`after step ${i} ${JSON.stringify(a)}:\n${problems.join('\n')}\n${fleet.describe()}`);
      }
    },
  );
}

describe('fleet shares against a model of the hub and its members', () => {
  it('keeps Σ shares ≤ fleet budget and every member within its share at every step, and admits what fits while the hub is down', () => {
    const coverage = newCoverage();
    fc.assert(property(undefined, coverage), { numRuns: RUNS, ...(SEED !== undefined ? { seed: SEED } : {}) });
    // The runs reached every path the invariant is about (else the property proves little).
    if (process.env.FLEET_MODEL_COVERAGE) console.log(coverage);
    for (const [path, count] of Object.entries(coverage)) expect(count, path).toBeGreaterThan(0);
  });
});

/** What each break violates, as check() or the growth step words it. */
const CAUGHT_BY: Record<ProtocolBreak, RegExp> = {
  'raise-before-write': /enforces .* above its share/,
  'no-cas': /enforces .* above its share|above the fleet budget/,
  'lower-after-write': /enforces .* above its share/,
  'raise-to-read': /enforces .* above its share/,
  'hub-for-every-growth': /fits its enforced limit .* but was refused while the hub is down/,
};

describe('a broken protocol is caught', () => {
  const breaks: ProtocolBreak[] = [
    'raise-before-write',
    'no-cas',
    'lower-after-write',
    'raise-to-read',
    'hub-for-every-growth',
  ];
  for (const broken of breaks) {
    it(broken, () => {
      const result = fc.check(property(broken, newCoverage()), {
        numRuns: 1000,
        ...(SEED !== undefined ? { seed: SEED } : {}),
      });
      expect(result.failed, `${broken}: no counterexample in ${result.numRuns} runs`).toBe(true);
      const message =
        result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance);
      if (process.env.FLEET_MODEL_COVERAGE)
        console.log(`${broken} (${result.numRuns} runs, ${result.numShrinks} shrinks):\n${message}`);
      expect(message).toMatch(CAUGHT_BY[broken]);
    });
  }
});
