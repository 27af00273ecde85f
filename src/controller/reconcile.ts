/**
 * Reconciles one Project: the plans (finalizer, default quotas, status) are computed from the
 * snapshot by pure functions; this file only carries them out. Every write goes through
 * ControllerApi (counted) and its response is put back into the snapshot, so the next pass does not
 * act on a view older than its own writes.
 */
import type { TenantgateConfig } from '../config/config.js';
import { ANNOTATION_PROJECT_UID, FINALIZER_CASCADE, LABEL_MANAGED_BY, LABEL_PROJECT, MANAGED_BY, type Project, type ResourceQuotaObject } from '../validate/types.js';
import type { ManagedObjects } from './managed-objects.js';
import { podSecurityLabels } from '../validate/pod-security.js';
import { NAMESPACE_OBJECTS } from './namespace-objects.js';
import { ACCESS_KINDS, desiredProjectAccess, projectAccessMatches, projectAccessName, type ProjectAccessCaches } from './project-access.js';
import { ProjectDeleter } from './cascade.js';
import { DEFAULT_QUOTA_NAME, LEDGER_PREFIX } from '../validate/types.js';
import { planDefaultQuotas } from './defaults.js';
import { argoCdGraceLeft } from './argocd-grace.js';
import { tierNames } from '../validate/tiers.js';
import { BURST_FIELD_MANAGER, describeAbove, planBurstQuotas } from './burst-quotas.js';
import { describeGiveBack, describeStillOver } from './burst-budget-restore.js';
import { nextTransition } from '../validate/bursts.js';
import { getProcessClock, type Clock } from '../clock.js';
import type { Informers } from '../kube/informers.js';
import { describeError } from '../kube/errors.js';
import type { ControllerApi, ProjectEvent } from './kube.js';
import { CONDITION_QUOTA_WITHIN_BUDGET } from './status.js';
import { computeStatus, statusEquals, type CascadeReport } from './status.js';

/** The longest wait for a burst's next start or end (the requeue is renewed then). */
const MAX_BURST_REQUEUE_MS = 10 * 60_000;

/** The field manager of the controller's repairs of the other-tiers quota (docs/budgets.md#priority-tiers). */
const TIERS_FIELD_MANAGER = 'tenantgate-tiers';

/** A signal that never aborts (reconciles outside a leadership term: tests, tools). */
const NEVER = new AbortController().signal;

export type ReconcileResult =
  /** Converged; forget the key's backoff. */
  | { kind: 'Done' }
  /** Not finished (namespaces still being deleted): come back after `afterMs`. Progress, not an error: errors throw and take the rate limiter's backoff. */
  | { kind: 'Requeue'; reason: string; afterMs: number };

export interface ReconcilerOptions {
  api: ControllerApi;
  informers: Informers;
  /** The owners' RoleBindings, LimitRanges and NetworkPolicies in project namespaces; without them the step is skipped. */
  managed?: ManagedObjects;
  /** The per-project ClusterRoles and bindings (visibility: own); without them the step is skipped. */
  access?: ProjectAccessCaches;
  config: TenantgateConfig;
  log: (message: string) => void;
  now?: () => Date;
  /** The clock budget decisions are made at (bursts): default the process clock (src/clock.ts). */
  clock?: Clock;
  /** Least time between two status writes reporting a cascade's progress (1 s). */
  progressIntervalMs?: number;
  /** Namespace deletes one cascade sends at once (10). */
  deleteConcurrency?: number;
}

export class Reconciler {
  private readonly deleter: ProjectDeleter;
  private readonly now: () => Date;
  private readonly clock: Clock;
  private readonly progressIntervalMs: number;
  /** When the cascade progress of a Project was last written (the requeue comes back after the interval). */
  private readonly lastProgressWrite = new Map<string, number>();

