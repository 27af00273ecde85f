/**
 * The reconcile steps' shared context (src/controller/reconcile.ts runs the steps, one per file in
 * this folder) and the helpers several steps use.
 */
import type { TenantgateConfig } from '../../config/config.js';
import { ANNOTATION_PROJECT_UID, type Project } from '../../validate/types.js';
import type { ManagedObjects } from '../managed-objects.js';
import type { ProjectAccessCaches } from '../project-access.js';
import { argoCdGraceLeft } from '../argocd-grace.js';
import type { Clock } from '../../clock.js';
import type { Informers } from '../../kube/informers.js';
import type { ControllerApi, ProjectEvent } from '../kube.js';

/** What every reconcile step works with: the API (every write counted), the caches, the configuration, the clock. */
export interface StepContext {
  api: ControllerApi;
  informers: Informers;
  /**
   * The owners' RoleBindings, LimitRanges, NetworkPolicies and AllowLists in project namespaces; without them those
   * steps are skipped.
   */
  managed?: ManagedObjects;
  /** The per-project ClusterRoles and bindings (visibility: own); without them that step is skipped. */
  access?: ProjectAccessCaches;
  config: TenantgateConfig;
  log: (message: string) => void;
  /** The one clock of a reconcile: budget decisions (bursts), condition timestamps, Argo CD's grace. */
  clock: Clock;
  /** Best effort: an Event that cannot be written is logged, never a reason to retry the reconcile. */
  event(project: Project, event: ProjectEvent): Promise<void>;
}

/**
 * The project's live namespaces this Project owns (a namespace whose project-uid is an older namesake's gets nothing).
 */
export function* ownNamespaces(c: StepContext, project: Project) {
  const uid = project.metadata.uid;
  for (const ns of c.informers.snapshot.namespacesOfProject(project.metadata.name ?? '')) {
    const nsUid = ns.metadata.annotations?.[ANNOTATION_PROJECT_UID];
    if (ns.metadata.deletionTimestamp || (nsUid && uid && nsUid !== uid)) continue;
    yield ns;
  }
}

/**
 * Milliseconds namespace `namespace` is still left to the Argo CD sync that created it
 * (argocd-grace.ts), recorded in `graced`.
 */
export function argoCdGrace(c: StepContext, namespace: string, graced: Map<string, number>): number {
  const ns = c.informers.snapshot.namespace(namespace);
  const left = ns ? argoCdGraceLeft(ns, c.clock.now()) : 0;
  if (left > 0) graced.set(namespace, left);
  return left;
}

/** RFC 3339 without fractional seconds (the CRD's date-time; what Kubernetes writes in conditions). */
export function rfc3339(d: Date): string {
  return `${d.toISOString().slice(0, 19)}Z`;
}
