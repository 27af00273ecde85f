/**
 * C1: a project's allocation, priced by tenantgate.yaml's price sheet, stays within
 * `spec.costBudget.monthly` (docs/budgets.md#cost). Pure functions over shares computed in
 * shares.ts and amounts from cost.ts. A costBudget where this configuration has no pricing is a
 * C1 violation of its own: a budget nobody can check must not pass silently.
 */
import type { PricingConfig } from '../../config/config.js';
import {
  add,
  cmp,
  formatMoney,
  isUnscopedKey,
  monthlyBudgetOf,
  monthlyCost,
  namesBothSpellings,
  priceSheet,
  sharesCost,
  sub,
  sum,
  type PriceSheet,
  type Rational,
} from '../cost.js';
import type { FieldPath, NamespaceShare, Project, Resources, Violation } from '../types.js';

const BUDGET_PATH: FieldPath = ['spec', 'costBudget', 'monthly'];
const HOW = 'pricing: {currency, hoursPerMonth, perHour} in tenantgate.yaml (docs/budgets.md#cost)';

/** "project ml's allocation", "project ml's allocation on cluster prod-eu". */
function allocationOf(project: string, cluster: string): string {
  return `project ${project}'s allocation${cluster ? ` on cluster ${cluster}` : ''}`;
}

/** C1 for a Project's declaration: a costBudget needs a price sheet; its monthly amount must be exact. */
export function checkCostDeclaration(pricing: PricingConfig | undefined, project: Project): Violation[] {
  const monthly = project.spec?.costBudget?.monthly;
  if (monthly === undefined) return [];
  const name = project.metadata.name ?? '';
  if (!pricing) {
    return [
      {
        rule: 'C1',
        path: BUDGET_PATH,
        message:
          `Project ${name}: spec.costBudget.monthly is ${JSON.stringify(monthly)}, but tenantgate.yaml has no ` +
          `pricing, so its cost cannot be checked; allowed: a costBudget only with a price sheet (${HOW}), or no ` +
          `spec.costBudget`,
      },
    ];
  }
  return [];
}

/** What the rules need to price one project: its sheet and its budget (undefined: no costBudget, nothing to check). */
interface Priced {
  sheet: PriceSheet;
  budget: Rational;
}

/**
 * The price sheet and the budget of a project with a costBudget; a violation when it has one but the
 * configuration has no pricing (or the amount is not a decimal: the schema refuses it, this never trusts it).
 */
function priced(
  pricing: PricingConfig | undefined,
  project: Project,
  subject: () => string,
): Priced | Violation | undefined {
  const monthly = project.spec.costBudget?.monthly;
  if (monthly === undefined) return undefined;
  const name = project.metadata.name ?? '';
  const budget = monthlyBudgetOf(project);
  if (!pricing || !budget) {
    const why = pricing
      ? 'is not a decimal amount such as 1500 or 1499.99'
      : "but this cluster's tenantgate.yaml has no pricing";
    return {
      rule: 'C1',
      message:
        `${subject()}: project ${name} has spec.costBudget.monthly ${JSON.stringify(monthly)} ${why}, so the cost ` +
        `of its allocation cannot be checked; allowed: ${pricing ? 'a decimal amount' : HOW}`,
    };
  }
  return { sheet: priceSheet(pricing), budget };
}

export interface CostChange {
  /** "ResourceQuota ml-serving/tenantgate-quota", "Namespace ml-x". */
  subject: string;
  /** The namespace's share after the change. */
  after: Resources;
  /** Its share before (absent for a namespace that does not exist yet). */
  before?: Resources;
  /** Σ of the other namespaces' shares, pending reservations included. */
  others: Resources;
  /**
   * The terms of `others` one by one (othersTotal's: shares.ts otherShares), asked only when `others`
   * names two spellings of one quantity (`cpu` and `requests.cpu`): those fold namespace by namespace.
   */
  otherShares: () => Iterable<Resources>;
  /** Whether `after` comes from namespaceDefaults. */
  defaulted?: boolean;
  /**
   * Check the total even when the namespace's own cost does not grow against `before` (the headroom
   * guard's stricter reading: another replica may count the namespace lower than `before`).
   */
  always?: boolean;
  path?: FieldPath;
}

