/**
 * The one budget check (docs/design.md, "The budget model"; docs/adr/0067-budgets.md):
 * whether a namespace's share after a change fits its project's budget. Q1 per budget key — tier keys
 * included, so Q1 judges the tiers too — and C1 over the priced allocation. Admission
 * (src/validate/admission.ts) and the headroom guard's stricter reading (src/webhook/headroom/guard.ts) both
 * call it; neither has a copy. On a fleet member the budget carries the fleet-cap layer
 * (budget/layers.ts), so the same check is F2's local half: a growth it refuses there is what the
 * member asks the hub for, and F2 is the hub's refusal.
 */
import type { PricingConfig } from '../../config/config.js';
import { checkCostFits } from '../rules/cost.js';
import { checkFits, explainInUse, type BudgetScope } from '../rules/quota.js';
import type { FieldPath, NamespaceShare, Project, Resources, Snapshot, Violation } from '../types.js';

export interface BudgetFit {
  /** The project's budget (every layer composed) and where it is declared. */
  scope: BudgetScope;
  project: Project;
  pricing: PricingConfig | undefined;
  /** "ResourceQuota ml-serving/tenantgate-quota", "Namespace ml-x". */
  subject: string;
  /** The namespace's share after the change. */
  share: NamespaceShare;
  /** Its share before (absent for a namespace that does not exist yet); a function when only C1 needs it. */
  before?: Resources | (() => Resources);
  /** Σ of the other namespaces' shares, pending reservations included. */
  others: Resources;
  /** The terms of `others` one by one (C1 folds two spellings of one quantity namespace by namespace). */
  otherShares: () => Iterable<Resources>;
  /** Where a finding points in the object under review (`spec.hard` of a quota). */
  path?: FieldPath;
  /** Q1's findings name the namespaces that use more than their quota, as this snapshot shows them (admission). */
  explainIn?: Snapshot;
  /** Whether the share comes from namespaceDefaults (a namespace that has no quota yet). */
  defaulted?: boolean;
  /** C1 even when the namespace's own cost does not grow against `before` (the headroom guard's stricter reading). */
  always?: boolean;
}

/** Q1 and C1 for one namespace's share after a change. */
export function checkBudgetFit(fit: BudgetFit): Violation[] {
  const q1 = checkFits(fit.scope, fit.subject, fit.share, fit.others, fit.path);
  const violations = fit.explainIn ? explainInUse(fit.explainIn, fit.project, fit.scope, fit.share.namespace, q1) : q1;
  // Most projects have no cost budget: C1 then has nothing to judge, and `before` is not asked for.
  if (fit.project.spec.costBudget?.monthly === undefined) return violations;
  const before = typeof fit.before === 'function' ? fit.before() : fit.before;
  const c1 = checkCostFits(fit.pricing, fit.project, fit.scope.cluster, {
    subject: fit.subject,
    after: fit.share.resources,
    ...(before ? { before } : {}),
    others: fit.others,
    otherShares: fit.otherShares,
    ...(fit.defaulted ? { defaulted: true } : {}),
    ...(fit.always ? { always: true } : {}),
    ...(fit.path ? { path: fit.path } : {}),
  });
  return c1.length > 0 ? [...violations, ...c1] : violations;
}

/** Whether `after` asks more than `before` of some resource (only a growing share can overspend). */
export function grows(before: Resources, after: Resources): boolean {
  for (const [r, q] of after) {
    const prev = before.get(r);
    if (!prev || q.cmp(prev) > 0) return true;
  }
  return false;
}
