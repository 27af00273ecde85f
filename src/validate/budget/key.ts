/**
 * A budget key: a resource, and the priority tier it is budgeted for where there is one
 * (docs/design.md, "The budget model"). Inside the rule engine budgets are still maps keyed by the
 * edge spelling `<resource>@<tier>` (tiers.ts), which status, JSON and metrics show; code that needs
 * the parts asks for them here instead of splitting strings itself.
 */
import { OTHER_TIERS, splitTierKey, tierKey } from '../tiers.js';

export interface BudgetKey {
  readonly resource: string;
  /** A PriorityClass, OTHER_TIERS (`*`: every class that is no declared tier), or absent for the plain resource. */
  readonly tier?: string;
}

/** The key a budget entry is stored and shown under: `requests.cpu`, `requests.cpu@production`, `pods@*`. */
export function keyString(key: BudgetKey): string {
  return key.tier === undefined ? key.resource : tierKey(key.resource, key.tier);
}

/** The key of an edge spelling (resource names never contain '@'). */
export function parseBudgetKey(spelling: string): BudgetKey {
  return splitTierKey(spelling);
}

/** Whether the key budgets the pods of classes that are no declared tier. */
export function isOtherTiers(key: BudgetKey): boolean {
  return key.tier === OTHER_TIERS;
}
