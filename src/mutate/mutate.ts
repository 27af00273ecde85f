/**
 * Mutations: edit a copy, then diff into an RFC 6902 JSON Patch with fast-json-patch
 * (which escapes `/` in label keys as `~1`). Mutations are idempotent: a second pass yields no patch.
 */
import fastJsonPatch from 'fast-json-patch';
import { isPrivileged } from '../config/config.js';
import { projectOfNamespace, type Operation, type ReviewContext } from '../validate/admission.js';
import { isOwner } from '../validate/rules/tenancy.js';
import { podSecurityLabels } from '../validate/pod-security.js';
import {
  ANNOTATION_PROJECT_UID,
  FINALIZER_CASCADE,
  LABEL_PROJECT,
  LABEL_TENANT,
  type NamespaceObject,
  type Project,
  type ResourceQuotaObject,
} from '../validate/types.js';

const { compare } = fastJsonPatch;
export type JsonPatch = ReturnType<typeof compare>;

function copy<T>(value: T): T {
  return structuredClone(value);
}

/**
 * Namespace CREATE: project and tenant labels, the project-uid annotation, and the project's Pod
 * Security labels where the request has none (a different level given by a tenant is refused by T7).
 * A CREATE with `generateName` has no name yet here (the apiserver generates it after the mutating
 * webhooks, before the validating ones): its project is the one whose prefix the generateName carries.
 */
export function mutateNamespace(ctx: ReviewContext, operation: Operation, ns: NamespaceObject): NamespaceObject {
  if (operation !== 'CREATE') return ns;
  const name = ns.metadata.name ?? '';
  const { project, claimed } = projectOfNamespace(ctx, name, ns.metadata.labels, ns.metadata.generateName);
  if (!project) return ns;
  // An unlabelled namespace is only claimed for a project its creator may create namespaces in;
  // everyone else gets the T4 denial from validation instead of a label.
  if (!claimed && !isPrivileged(ctx.config, ctx.user) && !isOwner(project, ctx.user)) return ns;
  const out = copy(ns);
  out.metadata.labels = { ...out.metadata.labels, [LABEL_PROJECT]: project.metadata.name ?? '' };
  if (!out.metadata.labels[LABEL_TENANT]) out.metadata.labels[LABEL_TENANT] = project.spec.tenant;
  for (const [key, level] of Object.entries(podSecurityLabels(ctx.config.podSecurity, project))) {
    if (out.metadata.labels[key] === undefined) out.metadata.labels[key] = level;
  }
  if (project.metadata.uid) out.metadata.annotations = { ...out.metadata.annotations, [ANNOTATION_PROJECT_UID]: project.metadata.uid };
  return out;
}

/** Project CREATE/UPDATE: the cascade-delete finalizer on live projects. */
export function mutateProject(_ctx: ReviewContext, operation: Operation, project: Project): Project {
  if (operation === 'DELETE' || project.metadata.deletionTimestamp) return project;
  if (project.metadata.finalizers?.includes(FINALIZER_CASCADE)) return project;
  const out = copy(project);
  out.metadata.finalizers = [...(out.metadata.finalizers ?? []), FINALIZER_CASCADE];
  return out;
}

/** ResourceQuota CREATE/UPDATE in a project namespace: the project label. */
export function mutateQuota(ctx: ReviewContext, operation: Operation, namespace: string, quota: ResourceQuotaObject): ResourceQuotaObject {
  if (operation === 'DELETE') return quota;
  const nsObject = ctx.snapshot.namespace(namespace);
  const { project } = projectOfNamespace(ctx, namespace, nsObject?.metadata.labels);
  if (!project || quota.metadata.labels?.[LABEL_PROJECT] === project.metadata.name) return quota;
  const out = copy(quota);
  out.metadata.labels = { ...out.metadata.labels, [LABEL_PROJECT]: project.metadata.name ?? '' };
  return out;
}

export function diffPatch(original: unknown, modified: unknown): JsonPatch {
  return compare(original as object, modified as object);
}