  constructor(private readonly o: ReconcilerOptions) {
    this.deleter = new ProjectDeleter(o.api, { log: o.log, ...(o.deleteConcurrency ? { concurrency: o.deleteConcurrency } : {}) });
    this.now = o.now ?? (() => new Date());
    this.clock = o.clock ?? getProcessClock();
    this.progressIntervalMs = o.progressIntervalMs ?? 1000;
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
    let project = await this.ensureFinalizer(initial, signal);
    // Report what was observed, then act: a namespace that lost its quota shows as QuotaMissing
    // ("a default quota is being created") until the quota's own watch event brings the next pass.
    project = await this.writeStatus(project, signal);
    const failures: string[] = [];
    const graced = new Map<string, number>();
    await this.createDefaultQuotas(project, failures, signal, graced);
    await this.applyBurstQuotas(project, failures, signal);
    await this.ensurePodSecurityLabels(project, failures, signal);
    await this.ensureNamespaceObjects(project, failures, signal, graced);
    await this.ensureProjectAccess(project, failures, signal);
    if (failures.length > 0) throw new Error(failures.join('; '));
    // Come back when a namespace's Argo CD grace ends, or when a burst starts or ends (capped: a timer
    // that long is not kept, and resyncs come anyway).
    const at = this.clock.now();
    const next = nextTransition(project, at);
    const burstMs = next !== undefined ? Math.min(next - at + 100, MAX_BURST_REQUEUE_MS) : undefined;
    const graceMs = graced.size > 0 ? Math.min(...graced.values()) + 100 : undefined;
    if (graceMs !== undefined && (burstMs === undefined || graceMs <= burstMs)) {
      return { kind: 'Requeue', reason: `left to Argo CD's sync for now: ${[...graced.keys()].sort().join(', ')}`, afterMs: graceMs };
    }
    if (burstMs !== undefined) return { kind: 'Requeue', reason: `next burst transition at ${new Date(next!).toISOString()}`, afterMs: burstMs };
    return { kind: 'Done' };
  }

  /**
   * Step (bursts, docs/budgets.md#bursts): the quota of a namespace a burst names is raised while the
   * burst is active and lowered when it ends, never below what the namespace uses (burst-quotas.ts);
   * once every burst ended, quotas above the budget are lowered until the project is within it
   * (burst-budget-restore.ts).
   */
  private async applyBurstQuotas(project: Project, failures: string[], signal: AbortSignal): Promise<void> {
    const plan = planBurstQuotas(project, this.snapshot, this.o.config.clusterName, this.clock.now());
    const projectName = project.metadata.name ?? '';
    for (const w of plan.writes) {
      signal.throwIfAborted();
      const where = `ResourceQuota ${w.namespace}/${w.quota.metadata.name}`;
      const above = plan.above.filter((a) => a.namespace === w.namespace);
      try {
        const written = await this.o.api.replaceQuota(w.desired, BURST_FIELD_MANAGER);
        this.o.informers.applyWritten('ResourceQuota', written as never);
        const change = w.changes.join(', ') || 'no resource changed';
        this.o.log(`project ${projectName}: ${w.kind === 'raise' ? 'raised' : 'lowered'} ${where} (${change})`);
        if (w.kind === 'raise') {
          await this.event(project, { type: 'Normal', reason: 'BurstQuotaRaised', message: `raised ${where} for burst ${w.bursts.join(', ')}: ${change}` });
        } else if (w.giveBacks.length > 0) {
          await this.event(project, { type: 'Normal', reason: 'BurstBudgetRestored', message: `lowered ${where} to bring the project within its budget after its bursts ended: ${w.giveBacks.map(describeGiveBack).join(', ')}` });
        } else if (w.changes.length > 0) {
          await this.event(project, { type: 'Normal', reason: 'BurstQuotaLowered', message: `lowered ${where}, its bursts have ended: ${change}` });
        }
        if (above.length > 0 && w.changes.length > 0) {
          await this.event(project, { type: 'Warning', reason: 'BurstEndedAboveQuota', message: `a burst has ended but ${describeAbove(above)}` });
        }
      } catch (err) {
        failures.push(`${w.kind === 'raise' ? 'raising' : 'lowering'} ${where} for a burst: ${describeError(err)}`);
      }
    }
    // What could not be lowered yet (used above the floor): said once per reconcile that lowered something.
    if (plan.stillOver.length > 0 && plan.writes.some((w) => w.giveBacks.length > 0)) {
      await this.event(project, { type: 'Warning', reason: 'OverBudgetAfterBurst', message: `its bursts have ended but the project still allocates more than its budget: ${plan.stillOver.map(describeStillOver).join('; ')}; quotas are lowered further as usage falls` });
    }
  }

  /** Step: the cascade finalizer is on every live Project (the mutating webhook adds it too). */
  private async ensureFinalizer(project: Project, signal: AbortSignal): Promise<Project> {
    if ((project.metadata.finalizers ?? []).includes(FINALIZER_CASCADE)) return project;
    signal.throwIfAborted();
    const updated = await this.o.api.addFinalizer(project);
    this.o.informers.applyWritten('Project', updated as never);
    return updated;
  }

