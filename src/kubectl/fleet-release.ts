/**
 * `kubectl tenantgate fleet release PROJECT CLUSTER`, run against the fleet's hub by an operator
 * (Role tenantgate-fleet-operator): a member cluster that is gone gives up its share of a Project's
 * fleet budget (docs/fleet.md, docs/adr/0039-fleet-budgets.md "Operator release").
 *
 * Reads the FleetBudget, applies `releaseMember`, and PUTs the status carrying the resourceVersion it
 * read (a 409 means someone wrote in between: read again and recompute, at most MAX_ATTEMPTS times),
 * recording when and by whom (the user name the hub's API server knows the caller by). When the
 * FleetBudget is being deleted and no member holds a share any more, it then removes the finalizer
 * tenantgate.io/fleet-shares (the policy tenantgate-fleet-shares refuses that while a share is held).
 *
 * A member heard from recently (its heartbeat Lease member-<cluster>, src/fleet/member-heartbeat.ts) is
 * not released unless forced: it still runs, and its namespaces' use would stay outside the budget.
 */
import { formatResources } from '../validate/resource-lists.js';
import { poolOf, releaseMember, type ShareRecord } from '../fleet/shares.js';
import {
  FLEET_FINALIZER,
  FLEET_NAMESPACE,
  FLEET_PLURAL,
  parseFleetBudget,
  withShareRecordStatus,
  type FleetBudgetObject,
} from '../fleet/fleet-budget-object.js';
import {
  DEFAULT_ALIVE_WITHIN_SECONDS,
  heartbeatLeaseName,
  livenessOf,
  type HeartbeatLease,
} from '../fleet/member-heartbeat.js';
import { KubectlError, type Kubectl } from './kubectl.js';
import { API_GROUP } from '../validate/types.js';

const MAX_ATTEMPTS = 10;
const RESOURCE = `${FLEET_PLURAL}.${API_GROUP}`;

export interface ReleaseOutcome {
  /** What the released member held, now back in the pool (empty when it held nothing). */
  returned: Record<string, string>;
  /** The pool after the release, per budgeted resource. */
  pool: Record<string, string>;
  /** True when the member had been released before (nothing written). */
  alreadyReleased: boolean;
  /** The release record (new, or the earlier one). */
  at: string;
  by: string;
  /** True when the FleetBudget was being deleted and this command removed its finalizer. */
  finalized: boolean;
}

const isConflict = (err: KubectlError) => /\(Conflict\)|the object has been modified/i.test(err.run.stderr);

/** RFC 3339 to the second, as Kubernetes writes times. */
function rfc3339(now: Date): string {
  return now.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function objectName(project: string): string {
  return `FleetBudget ${FLEET_NAMESPACE}/${project}`;
}

async function read(kubectl: Kubectl, project: string): Promise<FleetBudgetObject> {
  try {
    return await kubectl.json<FleetBudgetObject>(['get', RESOURCE, project, '-n', FLEET_NAMESPACE]);
  } catch (err) {
    if (err instanceof KubectlError && err.notFound) {
      throw new Error(
        `${objectName(project)} does not exist: is this the fleet's hub (the cluster Argo CD renders ` +
          `FleetBudgets for), and does Project ${project} have spec.fleet?`,
      );
    }
    throw err;
  }
}

function recordOf(object: FleetBudgetObject, project: string): ShareRecord {
  const parsed = parseFleetBudget(object);
  if (!parsed.ok)
    throw new Error(`${objectName(project)} cannot be read, nothing released: ${parsed.problems.join('; ')}`);
  return parsed.record;
}

async function whoAmI(kubectl: Kubectl): Promise<string> {
  const review = await kubectl.json<{ status?: { userInfo?: { username?: string } } }>(['auth', 'whoami']);
  const name = review.status?.userInfo?.username;
  if (!name) throw new Error('kubectl auth whoami named no user: the release must record who released the member');
  return name;
}

async function put(kubectl: Kubectl, object: FleetBudgetObject, subresource: boolean): Promise<void> {
  const args = ['replace', ...(subresource ? ['--subresource=status'] : []), '-o', 'name', '-f', '-'];
  const run = await kubectl.run(args, { input: JSON.stringify(object) });
  if (run.exitCode !== 0) throw new KubectlError(args, run);
}

/**
 * Removes the finalizer of a FleetBudget being deleted that nobody holds a share of (PUT with the
 * resourceVersion read).
 */
async function finalizeIfUnheld(kubectl: Kubectl, project: string): Promise<boolean> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const object = await read(kubectl, project).catch(() => undefined);
    if (!object?.metadata.deletionTimestamp || !(object.metadata.finalizers ?? []).includes(FLEET_FINALIZER))
      return false;
    const record = recordOf(object, project);
    const held = [...record.shares.values()].some((e) => [...e.share.values()].some((q) => q.sign() > 0));
    if (held) return false;
    const finalizers = (object.metadata.finalizers ?? []).filter((f) => f !== FLEET_FINALIZER);
    try {
      await put(kubectl, { ...object, metadata: { ...object.metadata, finalizers } }, false);
      return true;
    } catch (err) {
      if (err instanceof KubectlError && err.notFound) return false;
      if (!(err instanceof KubectlError) || !isConflict(err) || attempt === MAX_ATTEMPTS) throw err;
    }
  }
  return false;
}

