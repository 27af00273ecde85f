/**
 * F1 (a fleet budget declaration makes sense, offline) and F2 (a member cluster's growth beyond its
 * share of the fleet budget, refused; reported by the webhook on a fleet member, src/webhook/headroom/fleet-growth.ts).
 * Pure. docs/adr/0039-fleet-budgets.md.
 */
import type { ShareRecord, ShareRefusal, Shortfall } from '../../fleet/shares.js';
import { holdersOf } from '../../fleet/shares.js';
import { Quantity } from '../../quantity/quantity.js';
import { budgetPath, declaredBudgetList, defaultsOf } from '../budget/layers.js';
import { parseResources } from '../resource-lists.js';
import type { Resources } from '../types.js';
import type { FieldPath, Project, Violation } from '../types.js';
import { projectOnCluster } from './quota.js';

const ZERO = Quantity.zero();
const FLEET_HARD: FieldPath = ['spec', 'fleet', 'quota', 'hard'];

/**
 * F1: `spec.fleet` names at least one resource, none negative; names its member clusters, each once;
 * no member's upper bound (`spec.clusters.<name>.quota.hard`, else `spec.quota.hard`) is above the
 * fleet budget (a share can never reach it); and the namespaces declared on the members (their quota,
 * else `namespaceDefaults.quota`) fit the fleet budget together. Nothing without `spec.fleet`.
 */
export function checkFleetBudget(project: Project): Violation[] {
  const fleet = project.spec.fleet;
  if (fleet === undefined || fleet === null || typeof fleet !== 'object') return [];
  const name = project.metadata.name ?? '';
  const subject = `Project ${name}`;
  const out: Violation[] = [];
  const budget = parseResources(fleet.quota?.hard);
  if (budget.size === 0) {
    out.push({
      rule: 'F1',
      path: ['spec', 'fleet', 'quota'],
      message:
        `${subject}: spec.fleet.quota.hard names no resource; a fleet budget needs at least one (e.g. ` +
        `requests.cpu: "40"), or remove spec.fleet`,
    });
  }
  for (const [resource, limit] of budget) {
    if (limit.sign() < 0)
      out.push({
        rule: 'F1',
        path: [...FLEET_HARD, resource],
        message: `${subject}: spec.fleet.quota.hard[${resource}] is ${limit.toString()}, must be 0 or more`,
      });
  }
  const clusters = Array.isArray(fleet.clusters)
    ? fleet.clusters.filter((c): c is string => typeof c === 'string')
    : [];
  if (Array.isArray(fleet.clusters) && clusters.length === 0) {
    out.push({
      rule: 'F1',
      path: ['spec', 'fleet', 'clusters'],
      message:
        `${subject}: spec.fleet.clusters is empty; name the member clusters that share the fleet budget (their ` +
        `names in spec.clusters, what render gets as ARGOCD_ENV_CLUSTER)`,
    });
  }
  const seen = new Map<string, number>();
  clusters.forEach((cluster, i) => {
    const first = seen.get(cluster);
    if (first !== undefined) {
      out.push({
        rule: 'F1',
        path: ['spec', 'fleet', 'clusters', i],
        message:
          `${subject}: spec.fleet.clusters[${i}] names cluster ${cluster} again (first at [${first}]); each member ` +
          `once`,
      });
    } else seen.set(cluster, i);
  });
  const members = [...seen.keys()];
  out.push(...boundsAboveBudget(project, subject, budget, members));
  out.push(...declaredAboveBudget(project, subject, budget, members));
  return out;
}

/** F1: a member's upper bound above the fleet budget (reported once per bound, naming the members it applies to). */
function boundsAboveBudget(project: Project, subject: string, budget: Resources, members: string[]): Violation[] {
  const byPath = new Map<string, { path: FieldPath; members: string[]; bound: Resources }>();
  for (const cluster of members) {
    const path = budgetPath(project, cluster);
    const key = path.join('/');
    const entry = byPath.get(key) ?? { path, members: [], bound: parseResources(declaredBudgetList(project, cluster)) };
    entry.members.push(cluster);
    byPath.set(key, entry);
  }
  const out: Violation[] = [];
  for (const { path, members: on, bound } of byPath.values()) {
    for (const [resource, limit] of [...budget].sort(([a], [b]) => a.localeCompare(b))) {
      const upper = bound.get(resource);
      if (!upper || upper.cmp(limit) <= 0) continue;
      const field =
        path.length === 5
          ? `spec.clusters[${String(path[2])}].quota.hard[${resource}]`
          : `spec.quota.hard[${resource}]`;
      out.push({
        rule: 'F1',
        path: [...path, resource],
        message:
          `${subject}: ${field} is ${upper.toString()}, above the fleet budget ${limit.toString()} ` +
          `(spec.fleet.quota.hard[${resource}]); it bounds the share of ${on.join(', ')}, which can never exceed ` +
          `the fleet budget: lower it to at most ${limit.toString()}, or remove it`,
      });
    }
  }
  return out;
}

