/**
 * The steps of a deleting Project before its cascade (docs/adr/0096-deletion-loses-no-data.md): the
 * breaker (its state in the ConfigMap tenantgate-deletion-breaker, written by compare-and-swap), the
 * release of an orphaned Project's namespaces, and the inventory that decides which namespaces go now
 * and which wait for a confirmation. The decisions are the pure functions of ../deletion/; here is
 * their I/O. Nothing is kept in memory: every pass reads the cluster again, so a restarted controller
 * keeps waiting (or stays paused).
 */
import { isConflict } from '../../kube/errors.js';
import type { NamespaceObject, Project, ProjectCondition, ProjectStatus } from '../../validate/types.js';
import { breakerData, decideBreaker, parseBreaker, type BreakerState } from '../deletion/breaker.js';
import { deletionConfirmed } from '../deletion/confirmation.js';
import { awaitingCondition, confirmedCondition, hasCondition } from '../deletion/conditions.js';
import type { NamespaceContents } from '../deletion/inventory.js';
import {
  BREAKER_CONFIGMAP,
  CONDITION_DELETION_CONFIRMED,
  CONDITION_DELETION_PAUSED,
  EVENT_AWAITING_CONFIRMATION,
  EVENT_BREAKER_TRIPPED,
  PROJECT_CRD_NAME,
} from '../deletion/names.js';
import { planCascade, releasePatch } from '../deletion/plan.js';
import type { StepContext } from './context.js';

/** What a namespace holds, per namespace: the inventory's I/O (discovery-inventory.ts). */
export interface NamespaceInventory {
  contents(namespaces: readonly string[]): Promise<NamespaceContents[]>;
}

/** Compare-and-swap attempts on the breaker ConfigMap before the pass fails (and is retried with backoff). */
const BREAKER_ATTEMPTS = 3;

/**
 * Step 1: the breaker. Returns its state when it holds every cascade (tripped now or before), else
 * undefined. A trip is recorded first (create or replace at the resourceVersion read), so two
 * replicas or two workers that decide at once write it once; the loser reads it again.
 */
export async function breakerHolds(c: StepContext, at: number): Promise<BreakerState | undefined> {
  const namespace = c.config.systemNamespace;
  for (let attempt = 1; attempt <= BREAKER_ATTEMPTS; attempt++) {
    const stored = await c.api.readConfigMap(namespace, BREAKER_CONFIGMAP);
    const crdDeletionTimestamp = await c.api.crdDeletionTimestamp(PROJECT_CRD_NAME);
    const decision = decideBreaker({
      projects: [...c.informers.snapshot.projects()],
      ...(crdDeletionTimestamp ? { crdDeletionTimestamp } : {}),
      state: parseBreaker(stored?.data),
      breaker: c.config.deletion.breaker,
      at,
    });
    if (decision.kind === 'Closed') return undefined;
    if (decision.kind === 'Tripped') return decision.state;
    try {
      await c.api.writeConfigMap(namespace, BREAKER_CONFIGMAP, breakerData(decision.state), stored?.resourceVersion);
      c.log(`the deletion breaker tripped: ${decision.state.reason ?? ''}`);
      return decision.state;
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
  }
  throw new Error(
    `the ConfigMap ${namespace}/${BREAKER_CONFIGMAP} changed ${BREAKER_ATTEMPTS} times while being written`,
  );
}

/** Step 2 (Orphan): releases every owned namespace not being deleted; what they hold, quotas included, stays. */
export async function releaseNamespaces(
  c: StepContext,
  project: Project,
  owned: readonly NamespaceObject[],
  at: number,
  signal: AbortSignal,
): Promise<void> {
  const released: string[] = [];
  for (const ns of owned) {
    if (ns.metadata.deletionTimestamp) continue;
    signal.throwIfAborted();
    const name = ns.metadata.name ?? '';
    const updated = await c.api.patchNamespaceMetadata(name, releasePatch(project, ns, at));
    c.informers.applyWritten('Namespace', updated as never);
    released.push(name);
  }
  if (released.length === 0) return;
  const message = `released (deletionPolicy Orphan), nothing in them deleted, quotas kept: ${released.join(', ')}`;
  c.log(`project ${project.metadata.name}: namespaces ${message}`);
  await c.event(project, { type: 'Normal', reason: 'NamespacesReleased', message: `namespaces ${message}` });
}

/** Steps 3 and 4: which owned namespaces may be deleted now, and the conditions that say what waits. */
export interface CascadeGate {
  mayDelete: Set<string>;
  waiting: NamespaceContents[];
  conditions: ProjectCondition[];
}

export async function gateCascade(
  inventory: NamespaceInventory | undefined,
  project: Project,
  owned: readonly NamespaceObject[],
): Promise<CascadeGate> {
  const live = owned.filter((ns) => !ns.metadata.deletionTimestamp).map((ns) => ns.metadata.name ?? '');
  if (deletionConfirmed(project))
    return { mayDelete: new Set(live), waiting: [], conditions: [confirmedCondition(project)] };
  const contents: NamespaceContents[] = inventory
    ? await inventory.contents(live)
    : live.map((namespace) => ({ namespace, kinds: [], unknown: ['every resource (no inventory configured)'] }));
  const plan = planCascade(contents, false);
  return {
    mayDelete: new Set(plan.delete),
    waiting: plan.waiting,
    conditions: plan.waiting.length > 0 ? [awaitingCondition(project, plan.waiting)] : [],
  };
}

/** The Events of the lifecycle's transitions (once each: the status written before says what was). */
export async function deletionEvents(c: StepContext, before: ProjectStatus | undefined, after: Project): Promise<void> {
  const paused = (s: ProjectStatus | undefined) => hasCondition(s, CONDITION_DELETION_PAUSED, 'True');
  const waiting = (s: ProjectStatus | undefined) => hasCondition(s, CONDITION_DELETION_CONFIRMED, 'False');
  const message = (type: string) => after.status?.conditions?.find((x) => x.type === type)?.message ?? '';
  if (paused(after.status) && !paused(before))
    await c.event(after, {
      type: 'Warning',
      reason: EVENT_BREAKER_TRIPPED,
      message: message(CONDITION_DELETION_PAUSED),
    });
  if (waiting(after.status) && !waiting(before))
    await c.event(after, {
      type: 'Warning',
      reason: EVENT_AWAITING_CONFIRMATION,
      message: message(CONDITION_DELETION_CONFIRMED),
    });
}