/**
 * C1 for one namespace's change: the others' cost plus the namespace's new share's cost stays within the
 * cost budget. Only a change that makes the namespace cost more can be refused (as Q1 refuses only growth):
 * a project over its cost budget after the prices rose may still shrink and rearrange.
 */
export function checkCostFits(
  pricing: PricingConfig | undefined,
  project: Project,
  cluster: string,
  change: CostChange,
): Violation[] {
  // The subject is written only into a violation: most projects have no cost budget.
  const p = priced(pricing, project, () => `${change.subject} asks ${asked(change)}`);
  if (p === undefined) return [];
  if ('rule' in p) return [{ ...p, ...(change.path ? { path: change.path } : {}) }];
  const self = monthlyCost(p.sheet, change.after);
  const before = change.before ? monthlyCost(p.sheet, change.before) : undefined;
  if (!change.always && before && cmp(self, before) <= 0) return [];
  const others = namesBothSpellings(change.others)
    ? sharesCost(p.sheet, change.otherShares())
    : monthlyCost(p.sheet, change.others);
  const total = add(others, self);
  if (cmp(total, p.budget) <= 0) return [];
  const c = p.sheet.currency;
  const allocated = before ? add(others, before) : others;
  return [
    {
      rule: 'C1',
      ...(change.path ? { path: change.path } : {}),
      message:
        `${change.subject} asks ${asked(change)}: ${allocationOf(project.metadata.name ?? '', cluster)} would cost ` +
        `${formatMoney(total, c)}/month, its cost budget is ${formatMoney(p.budget, c)}/month, ` +
        `${formatMoney(allocated, c)} is allocated`,
    },
  ];
}

/**
 * The resources a change asks more of ("requests.cpu 24, requests.memory 96Gi"), unscoped keys; all
 * of them for a new namespace.
 */
function asked(change: CostChange): string {
  const grown = [...change.after]
    .filter(([r, q]) => isUnscopedKey(r) && (!change.before?.get(r) || q.cmp(change.before.get(r)!) > 0))
    .sort(([a], [b]) => a.localeCompare(b));
  const list = (
    grown.length > 0
      ? grown
      : [...change.after].filter(([r]) => isUnscopedKey(r)).sort(([a], [b]) => a.localeCompare(b))
  )
    .map(([r, q]) => `${r} ${q.toString()}`)
    .join(', ');
  return `${list || 'nothing'}${change.defaulted ? ' (namespaceDefaults)' : ''}`;
}

/**
 * C1 over a whole project on one cluster: the cost of Σ of its namespaces' shares stays within the cost
 * budget (offline on the declarations, and the webhook on a Project write). Lists what each namespace costs.
 */
export function checkProjectCost(
  pricing: PricingConfig | undefined,
  project: Project,
  cluster: string,
  shares: readonly NamespaceShare[],
): Violation[] {
  const name = project.metadata.name ?? '';
  const p = priced(pricing, project, () => `Project ${name}`);
  if (p === undefined) return [];
  if ('rule' in p) return [{ ...p, path: BUDGET_PATH }];
  const perNamespace = shares.map((s) => [s.namespace, monthlyCost(p.sheet, s.resources), s.defaulted] as const);
  const total = sum(perNamespace.map(([, cost]) => cost));
  if (cmp(total, p.budget) <= 0) return [];
  const c = p.sheet.currency;
  const list = perNamespace
    .map(([ns, cost, defaulted]) => `${ns} ${formatMoney(cost, c)}${defaulted ? ' (defaults)' : ''}`)
    .join(', ');
  return [
    {
      rule: 'C1',
      path: BUDGET_PATH,
      message:
        `${allocationOf(name, cluster)} costs ${formatMoney(total, c)}/month (${list}), but its cost budget ` +
        `spec.costBudget.monthly is ${formatMoney(p.budget, c)}/month: ${formatMoney(sub(total, p.budget), c)} over`,
    },
  ];
}
