/**
 * A fleet member's budget of a Project (docs/adr/0044-fleet-member-wiring.md): for a Project whose
 * `spec.fleet.clusters` names this cluster, each fleet-budgeted resource (`spec.fleet.quota.hard`) is
 * budgeted at min(E, the per-cluster upper bound) — E the enforced limit in the project's headroom
 * ledger (src/fleet/enforced-record.ts). Every rule reads the budget through `budgetOf(project,
 * cluster)`, so the member hands the rules a view of the snapshot whose Project carries that budget in
 * `spec.clusters.<cluster>.quota.hard`: Q1, Q4's warnings and Q5's reservations then judge against E
 * without a rule knowing about fleets. Resources outside the fleet budget, clusters outside
 * `spec.fleet.clusters` and Projects without `spec.fleet` are left exactly as they are: an active burst
 * raises them once, as anywhere; the fleet-budgeted ones count it in their limit, once (docs/fleet.md).
 * The same view serves the controller (give-back.ts fleetProjectBudget: its floor, metrics and the
 * budget view).
 *
 * Pure. Used by the webhook's headroom guard (src/webhook/headroom.ts).
 */
import { Quantity } from '../quantity/quantity.js';
import { bursts } from '../validate/bursts.js';
import { budgetList, declaredBudgetList, parseResources, type Resources } from '../validate/resources.js';
import type { Burst, Project, ResourceList, Snapshot } from '../validate/types.js';

const ZERO = Quantity.zero();

/** The fleet budget when `cluster` is one of the Project's fleet members; undefined otherwise (no change). */
export function fleetBudgetOn(project: Project, cluster: string): Resources | undefined {
  const fleet = project.spec.fleet;
  if (!cluster || !fleet || typeof fleet !== 'object' || !Array.isArray(fleet.clusters) || !fleet.clusters.includes(cluster)) return undefined;
  const budget = parseResources(fleet.quota?.hard);
  return budget.size > 0 ? budget : undefined;
}

/**
 * Per fleet-budgeted resource, the most this member may allocate: min(E, upper bound, fleet budget)
 * (E missing: 0). The upper bound is the cluster's own budget (`spec.clusters.<c>.quota.hard`, else
 * `spec.quota.hard`) when it names the resource, with the bursts active now added once: a burst raises
 * how far this member may grow through the hub, never E itself nor the fleet budget.
 */
export function memberLimits(project: Project, cluster: string, enforced: Resources): Resources | undefined {
  const fleet = fleetBudgetOn(project, cluster);
  if (!fleet) return undefined;
  const bound = parseResources(budgetList(project, cluster));
  const out = new Map<string, Quantity>();
  for (const [resource, total] of fleet) {
    let limit = enforced.get(resource) ?? ZERO;
    const upper = bound.get(resource);
    if (upper && upper.cmp(limit) < 0) limit = upper;
    if (total.cmp(limit) < 0) limit = total;
    out.set(resource, limit.sign() < 0 ? ZERO : limit);
  }
  return out;
}

/**
 * The same limits with E replaced by the most the member could ever be granted (its upper bound, the
 * fleet budget): what a change would need if the hub had room. A change denied against `memberLimits`
 * but admitted against these is a growth beyond E the hub may cover.
 */
export function reachableLimits(project: Project, cluster: string): Resources | undefined {
  const fleet = fleetBudgetOn(project, cluster);
  return fleet ? memberLimits(project, cluster, fleet) : undefined;
}

/**
 * The Project with `limits` as the budget of those resources on `cluster` (the other resources as they
 * were). Its `spec.clusters.<cluster>.quota.hard` is the declared budget (tiers and bursts are added
 * by `budgetOf` on the view, as on any Project) with `limits` in place; and its bursts no longer
 * raise the resources of `limits`, which already count them (memberLimits' upper bound has the active
 * bursts, once): a burst is counted exactly once, and a limit is never exceeded.
 */
export function withMemberBudget(project: Project, cluster: string, limits: Resources): Project {
  const hard: ResourceList = { ...declaredBudgetList(project, cluster) };
  for (const [resource, q] of limits) hard[resource] = q.toString();
  const clusters = { ...(project.spec.clusters ?? {}) };
  clusters[cluster] = { ...(clusters[cluster] ?? {}), quota: { ...(clusters[cluster]?.quota ?? {}), hard } };
  const bursts = burstsWithout(project, limits);
  return { ...project, spec: { ...project.spec, clusters, ...(bursts ? { bursts } : {}) } };
}

/** The project's bursts without the resources of `limits` (undefined: no burst names one, keep the list). */
function burstsWithout(project: Project, limits: Resources): Burst[] | undefined {
  const list = bursts(project);
  if (!list.some((b) => Object.keys(b?.quota?.hard ?? {}).some((r) => limits.has(r)))) return undefined;
  return list.map((b) => {
    const hard = b?.quota?.hard;
    if (!hard || !Object.keys(hard).some((r) => limits.has(r))) return b;
    return { ...b, quota: { ...b.quota, hard: Object.fromEntries(Object.entries(hard).filter(([r]) => !limits.has(r))) } };
  });
}

/**
 * A snapshot whose fleet-budgeted Projects carry, on `cluster`, the limits `limitsOf` gives them
 * (undefined: the Project as it is). Everything else is the base snapshot's.
 */
export function memberView(base: Snapshot, cluster: string, limitsOf: (project: Project) => Resources | undefined): Snapshot {
  const seen = new Map<Project, Project>();
  const view = (project: Project | undefined): Project | undefined => {
    if (!project || !fleetBudgetOn(project, cluster)) return project;
    let out = seen.get(project);
    if (!out) {
      const limits = limitsOf(project);
      out = limits ? withMemberBudget(project, cluster, limits) : project;
      seen.set(project, out);
    }
    return out;
  };
  const overrides: Pick<Snapshot, 'projects' | 'project'> = {
    *projects() {
      for (const p of base.projects()) yield view(p)!;
    },
    project: (name) => view(base.project(name)),
  };
  // Everything else is the base's, whatever it offers (its optional memos are per namespace, or compute
  // afresh for a Project object they do not hold, as MemorySnapshot.projectSharesOf does).
  return new Proxy(base, {
    get(target, prop) {
      if (prop === 'projects' || prop === 'project') return overrides[prop];
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