/** F1: Σ over the members of what the namespaces declared there hold, per fleet-budgeted resource. */
function declaredAboveBudget(project: Project, subject: string, budget: Resources, members: string[]): Violation[] {
  const namespaces = Array.isArray(project.spec.namespaces)
    ? project.spec.namespaces.filter((n) => n && typeof n.name === 'string')
    : [];
  const defaults = defaultsOf(project);
  const out: Violation[] = [];
  for (const [resource, limit] of [...budget].sort(([a], [b]) => a.localeCompare(b))) {
    if (limit.sign() < 0) continue; // reported as negative already
    let total = ZERO;
    const parts: string[] = [];
    for (const cluster of members) {
      let onCluster = ZERO;
      for (const ns of namespaces) {
        if (ns.cluster && ns.cluster !== cluster) continue;
        const own = parseResources(ns.quota?.hard).get(resource) ?? defaults.get(resource);
        if (own) onCluster = onCluster.add(own);
      }
      if (onCluster.sign() > 0) parts.push(`${cluster} ${onCluster.toString()}`);
      total = total.add(onCluster);
    }
    if (total.cmp(limit) <= 0) continue;
    out.push({
      rule: 'F1',
      path: [...FLEET_HARD, resource],
      message:
        `${subject}: the namespaces declared on the fleet's clusters allocate ${resource} ${total.toString()} (` +
        `${parts.join(', ')}), but the fleet budget is ${limit.toString()}: ${total.sub(limit).toString()} over`,
    });
  }
  return out;
}

function describeHolders(
  record: ShareRecord | undefined,
  shortfall: Pick<Shortfall, 'resource' | 'holders'>,
  requester: string,
): string {
  const holders = record ? holdersOf(record, shortfall.resource, requester) : shortfall.holders;
  if (holders.length === 0) return 'no other cluster holds any';
  const offered = (h: (typeof holders)[number]) => (h.lendable.sign() > 0 ? ` (${h.lendable.toString()} offered)` : '');
  return `held by ${holders.map((h) => `${h.cluster} ${h.share.toString()}${offered(h)}`).join(', ')}`;
}

/**
 * F2: the hub refused to move room to `cluster` (a ShareRefusal of src/fleet/shares.ts). The message
 * says how much is missing per resource and which clusters hold the room.
 */
export function fleetGrowthRefusal(project: string, cluster: string, refusal: ShareRefusal): Violation {
  const where = projectOnCluster(project, cluster);
  switch (refusal.reason) {
    case 'not-a-member':
      return {
        rule: 'F2',
        message:
          `${where}: cluster ${cluster} is not in spec.fleet.clusters, so it holds no share of the fleet budget; ` +
          `the platform team adds it in git`,
      };
    case 'released':
      return {
        rule: 'F2',
        message:
          `${where}: an operator released cluster ${cluster} from the fleet, so it holds no share of the fleet ` +
          `budget and the hub takes no request from it; register the cluster again under a new name`,
      };
    case 'not-fleet-budgeted':
    case 'more-than-held':
      return {
        rule: 'F2',
        message:
          `${where}: the hub refused a change of ${refusal.resources.join(', ')} (` +
          (refusal.reason === 'not-fleet-budgeted' ? 'not in spec.fleet.quota.hard' : 'more than this cluster holds') +
          `)`,
      };
    case 'below-shares':
      return {
        rule: 'F2',
        path: FLEET_HARD,
        message:
          `project ${project}: the fleet budget cannot go below what the member clusters hold: ` +
          `${refusal.shortfalls
            .map((s) => `${s.resource} ${s.need.toString()} too low (${describeHolders(undefined, s, '')})`)
            .join('; ')}; lower it after they give unused share back`,
      };
    case 'no-room':
      return {
        rule: 'F2',
        message: `${where}: ${refusal.shortfalls.map((s) => describeShortfall(s, cluster)).join('; ')}`,
      };
  }
}

