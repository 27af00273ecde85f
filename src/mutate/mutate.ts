/**
 * Mutations, answered as RFC 6902 JSON Patch operations built directly (patch.ts), without cloning or
 * diffing the object; label keys are escaped (`/` as `~1`). Mutations are idempotent: a second pass
 * yields no patch. Each returns the operations, [] when the object stays as it is.
 */
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
import { metadataPatch, type FieldEdit, type PatchOperation } from './patch.js';

export type { PatchOperation };

/** An object as the request carries it: `metadata` may be absent (the patch then adds it whole). */
export type Incoming<T extends { metadata: object }> = Omit<T, 'metadata'> & { metadata?: T['metadata'] | undefined };

const NONE: PatchOperation[] = [];

/**
 * Namespace CREATE: project and tenant labels, the project-uid annotation, and the project's Pod
 * Security labels where the request has none (a different level given by a tenant is refused by T7).
 * A CREATE with `generateName` has no name yet here (the apiserver generates it after the mutating
 * webhooks, before the validating ones): its project is the one whose prefix the generateName carries.
 */
export function mutateNamespace(
  ctx: ReviewContext,
  operation: Operation,
  ns: Incoming<NamespaceObject>,
): PatchOperation[] {
  if (operation !== 'CREATE') return NONE;
  const metadata = ns.metadata ?? {};
  const name = metadata.name ?? '';
  const { project, claimed } = projectOfNamespace(ctx, name, metadata.labels, metadata.generateName);
  if (!project) return NONE;
  // An unlabelled namespace is only claimed for a project its creator may create namespaces in;
  // everyone else gets the T4 denial from validation instead of a label.
  if (!claimed && !isPrivileged(ctx.config, ctx.user) && !isOwner(project, ctx.user)) return NONE;
  const labels: Record<string, string> = { ...metadata.labels, [LABEL_PROJECT]: project.metadata.name ?? '' };
  if (!labels[LABEL_TENANT]) labels[LABEL_TENANT] = project.spec.tenant;
  for (const [key, level] of Object.entries(podSecurityLabels(ctx.config.podSecurity, project))) {
    if (labels[key] === undefined) labels[key] = level;
  }
  const edits: Array<[string, FieldEdit]> = [['labels', { kind: 'map', value: labels }]];
  if (project.metadata.uid)
    edits.push([
      'annotations',
      { kind: 'map', value: { ...metadata.annotations, [ANNOTATION_PROJECT_UID]: project.metadata.uid } },
    ]);
  return metadataPatch(ns.metadata, edits);
}

/** Project CREATE/UPDATE: the cascade-delete finalizer on live projects. */
export function mutateProject(_ctx: ReviewContext, operation: Operation, project: Incoming<Project>): PatchOperation[] {
  const metadata = project.metadata ?? {};
  if (operation === 'DELETE' || metadata.deletionTimestamp) return NONE;
  if (metadata.finalizers?.includes(FINALIZER_CASCADE)) return NONE;
  return metadataPatch(project.metadata, [
    ['finalizers', { kind: 'list', value: [...(metadata.finalizers ?? []), FINALIZER_CASCADE] }],
  ]);
}

/** ResourceQuota CREATE/UPDATE in a project namespace: the project label. */
export function mutateQuota(
  ctx: ReviewContext,
  operation: Operation,
  namespace: string,
  quota: Incoming<ResourceQuotaObject>,
): PatchOperation[] {
  if (operation === 'DELETE') return NONE;
  const nsObject = ctx.snapshot.namespace(namespace);
  const { project } = projectOfNamespace(ctx, namespace, nsObject?.metadata.labels);
  const metadata = quota.metadata ?? {};
  if (!project || metadata.labels?.[LABEL_PROJECT] === project.metadata.name) return NONE;
  return metadataPatch(quota.metadata, [
    ['labels', { kind: 'map', value: { ...metadata.labels, [LABEL_PROJECT]: project.metadata.name ?? '' } }],
  ]);
}
