/**
 * After a burst ends, the project comes back within its budget (docs/budgets.md#bursts,
 * docs/adr/0067-budgets.md). A burst raises the budget; tenants raise their quotas
 * inside it, in whichever namespaces they like. When the last burst on the cluster has ended and the
 * project's allocation is still above its budget, the controller lowers quotas until it is not:
 *
 * - never below what a namespace uses, nor below its declaration: the quota git declares for it (Argo
 *   CD would put it back), else namespaceDefaults (what a self-service namespace was created with);
 * - first the quotas it raised for a burst itself (tenantgate.io/burst-raised), then those with the
 *   most room above that floor (then by name): the room was the tenant's to place, so every lowering
 *   names the namespace and what it gives back;
 * - what cannot be lowered yet (used above the floor) is reported per resource, with the allocation
 *   still above the budget, and lowered at a later reconcile as usage falls.
 *
 * It does not depend on the burst-raised annotation, which a tenant can edit: only on the budget, the
 * quotas and their usage. Pure: a Snapshot, the pending burst writes and an instant; no I/O.
 */
import { Quantity } from '../quantity/quantity.js';
import { activeBursts, bursts, burstApplies, burstPhase } from '../validate/bursts.js';
import { projectBudget } from '../validate/budget.js';
import { budgetOf } from '../validate/budget/layers.js';
import {
  DEFAULT_QUOTA_NAME,
  LABEL_PROJECT,
  type Project,
  type ResourceList,
  type ResourceQuotaObject,
  type Snapshot,
} from '../validate/types.js';
import { cmpStr } from '../order.js';
import { declaredHere, expectedQuota } from './defaults.js';

const ZERO = Quantity.zero();
const q = (v: string | number | undefined): Quantity | undefined =>
  v === undefined ? undefined : Quantity.tryParse(v);
const max = (a: Quantity, b: Quantity): Quantity => (a.cmp(b) >= 0 ? a : b);
const min = (a: Quantity, b: Quantity): Quantity => (a.cmp(b) <= 0 ? a : b);

/** One namespace's quota lowered for the budget: `resource` from → to (it gives back from − to). */
export interface GiveBack {
  readonly namespace: string;
  readonly resource: string;
  readonly from: Quantity;
  readonly to: Quantity;
}

/** A budgeted resource the project still allocates above its budget after every possible lowering. */
export interface StillOver {
  readonly resource: string;
  readonly budget: Quantity;
  readonly allocated: Quantity;
  /** The namespaces whose usage holds their quota above the floor, as "ml-a uses 6". */
  readonly heldBy: readonly string[];
}

export interface BudgetRestore {
  readonly giveBacks: readonly GiveBack[];
  readonly stillOver: readonly StillOver[];
}

/** A namespace's `tenantgate-quota` (the one bursts raise and lower), as the snapshot shows it. */
export function defaultQuotaOf(snapshot: Snapshot, namespace: string): ResourceQuotaObject | undefined {
  return [...snapshot.quotasInNamespace(namespace)].find((x) => x.metadata.name === DEFAULT_QUOTA_NAME);
}

/** Whether `namespace` is there, not being deleted, and labelled for project `project`. */
export function liveNamespaceOf(snapshot: Snapshot, namespace: string, project: string): boolean {
  const ns = snapshot.namespace(namespace);
  if (!ns) return false;
  return !ns.metadata.deletionTimestamp && ns.metadata.labels?.[LABEL_PROJECT] === project;
}

const NOTHING_TO_RESTORE: BudgetRestore = { giveBacks: [], stillOver: [] };

/** Whether a burst on this cluster has ended and none is active at `at`: when the budget must hold again. */
function afterBursts(project: Project, cluster: string, at: number): boolean {
  const mine = bursts(project).filter((b) => burstApplies(b, cluster));
  return mine.some((b) => burstPhase(b, at) === 'ended') && activeBursts(project, cluster, at).length === 0;
}

interface Candidate {
  namespace: string;
  hard: Quantity;
  floor: Quantity;
  used: Quantity;
  raisedByBurst: boolean;
}

