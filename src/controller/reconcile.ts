/**
 * Reconciles one Project: the plans (finalizer, default quotas, status) are computed from the
 * snapshot by pure functions; this file only carries them out. Every write goes through
 * ControllerApi (counted) and its response is put back into the snapshot, so the next pass does not
 * act on a view older than its own writes.
 */
import type { TenantgateConfig } from '../config/config.js';
import { ANNOTATION_PROJECT_UID, FINALIZER_CASCADE, LABEL_MANAGED_BY, LABEL_PROJECT, MANAGED_BY, type Project, type ResourceQuotaObject } from '../validate/types.js';
import { ownerBinding, ownerBindingMatches, OWNERS_BINDING_NAME } from '../render/owner-binding.js';
import type { OwnerBindingCache } from './owner-bindings.js';
import { LEDGER_PREFIX } from '../webhook/ledger.js';
import { ProjectDeleter } from './cascade.js';
import { DEFAULT_QUOTA_NAME } from '../validate/types.js';
import { planDefaultQuotas } from './defaults.js';
import type { Informers } from '../kube/informers.js';
import { describeError } from '../kube/errors.js';
import type { ControllerApi } from './kube.js';
import { computeStatus, statusEquals, type CascadeReport } from './status.js';

export type ReconcileResult =
  /** Converged; forget the key's backoff. */
  | { kind: 'Done' }
  /** Not finished (namespaces still being deleted): come back with a growing delay, or after `afterMs` exactly. */
  | { kind: 'Requeue'; reason: string; afterMs?: number };

export interface ReconcilerOptions {
  api: ControllerApi;
  informers: Informers;
  /** The owners' RoleBindings (ADR 0007); without it the step is skipped. */
  ownerBindings?: OwnerBindingCache;
  config: TenantgateConfig;
  log: (message: string) => void;
  now?: () => Date;
  /** Least time between two status writes reporting a cascade's progress (1 s). */
  progressIntervalMs?: number;
  /** Namespace deletes one cascade sends at once (10). */
  deleteConcurrency?: number;
}

export class Reconciler {
  private readonly deleter: ProjectDeleter;
  private readonly now: () => Date;
  private readonly progressIntervalMs: number;
  /** When the cascade progress of a Project was last written (the requeue comes back after the interval). */
  private readonly lastProgressWrite = new Map<string, number>();

  constructor(private readonly o: ReconcilerOptions) {
    this.deleter = new ProjectDeleter(o.api, { log: o.log, ...(o.deleteConcurrency ? { concurrency: o.deleteConcurrency } : {}) });
    this.now = o.now ?? (() => new Date());
    this.progressIntervalMs = o.progressIntervalMs ?? 1000;
  }

  private get snapshot() {
    return this.o.informers.snapshot;
  }

  async reconcile(name: string): Promise<ReconcileResult> {
    const project = this.snapshot.project(name);
    if (!project) {
      this.lastProgressWrite.delete(name);
      return { kind: 'Done' }; // deleted, nothing to do
    }
    if (project.metadata.deletionTimestamp) return this.reconcileDeletion(project);
    return this.reconcileLive(project);
  }

  // --- a live Project ----------------------------------------------------------------------------

  private async reconcileLive(initial: Project): Promise<ReconcileResult> {
    let project = await this.ensureFinalizer(initial);
    // Report what was observed, then act: a namespace that lost its quota shows as QuotaMissing
    // ("a default quota is being created") until the quota's own watch event brings the next pass.
    project = await this.writeStatus(project);
    const failures: string[] = [];
    await this.createDefaultQuotas(project, failures);
    await this.ensureOwnerBindings(project, failures);
    if (failures.length > 0) throw new Error(failures.join('; '));
    return { kind: 'Done' };
  }

  /** Step: the cascade finalizer is on every live Project (the mutating webhook adds it too). */
  private async ensureFinalizer(project: Project): Promise<Project> {
    if ((project.metadata.finalizers ?? []).includes(FINALIZER_CASCADE)) return project;
    const updated = await this.o.api.addFinalizer(project);
    this.o.informers.applyWritten('Project', updated as never);
    return updated;
  }

