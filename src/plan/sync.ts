/**
 * A sync of the rendered change, object by object, through the webhook's own rule engine
 * (src/validate/admission.ts) against the live objects of one cluster: what Argo CD applies and what
 * the webhook would refuse. Pure: the objects are held in a MemorySnapshot.
 */
import type { TenantgateConfig } from '../config/config.js';
import { renderProjectsLazily } from '../render/render.js';
import {
  reviewNamespace,
  reviewProject,
  reviewResourceQuota,
  type ReviewContext,
  type Verdict,
} from '../validate/admission.js';
import { namespacesOn } from '../validate/offline.js';
import { MemorySnapshot } from '../validate/snapshot.js';
import {
  LABEL_PROJECT,
  type NamespaceObject,
  type Project,
  type ResourceQuotaObject,
  type Violation,
} from '../validate/types.js';
import type { UserInfo } from '../validate/rules/tenancy.js';
import type { LiveState } from './types.js';

interface SyncRefusal {
  project: string;
  object: string;
  violation: Violation;
}

export interface SyncResult {
  /** The cluster after every object of the change is applied and every pruned one deleted. */
  after: MemorySnapshot;
  /** What the webhook would refuse, in apply order (objects refused are not applied for later decisions). */
  refusals: SyncRefusal[];
  /** Namespaces the sync deletes: project → names. */
  pruned: Map<string, string[]>;
}

/** The identity that syncs the platform's Projects: privileged (ADR 0007). */
function syncUser(config: TenantgateConfig): UserInfo {
  return { username: config.privileged.users[0] ?? 'tenantgate-plan', groups: [...config.privileged.groups] };
}

export function liveSnapshot(live: LiveState): MemorySnapshot {
  return MemorySnapshot.of({ projects: live.projects, namespaces: live.namespaces, quotas: live.quotas });
}

type Step =
  | { kind: 'Project'; name: string; object: Project }
  | { kind: 'Namespace'; name: string; project: string; object: NamespaceObject }
  | { kind: 'ResourceQuota'; name: string; namespace: string; project: string; object: ResourceQuotaObject };

/** The rendered objects tenantgate's rules judge, in Argo CD's apply order (sync waves -2, -1, 0). */
function steps(after: Project[], config: TenantgateConfig, cluster: string, at: number): Step[] {
  const out: Step[] = [];
  for (const o of renderProjectsLazily(after, config, { cluster, at })) {
    const meta = o.metadata as { name: string; namespace?: string; labels?: Record<string, string> };
    if (o.kind === 'Project') out.push({ kind: 'Project', name: meta.name, object: o as unknown as Project });
    else if (o.kind === 'Namespace')
      out.push({
        kind: 'Namespace',
        name: meta.name,
        project: meta.labels?.[LABEL_PROJECT] ?? '',
        object: o as unknown as NamespaceObject,
      });
    else if (o.kind === 'ResourceQuota')
      out.push({
        kind: 'ResourceQuota',
        name: meta.name,
        namespace: meta.namespace ?? '',
        project: meta.labels?.[LABEL_PROJECT] ?? '',
        object: o as unknown as ResourceQuotaObject,
      });
  }
  return out;
}

/** A live object with the applied one's labels and spec (what `kubectl apply` leaves). */
function appliedNamespace(live: NamespaceObject | undefined, applied: NamespaceObject): NamespaceObject {
  if (!live) return { ...applied, status: { phase: 'Active' } };
  return { ...live, metadata: { ...live.metadata, labels: { ...live.metadata.labels, ...applied.metadata.labels } } };
}

/** The quota after the apply, as the quota controller leaves it: the new hard enforced, usage kept. */
function appliedQuota(live: ResourceQuotaObject | undefined, applied: ResourceQuotaObject): ResourceQuotaObject {
  const hard = applied.spec?.hard ?? {};
  const used = live?.status?.used;
  // The applied scope too: a tier quota is scoped by PriorityClass (docs/budgets.md#priority-tiers).
  return {
    ...(live ?? applied),
    metadata: { ...(live?.metadata ?? applied.metadata) },
    spec: { ...(live?.spec ?? {}), ...applied.spec, hard },
    status: { hard, ...(used ? { used } : {}) },
  };
}