export interface ReleaseOptions {
  /** Release even though the member was heard from recently (it is fenced, or its heartbeat is forged). */
  force?: boolean;
  /**
   * A member whose heartbeat Lease was renewed within this many seconds is alive (default
   * DEFAULT_ALIVE_WITHIN_SECONDS).
   */
  aliveWithinSeconds?: number;
  now?: () => Date;
}

/** The member's heartbeat Lease on the hub, or undefined when it never wrote one. */
async function heartbeatOf(kubectl: Kubectl, cluster: string): Promise<HeartbeatLease | undefined> {
  try {
    return await kubectl.json<HeartbeatLease>([
      'get',
      'leases.coordination.k8s.io',
      heartbeatLeaseName(cluster),
      '-n',
      FLEET_NAMESPACE,
    ]);
  } catch (err) {
    if (err instanceof KubectlError && err.notFound) return undefined;
    throw err;
  }
}

/**
 * Refuses to release a member heard from within the window, unless forced: it still runs and would
 * keep its use outside the budget.
 */
async function guardLiveness(
  kubectl: Kubectl,
  project: string,
  cluster: string,
  options: ReleaseOptions,
): Promise<void> {
  if (options.force) return;
  const within = options.aliveWithinSeconds ?? DEFAULT_ALIVE_WITHIN_SECONDS;
  const liveness = livenessOf(await heartbeatOf(kubectl, cluster), (options.now ?? (() => new Date()))(), within);
  if (!liveness.alive) return;
  throw new Error(
    `${objectName(project)}: cluster ${cluster} was heard from ${liveness.ageSeconds}s ago (Lease ` +
      `${FLEET_NAMESPACE}/${heartbeatLeaseName(cluster)} renewed at ${liveness.renewTime}; alive means within ` +
      `${within}s): ` +
      (`a released member that still runs keeps its namespaces' use outside the fleet budget while the hub grants ` +
        `its share again. `) +
      (`Stop tenantgate on ${cluster} or cut it off from the hub, wait until its heartbeat is older than ${within}` +
        `s, and release it then; or pass --force; nothing released`),
  );
}

export async function releaseFleetMember(
  kubectl: Kubectl,
  project: string,
  cluster: string,
  options: ReleaseOptions = {},
): Promise<ReleaseOutcome> {
  const now = options.now ?? (() => new Date());
  const by = await whoAmI(kubectl);
  for (let attempt = 1; ; attempt++) {
    const object = await read(kubectl, project);
    const record = recordOf(object, project);
    const earlier = object.status?.released?.[cluster];
    if (record.released.has(cluster)) {
      const finalized = await finalizeIfUnheld(kubectl, project);
      return {
        returned: {},
        pool: formatResources(poolOf(record)),
        alreadyReleased: true,
        at: earlier?.at ?? '',
        by: earlier?.by ?? '',
        finalized,
      };
    }
    if (!record.members.includes(cluster) && !record.shares.has(cluster)) {
      const holding = [...record.shares.keys()].sort();
      throw new Error(
        `${objectName(project)}: cluster ${cluster} is neither in spec.members (` +
          `${record.members.join(', ') || 'none'}) nor holds a share (${holding.join(', ') || 'nobody does'}); ` +
          `nothing released`,
      );
    }
    if (attempt === 1) await guardLiveness(kubectl, project, cluster, options);
    const returned = formatResources(record.shares.get(cluster)?.share ?? new Map());
    const released = releaseMember(record, cluster).record;
    const at = rfc3339(now());
    try {
      await put(kubectl, withShareRecordStatus(object, released, { at, by }), true);
    } catch (err) {
      if (err instanceof KubectlError && isConflict(err) && attempt < MAX_ATTEMPTS) continue;
      throw err;
    }
    const finalized = await finalizeIfUnheld(kubectl, project);
    return { returned, pool: formatResources(poolOf(released)), alreadyReleased: false, at, by, finalized };
  }
}

const list = (r: Record<string, string>) =>
  Object.keys(r).length === 0
    ? 'nothing'
    : Object.entries(r)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');

export function releaseText(project: string, cluster: string, o: ReleaseOutcome): string {
  const lines = o.alreadyReleased
    ? [`${cluster} was already released from ${objectName(project)} (at ${o.at} by ${o.by}); nothing changed`]
    : [
        `released ${cluster} from ${objectName(project)} (at ${o.at} by ${o.by})`,
        `returned to the pool: ${list(o.returned)}`,
        `pool now: ${list(o.pool)}`,
        `${cluster}'s writes to the hub are refused from now on; register the cluster again under a new name`,
      ];
  if (o.finalized)
    lines.push(
      `${objectName(project)} was being deleted and no member holds a share any more: finalizer ` +
        `${FLEET_FINALIZER} removed`,
    );
  return lines.join('\n') + '\n';
}
