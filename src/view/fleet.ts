/**
 * The fleet part of a Budget in the budget view (docs/budget-view.md, docs/adr/0039-fleet-budgets.md):
 * for a Project whose spec.fleet names this cluster, the fleet budget, what this cluster enforces (E) and
 * holds, its share and every member's share as the hub last showed them, and the room left. Pure: the
 * numbers are what the controller's fleet loop last read (the hub's share record, E from the headroom ledger;
 * every replica reads them, src/controller/fleet-loop.ts) and the allocation from the cache — the view
 * makes no call to the hub or the apiserver on a request.
 */
import { memberShare, poolOf, type ShareRecord } from '../fleet/shares.js';
import { Quantity } from '../quantity/quantity.js';
import { parseResources } from '../validate/resource-lists.js';
import type { Resources } from '../validate/types.js';
import type { Project } from '../validate/types.js';

const ZERO = Quantity.zero();
const at = (r: Resources | undefined, resource: string): Quantity => r?.get(resource) ?? ZERO;

/** What the controller last saw of one project (src/controller/fleet-loop.ts's observation). */
export interface FleetSeen {
  readonly record?: ShareRecord;
  readonly enforced?: Resources;
  /** Epoch ms. */
  readonly at: number;
}

interface FleetResourceJson {
  resource: string;
  /** spec.fleet.quota.hard as the Project here declares it. */
  fleetBudget: string;
  /** What this cluster's namespaces hold (usage-counted). */
  allocated: string;
  /** E: the most this cluster lets the project allocate now; absent until the controller read it. */
  enforced?: string;
  /** E − allocated: growth admitted here without asking the hub. */
  headroomHere?: string;
  /** This cluster's share and the part of it it offers to the others (hub, as last read). */
  share?: string;
  lendable?: string;
  /** budget − Σ shares on the hub (room nobody holds; negative after the budget was lowered below them). */
  pool?: string;
  /** What other members offer. */
  offeredByOthers?: string;
  /**
   * headroomHere + max(pool, 0) + offeredByOthers: what the project could still grow by here, this
   * cluster's upper bound aside.
   */
  fleetHeadroom?: string;
}

export interface BudgetFleetJson {
  members: string[];
  /** When the controller last read the hub and the enforced limit (RFC 3339); absent: not yet. */
  observedAt?: string;
  resources: FleetResourceJson[];
  /** Every member's share per resource as the hub last showed it (this cluster included). */
  clusters: Array<{ cluster: string; share: Record<string, string>; lendable: Record<string, string> }>;
}

/** The fleet section of the Budget of `project` on `cluster` (undefined unless spec.fleet names the cluster). */
export function budgetFleet(
  project: Project,
  cluster: string,
  allocated: Resources,
  seen: FleetSeen | undefined,
): BudgetFleetJson | undefined {
  const fleet = project.spec.fleet;
  const members = Array.isArray(fleet?.clusters)
    ? fleet.clusters.filter((c): c is string => typeof c === 'string')
    : [];
  if (!fleet || !members.includes(cluster)) return undefined;
  const budget = parseResources(fleet.quota?.hard);
  const record = seen?.record;
  const pool = record ? poolOf(record) : undefined;
  const entry = record ? memberShare(record, cluster) : undefined;
  const resources: FleetResourceJson[] = [...budget.keys()].sort().map((resource) => {
    const held = at(allocated, resource);
    const e = seen?.enforced ? at(seen.enforced, resource) : undefined;
    const here = e?.sub(held);
    let others = ZERO;
    if (record) for (const [m, x] of record.shares) if (m !== cluster) others = others.add(at(x.lendable, resource));
    const p = pool?.get(resource);
    return {
      resource,
      fleetBudget: budget.get(resource)!.toString(),
      allocated: held.toString(),
      ...(e ? { enforced: e.toString(), headroomHere: here!.toString() } : {}),
      ...(entry
        ? { share: at(entry.share, resource).toString(), lendable: at(entry.lendable, resource).toString() }
        : {}),
      ...(p ? { pool: p.toString(), offeredByOthers: others.toString() } : {}),
      ...(here && p
        ? {
            fleetHeadroom: here
              .add(p.sign() > 0 ? p : ZERO)
              .add(others)
              .toString(),
          }
        : {}),
    };
  });
  const clusters = record
    ? [...new Set([...members, ...record.shares.keys()])].sort().map((c) => {
        const x = memberShare(record, c);
        const list = (r: Resources) =>
          Object.fromEntries([...budget.keys()].sort().map((k) => [k, at(r, k).toString()]));
        return { cluster: c, share: list(x.share), lendable: list(x.lendable) };
      })
    : [];
  return { members, ...(seen ? { observedAt: new Date(seen.at).toISOString() } : {}), resources, clusters };
}
