/**
 * The budget model (docs/design.md, "The budget model"; docs/adr/0067-budgets.md):
 * a project's budget on a cluster at an instant is composed in named layers, each over the one before:
 *
 *   declared  `spec.clusters.<cluster>.quota.hard`, else `spec.quota.hard`
 *   tiers     each tier's `quota.hard` under `<resource>@<tier>`, and `pods@*` = 0 (tiers.ts)
 *   bursts    the bursts active at the instant, added to the resources the budget has (bursts.ts)
 *   fleet-cap on a fleet member, each fleet-budgeted resource at the member's cap (src/fleet/member-budget.ts)
 *
 * The cap replaces a resource's amount, bursts included (the cap counts them once already). It is
 * not part of the Project: a snapshot that decides for a fleet member offers it (`Snapshot.budgetCapOf`).
 * Pure: the instant and the cap are arguments; nothing here reads a clock (the edges pass `processNow()`).
 * Each layer returns the same object for the same input, so a budget parses once however many decisions read it.
 */
import { withActiveBursts } from '../bursts.js';
import { parseResources } from '../resource-lists.js';
import { isTierKey, withTierBudgets, withTierDefaults } from '../tiers.js';
import type { FieldPath, Project, ResourceList, Resources, Snapshot } from '../types.js';

/** The budget of a project that declares none: one object, so that what is derived from it is cached too. */
const NO_BUDGET: ResourceList = Object.freeze({});

/** The budget as declared for a cluster, without tiers or bursts. */
export function declaredBudgetList(project: Project, cluster: string): ResourceList {
  const perCluster = cluster ? project.spec.clusters?.[cluster]?.quota?.hard : undefined;
  return perCluster ?? project.spec.quota?.hard ?? NO_BUDGET;
}

/**
 * The fleet-cap layer: `list` with each resource of `cap` at the cap's amount. A resource the list
 * lacks is added after the declared resources, before the tier keys (where a declared one would be).
 */
function withFleetCap(list: ResourceList, cap: Resources): ResourceList {
  const out: ResourceList = {};
  let added = false;
  const addMissing = () => {
    if (added) return;
    added = true;
    for (const [resource, q] of cap) if (!Object.hasOwn(list, resource)) out[resource] = q.toString();
  };
  for (const key of Object.keys(list)) {
    if (isTierKey(key)) addMissing();
    const capped = cap.get(key);
    out[key] = capped ? capped.toString() : list[key]!;
  }
  addMissing();
  return out;
}

/**
 * The raw budget of a project on a cluster at instant `at` (ms since the epoch; the caller's, never a
 * default): the layers composed in order — declared, tiers, bursts, then the fleet cap when there is one. Without a cap
 * the same object for the same project, cluster and active bursts, so its parse is cached.
 */
export function budgetList(project: Project, cluster: string, at: number, cap?: Resources): ResourceList {
  const list = withActiveBursts(project, cluster, withTierBudgets(project, declaredBudgetList(project, cluster)), at);
  return cap ? withFleetCap(list, cap) : list;
}

export function budgetOf(project: Project, cluster: string, at: number, cap?: Resources): Resources {
  return parseResources(budgetList(project, cluster, at, cap));
}

/**
 * Where a budget is declared: `spec.clusters.<cluster>.quota.hard` when the cluster has its own (or a fleet cap stands
 * in for it), else `spec.quota.hard`.
 */
export function budgetPath(project: Project, cluster: string, capped = false): FieldPath {
  return cluster && (capped || project.spec.clusters?.[cluster]?.quota?.hard)
    ? ['spec', 'clusters', cluster, 'quota', 'hard']
    : ['spec', 'quota', 'hard'];
}

/** The budget of a project as a snapshot's decisions count it: with the fleet cap the snapshot offers for it. */
export function budgetIn(snapshot: Snapshot, project: Project, cluster: string, at: number): Resources {
  return budgetOf(project, cluster, at, snapshot.budgetCapOf?.(project, cluster));
}

/** budgetList as a snapshot's decisions count it (budgetIn). */
export function budgetListIn(snapshot: Snapshot, project: Project, cluster: string, at: number): ResourceList {
  return budgetList(project, cluster, at, snapshot.budgetCapOf?.(project, cluster));
}

/** budgetPath for a budget counted through a snapshot (budgetIn). */
export function budgetPathIn(snapshot: Snapshot, project: Project, cluster: string): FieldPath {
  return budgetPath(project, cluster, snapshot.budgetCapOf?.(project, cluster) !== undefined);
}

/**
 * `namespaceDefaults.quota.hard`, with `namespaceDefaults.tiers` under tier keys and `pods@*` = 0 when the project has
 * tiers (tiers.ts).
 */
export function defaultsOf(project: Project): Resources {
  return parseResources(withTierDefaults(project, project.spec.namespaceDefaults?.quota?.hard));
}
