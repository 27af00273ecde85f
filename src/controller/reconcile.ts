/**
 * Reconciles one Project: the plans (finalizer, default quotas, status) are computed from the
 * snapshot by pure functions; the steps that carry them out live one per file in ./steps/. Every
 * write goes through ControllerApi (counted) and its response is put back into the snapshot, so the
 * next pass does not act on a view older than its own writes.
 */
import { FINALIZER_CASCADE, type Project, type ProjectCondition } from '../validate/types.js';
import { classifyNamespaces, ProjectDeleter, remainingReport } from './cascade.js';
import type { CascadeReport } from './status.js';
import { pausedCondition } from './deletion/conditions.js';
import { deletionPolicyOf } from './deletion/plan.js';
import {
  breakerHolds,
  deletionEvents,
  gateCascade,
  releaseNamespaces,
  type CascadeGate,
  type NamespaceInventory,
} from './steps/deletion.js';
import { nextTransition } from '../validate/bursts.js';
import { getProcessClock, type Clock } from '../clock.js';
import { describeError } from '../kube/errors.js';
import type { ProjectEvent } from './kube.js';
import type { StepContext } from './steps/context.js';
import { ensureFinalizer, removeFinalizer } from './steps/finalizer.js';
import { writeStatus } from './steps/write-status.js';
import { createDefaultQuotas } from './steps/default-quotas.js';
import { applyBurstQuotas } from './steps/burst-quotas.js';
import { ensurePodSecurityLabels } from './steps/pod-security-labels.js';
import { ensureNamespaceObjects } from './steps/namespace-objects.js';
import { ensureProjectAccess } from './steps/project-access.js';

/** The longest wait for a burst's next start or end (the requeue is renewed then). */
const MAX_BURST_REQUEUE_MS = 10 * 60_000;

/** A signal that never aborts (reconciles outside a leadership term: tests, tools). */
const NEVER = new AbortController().signal;

export type ReconcileResult =
  /** Converged; forget the key's backoff. */
  | { kind: 'Done' }
  /**
   * Not finished (namespaces still being deleted): come back after `afterMs`. Progress, not an error: errors throw and
   * take the rate limiter's backoff.
   */
  | { kind: 'Requeue'; reason: string; afterMs: number };

/**
 * The steps' context as the caller gives it. One clock decides a reconcile (bursts, condition times,
 * Argo CD's grace, the deletion's release times and progress interval): `clock`, default the process
 * clock (src/clock.ts). Only the namespace deletes' resend memory (cascade.ts) keeps the system clock.
 */
export interface ReconcilerOptions extends Pick<
  StepContext,
  'api' | 'informers' | 'managed' | 'access' | 'config' | 'log'
> {
  clock?: Clock;
  /** Least time between two status writes reporting a cascade's progress (1 s). */
  progressIntervalMs?: number;
  /** Namespace deletes one cascade sends at once (10). */
  deleteConcurrency?: number;
  /**
   * What the namespaces of a deleting Project hold (ADR 0096); without it every namespace counts as
   * holding unknown contents and waits for a confirmation (fails closed).
   */
  inventory?: NamespaceInventory;
  /**
   * How soon a waiting deletion (a confirmation, the breaker) is looked at again (30 s: each look at a waiting
   * Project lists every resource in its namespaces); a change of the Project (its confirmation) comes at once.
   */
  deletionRecheckMs?: number;
}

export class Reconciler {
  private readonly deleter: ProjectDeleter;
  private readonly clock: Clock;
  private readonly progressIntervalMs: number;
  private readonly deletionRecheckMs: number;
  /** What the steps work with. */
  private readonly steps: StepContext;
  /** When the cascade progress of a Project was last written (the requeue comes back after the interval). */
  private readonly lastProgressWrite = new Map<string, number>();

  constructor(private readonly o: ReconcilerOptions) {
    this.deleter = new ProjectDeleter(o.api, {
      log: o.log,
      ...(o.deleteConcurrency ? { concurrency: o.deleteConcurrency } : {}),
    });
    this.clock = o.clock ?? getProcessClock();
    this.progressIntervalMs = o.progressIntervalMs ?? 1000;
    this.deletionRecheckMs = o.deletionRecheckMs ?? 30_000;
    this.steps = {
      api: o.api,
      informers: o.informers,
      ...(o.managed ? { managed: o.managed } : {}),
      ...(o.access ? { access: o.access } : {}),
      config: o.config,
      log: o.log,
      clock: this.clock,
      event: (project, event) => this.event(project, event),
    };
  }

  private get snapshot() {
    return this.o.informers.snapshot;
  }

  /**
   * One pass over a Project. `signal` aborts it between steps (never in the middle of a write): the
   * controller aborts a term's reconciles when it loses its Lease, so a replica that is no longer the
   * leader stops writing at once.
   */
  async reconcile(name: string, signal: AbortSignal = NEVER): Promise<ReconcileResult> {
    const project = this.snapshot.project(name);
    if (!project) {
      this.lastProgressWrite.delete(name);
      return { kind: 'Done' }; // deleted, nothing to do
    }
    if (project.metadata.deletionTimestamp) return this.reconcileDeletion(project, signal);
    return this.reconcileLive(project, signal);
  }

  // --- a live Project ----------------------------------------------------------------------------

