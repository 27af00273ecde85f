/**
 * A project's budget on one cluster as people read it: per resource the budget, what the namespaces
 * hold (allocated, counted as the rules count it: a namespace holds the largest of its quota, the
 * quota the apiserver enforces and what it uses), what they use (the quotas' `status.used`) and the
 * headroom left; and per namespace its share. Pure: the Project status, `tenantgate plan`, the
 * budget view, `kubectl tenantgate headroom` and the controller's metrics all read this one answer.
 */
import { Quantity } from '../quantity/quantity.js';
import { budgetIn } from './budget/layers.js';
import { clusterShares, sumShares } from './shares.js';
import { formatResources, sumResources } from './resource-lists.js';
import { namespaceIsTerminating, observedEffectiveQuota, quotaUsed } from './quota-hold.js';
import type { Project, Resources, Snapshot } from './types.js';

export interface ResourceBudget {
  readonly resource: string;
  /** Absent when the project declares no budget for this resource on the cluster. */
  readonly budget?: Quantity;
  readonly allocated: Quantity;
  readonly used: Quantity;
  /** budget − allocated (negative when over budget); absent without a budget. */
  readonly headroom?: Quantity;
}

interface NamespaceBudget {
  readonly namespace: string;
  /** The namespace's share of the project budget (what the rules count for it). */
  readonly allocated: Resources;
  /** Per resource, the largest `status.used` its unscoped quotas report. */
  readonly used: Resources;
  /** The effective quota of the namespace (the tightest `hard` of its unscoped quotas). */
  readonly hard: Resources;
  /** True when part of the share comes from `namespaceDefaults` because no quota covers it yet. */
  readonly defaulted: boolean;
}

export interface ProjectBudget {
  readonly project: string;
  readonly tenant: string;
  /** '' for an unnamed cluster. */
  readonly cluster: string;
  /** Budgeted resources first, then any other allocated resource, each sorted by name. */
  readonly resources: readonly ResourceBudget[];
  readonly namespaces: readonly NamespaceBudget[];
  readonly budget: Resources;
  readonly allocated: Resources;
  readonly used: Resources;
  readonly headroom: Resources;
}

/**
 * What one namespace uses: per resource, the largest report of its unscoped quotas (quotaUsed); for a
 * terminating namespace whose quotas are gone, what they last reported (its pods may still run, ADR 0077).
 */
export function usedIn(snapshot: Snapshot, namespace: string): Resources {
  const used = quotaUsed(snapshot.quotasInNamespace(namespace));
  if (used.size > 0) return used;
  const ns = snapshot.namespace(namespace);
  return (ns && namespaceIsTerminating(ns) && snapshot.lastQuotaUsageOf?.(namespace)) || used;
}

/** Re-exported for the callers that add budgets (src/plan). */
export { sumResources };

/** Σ over the namespaces of what each uses (usedIn). */
export function usedOf(snapshot: Snapshot, namespaces: Iterable<string>): Resources {
  return sumResources([...namespaces].map((ns) => usedIn(snapshot, ns)));
}

/** budget − allocated per budgeted resource. */
export function headroomOf(budget: Resources, allocated: Resources): Resources {
  const headroom = new Map<string, Quantity>();
  for (const [r, limit] of budget) headroom.set(r, allocated.has(r) ? limit.sub(allocated.get(r)!) : limit);
  return headroom;
}

export function projectBudget(snapshot: Snapshot, project: Project, cluster: string, at: number): ProjectBudget {
  const budget = budgetIn(snapshot, project, cluster, at);
  const shares = clusterShares(snapshot, project, cluster, at);
  const allocated = sumShares(shares);
  const namespaces: NamespaceBudget[] = shares.map((share) => ({
    namespace: share.namespace,
    allocated: share.resources,
    used: usedIn(snapshot, share.namespace),
    hard: new Map(observedEffectiveQuota(snapshot, share.namespace)),
    defaulted: share.defaulted,
  }));
  const used = sumResources(namespaces.map((n) => n.used));
  const headroom = headroomOf(budget, allocated);
  const names = [...[...budget.keys()].sort(), ...[...allocated.keys()].filter((r) => !budget.has(r)).sort()];
  const resources: ResourceBudget[] = names.map((resource) => {
    const limit = budget.get(resource);
    const room = headroom.get(resource);
    return {
      resource,
      ...(limit ? { budget: limit } : {}),
      allocated: allocated.get(resource) ?? Quantity.zero(),
      used: used.get(resource) ?? Quantity.zero(),
      ...(room ? { headroom: room } : {}),
    };
  });
  return {
    project: project.metadata.name ?? '',
    tenant: project.spec.tenant,
    cluster,
    resources,
    namespaces,
    budget,
    allocated,
    used,
    headroom,
  };
}

/** The budget as plain JSON (quantities in Kubernetes' canonical form), for `-o json`, the view and plans. */
export interface ProjectBudgetJson {
  project: string;
  tenant: string;
  cluster: string;
  resources: Array<{ resource: string; budget?: string; allocated: string; used: string; headroom?: string }>;
  namespaces: Array<{
    namespace: string;
    allocated: Record<string, string>;
    used: Record<string, string>;
    hard: Record<string, string>;
    defaulted: boolean;
  }>;
}

export function projectBudgetJson(b: ProjectBudget): ProjectBudgetJson {
  return {
    project: b.project,
    tenant: b.tenant,
    cluster: b.cluster,
    resources: b.resources.map((r) => ({
      resource: r.resource,
      ...(r.budget ? { budget: r.budget.toString() } : {}),
      allocated: r.allocated.toString(),
      used: r.used.toString(),
      ...(r.headroom ? { headroom: r.headroom.toString() } : {}),
    })),
    namespaces: b.namespaces.map((n) => ({
      namespace: n.namespace,
      allocated: formatResources(n.allocated),
      used: formatResources(n.used),
      hard: formatResources(n.hard),
      defaulted: n.defaulted,
    })),
  };
}
