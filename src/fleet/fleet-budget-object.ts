/**
 * The hub's FleetBudget object (`fleetbudgets.tenantgate.io`, one per fleet-budgeted Project, in the
 * hub namespace `tenantgate-fleet`) and the share record it carries
 * (docs/adr/0039-fleet-budgets.md). Pure: building the object's spec from a Project,
 * reading its spec and status into a `ShareRecord`, and writing a record back into a status.
 *
 * `spec` comes from git (rendered for the hub from the Project); `status` is the record, written by
 * members through `fleetbudgets/status` with the resourceVersion they read as precondition.
 */
import type { ShareRecord, MemberShare } from './shares.js';
import { budgetList } from '../validate/budget/layers.js';
import { formatResources, parseResources } from '../validate/resource-lists.js';
import type { Resources } from '../validate/types.js';
import type { ObjectMeta, Project, ResourceList, Violation } from '../validate/types.js';

const FLEET_API_VERSION = 'tenantgate.io/v1alpha1';
export const FLEET_KIND = 'FleetBudget';
export const FLEET_PLURAL = 'fleetbudgets';
/** The hub namespace holding every FleetBudget, and the members' ServiceAccounts. */
export const FLEET_NAMESPACE = 'tenantgate-fleet';
/** Deleting a FleetBudget only marks it while a member holds a share. */
export const FLEET_FINALIZER = 'tenantgate.io/fleet-shares';

interface FleetBudgetSpecObject {
  /** The fleet budget (the Project's `spec.fleet.quota.hard`). */
  budget: ResourceList;
  /** The member clusters (the Project's `spec.fleet.clusters`). */
  members: string[];
  /** Per member, the upper bound of its share for the fleet-budgeted resources it bounds. */
  bounds?: Record<string, ResourceList>;
}

interface MemberShareStatus {
  share?: ResourceList;
  lendable?: ResourceList;
  lastRequest?: string;
}

export interface ReleaseRecord {
  /** RFC 3339. */
  at: string;
  /** Who released the member (the operator's user name). */
  by: string;
}

export interface FleetBudgetStatus {
  members?: Record<string, MemberShareStatus>;
  released?: Record<string, ReleaseRecord>;
}

export interface FleetBudgetObject {
  apiVersion: typeof FLEET_API_VERSION;
  kind: typeof FLEET_KIND;
  metadata: ObjectMeta & { finalizers?: string[] };
  spec: FleetBudgetSpecObject;
  status?: FleetBudgetStatus;
}

/** Only the fleet-budgeted resources of a list. */
function restrictTo(list: ResourceList, resources: ReadonlySet<string>): ResourceList {
  const out: ResourceList = {};
  for (const [name, value] of Object.entries(list)) if (resources.has(name)) out[name] = value;
  return out;
}

/**
 * The hub's FleetBudget for a Project with `spec.fleet` (undefined without one): the budget, the
 * members, and each member's upper bound (its `spec.clusters.<name>.quota.hard`, else `spec.quota.hard`)
 * with the bursts active at instant `at` (ms since the epoch) added, restricted to the fleet-budgeted
 * resources; a member whose budget names none of them has no bound.
 */
export function fleetBudgetFor(project: Project, at: number): FleetBudgetObject | undefined {
  const fleet = project.spec.fleet;
  if (!fleet || typeof fleet !== 'object') return undefined;
  const budget = fleet.quota?.hard ?? {};
  const fleetResources = new Set(Object.keys(budget));
  const members = Array.isArray(fleet.clusters)
    ? [...new Set(fleet.clusters.filter((c): c is string => typeof c === 'string'))]
    : [];
  const bounds: Record<string, ResourceList> = {};
  for (const member of members) {
    const bound = restrictTo(budgetList(project, member, at), fleetResources);
    if (Object.keys(bound).length > 0) bounds[member] = bound;
  }
  const name = project.metadata.name ?? '';
  return {
    apiVersion: FLEET_API_VERSION,
    kind: FLEET_KIND,
    metadata: { name, namespace: FLEET_NAMESPACE, labels: { 'tenantgate.io/project': name } },
    spec: { budget: { ...budget }, members, ...(Object.keys(bounds).length > 0 ? { bounds } : {}) },
  };
}

export type ParsedFleetBudget =
  { readonly ok: true; readonly record: ShareRecord } | { readonly ok: false; readonly problems: readonly string[] };

/**
 * The record a FleetBudget carries. Fails closed: any value that is not a quantity (in spec or status)
 * is a problem naming the object and the field, and no record is returned, so no member acts on a
 * status it cannot read.
 */
export function parseFleetBudget(object: FleetBudgetObject): ParsedFleetBudget {
  const owner = `FleetBudget ${object.metadata.namespace ?? FLEET_NAMESPACE}/${object.metadata.name ?? ''}`;
  const sink: Violation[] = [];
  const spec = object.spec ?? ({} as FleetBudgetSpecObject);
  const budget = parseResources(spec.budget, ['spec', 'budget'], sink, owner);
  const members = Array.isArray(spec.members) ? spec.members.filter((m): m is string => typeof m === 'string') : [];
  const bounds = new Map<string, Resources>();
  for (const [member, list] of Object.entries(spec.bounds ?? {}))
    bounds.set(member, parseResources(list, ['spec', 'bounds', member], sink, owner));
  const shares = new Map<string, MemberShare>();
  for (const [member, entry] of Object.entries(object.status?.members ?? {})) {
    const share = parseResources(entry.share, ['status', 'members', member, 'share'], sink, owner);
    const lendable = parseResources(entry.lendable, ['status', 'members', member, 'lendable'], sink, owner);
    shares.set(member, { share, lendable, ...(entry.lastRequest ? { lastRequest: entry.lastRequest } : {}) });
  }
  const released = new Set(Object.keys(object.status?.released ?? {}));
  if (sink.length > 0) return { ok: false, problems: sink.map((v) => v.message) };
  return { ok: true, record: { budget, members, bounds, shares, released } };
}

/**
 * The object with `record` as its status, for a PUT to `fleetbudgets/status` carrying the
 * resourceVersion the record was read at (kept from `object`). Release records of members still
 * released are kept; a member released by this write is recorded with `release`.
 */
export function withShareRecordStatus(
  object: FleetBudgetObject,
  record: ShareRecord,
  release?: ReleaseRecord,
): FleetBudgetObject {
  const members: Record<string, MemberShareStatus> = {};
  for (const member of [...record.shares.keys()].sort()) {
    const entry = record.shares.get(member)!;
    members[member] = {
      share: formatResources(entry.share),
      lendable: formatResources(entry.lendable),
      ...(entry.lastRequest ? { lastRequest: entry.lastRequest } : {}),
    };
  }
  const previous = object.status?.released ?? {};
  const released: Record<string, ReleaseRecord> = {};
  for (const member of [...record.released].sort()) {
    // Never drop a release, even one recorded without who and when: a dropped name could write again.
    released[member] = previous[member] ?? release ?? { at: '1970-01-01T00:00:00Z', by: 'unknown' };
  }
  const status: FleetBudgetStatus = { members, ...(record.released.size > 0 ? { released } : {}) };
  return { ...object, status };
}
