/**
 * Q1 (budgets and maxNamespaces), Q2 (coverage), Q3 (the only covering quota), Q4 (headroom warnings).
 * Pure functions over shares computed in shares.ts.
 */
import { Quantity } from '../../quantity/quantity.js';
import { signOfSum } from '../../quantity/sign-of-sum.js';
import { namespaceIsTerminating, observedEffectiveQuota } from '../quota-hold.js';
import { namespaceShare, sumShares } from '../shares.js';
import { parseResources } from '../resource-lists.js';
import type { NamespaceShare, Resources } from '../types.js';
import type { FieldPath, Project, Snapshot, Violation } from '../types.js';
import { describeUser, type UserInfo } from './tenancy.js';
import {
  hasTiers,
  isTierKey,
  keyBudgetPath,
  namespaceTierList,
  OTHER_TIERS,
  OTHER_TIERS_PODS,
  OTHER_TIERS_QUOTA_NAME,
  splitTierKey,
  tierNames,
} from '../tiers.js';

const ZERO = Quantity.zero();

export interface BudgetScope {
  project: string;
  /** '' for the default budget / an unnamed cluster. */
  cluster: string;
  /** The instant (ms since the epoch) the budget is counted at. */
  at: number;
  budget: Resources;
  budgetPath: FieldPath;
}

/**
 * A budget's entries by resource name, sorted once per budget: budgets are parsed once per Project
 * object and read-only (`Resources`), while every decision walks them in this order.
 */
const sortedBudgets = new WeakMap<Resources, ReadonlyArray<readonly [string, Quantity]>>();
function byResource(budget: Resources): ReadonlyArray<readonly [string, Quantity]> {
  let sorted = sortedBudgets.get(budget);
  if (!sorted) sortedBudgets.set(budget, (sorted = [...budget].sort(([a], [b]) => a.localeCompare(b))));
  return sorted;
}

/** "project P", or "project P on cluster C" for a named cluster, as the quota rules name a budget's owner. */
export function projectOnCluster(project: string, cluster: string): string {
  return cluster ? `project ${project} on cluster ${cluster}` : `project ${project}`;
}

function where(scope: BudgetScope): string {
  return projectOnCluster(scope.project, scope.cluster);
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
      path: path ?? keyBudgetPath(scope.budgetPath, resource),
      message:
        `${where(scope)}: namespaces allocate ${resource} ${used.toString()} but the budget is ${limit.toString()} ` +
        `(${listShares(shares, resource)}): ${used.sub(limit).toString()} over`,
    });
  }
  return out;
}

/**
 * Q1 for one namespace's change: `subject` (e.g. "ResourceQuota payments-api/q") asks `share`; the
 * other namespaces keep theirs (`othersTotal`, their sum). The message says how much would fit.
 */
export function checkFits(
  scope: BudgetScope,
  subject: string,
  share: NamespaceShare,
  othersTotal: Resources,
  path?: FieldPath,
): Violation[] {
  const out: Violation[] = [];
  for (const [resource, limit] of byResource(scope.budget)) {
    const asked = share.resources.get(resource);
    if (!asked) continue;
    const allocated = othersTotal.get(resource) ?? ZERO;
    // asked + allocated ≤ limit
    if (signOfSum(1, asked, 1, allocated, -1, limit) <= 0) continue;
    const fits = limit.sub(allocated);
    const room =
      fits.sign() > 0
        ? `at most ${fits.toString()} fits`
        : fits.sign() < 0
          ? `nothing fits (the other namespaces already use ${allocated.sub(limit).toString()} more than the budget)`
          : limit.sign() === 0
            ? // pods@*: pods of classes that are no tier (docs/budgets.md#priority-tiers)
              'nothing fits (the budget is 0)'
            : 'nothing fits';
    out.push({
      rule: 'Q1',
      ...(path ? { path: [...path, resource] } : {}),
      message:
        `${subject} asks ${resource} ${asked.toString()}${share.defaulted ? ' (namespaceDefaults)' : ''}, ` +
        `${where(scope)} has ${limit.toString()} of which ${allocated.toString()} are allocated to other ` +
        `namespaces: ${room}`,
    });
  }
  return out;
}

/** Q2: every budget resource is covered by the namespace's effective quota. */
export function checkCoverage(
  scope: BudgetScope,
  subject: string,
  effective: ReadonlyMap<string, Quantity>,
  path?: FieldPath,
): Violation[] {
  const missing = [...scope.budget.keys()].filter((r) => !effective.has(r)).sort();
  if (missing.length === 0) return [];
  return [
    {
      rule: 'Q2',
      ...(path ? { path } : {}),
      message:
        `${subject} leaves ${missing.join(', ')} without a quota, but ${where(scope)} budgets ` +
        `${missing.length === 1 ? 'it' : 'them'}: every namespace needs ${neededQuotas([...scope.budget.keys()])}`,
    },
  ];
}

