/**
 * A fleet member's budget of a Project (docs/adr/0039-fleet-budgets.md): for a Project whose
 * `spec.fleet.clusters` names this cluster, each fleet-budgeted resource (`spec.fleet.quota.hard`) is
 * budgeted at min(E, the per-cluster upper bound) — E the enforced limit in the project's headroom
 * ledger (src/fleet/enforced-record.ts). That limit is the fleet-cap layer of the budget
 * (src/validate/budget/layers.ts): the member hands the rules a snapshot that offers it
 * (MemberCapView, `Snapshot.budgetCapOf`), and Q1, Q4's warnings and Q5's reservations judge against E
 * without a rule knowing about fleets. Resources outside the fleet budget, clusters outside
 * `spec.fleet.clusters` and Projects without `spec.fleet` are left exactly as they are: an active burst
 * raises them once, as anywhere; the fleet-budgeted ones count it in their limit, once (docs/fleet.md).
 * The same view serves the controller (give-back.ts fleetProjectBudget: its floor, metrics and the
 * budget view).
 *
 * Pure. Used by the webhook's headroom guard (src/webhook/headroom/guard.ts).
 */
import { Quantity } from '../quantity/quantity.js';
import { budgetList } from '../validate/budget/layers.js';
import { parseResources } from '../validate/resource-lists.js';
import { projectShares } from '../validate/shares.js';
import type { Resources } from '../validate/types.js';
import type { NamespaceObject, Project, ResourceQuotaObject, Snapshot } from '../validate/types.js';

const ZERO = Quantity.zero();

/** The fleet budget when `cluster` is one of the Project's fleet members; undefined otherwise (no change). */
export function fleetBudgetOn(project: Project, cluster: string): Resources | undefined {
  const fleet = project.spec.fleet;
  if (
    !cluster ||
    !fleet ||
    typeof fleet !== 'object' ||
    !Array.isArray(fleet.clusters) ||
    !fleet.clusters.includes(cluster)
  )
    return undefined;
  const budget = parseResources(fleet.quota?.hard);
  return budget.size > 0 ? budget : undefined;
}

/**
 * Per fleet-budgeted resource, the most this member may allocate: min(E, upper bound, fleet budget)
 * (E missing: 0). The upper bound is the cluster's own budget (`spec.clusters.<c>.quota.hard`, else
 * `spec.quota.hard`) when it names the resource, with the bursts active at `at` added once: a burst raises
 * how far this member may grow through the hub, never E itself nor the fleet budget.
 */
export function memberLimits(
  project: Project,
  cluster: string,
  at: number,
  enforced: Resources,
): Resources | undefined {
  const fleet = fleetBudgetOn(project, cluster);
  if (!fleet) return undefined;
  const bound = parseResources(budgetList(project, cluster, at));
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
export function reachableLimits(project: Project, cluster: string, at: number): Resources | undefined {
  const fleet = fleetBudgetOn(project, cluster);
  return fleet ? memberLimits(project, cluster, at, fleet) : undefined;
}

/**
 * A snapshot that decides for fleet member `cluster`: everything is the base's, and each
 * fleet-budgeted Project the base holds gets the fleet-cap layer of its budget (validate/budget/layers.ts)
 * from `capOf` (undefined: no cap). The Projects are not rewritten: the cap is a layer the budget
 * reads through `budgetCapOf`. `capOf` decides which Project objects it caps (the webhook's leaves a
 * Project under review, which the base does not hold, uncapped).
 */
class MemberCapView implements Snapshot {
  private readonly caps = new Map<Project, Resources | undefined>();
  readonly effectiveQuotaOf?: Snapshot['effectiveQuotaOf'];
  readonly heldQuotaOf?: Snapshot['heldQuotaOf'];
  readonly lastQuotaUsageOf?: Snapshot['lastQuotaUsageOf'];
  readonly projectSharesOf?: Snapshot['projectSharesOf'];

  constructor(
    private readonly base: Snapshot,
    private readonly cluster: string,
    private readonly capOf: (project: Project) => Resources | undefined,
  ) {
    // The base's optional memos are the view's when it has them (they are per namespace; the shares of
    // a capped Project are computed afresh through this view, as for any Project object a memo does not hold).
    if (base.effectiveQuotaOf) this.effectiveQuotaOf = (namespace) => base.effectiveQuotaOf!(namespace);
    if (base.heldQuotaOf) this.heldQuotaOf = (namespace) => base.heldQuotaOf!(namespace);
    if (base.lastQuotaUsageOf) this.lastQuotaUsageOf = (namespace) => base.lastQuotaUsageOf!(namespace);
    if (base.projectSharesOf)
      this.projectSharesOf = (project, c, at) =>
        this.budgetCapOf(project, c) ? projectShares(this, project, c, at) : base.projectSharesOf!(project, c, at);
  }

  projects(): Iterable<Project> {
    return this.base.projects();
  }
  project(name: string): Project | undefined {
    return this.base.project(name);
  }
  namespace(name: string): NamespaceObject | undefined {
    return this.base.namespace(name);
  }
  namespacesOfProject(project: string): Iterable<NamespaceObject> {
    return this.base.namespacesOfProject(project);
  }
  quotasInNamespace(namespace: string): Iterable<ResourceQuotaObject> {
    return this.base.quotasInNamespace(namespace);
  }

  budgetCapOf(project: Project, cluster: string): Resources | undefined {
    if (cluster !== this.cluster || !fleetBudgetOn(project, cluster)) return undefined;
    if (this.caps.has(project)) return this.caps.get(project);
    const cap = this.capOf(project);
    this.caps.set(project, cap);
    return cap;
  }
}

/** The view of `base` for fleet member `cluster` with the caps `capOf` gives (MemberCapView). */
export function memberCapView(
  base: Snapshot,
  cluster: string,
  capOf: (project: Project) => Resources | undefined,
): Snapshot {
  return new MemberCapView(base, cluster, capOf);
}