  /** Milliseconds namespace `namespace` is still left to the Argo CD sync that created it (argocd-grace.ts), recorded in `graced`. */
  private argoCdGrace(namespace: string, graced: Map<string, number>): number {
    const ns = this.snapshot.namespace(namespace);
    const left = ns ? argoCdGraceLeft(ns, Date.now()) : 0;
    if (left > 0) graced.set(namespace, left);
    return left;
  }

  /** CR4: a ResourceQuota for each project namespace without one, when the headroom allows (not yet in a namespace Argo CD is filling). */
  private async createDefaultQuotas(project: Project, failures: string[], signal: AbortSignal, graced: Map<string, number>): Promise<void> {
    const plan = planDefaultQuotas(project, this.snapshot, this.o.config.clusterName);
    for (const { namespace, hard, name = DEFAULT_QUOTA_NAME, scopeSelector } of plan.create) {
      if (this.argoCdGrace(namespace, graced) > 0) continue;
      // With tiers (docs/budgets.md#priority-tiers) also the tier quotas and the other-tiers quota, scoped by PriorityClass.
      const quota: ResourceQuotaObject = {
        apiVersion: 'v1',
        kind: 'ResourceQuota',
        metadata: { name, namespace, labels: { [LABEL_PROJECT]: project.metadata.name ?? '', [LABEL_MANAGED_BY]: MANAGED_BY } },
        spec: { hard, ...(scopeSelector ? { scopeSelector } : {}) },
      };
      signal.throwIfAborted();
      try {
        const created = await this.o.api.createQuota(quota);
        if (created !== 'exists') {
          this.o.informers.applyWritten('ResourceQuota', created as never);
          this.o.log(`project ${project.metadata.name}: created ResourceQuota ${namespace}/${name}`);
          await this.event(project, { type: 'Normal', reason: 'DefaultQuotaCreated', message: `created ResourceQuota ${namespace}/${name} from ${scopeSelector ? 'the project\'s tiers' : 'namespaceDefaults'} (${Object.entries(hard).map(([r, q]) => `${r} ${q}`).join(', ')})` });
        }
      } catch (err) {
        failures.push(`creating ResourceQuota ${namespace}/${name}: ${describeError(err)}`);
      }
    }
    for (const desired of plan.replace) {
      const where = `ResourceQuota ${desired.metadata.namespace}/${desired.metadata.name}`;
      signal.throwIfAborted();
      try {
        const written = await this.o.api.replaceQuota(desired, TIERS_FIELD_MANAGER);
        this.o.informers.applyWritten('ResourceQuota', written as never);
        this.o.log(`project ${project.metadata.name}: repaired ${where} (the project's tiers)`);
        await this.event(project, { type: 'Normal', reason: 'OtherTiersQuotaRepaired', message: `repaired ${where}: pods 0 for every PriorityClass but the tiers ${tierNames(project).join(', ')}` });
      } catch (err) {
        failures.push(`repairing ${where}: ${describeError(err)}`);
      }
    }
  }

  /** The project's live namespaces this Project owns (a namespace whose project-uid is an older namesake's gets nothing). */
  private *ownNamespaces(project: Project) {
    const uid = project.metadata.uid;
    for (const ns of this.snapshot.namespacesOfProject(project.metadata.name ?? '')) {
      const nsUid = ns.metadata.annotations?.[ANNOTATION_PROJECT_UID];
      if (ns.metadata.deletionTimestamp || (nsUid && uid && nsUid !== uid)) continue;
      yield ns;
    }
  }