function projectOf(p: Project): Project {
  return { ...p, metadata: { ...p.metadata } };
}

/**
 * Applies the change to a copy of the live objects twice: once as the webhook judges it (an object
 * refused stays as it was), once to the end (every object applied, pruned namespaces and removed
 * projects deleted) for the numbers after the change.
 */
export function simulateSync(
  live: LiveState,
  before: Project[],
  after: Project[],
  config: TenantgateConfig,
  at: number,
): SyncResult {
  const cluster = live.cluster;
  const ctxConfig: TenantgateConfig = { ...config, clusterName: cluster };
  const judged = liveSnapshot(live);
  const final = liveSnapshot(live);
  const ctx: ReviewContext = { config: ctxConfig, snapshot: judged, user: syncUser(config), at };
  const refusals: SyncRefusal[] = [];
  const refuse = (project: string, object: string, verdict: Verdict): boolean => {
    for (const violation of verdict.violations) refusals.push({ project, object, violation });
    return verdict.violations.length === 0;
  };

  for (const step of steps(after, ctxConfig, cluster, at)) {
    if (step.kind === 'Project') {
      const old = judged.project(step.name);
      const object = old ? { ...step.object, metadata: { ...old.metadata, ...step.object.metadata } } : step.object;
      if (refuse(step.name, `Project ${step.name}`, reviewProject(ctx, old ? 'UPDATE' : 'CREATE', object, old)))
        judged.upsertProject(projectOf(object));
      final.upsertProject(projectOf(object));
    } else if (step.kind === 'Namespace') {
      const old = judged.namespace(step.name);
      const object = appliedNamespace(old, step.object);
      if (refuse(step.project, `Namespace ${step.name}`, reviewNamespace(ctx, old ? 'UPDATE' : 'CREATE', object, old)))
        judged.upsertNamespace(object);
      final.upsertNamespace(appliedNamespace(final.namespace(step.name), step.object));
    } else {
      const old = [...judged.quotasInNamespace(step.namespace)].find((q) => q.metadata.name === step.name);
      const object = old ? { ...old, spec: { ...old.spec, hard: step.object.spec?.hard ?? {} } } : step.object;
      const subject = `ResourceQuota ${step.namespace}/${step.name}`;
      if (
        refuse(step.project, subject, reviewResourceQuota(ctx, old ? 'UPDATE' : 'CREATE', step.namespace, object, old))
      )
        judged.upsertQuota(appliedQuota(old, step.object));
      const finalOld = [...final.quotasInNamespace(step.namespace)].find((q) => q.metadata.name === step.name);
      final.upsertQuota(appliedQuota(finalOld, step.object));
    }
  }

  // Prune: namespaces declared before and not after, and every namespace of a removed project.
  const pruned = new Map<string, string[]>();
  const afterByName = new Map(after.map((p) => [p.metadata.name ?? '', p]));
  for (const previous of before) {
    const name = previous.metadata.name ?? '';
    const next = afterByName.get(name);
    const keep = new Set(next ? namespacesOn(next, cluster).map((n) => n.name) : []);
    const gone = next
      ? namespacesOn(previous, cluster)
          .map((n) => n.name)
          .filter((n) => !keep.has(n) && final.namespace(n)?.metadata.labels?.[LABEL_PROJECT] === name)
      : [...final.namespacesOfProject(name)].map((n) => n.metadata.name ?? '');
    for (const ns of gone) {
      for (const q of [...final.quotasInNamespace(ns)]) final.deleteQuota(ns, q.metadata.name ?? '');
      final.deleteNamespace(ns);
    }
    if (gone.length) pruned.set(name, [...gone].sort());
    if (!next) final.deleteProject(name);
  }
  return { after: final, refusals, pruned };
}