  private async reconcileLive(initial: Project, signal: AbortSignal): Promise<ReconcileResult> {
    const c = this.steps;
    let project = await ensureFinalizer(c, initial, signal);
    // Report what was observed, then act: a namespace that lost its quota shows as QuotaMissing
    // ("a default quota is being created") until the quota's own watch event brings the next pass.
    project = await writeStatus(c, project, signal);
    const failures: string[] = [];
    const graced = new Map<string, number>();
    await createDefaultQuotas(c, project, failures, signal, graced);
    await applyBurstQuotas(c, project, failures, signal);
    await ensurePodSecurityLabels(c, project, failures, signal);
    await ensureNamespaceObjects(c, project, failures, signal, graced);
    await ensureProjectAccess(c, project, failures, signal);
    if (failures.length > 0) throw new Error(failures.join('; '));
    // Come back when a namespace's Argo CD grace ends, or when a burst starts or ends (capped: a timer
    // that long is not kept, and resyncs come anyway).
    const at = this.clock.now();
    const next = nextTransition(project, at);
    const burstMs = next !== undefined ? Math.min(next - at + 100, MAX_BURST_REQUEUE_MS) : undefined;
    const graceMs = graced.size > 0 ? Math.min(...graced.values()) + 100 : undefined;
    if (graceMs !== undefined && (burstMs === undefined || graceMs <= burstMs)) {
      return {
        kind: 'Requeue',
        reason: `left to Argo CD's sync for now: ${[...graced.keys()].sort().join(', ')}`,
        afterMs: graceMs,
      };
    }
    if (burstMs !== undefined)
      return { kind: 'Requeue', reason: `next burst transition at ${new Date(next!).toISOString()}`, afterMs: burstMs };
    return { kind: 'Done' };
  }

  /** Best effort: an Event that cannot be written is logged, never a reason to retry the reconcile. */
  private async event(project: Project, event: ProjectEvent): Promise<void> {
    try {
      await this.o.api.recordEvent(project, event);
    } catch (err) {
      this.o.log(`project ${project.metadata.name}: could not record event ${event.reason}: ${describeError(err)}`);
    }
  }

  // --- a Project being deleted -------------------------------------------------------------------

  private async reconcileDeletion(project: Project, signal: AbortSignal): Promise<ReconcileResult> {
    // not ours (any more)
    if (!(project.metadata.finalizers ?? []).includes(FINALIZER_CASCADE)) return { kind: 'Done' };
    const name = project.metadata.name ?? '';
    const at = this.clock.now();
    const cached = () => [...this.snapshot.namespacesOfProject(name)];
    // ADR 0096: the breaker, the policy, the inventory and the confirmation decide what this pass may delete.
    const paused = await breakerHolds(this.steps, at);
    if (paused) {
      const { owned, foreign } = classifyNamespaces(project, cached());
      await this.writeDeletionStatus(project, signal, remainingReport(owned, foreign), [pausedCondition(paused)]);
      return { kind: 'Requeue', reason: 'the deletion breaker is tripped', afterMs: this.deletionRecheckMs };
    }
    const owned = classifyNamespaces(project, cached()).owned;
    let gate: CascadeGate = { mayDelete: new Set(), waiting: [], conditions: [] };
    const orphan = deletionPolicyOf(project, this.o.config) === 'Orphan';
    if (orphan) await releaseNamespaces(this.steps, project, owned, at, signal);
    else gate = await gateCascade(this.o.inventory, project, owned);
    const result = await this.deleter.run(project, cached(), signal, (ns) => gate.mayDelete.has(ns));
    if (result.kind === 'Finished') {
      await removeFinalizer(this.steps, project, result.report, signal, orphan);
      this.lastProgressWrite.delete(name);
      return { kind: 'Done' };
    }
    if (gate.waiting.length > 0) {
      await this.writeDeletionStatus(project, signal, result.report, gate.conditions);
      const reason = `${gate.waiting.length} namespaces wait for a confirmation of the deletion`;
      return { kind: 'Requeue', reason, afterMs: this.deletionRecheckMs };
    }
    // Progress (which namespaces remain, their conditions) is written at most once per interval:
    // namespaces being deleted change often and each change is an event. Phase Terminating goes out at once.
    const now = this.clock.now();
    const last = this.lastProgressWrite.get(name);
    const reason = `${result.report.remaining.length} namespaces remaining`;
    if (project.status?.phase === 'Terminating' && last !== undefined && now - last < this.progressIntervalMs) {
      // Not now: come back when the interval is over, to write what is true then.
      return { kind: 'Requeue', reason, afterMs: this.progressIntervalMs - (now - last) };
    }
    const before = project.metadata.resourceVersion;
    const written = await this.writeDeletionStatus(project, signal, result.report, gate.conditions);
    if (written.metadata.resourceVersion !== before) this.lastProgressWrite.set(name, now);
    return { kind: 'Requeue', reason, afterMs: this.progressIntervalMs };
  }

  /** The status of a deleting Project, with its lifecycle's conditions, and the Events of their transitions. */
  private async writeDeletionStatus(
    project: Project,
    signal: AbortSignal,
    report: CascadeReport,
    conditions: ProjectCondition[],
  ): Promise<Project> {
    const written = await writeStatus(this.steps, project, signal, report, conditions);
    if (written !== project) await deletionEvents(this.steps, project.status, written);
    return written;
  }
}
