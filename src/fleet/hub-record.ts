/**
 * Does the hub's record still cover what this member enforces? (docs/fleet.md, "When the hub's record
 * falls below E"; docs/adr/0039-fleet-budgets.md.)
 *
 * The transfer protocol keeps E ≤ share − lendable on the hub: growth writes the hub before raising E,
 * a return lowers E before writing the hub. Only something outside the protocol lowers the hub's record
 * under a member's E: the hub restored from an older backup, a stolen member credential giving the
 * share back, an operator releasing a member that still runs. From then on the hub would grant that
 * room to other members while this one keeps enforcing it: the fleet could overspend by the gap.
 *
 * Pure: the caller reads E first and the hub after it (a growth between the two reads only raises the
 * record), and then acts on the verdict — re-assert the gap from the pool (`requestGrowth`), else lower
 * E to `enforcedWithinRecord` and report what the floor still holds above the record.
 */
import { Quantity } from '../quantity/quantity.js';
import type { Resources } from '../validate/types.js';
import { enforceableLimit, type ShareRecord } from './shares.js';

const ZERO = Quantity.zero();
const at = (r: Resources, resource: string): Quantity => r.get(resource) ?? ZERO;
const max = (a: Quantity, b: Quantity): Quantity => (a.cmp(b) >= 0 ? a : b);

export type HubRecordVerdict =
  /** E ≤ share − lendable for every fleet-budgeted resource. */
  | { readonly kind: 'covers' }
  /** An operator released this member: the hub holds nothing for it any more. */
  | { readonly kind: 'released' }
  /** E above the record: `gap` per resource (E − (share − lendable), only where positive). */
  | { readonly kind: 'below-enforced'; readonly gap: Resources; readonly recorded: Resources };

export function compareHubRecord(record: ShareRecord, member: string, enforced: Resources): HubRecordVerdict {
  if (record.released.has(member)) return { kind: 'released' };
  const recorded = enforceableLimit(record, member);
  const gap = new Map<string, Quantity>();
  for (const resource of record.budget.keys()) {
    const over = at(enforced, resource).sub(at(recorded, resource));
    if (over.sign() > 0) gap.set(resource, over);
  }
  return gap.size === 0 ? { kind: 'covers' } : { kind: 'below-enforced', gap, recorded };
}

/**
 * E once the gap could not be re-asserted: where E is above the hub's record, the record, never below
 * the floor (what the namespaces hold and live reservations promise: nothing admitted is taken back).
 * Resources without a gap keep their E.
 */
export function enforcedWithinRecord(enforced: Resources, recorded: Resources, floor: Resources): Resources {
  const out = new Map(enforced);
  for (const [resource, limit] of recorded) {
    const e = at(enforced, resource);
    if (e.cmp(limit) > 0) out.set(resource, max(max(limit, ZERO), at(floor, resource)));
  }
  return out;
}

/** The growth that re-asserts E on the hub: E − (share − lendable) where positive, from the record as read now. */
export function reassertion(record: ShareRecord, member: string, enforced: Resources): Resources {
  const verdict = compareHubRecord(record, member, enforced);
  return verdict.kind === 'below-enforced' ? verdict.gap : new Map();
}

/**
 * What stays above the hub's record after E was lowered to `enforcedWithinRecord` (the floor's
 * excess), per resource where positive.
 */
export function aboveRecord(enforced: Resources, recorded: Resources): Resources {
  const out = new Map<string, Quantity>();
  for (const [resource, e] of enforced) {
    const over = e.sub(max(at(recorded, resource), ZERO));
    if (over.sign() > 0) out.set(resource, over);
  }
  return out;
}