/**
 * The give-backs that bring `project` within its budget on `cluster` at `at`, given the quotas the
 * burst step is about to write (`pending`: namespace → spec.hard it will have).
 */
export function planBudgetRestore(
  project: Project,
  snapshot: Snapshot,
  cluster: string,
  at: number,
  pending: ReadonlyMap<string, ResourceList>,
  raisedAnnotation: string,
): BudgetRestore {
  if (project.metadata.deletionTimestamp || !afterBursts(project, cluster, at)) return NOTHING_TO_RESTORE;
  const name = project.metadata.name ?? '';
  const budget = budgetOf(project, cluster, at);
  const current = projectBudget(snapshot, project, cluster, at);
  const declared = new Map(declaredHere(project, cluster).map((d) => [d.name, d] as const));
  const giveBacks: GiveBack[] = [];
  const stillOver: StillOver[] = [];
  for (const [resource, limit] of [...budget].sort(([a], [b]) => cmpStr(a, b))) {
    if (resource.includes('@')) continue; // tiers are lowered through their own quotas, not here
    let allocated = ZERO;
    const candidates: Candidate[] = [];
    for (const ns of current.namespaces) {
      const counted = ns.allocated.get(resource) ?? ZERO;
      const quota = defaultQuotaOf(snapshot, ns.namespace);
      const hardText = pending.get(ns.namespace)?.[resource] ?? quota?.spec?.hard?.[resource];
      const hard = q(hardText);
      const used = q(quota?.status?.used?.[resource]) ?? ZERO;
      if (!quota || !hard || !liveNamespaceOf(snapshot, ns.namespace, name)) {
        allocated = allocated.add(counted);
        continue;
      }
      // What this namespace counts once the pending write lands: what it counts now, moved by the change
      // of its quota (a quota counts as its hard, or its usage when above).
      const now = q(quota.spec?.hard?.[resource]) ?? hard;
      allocated = allocated.add(counted).add(max(hard, used)).sub(max(now, used));
      const floor = max(used, q(expectedQuota(project, declared.get(ns.namespace))?.[resource]) ?? ZERO);
      if (hard.cmp(floor) > 0) {
        const raised = (quota.metadata.annotations?.[raisedAnnotation] ?? '').split(',').includes(resource);
        candidates.push({ namespace: ns.namespace, hard, floor, used, raisedByBurst: raised });
      }
    }
    let excess = allocated.sub(limit);
    if (excess.sign() <= 0) continue;
    candidates.sort(
      (a, b) =>
        Number(b.raisedByBurst) - Number(a.raisedByBurst) ||
        b.hard.sub(b.floor).cmp(a.hard.sub(a.floor)) ||
        cmpStr(a.namespace, b.namespace),
    );
    for (const c of candidates) {
      if (excess.sign() <= 0) break;
      const take = min(c.hard.sub(c.floor), excess);
      giveBacks.push({ namespace: c.namespace, resource, from: c.hard, to: c.hard.sub(take) });
      excess = excess.sub(take);
    }
    if (excess.sign() > 0) {
      const heldBy = current.namespaces
        .map((ns) => ({ ns: ns.namespace, used: q(defaultQuotaOf(snapshot, ns.namespace)?.status?.used?.[resource]) }))
        .filter((x) => x.used && x.used.sign() > 0)
        .map((x) => `${x.ns} uses ${x.used!.toString()}`);
      stillOver.push({ resource, budget: limit, allocated: limit.add(excess), heldBy });
    }
  }
  return { giveBacks, stillOver };
}

/** "ml-a gives back requests.cpu 4 (12 → 8)". */
export function describeGiveBack(g: GiveBack): string {
  return (
    `${g.namespace} gives back ${g.resource} ${g.from.sub(g.to).toString()} (${g.from.toString()} → ` +
    `${g.to.toString()})`
  );
}

/** "requests.cpu: 24 allocated, budget 20 (ml-a uses 14, ml-b uses 10)". */
export function describeStillOver(s: StillOver): string {
  return (
    `${s.resource}: ${s.allocated.toString()} allocated, budget ${s.budget.toString()}` +
    `${s.heldBy.length > 0 ? ` (${s.heldBy.join(', ')})` : ''}`
  );
}
