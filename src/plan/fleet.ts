/**
 * `tenantgate plan` over a fleet budget (docs/adr/0039-fleet-budgets.md):
 * for a Project with `spec.fleet`, the fleet budget before → after,
 * each member's share of it (the hub's FleetBudget, when plan was given the hub), what each member's
 * namespaces hold and use after the change (from the live state plan reads; a member plan was not given
 * counts what is declared for it), and the fleet's headroom. Two refusals, each with its rule id:
 *
 * - F1 (plan): after the change the namespaces on the members hold more of a resource than the new fleet
 *   budget — declared quotas, and on the members plan reads, self-service namespaces and what the
 *   apiserver still enforces too (validate's F1 counts the declarations only);
 * - F2 (plan): the new fleet budget is below what the members hold as shares on the hub: the hub would
 *   refuse it (`setBudget`, src/fleet/shares.ts) until the members give unused share back.
 *
 * Pure: the Projects, the per-cluster budgets plan computed and the hub's share records in, lines out.
 */
import { poolOf, setBudget, type ShareRecord } from '../fleet/shares.js';
import { Quantity } from '../quantity/quantity.js';
import type { ProjectBudget } from '../validate/budget.js';
import { namespacesOn } from '../validate/offline.js';
import { defaultsOf } from '../validate/budget/layers.js';
import { parseResources } from '../validate/resource-lists.js';
import type { Resources } from '../validate/types.js';
import { fleetAllocationOverBudget, fleetGrowthRefusal } from '../validate/rules/fleet.js';
import type { Project } from '../validate/types.js';
import type { FleetLine, FleetMemberLine, FleetRollup, PlanFinding } from './types.js';

const ZERO = Quantity.zero();
const at = (r: Resources | undefined, resource: string): Quantity => r?.get(resource) ?? ZERO;

/** What plan knows of the hub for one project. */
export type HubShareRecord =
  /** plan was not given the hub (`--hub`): shares are not shown and F2 is not checked. */
  | { readonly state: 'not-read' }
  /** The hub has no FleetBudget for the project (not rendered for the hub yet): nobody holds a share. */
  | { readonly state: 'missing' }
  | { readonly state: 'read'; readonly record: ShareRecord }
  /** The hub's FleetBudget could not be read into a record (a value that is not a quantity). */
  | { readonly state: 'unreadable'; readonly problems: readonly string[] };

export interface FleetPlanInput {
  project: string;
  before: Project | undefined;
  after: Project;
  /** cluster → the project's budget there after the change (the clusters plan read). */
  budgets: ReadonlyMap<string, ProjectBudget>;
  hub: HubShareRecord;
}

function membersOf(p: Project | undefined): string[] {
  const clusters = p?.spec.fleet?.clusters;
  return Array.isArray(clusters) ? [...new Set(clusters.filter((c): c is string => typeof c === 'string'))] : [];
}

/** What the namespaces declared for `cluster` hold: their quota, else namespaceDefaults (validate's F1 count). */
function declaredOn(project: Project, cluster: string): Resources {
  const defaults = defaultsOf(project);
  const out = new Map<string, Quantity>();
  for (const ns of namespacesOn(project, cluster)) {
    const own = parseResources(ns.quota?.hard);
    for (const resource of new Set([...own.keys(), ...defaults.keys()])) {
      const v = own.get(resource) ?? defaults.get(resource)!;
      out.set(resource, at(out, resource).add(v));
    }
  }
  return out;
}

function percent(part: Quantity, whole: Quantity | undefined): number | undefined {
  if (!whole || whole.sign() <= 0) return undefined;
  return Math.round((part.asApproximateFloat64() / whole.asApproximateFloat64()) * 100);
}