  /** C4: a ResourceQuota for each project namespace without one, when the headroom allows. */
  private async createDefaultQuotas(project: Project, failures: string[]): Promise<void> {
    const plan = planDefaultQuotas(project, this.snapshot, this.o.config.clusterName);
    for (const { namespace, hard } of plan.create) {
      const quota: ResourceQuotaObject = {
        apiVersion: 'v1',
        kind: 'ResourceQuota',
        metadata: { name: DEFAULT_QUOTA_NAME, namespace, labels: { [LABEL_PROJECT]: project.metadata.name ?? '', [LABEL_MANAGED_BY]: MANAGED_BY } },
        spec: { hard },
      };
      try {
        const created = await this.o.api.createQuota(quota);
        if (created !== 'exists') {
          this.o.informers.applyWritten('ResourceQuota', created as never);
          this.o.log(`project ${project.metadata.name}: created ResourceQuota ${namespace}/${DEFAULT_QUOTA_NAME}`);
        }
      } catch (err) {
        failures.push(`creating ResourceQuota ${namespace}/${DEFAULT_QUOTA_NAME}: ${describeError(err)}`);
      }
    }
  }

  /**
   * Step: every live namespace of the project has the owners' RoleBinding, exactly as the Project says
   * (owners added or removed in git reach every namespace). A namespace whose project-uid is another
   * Project's (an older one of the same name) gets nothing: its new namesake's owners do not own it.
   */
  private async ensureOwnerBindings(project: Project, failures: string[]): Promise<void> {
    const cache = this.o.ownerBindings;
    if (!cache) return;
    const uid = project.metadata.uid;
    for (const ns of this.snapshot.namespacesOfProject(project.metadata.name ?? '')) {
      const name = ns.metadata.name ?? '';
      const nsUid = ns.metadata.annotations?.[ANNOTATION_PROJECT_UID];
      if (ns.metadata.deletionTimestamp || (nsUid && uid && nsUid !== uid)) continue;
      const desired = ownerBinding(project, name);
      const actual = cache.get(name);
      if (actual && ownerBindingMatches(actual, desired)) continue;
      try {
        cache.applyWritten(await this.o.api.putOwnerBinding(desired, actual?.metadata.resourceVersion));
        this.o.log(`project ${project.metadata.name}: ${actual ? 'repaired' : 'created'} RoleBinding ${name}/${OWNERS_BINDING_NAME} for ${desired.subjects.length} owners`);
      } catch (err) {
        failures.push(`writing RoleBinding ${name}/${OWNERS_BINDING_NAME}: ${describeError(err)}`);
      }
    }
  }

  /** C3: writes the status only when it differs (ignoring lastTransitionTime). */
  private async writeStatus(project: Project, cascade?: CascadeReport): Promise<Project> {
    const status = computeStatus({ project, snapshot: this.snapshot, cluster: this.o.config.clusterName, now: rfc3339(this.now()), ...(cascade ? { cascade } : {}) });
    if (statusEquals(project.status, status)) return project;
    const updated = await this.o.api.replaceStatus(project, status);
    this.o.informers.applyWritten('Project', updated as never);
    return updated;
  }

  // --- a Project being deleted -------------------------------------------------------------------

  private async reconcileDeletion(project: Project): Promise<ReconcileResult> {
    if (!(project.metadata.finalizers ?? []).includes(FINALIZER_CASCADE)) return { kind: 'Done' }; // not ours (any more)
    const name = project.metadata.name ?? '';
    const result = await this.deleter.run(project, [...this.snapshot.namespacesOfProject(name)]);
    if (result.kind === 'Finished') {
      await this.removeFinalizer(project, result.report);
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
    const written = await this.writeStatus(project, result.report);
    if (written.metadata.resourceVersion !== before) this.lastProgressWrite.set(name, now);
    return { kind: 'Requeue', reason };
  }

  private async removeFinalizer(project: Project, report: CascadeReport): Promise<void> {
    // The webhook's headroom ledger of this Project goes first: a failure here retries with the
    // finalizer still on (nothing can grow a terminating project's allocation meanwhile).
    await this.o.api.deleteLedger(this.o.config.systemNamespace, `${LEDGER_PREFIX}${project.metadata.name ?? ''}`);
    if (report.foreign.length > 0) {
      this.o.log(`project ${project.metadata.name}: namespaces left in place (not the project's): ${report.foreign.map((f) => `${f.name} (${f.reason})`).join(', ')}`);
    }
    const updated = await this.o.api.removeFinalizer(project);
    // Without finalizers the API server deletes the object right away: drop it rather than cache a ghost.
    if ((updated.metadata.finalizers ?? []).length === 0) this.o.informers.forget('Project', updated as never);
    else this.o.informers.applyWritten('Project', updated as never);
    this.o.log(`project ${project.metadata.name}: every namespace deleted, finalizer removed`);
  }
}

/** RFC 3339 without fractional seconds (the CRD's date-time; what Kubernetes writes in conditions). */
export function rfc3339(d: Date): string {
  return `${d.toISOString().slice(0, 19)}Z`;
}
