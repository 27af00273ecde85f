/**
 * What a member cluster decides on its own about a fleet-budgeted Project
 * (docs/adr/0039-fleet-budgets.md): whether a growth fits the limit it enforces (no hub
 * needed), how much more share to ask the hub for, and when to give unused share back (hysteresis).
 * Pure: the enforced limit, the allocation and the policy are arguments.
 *
 * Enforced on fleet members: the webhook asks the hub for `growthWant` of a growth `decideLocally`
 * finds beyond the enforced limit (src/webhook/headroom/fleet-growth.ts, src/webhook/headroom/guard.ts); the member
 * controller's loop gives room back (src/controller/fleet-loop.ts).
 *
 * The member's rules of order, which these functions leave to their caller:
 * - raise the enforced limit only after its own write to the hub was stored (the CAS answered 200, or
 *   a later read shows the write's idempotency key), and by at most what that write granted;
 * - lower the enforced limit first, then write a give-back or an offer to the hub.
 */
import { Quantity } from '../quantity/quantity.js';
import type { Resources } from '../validate/types.js';

const ZERO = Quantity.zero();
const at = (r: Resources | undefined, resource: string): Quantity => r?.get(resource) ?? ZERO;

export type LocalDecision =
  | { readonly fits: true }
  /** `need`: per resource, how far the allocation after the change is above the enforced limit. */
  | { readonly fits: false; readonly need: Resources };

/**
 * Does an allocation of `after` (per fleet-budgeted resource, counted as today's rules count it) fit
 * the `enforced` limit? Decided without the hub: a member that cannot reach it keeps admitting what
 * fits. Resources `enforced` does not name are not fleet-budgeted here and are not judged.
 */
export function decideLocally(enforced: Resources, after: Resources): LocalDecision {
  const need = new Map<string, Quantity>();
  for (const [resource, limit] of enforced) {
    const asked = at(after, resource);
    if (asked.cmp(limit) > 0) need.set(resource, asked.sub(limit));
  }
  return need.size === 0 ? { fits: true } : { fits: false, need };
}

export interface GiveBackPolicy {
  /** Free room (enforced − allocation) a member keeps for growth it admits without the hub. */
  readonly keep: Resources;
  /** Give back only when the free room is above this (≥ keep): the band between is the hysteresis. */
  readonly above: Resources;
}

/** What to ask the hub for: `need`, and up to `need + keep` so the next growths fit without a write. */
export function growthWant(need: Resources, policy: GiveBackPolicy): Resources {
  const want = new Map<string, Quantity>();
  for (const [resource, v] of need) want.set(resource, v.add(at(policy.keep, resource)));
  return want;
}