  /**
   * Step: every live namespace of the project has exactly what the Project declares: the owners'
   * RoleBinding, the LimitRange, the isolation NetworkPolicy (docs/design.md). Missing ones are
   * created, edited ones repaired, ones the Project no longer declares removed.
   */
  private async ensureNamespaceObjects(project: Project, failures: string[], signal: AbortSignal, graced: Map<string, number>): Promise<void> {
    const managed = this.o.managed;
    if (!managed) return;
    const projectName = project.metadata.name ?? '';
    for (const ns of this.ownNamespaces(project)) {
      const namespace = ns.metadata.name ?? '';
      for (const kind of NAMESPACE_OBJECTS) {
        const cache = managed.caches[kind.kind];
        const actual = cache.get(namespace);
        const desired = kind.desired(project, namespace);
        const where = `${kind.kind} ${namespace}/${kind.name}`;
        if (!desired) {
          if (!actual || actual.metadata.labels?.[LABEL_PROJECT] !== projectName) continue;
          signal.throwIfAborted();
          try {
            await this.o.api.deleteManaged(kind.kind, namespace, kind.name, actual.metadata.resourceVersion);
            cache.applyDeleted(namespace);
            this.o.log(`project ${projectName}: removed ${where} (no longer declared)`);
            await this.event(project, { type: 'Normal', reason: `${kind.kind}Removed`, message: `removed ${where}: the project no longer declares ${kind.declaredBy}` });
          } catch (err) {
            failures.push(`removing ${where}: ${describeError(err)}`);
          }
          continue;
        }
        if (actual && kind.matches(actual, desired)) continue;
        // A missing one in a namespace Argo CD just created comes with its sync: not yet.
        if (!actual && this.argoCdGrace(namespace, graced) > 0) continue;
        signal.throwIfAborted();
        try {
          cache.applyWritten(await this.o.api.putManaged(desired, actual));
          this.o.log(`project ${projectName}: ${actual ? 'repaired' : 'created'} ${where}`);
          await this.event(project, { type: 'Normal', reason: `${kind.kind}${actual ? 'Repaired' : 'Created'}`, message: `${actual ? 'set' : 'created'} ${where} as the project declares (${kind.describe(desired)})` });
        } catch (err) {
          failures.push(`writing ${where}: ${describeError(err)}`);
        }
      }
    }
  }

  /**
   * Step (visibility: own, docs/visibility.md): the Project's ClusterRole and ClusterRoleBinding
   * granting its owners `get` on it and on its namespaces; created, and repaired when they differ from
   * the cache. `access` exists only under visibility: own; the garbage collector removes both with the
   * Project (ownerReference), and switching to `all` leaves them in place.
   */
  private async ensureProjectAccess(project: Project, failures: string[], signal: AbortSignal): Promise<void> {
    const access = this.o.access;
    if (!access) return;
    const desired = desiredProjectAccess(project, this.ownNamespaces(project));
    if (!desired) return;
    const projectName = project.metadata.name ?? '';
    const name = projectAccessName(projectName);
    for (const kind of ACCESS_KINDS) {
      const cache = access.caches[kind];
      const actual = cache.get(name);
      const want = kind === 'ClusterRole' ? desired.role : desired.binding;
      if (actual && projectAccessMatches(actual, want)) continue;
      signal.throwIfAborted();
      try {
        cache.applyWritten(await this.o.api.putAccess(want, actual));
        this.o.log(`project ${projectName}: ${actual ? 'repaired' : 'created'} ${kind} ${name}`);
        await this.event(project, { type: 'Normal', reason: `${kind}${actual ? 'Repaired' : 'Created'}`, message: `${actual ? 'set' : 'created'} ${kind} ${name}: the owners may get this Project and its namespaces (visibility: own)` });
      } catch (err) {
        failures.push(`writing ${kind} ${name}: ${describeError(err)}`);
      }
    }
  }

  /**
   * Step: every live namespace of the project carries its Pod Security labels (the Project's levels
   * over tenantgate.yaml's). The mutating webhook sets them on CREATE; this repairs a namespace made
   * before, or changed by a privileged subject, or a Project whose levels changed in git.
   */
  private async ensurePodSecurityLabels(project: Project, failures: string[], signal: AbortSignal): Promise<void> {
    if (!this.o.managed) return; // the same switch as the other namespace objects (tests without them)
    const wanted = podSecurityLabels(this.o.config.podSecurity, project);
    for (const ns of this.ownNamespaces(project)) {
      const labels = ns.metadata.labels ?? {};
      const differ = Object.entries(wanted).filter(([k, v]) => labels[k] !== v);
      if (differ.length === 0) continue;
      signal.throwIfAborted();
      const name = ns.metadata.name ?? '';
      try {
        const updated = await this.o.api.setNamespaceLabels(ns, wanted);
        this.o.informers.applyWritten('Namespace', updated as never);
        const change = differ.map(([k, v]) => `${k}=${v} (was ${labels[k] ?? 'unset'})`).join(', ');
        this.o.log(`project ${project.metadata.name}: set Pod Security labels of namespace ${name}: ${change}`);
        await this.event(project, { type: 'Normal', reason: 'PodSecurityLabelsSet', message: `namespace ${name}: ${change}` });
      } catch (err) {
        failures.push(`setting Pod Security labels of namespace ${name}: ${describeError(err)}`);
      }
    }
  }

