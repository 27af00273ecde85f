/** Q1, Q2, Q4: budgets, coverage and headroom. Pure functions over shares computed in resources.ts. */
import { Quantity } from '../quantity.js';
import { sumShares, type NamespaceShare, type Resources } from '../resources.js';
import type { FieldPath, Violation } from '../types.js';

export interface BudgetScope {
  project: string;
  /** '' for the default budget / an unnamed cluster. */
  cluster: string;
  budget: Resources;
  budgetPath: FieldPath;
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
  for (const [resource, limit] of [...scope.budget].sort(([a], [b]) => a.localeCompare(b))) {
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
  for (const [resource, limit] of [...scope.budget].sort(([a], [b]) => a.localeCompare(b))) {
    const asked = share.resources.get(resource);
    if (!asked) continue;
    const allocated = othersTotal.get(resource) ?? Quantity.zero();
    const fits = limit.sub(allocated);
    if (asked.cmp(fits) <= 0) continue;
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
export function checkCoverage(scope: BudgetScope, subject: string, effective: Resources, path?: FieldPath): Violation[] {
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

/** Q4: warnings when headroom falls below `threshold` × budget (`total`: Σ of the shares). Short: kubectl cuts long warnings. */
export function headroomWarnings(scope: BudgetScope, total: Resources, threshold: number): string[] {
  const out: string[] = [];
  for (const [resource, limit] of [...scope.budget].sort(([a], [b]) => a.localeCompare(b))) {
    const used = total.get(resource) ?? Quantity.zero();
    const headroom = limit.sub(used);
    if (headroom.sign() < 0) continue;
    if (belowFraction(headroom, limit, threshold)) {
      out.push(`[Q4] ${where(scope)}: ${resource} headroom ${headroom.toString()} of ${limit.toString()} left`);
    }
  }
  return out;
}

/** headroom < threshold × limit, exactly: compare headroom × 10000 with limit × round(threshold × 10000). */
function belowFraction(headroom: Quantity, limit: Quantity, threshold: number): boolean {
  const basisPoints = BigInt(Math.round(threshold * 10000));
  return headroom.mul(10000n).cmp(limit.mul(basisPoints)) < 0;
}