function describeShortfall(s: Shortfall, cluster: string): string {
  const head =
    `${s.resource} needs ${s.need.toString()} more than this cluster's share ${s.share.toString()} of the fleet ` +
    `budget`;
  if (s.limitedBy === 'bound') {
    const left = s.bound!.sub(s.share);
    return (
      `${head}, but its upper bound is ${s.bound!.toString()} (at most ` +
      `${(left.sign() > 0 ? left : ZERO).toString()} more)`
    );
  }
  const pool = s.pool.sign() > 0 ? s.pool : ZERO;
  return (
    `${head}; the hub has ${pool.toString()} unallocated and ${s.lendable.toString()} offered by other clusters, ` +
    `${describeHolders(undefined, s, cluster)}; free room there (unused share returns to the pool) or raise ` +
    `spec.fleet.quota.hard[${s.resource}] in git`
  );
}

/**
 * F2 when the hub could not be reached within the deadline: the member kept enforcing its share and
 * granted nothing more. `lastKnown`, the record it last read, names who held the room then.
 */
export function fleetHubUnreachable(
  project: string,
  cluster: string,
  need: Resources,
  enforced: Resources,
  deadlineSeconds: number,
  lastKnown?: ShareRecord,
): Violation {
  const parts = [...need]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([resource, v]) => {
      const holders = lastKnown
        ? `; when last read, ${describeHolders(lastKnown, { resource, holders: [] }, cluster)}`
        : '';
      return (
        `${resource} needs ${v.toString()} more than the ${(enforced.get(resource) ?? ZERO).toString()} this ` +
        `cluster enforces${holders}`
      );
    });
  return {
    rule: 'F2',
    message:
      `${projectOnCluster(project, cluster)}: ${parts.join('; ')}; the fleet's hub did not answer within ` +
      `${deadlineSeconds} s, so nothing more was granted (growth within the share is still admitted); retry later`,
  };
}

/**
 * F2 when the hub has no FleetBudget for the Project, or one whose spec or status cannot be read: the
 * member grants nothing it cannot account for (fail closed) and keeps enforcing its share.
 */
export function fleetBudgetUnusable(project: string, cluster: string, problems: readonly string[]): Violation {
  return {
    rule: 'F2',
    message:
      `${projectOnCluster(project, cluster)}: the growth is beyond this cluster's share of the fleet budget, and ` +
      `the hub's share record cannot be used: ${problems.join('; ')}; nothing more was granted (growth within the ` +
      `share is still admitted)`,
  };
}

/**
 * F2 when the hub answered a member's write with a refusal other than a conflict (its admission
 * policy, RBAC): nothing was granted.
 */
export function fleetHubRejected(project: string, cluster: string, reason: string): Violation {
  return {
    rule: 'F2',
    message:
      `${projectOnCluster(project, cluster)}: the growth is beyond this cluster's share of the fleet budget, and ` +
      `${reason}; nothing more was granted (growth within the share is still admitted)`,
  };
}

/**
 * F2 when the hub stored a grant but the member could not raise its enforced limit: the share stays unused until a
 * give-back returns it.
 */
export function fleetRaiseFailed(project: string, cluster: string, granted: Resources, error: string): Violation {
  const what = [...granted]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([r, q]) => `${r} ${q.toString()}`)
    .join(', ');
  return {
    rule: 'F2',
    message:
      `${projectOnCluster(project, cluster)}: the hub granted ${what}, but raising this cluster's enforced limit ` +
      `in the headroom ledger failed (${error}); retry`,
  };
}

/**
 * F1 as plan reports it: after a change, the namespaces on the fleet's clusters (live where plan read
 * the cluster, declared elsewhere; `holders` names each member's part) hold more than the fleet budget.
 */
export function fleetAllocationOverBudget(
  project: string,
  resource: string,
  allocated: Quantity,
  budget: Quantity,
  holders: readonly string[],
): Violation {
  return {
    rule: 'F1',
    message:
      `Project ${project}: after the change the namespaces on the fleet's clusters hold ${resource} ` +
      `${allocated.toString()} (${holders.join(', ')}), above the fleet budget ${budget.toString()} ` +
      `(spec.fleet.quota.hard[${resource}]): ${allocated.sub(budget).toString()} over; raise the fleet budget or ` +
      `lower the namespaces' quotas`,
  };
}
