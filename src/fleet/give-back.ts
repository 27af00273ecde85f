/**
 * The member controller's give-back and offer decisions for one fleet-budgeted Project
 * (docs/adr/0039-fleet-budgets.md, "Give back, with hysteresis" and "Offer";
 * docs/adr/0039-fleet-budgets.md). Pure: the enforced limit E, the floor (the usage-counted
 * allocation plus live headroom-ledger reservations), the hub's share record, the policy and the clock are arguments;
 * src/controller/fleet-loop.ts does the I/O in the protocol's order (lower E first, then the hub write).
 *
 * Per fleet-budgeted resource:
 * - idle room = share − floor (the part lent included). While it is above `above` a clock runs
 *   (`IdleClock`, kept by the leader in memory: a new leader starts it again, which only delays);
 * - after `offerAfter`: E is lowered to min(E, floor + keep) and what the hub's share − lendable holds
 *   above that is offered (lendable += x): other members may take it, this one can withdraw it;
 * - after `giveBackAfter`: the same, given back to the pool, together with whatever is still offered;
 * - at once, whatever the clock: when the fleet budget the Project declares is below Σ shares (the hub
 *   refuses that budget until members give back), or this cluster left `spec.fleet.clusters` — E goes
 *   down to min(E, floor) and everything above it returns.
 * Never below the floor: after any step share − lendable ≥ max(E', floor), whatever E was.
 */
import { Quantity } from '../quantity/quantity.js';
import { projectBudget, type ProjectBudget } from '../validate/budget.js';
import type { Resources } from '../validate/types.js';
import type { Project, Snapshot } from '../validate/types.js';
import { memberCapView } from './member-budget.js';
import {
  giveBack,
  memberShare,
  offer,
  withdrawOffer,
  type Applied,
  type ShareRecord,
  type ShareRefusal,
} from './shares.js';

const ZERO = Quantity.zero();
const at = (r: Resources | undefined, resource: string): Quantity => r?.get(resource) ?? ZERO;
const min = (a: Quantity, b: Quantity): Quantity => (a.cmp(b) <= 0 ? a : b);
const max = (a: Quantity, b: Quantity): Quantity => (a.cmp(b) >= 0 ? a : b);

export interface ReturnPolicy {
  /** Free room kept for growth admitted without the hub (tenantgate.yaml fleet.keep). */
  readonly keep: Resources;
  /** Idle room above this starts the clock (fleet.above, ≥ keep): the band between is the hysteresis. */
  readonly above: Resources;
  readonly offerAfterMs: number;
  readonly giveBackAfterMs: number;
}

/** Per resource, since when (epoch ms) its idle room has been above `above`. */
export type IdleClock = ReadonlyMap<string, number>;

export interface MemberState {
  readonly member: string;
  /** E from the headroom ledger's enforced record. */
  readonly enforced: Resources;
  /** The usage-counted allocation plus live reservations, per fleet-budgeted resource. */
  readonly floor: Resources;
  /** The hub's share record as just read. */
  readonly record: ShareRecord;
  /**
   * `spec.fleet.quota.hard` as the Project on this cluster declares it (may be below the hub's
   * while the hub refuses it).
   */
  readonly declaredBudget: Resources;
  /** Whether this cluster is in the Project's `spec.fleet.clusters`. */
  readonly inFleet: boolean;
}

type ReturnMode = 'offer' | 'give-back';
type ReturnReason = 'idle' | 'budget-lowered' | 'left-the-fleet' | 'not-fleet-budgeted';

export interface ReturnStep {
  readonly reason: ReturnReason;
  /** Per resource: offer the excess, or give it back (with what is still offered). */
  readonly modes: ReadonlyMap<string, ReturnMode>;
  /** E to enforce from now on: lower it to this (headroom-ledger CAS) before the hub write. */
  readonly lowerTo: Resources;
}

export interface ReturnDecision {
  readonly clock: IdleClock;
  readonly step?: ReturnStep;
}

/** What to do now, and the clock to keep for the next check. */
export function decideReturn(s: MemberState, policy: ReturnPolicy, clock: IdleClock, now: number): ReturnDecision {
  const entry = memberShare(s.record, s.member);
  const next = new Map<string, number>();
  const modes = new Map<string, ReturnMode>();
  const lowerTo = new Map<string, Quantity>();
  let reason: ReturnReason = 'idle';
  for (const resource of [...s.record.budget.keys()].sort()) {
    const share = at(entry.share, resource);
    const lent = at(entry.lendable, resource);
    const limit = share.sub(lent);
    const floor = at(s.floor, resource);
    const enforced = at(s.enforced, resource);
    let held = ZERO;
    for (const e of s.record.shares.values()) held = held.add(at(e.share, resource));
    const declared = s.declaredBudget.get(resource);
    const urgent: ReturnReason | undefined = !s.inFleet
      ? 'left-the-fleet'
      : declared !== undefined && held.cmp(declared) > 0
        ? 'budget-lowered'
        : undefined;
    if (urgent) {
      if (share.cmp(floor) > 0) {
        modes.set(resource, 'give-back');
        lowerTo.set(resource, min(enforced, floor));
        reason = urgent;
      }
      continue;
    }
    const idle = share.sub(floor);
    if (idle.cmp(at(policy.above, resource)) <= 0) continue;
    const since = clock.get(resource) ?? now;
    next.set(resource, since);
    const target = min(enforced, floor.add(at(policy.keep, resource)));
    const excess = limit.sub(max(target, floor));
    if (now - since >= policy.giveBackAfterMs) {
      if (excess.sign() > 0 || lent.sign() > 0) {
        modes.set(resource, 'give-back');
        lowerTo.set(resource, target);
      }
    } else if (now - since >= policy.offerAfterMs && excess.sign() > 0) {
      modes.set(resource, 'offer');
      lowerTo.set(resource, target);
    }
  }
  if (modes.size === 0) return { clock: next };
  // Once given back the idle room is at most keep (≤ above): the clock of those resources stops.
  for (const [resource, mode] of modes) if (mode === 'give-back') next.delete(resource);
  return { clock: next, step: { reason, modes, lowerTo } };
}