/** The fleet roll-up of one Project with `spec.fleet` after the change (undefined without one). */
export function fleetRollup(input: FleetPlanInput): FleetRollup | undefined {
  const fleet = input.after.spec.fleet;
  if (!fleet || typeof fleet !== 'object') return undefined;
  const budgetAfter = parseResources(fleet.quota?.hard);
  const budgetBefore = input.before?.spec.fleet ? parseResources(input.before.spec.fleet.quota?.hard) : undefined;
  const members = membersOf(input.after);
  const record = input.hub.state === 'read' ? input.hub.record : undefined;
  // Members that left the fleet but still hold a share on the hub are shown too: they may only give back.
  const holders = record ? [...record.shares.keys()].filter((m) => !members.includes(m)) : [];
  const shown = [...members, ...holders.sort()];
  const pool = record ? poolOf({ ...record, budget: budgetAfter }) : undefined;

  const allocated = new Map<string, Quantity>();
  const lines: FleetLine[] = [...budgetAfter.keys()].sort().map((resource) => {
    const perMember: Record<string, FleetMemberLine> = {};
    let alloc = ZERO;
    let used = ZERO;
    let shares = ZERO;
    for (const member of shown) {
      const b = input.budgets.get(member);
      const line = b?.resources.find((r) => r.resource === resource);
      const memberAllocated = members.includes(member)
        ? b
          ? (line?.allocated ?? ZERO)
          : at(declaredOn(input.after, member), resource)
        : undefined;
      const entry = record?.shares.get(member);
      const out: FleetMemberLine = {
        ...(memberAllocated ? { allocated: memberAllocated.toString(), counted: b ? 'live' : 'declared' } : {}),
        ...(b ? { used: (line?.used ?? ZERO).toString() } : {}),
        ...(record
          ? { share: at(entry?.share, resource).toString(), lendable: at(entry?.lendable, resource).toString() }
          : {}),
      };
      perMember[member] = out;
      if (memberAllocated) alloc = alloc.add(memberAllocated);
      if (line) used = used.add(line.used);
      if (record) shares = shares.add(at(entry?.share, resource));
    }
    allocated.set(resource, alloc);
    const limit = budgetAfter.get(resource)!;
    const headroom = limit.sub(alloc);
    const before = budgetBefore?.get(resource);
    const pct = percent(headroom, limit);
    return {
      resource,
      ...(before ? { budgetBefore: before.toString() } : {}),
      budgetAfter: limit.toString(),
      allocated: alloc.toString(),
      used: used.toString(),
      headroom: headroom.toString(),
      ...(pct !== undefined ? { headroomPercent: pct } : {}),
      ...(record ? { shares: shares.toString(), pool: pool!.get(resource)!.toString() } : {}),
      perMember,
    };
  });

  const findings: PlanFinding[] = [];
  for (const line of lines) {
    const limit = budgetAfter.get(line.resource)!;
    const alloc = allocated.get(line.resource)!;
    if (alloc.cmp(limit) <= 0) continue;
    const parts = members
      .map((m) => [m, line.perMember[m]] as const)
      .filter(([, l]) => l?.allocated && Quantity.parse(l.allocated).sign() > 0)
      .map(([m, l]) => `${m} ${l!.allocated!}${l!.counted === 'declared' ? ' declared' : ''}`);
    const v = fleetAllocationOverBudget(input.project, line.resource, alloc, limit, parts);
    findings.push({ rule: v.rule, object: `Project ${input.project}`, by: 'plan', message: v.message });
  }
  if (record) {
    // The hub takes the new budget only when it covers every share held (setBudget); else Argo CD's
    // sync of it fails there.
    const result = setBudget(record, budgetAfter);
    if (!result.ok) {
      const v = fleetGrowthRefusal(input.project, '', result);
      findings.push({ rule: v.rule, object: `Project ${input.project}`, by: 'plan', message: v.message });
    }
  }

  return {
    project: input.project,
    members,
    ...(holders.length ? { formerMembers: holders } : {}),
    hub: input.hub.state,
    ...(input.hub.state === 'unreadable' ? { hubProblems: [...input.hub.problems] } : {}),
    resources: lines,
    findings,
  };
}