  /** CR3: writes the status only when it differs (ignoring lastTransitionTime). */
  private async writeStatus(project: Project, signal: AbortSignal, cascade?: CascadeReport): Promise<Project> {
    const status = computeStatus({ project, snapshot: this.snapshot, cluster: this.o.config.clusterName, now: rfc3339(this.now()), ...(cascade ? { cascade } : {}) });
    if (statusEquals(project.status, status)) return project;
    signal.throwIfAborted();
    const updated = await this.o.api.replaceStatus(project, status);
    this.o.informers.applyWritten('Project', updated as never);
    // Events on transitions only (a status written again for another reason repeats none).
    const budget = (s: Project['status']) => s?.conditions?.find((c) => c.type === CONDITION_QUOTA_WITHIN_BUDGET);
    const overBefore = budget(project.status)?.status === 'False';
    const over = budget(status);
    if (over?.status === 'False' && !overBefore) await this.event(updated, { type: 'Warning', reason: 'OverBudget', message: over.message ?? 'quota over budget' });
    if (status?.phase === 'Terminating' && project.status?.phase !== 'Terminating') {
      await this.event(updated, { type: 'Normal', reason: 'CascadeStarted', message: `deleting the project's namespaces: ${cascade?.remaining.map((r) => r.name).join(', ') || 'none left'}` });
    }
    return updated;
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
    if (!(project.metadata.finalizers ?? []).includes(FINALIZER_CASCADE)) return { kind: 'Done' }; // not ours (any more)
    const name = project.metadata.name ?? '';
    const result = await this.deleter.run(project, [...this.snapshot.namespacesOfProject(name)], signal);
    if (result.kind === 'Finished') {
      await this.removeFinalizer(project, result.report, signal);
      this.lastProgressWrite.delete(name);
      return { kind: 'Done' };
    }
    // Progress (which namespaces remain, their conditions) is written at most once per interval:
    // namespaces being deleted change often and each change is an event. Phase Terminating goes out at once.
    const now = this.now().getTime();
    const last = this.lastProgressWrite.get(name);
    const reason = `${result.report.remaining.length} namespaces remaining`;
    if (project.status?.phase === 'Terminating' && last !== undefined && now - last < this.progressIntervalMs) {
      // Not now: come back when the interval is over, to write what is true then.
      return { kind: 'Requeue', reason, afterMs: this.progressIntervalMs - (now - last) };
    }
    const before = project.metadata.resourceVersion;
    const written = await this.writeStatus(project, signal, result.report);
    if (written.metadata.resourceVersion !== before) this.lastProgressWrite.set(name, now);
    return { kind: 'Requeue', reason, afterMs: this.progressIntervalMs };
  }

  private async removeFinalizer(project: Project, report: CascadeReport, signal: AbortSignal): Promise<void> {
    // The webhook's headroom ledger of this Project goes first: a failure here retries with the
    // finalizer still on (nothing can grow a terminating project's allocation meanwhile).
    signal.throwIfAborted();
    await this.o.api.deleteLedger(this.o.config.systemNamespace, `${LEDGER_PREFIX}${project.metadata.name ?? ''}`);
    if (report.foreign.length > 0) {
      const kept = report.foreign.map((f) => `${f.name} (${f.reason})`).join(', ');
      this.o.log(`project ${project.metadata.name}: namespaces left in place (not the project's): ${kept}`);
      await this.event(project, { type: 'Warning', reason: 'NamespacesKept', message: `not deleted with the project, their project-uid is not this Project's: ${kept}` });
    }
    signal.throwIfAborted();
    const updated = await this.o.api.removeFinalizer(project);
    // Without finalizers the API server deletes the object right away: drop it rather than cache a ghost.
    if ((updated.metadata.finalizers ?? []).length === 0) this.o.informers.forget('Project', updated as never);
    else this.o.informers.applyWritten('Project', updated as never);
    this.o.log(`project ${project.metadata.name}: every namespace deleted, finalizer removed`);
    await this.event(project, { type: 'Normal', reason: 'CascadeFinished', message: 'every namespace of the project is deleted; finalizer removed' });
  }
}

/** RFC 3339 without fractional seconds (the CRD's date-time; what Kubernetes writes in conditions). */
export function rfc3339(d: Date): string {
  return `${d.toISOString().slice(0, 19)}Z`;
}