/**
 * The one hub write of a step, computed from the share record the hub holds now (a 409 recomputes it): per
 * resource, what share − lendable holds above max(E', floor) is offered, or given back together with
 * what is still offered (withdrawn and returned in the same write). Composed from the share record's own
 * transitions (withdrawOffer, offer, giveBack), the last one carrying `key` so that a re-read can tell
 * whether the write landed. Undefined amounts (nothing left to return) give a duplicate-free no-op.
 *
 * `decidedFrom` is the share record the step was decided from. What share − lendable grew by since then is a
 * grant this member's webhook obtained meanwhile and is raising E by (only its own webhooks grow it:
 * another member taking an offer lowers share and lendable together): that growth is kept on top of
 * max(E', floor), so a return racing a growth never gives back room the member enforces.
 */
export function returnRoom(
  record: ShareRecord,
  member: string,
  key: string,
  step: ReturnStep,
  enforced: Resources,
  floor: Resources,
  decidedFrom: ShareRecord,
): Applied | ShareRefusal {
  const entry = memberShare(record, member);
  const before = memberShare(decidedFrom, member);
  const offered = new Map<string, Quantity>();
  const withdrawn = new Map<string, Quantity>();
  const returned = new Map<string, Quantity>();
  for (const [resource, mode] of step.modes) {
    const share = at(entry.share, resource);
    const lent = at(entry.lendable, resource);
    const grownSince = max(share.sub(lent).sub(at(before.share, resource).sub(at(before.lendable, resource))), ZERO);
    const keepAt = max(at(enforced, resource), at(floor, resource)).add(grownSince);
    const excess = share.sub(lent).sub(keepAt);
    if (mode === 'offer') {
      if (excess.sign() > 0) offered.set(resource, excess);
    } else {
      if (lent.sign() > 0) withdrawn.set(resource, lent);
      // What still counts against the floor may be lent: never return share below it.
      const back = min(max(excess, ZERO).add(lent), max(share.sub(at(floor, resource)), ZERO));
      if (back.sign() > 0) returned.set(resource, back);
    }
  }
  if (entry.lastRequest === key) return { ok: true, record, duplicate: true };
  const steps: Array<(l: ShareRecord, id: string) => Applied | ShareRefusal> = [];
  if (withdrawn.size > 0) steps.push((l, id) => withdrawOffer(l, member, { id, amount: withdrawn }));
  if (offered.size > 0) steps.push((l, id) => offer(l, member, { id, amount: offered }));
  if (returned.size > 0) steps.push((l, id) => giveBack(l, member, { id, amount: returned }));
  if (steps.length === 0) return { ok: true, record, duplicate: true };
  let current: ShareRecord = record;
  for (const [i, apply] of steps.entries()) {
    const result = apply(current, i === steps.length - 1 ? key : `${key}/${i}`);
    if (!result.ok) return result;
    current = result.record;
  }
  return { ok: true, record: current, duplicate: false };
}

/** What a step moved, for the log line: per resource the change of the share and of what is lent. */
export function movedBy(
  before: ShareRecord,
  after: ShareRecord,
  member: string,
): { share: Resources; lendable: Resources } {
  const a = memberShare(before, member);
  const b = memberShare(after, member);
  const diff = (x: Resources, y: Resources) => {
    const out = new Map<string, Quantity>();
    for (const r of new Set([...x.keys(), ...y.keys()])) {
      const d = at(y, r).sub(at(x, r));
      if (!d.isZero()) out.set(r, d);
    }
    return out;
  };
  return { share: diff(a.share, b.share), lendable: diff(a.lendable, b.lendable) };
}

/**
 * The project's budget on `cluster` with every resource of `resources` (the fleet-budgeted ones)
 * budgeted, so that the allocation counts them even where the cluster's own budget does not name them
 * (the rules count only budgeted resources): what the member's floor, the metrics and the view read.
 */
export function fleetProjectBudget(
  snapshot: Snapshot,
  project: Project,
  cluster: string,
  at: number,
  resources: Iterable<string>,
): ProjectBudget {
  const fleet = new Map<string, Quantity>();
  for (const resource of resources) fleet.set(resource, ZERO);
  return projectBudget(
    memberCapView(snapshot, cluster, (p) => (p === project ? fleet : undefined)),
    project,
    cluster,
    at,
  );
}
