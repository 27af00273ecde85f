/** Q1, Q2, Q4: budgets, coverage and headroom. Pure functions over shares computed in resources.ts. */
import { Quantity, signOfSum } from '../quantity.js';
import { sumShares, type NamespaceShare, type Resources } from '../resources.js';
import type { FieldPath, Violation } from '../types.js';

const ZERO = Quantity.zero();

export interface BudgetScope {
  project: string;
  /** '' for the default budget / an unnamed cluster. */
  cluster: string;
  budget: Resources;
  budgetPath: FieldPath;
}

/**
 * A budget's entries by resource name, sorted once per budget: budgets are parsed once per Project
 * object and never modified (resources.ts), while every decision walks them in this order.
 */
const sortedBudgets = new WeakMap<Resources, ReadonlyArray<readonly [string, Quantity]>>();
function byResource(budget: Resources): ReadonlyArray<readonly [string, Quantity]> {
  let sorted = sortedBudgets.get(budget);
  if (!sorted) sortedBudgets.set(budget, (sorted = [...budget].sort(([a], [b]) => a.localeCompare(b))));
  return sorted;
}

function where(scope: BudgetScope): string {
  return scope.cluster ? `project ${scope.project} on cluster ${scope.cluster}` : `project ${scope.project}`;
}

function listShares(shares: NamespaceShare[], resource: string): string {
  return shares
    .filter((s) => s.resources.has(resource))
    .map((s) => `${s.namespace} ${s.resources.get(resource)!.toString()}${s.defaulted ? ' (defaults)' : ''}`)
    .join(', ');
}

/** Q1 over a whole project: Σ shares ≤ budget for every budget resource. */
export function checkBudget(scope: BudgetScope, shares: NamespaceShare[], path?: FieldPath): Violation[] {
  const total = sumShares(shares);
  const out: Violation[] = [];
  for (const [resource, limit] of byResource(scope.budget)) {
    const used = total.get(resource);
    if (!used || used.cmp(limit) <= 0) continue;
    out.push({
      rule: 'Q1',
      path: path ?? [...scope.budgetPath, resource],
      message: `${where(scope)}: namespaces allocate ${resource} ${used.toString()} but the budget is ${limit.toString()} (${listShares(shares, resource)}): ${used.sub(limit).toString()} over`,
    });
  }
  return out;
}

/**
 * Q1 for one namespace's change: `subject` (e.g. "ResourceQuota payments-api/q") asks `share`; the
 * other namespaces keep theirs (`othersTotal`, their sum). The message says how much would fit.
 */
export function checkFits(scope: BudgetScope, subject: string, share: NamespaceShare, othersTotal: Resources, path?: FieldPath): Violation[] {
  const out: Violation[] = [];
  for (const [resource, limit] of byResource(scope.budget)) {
    const asked = share.resources.get(resource);
    if (!asked) continue;
    const allocated = othersTotal.get(resource) ?? ZERO;
    // asked + allocated ≤ limit
    if (signOfSum(1, asked, 1, allocated, -1, limit) <= 0) continue;
    const fits = limit.sub(allocated);
    const room = fits.sign() > 0 ? `at most ${fits.toString()} fits` : `nothing fits (the other namespaces already use ${allocated.sub(limit).toString()} more than the budget)`;
    out.push({
      rule: 'Q1',
      ...(path ? { path: [...path, resource] } : {}),
      message: `${subject} asks ${resource} ${asked.toString()}${share.defaulted ? ' (namespaceDefaults)' : ''}, ${where(scope)} has ${limit.toString()} of which ${allocated.toString()} are allocated to other namespaces: ${room}`,
    });
  }
  return out;
}

/** Q2: every budget resource is covered by the namespace's effective quota. */
export function checkCoverage(scope: BudgetScope, subject: string, effective: ReadonlyMap<string, Quantity>, path?: FieldPath): Violation[] {
  const missing = [...scope.budget.keys()].filter((r) => !effective.has(r)).sort();
  if (missing.length === 0) return [];
  return [
    {
      rule: 'Q2',
      ...(path ? { path } : {}),
      message: `${subject} leaves ${missing.join(', ')} without a quota, but ${where(scope)} budgets ${missing.length === 1 ? 'it' : 'them'}: every namespace needs an unscoped ResourceQuota covering ${[...scope.budget.keys()].sort().join(', ')}`,
    },
  ];
}

/**
 * Q4: warnings when headroom falls below `threshold` × budget; the allocation is `others` (Σ of the
 * other namespaces' shares) plus `self` (the namespace under review). Short: kubectl cuts long warnings.
 */
export function headroomWarnings(scope: BudgetScope, others: Resources, self: Resources, threshold: number): string[] {
  const out: string[] = [];
  // headroom < threshold × limit, exactly: (limit − used) × 10000 < limit × round(threshold × 10000),
  // that is used × 10000 − limit × (10000 − basis points) > 0.
  const keep = 10000 - Math.round(threshold * 10000);
  for (const [resource, limit] of byResource(scope.budget)) {
    const fromOthers = others.get(resource) ?? ZERO;
    const fromSelf = self.get(resource) ?? ZERO;
    // Over the budget already (only a privileged or earlier change gets there): Q1's business, not Q4's.
    if (signOfSum(1, fromOthers, 1, fromSelf, -1, limit) > 0) continue;
    if (signOfSum(10000, fromOthers, 10000, fromSelf, -keep, limit) <= 0) continue;
    const headroom = limit.sub(fromOthers.add(fromSelf));
    out.push(`[Q4] ${where(scope)}: ${resource} headroom ${headroom.toString()} of ${limit.toString()} left`);
  }
  return out;
}