/**
 * The quotas a namespace needs to cover `keys`, in words: an unscoped ResourceQuota for the plain
 * resources, one scoped `PriorityClass In [<tier>]` per tier, and the other-tiers quota for `pods@*`.
 */
export function neededQuotas(keys: readonly string[]): string {
  const plain: string[] = [];
  const byTier = new Map<string, string[]>();
  for (const key of [...keys].sort()) {
    if (!isTierKey(key)) {
      plain.push(key);
      continue;
    }
    const { resource, tier } = splitTierKey(key);
    byTier.set(tier!, [...(byTier.get(tier!) ?? []), resource]);
  }
  const parts: string[] = [];
  if (plain.length > 0) parts.push(`an unscoped ResourceQuota covering ${plain.join(', ')}`);
  for (const [tier, resources] of [...byTier].sort(([a], [b]) => a.localeCompare(b))) {
    if (tier === OTHER_TIERS)
      parts.push(
        `a ResourceQuota scoped PriorityClass Exists and NotIn [the declared tiers] with pods 0 (` +
          `${OTHER_TIERS_QUOTA_NAME})`,
      );
    else parts.push(`a ResourceQuota scoped PriorityClass In [${tier}] covering ${resources.join(', ')}`);
  }
  return parts.join(', and ');
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

/** Q1 offline: the namespaces a project declares on a cluster ('' = unnamed) are no more than its maxNamespaces. */
export function checkDeclaredCount(project: string, cluster: string, count: number, max: number): Violation[] {
  if (count <= max) return [];
  return [
    {
      rule: 'Q1',
      path: ['spec', 'maxNamespaces'],
      message: `${projectOnCluster(project, cluster)} declares ${count} namespaces but maxNamespaces is ${max}`,
    },
  ];
}

/** Q1: a new namespace of a project with `maxNamespaces` counts with the `members` it already has (itself excluded). */
export function checkMaxNamespaces(project: Project, namespace: string, members: number): Violation[] {
  const max = project.spec.maxNamespaces;
  if (typeof max !== 'number' || members + 1 <= max) return [];
  return [
    {
      rule: 'Q1',
      message:
        `Namespace ${namespace} would be namespace ${members + 1} of project ${project.metadata.name ?? ''}, whose ` +
        `maxNamespaces is ${max}`,
    },
  ];
}

/**
 * Q2 for a namespace a tenant creates: the quota it will get (its declared quota, else
 * namespaceDefaults.quota, as render and the controller make it) must cover every budgeted resource,
 * or the namespace would run BestEffort pods, PVCs and limits without any bound.
 */
export function checkNewNamespaceCoverage(scope: BudgetScope, project: Project, name: string): Violation[] {
  if (scope.budget.size === 0) return [];
  const declared = (project.spec.namespaces ?? []).find(
    (d) => d.name === name && (!d.cluster || d.cluster === scope.cluster),
  );
  const source = declared?.quota?.hard
    ? `the quota declared for it in spec.namespaces`
    : 'spec.namespaceDefaults.quota';
  const hard = declared?.quota?.hard ?? project.spec.namespaceDefaults?.quota?.hard;
  // With tiers, the tier quotas it will get too (declared, else namespaceDefaults.tiers) and the other-tiers quota.
  const covered = hasTiers(project)
    ? parseResources({ ...hard, ...namespaceTierList(project, declared) })
    : parseResources(hard);
  const missing = [...scope.budget.keys()].filter((r) => !covered.has(r)).sort();
  if (missing.length === 0) return [];
  const plain = missing.filter((r) => !isTierKey(r));
  const tiers = missing.filter(isTierKey).map((k) => splitTierKey(k));
  const sources = [
    ...(plain.length > 0 ? [source] : []),
    ...(tiers.length > 0 ? ['spec.namespaceDefaults.tiers'] : []),
  ];
  const declare = [
    ...(plain.length > 0
      ? [
          `spec.namespaceDefaults.quota.hard with ${[...scope.budget.keys()]
            .filter((r) => !isTierKey(r))
            .sort()
            .join(', ')}`,
        ]
      : []),
    ...[...new Set(tiers.map((t) => t.tier!))].sort().map(
      (tier) =>
        `spec.namespaceDefaults.tiers.${tier}.quota.hard with ${tiers
          .filter((t) => t.tier === tier)
          .map((t) => t.resource)
          .join(', ')}`,
    ),
  ];
  return [
    {
      rule: 'Q2',
      path: ['metadata', 'name'],
      message:
        `Namespace ${name} would have no quota for ${missing.join(', ')}: ${where(scope)} budgets ` +
        `${missing.length === 1 ? 'it' : 'them'}, but ${sources.join(' and ')} ` +
        `${sources.length === 1 ? 'does' : 'do'} not cover ${missing.length === 1 ? 'it' : 'them'}; the platform ` +
        `team must declare ${declare.join(' and ')} in Project ${scope.project}`,
    },
  ];
}

/**
 * Q2 for the other-tiers quota (tiers.ts): a tenant's quota counted under `pods@*` must leave out
 * (`NotIn`) only declared tiers, or pods of the classes it also leaves out would be bounded by no tier
 * and not refused. Leaving out fewer only refuses a tier's pods (the tenant's own loss).
 */
export function checkOtherTiersScope(
  scope: BudgetScope,
  project: Project,
  subject: string,
  excluded: readonly string[],
): Violation[] {
  const tiers = new Set(tierNames(project));
  const extra = excluded.filter((c) => !tiers.has(c)).sort();
  if (extra.length === 0) return [];
  return [
    {
      rule: 'Q2',
      path: ['spec', 'scopeSelector'],
      message:
        `${subject} is scoped PriorityClass NotIn [${excluded.join(', ')}], which leaves pods of ` +
        `${extra.join(', ')} without a quota, but ${where(scope)} budgets ${OTHER_TIERS_PODS} = 0 (pods of a ` +
        `PriorityClass that is no tier): the other-tiers quota may leave out only the declared tiers (` +
        `${[...tiers].sort().join(', ')})`,
    },
  ];
}

/** Q3: a non-privileged subject may replace the only quota covering a budgeted resource, not delete it. */
export function checkSoleCoverage(
  scope: BudgetScope,
  user: UserInfo,
  subject: string,
  namespace: string,
  coveredBefore: ReadonlyMap<string, Quantity>,
  coveredAfter: ReadonlyMap<string, Quantity>,
): Violation[] {
  const lost = [...scope.budget.keys()].filter((r) => coveredBefore.has(r) && !coveredAfter.has(r)).sort();
  if (lost.length === 0) return [];
  return [
    {
      rule: 'Q3',
      message:
        `${subject} provides the only coverage of ${lost.join(', ')} in namespace ${namespace} (project ` +
        `${scope.project} budgets ${lost.length === 1 ? 'it' : 'them'}); ${describeUser(user)} may replace it but ` +
        `not delete it`,
    },
  ];
}

/**
 * A Q1 denial of a growing share, with what the other namespaces hold above their quotas (in use, or
 * still enforced by the apiserver): the budget they take although their quotas were lowered.
 */
export function explainInUse(
  snapshot: Snapshot,
  project: Project,
  scope: BudgetScope,
  namespace: string,
  violations: Violation[],
): Violation[] {
  if (violations.length === 0) return violations;
  const above: string[] = [];
  for (const ns of snapshot.namespacesOfProject(project.metadata.name ?? '')) {
    const name = ns.metadata.name ?? '';
    if (name === namespace) continue;
    const quoted = observedEffectiveQuota(snapshot, name);
    const held = namespaceShare(snapshot, project, scope.cluster, scope.at, name).resources;
    if (quoted.size === 0 && namespaceIsTerminating(ns)) {
      // Its quotas were deleted before its pods were gone (Kubernetes before 1.33): they count what
      // the pods last used (ADR 0077).
      const counted = [...held]
        .filter(([r, q]) => scope.budget.has(r) && q.sign() > 0)
        .map(([r, q]) => `${r} ${q.toString()}`);
      if (counted.length > 0)
        above.push(`${name} holds ${counted.join(', ')} (being deleted, its quotas gone while its pods may still run)`);
      continue;
    }
    for (const [r, q] of held) {
      const limit = quoted.get(r);
      if (scope.budget.has(r) && limit && q.cmp(limit) > 0)
        above.push(`${name} holds ${r} ${q.toString()} (its quota says ${limit.toString()}; in use or still enforced)`);
    }
  }
  if (above.length === 0) return violations;
  const note = `; counted by usage: ${above.sort().join(', ')}`;
  return violations.map((v) => ({ ...v, message: v.message + note }));
}
