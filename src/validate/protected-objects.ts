/**
 * Admission of the objects tenantgate writes into a project namespace besides its ResourceQuota (which
 * admission.ts judges with the budget rules): the LimitRange, the NetworkPolicy and the owners'
 * RoleBinding (src/controller/namespace-objects.ts). Only T7 applies here: a non-privileged subject adds,
 * changes or removes none of their finalizers or owner references. Everything else about them is the
 * controller's (it puts them back) and RBAC's. Pure, like admission.ts.
 */
import { isPrivileged, isSystemController } from '../config/config.js';
import { LIMITRANGE_NAME, NETWORK_POLICY_NAME, OWNERS_BINDING_NAME } from './managed-names.js';
import {
  describeNamespacedObject,
  quotaProject,
  type Operation,
  type ReviewContext,
  type Verdict,
} from './admission.js';
import { checkProtectedObjectMetadata, onlyDropsFinalizersOrOwners } from './rules/metadata.js';
import { describeUser } from './rules/tenancy.js';
import type { ObjectMeta } from './types.js';

/** The kinds judged here, with their API group and the one name tenantgate gives them in a project namespace. */
const PROTECTED_NAMESPACE_OBJECTS = {
  LimitRange: { group: '', name: LIMITRANGE_NAME },
  NetworkPolicy: { group: 'networking.k8s.io', name: NETWORK_POLICY_NAME },
  RoleBinding: { group: 'rbac.authorization.k8s.io', name: OWNERS_BINDING_NAME },
} as const;

export type ProtectedKind = keyof typeof PROTECTED_NAMESPACE_OBJECTS;

/** The protected kind of an admission request's group and kind, if it is one. */
export function protectedKindOf(group: string, kind: string): ProtectedKind | undefined {
  if (!Object.hasOwn(PROTECTED_NAMESPACE_OBJECTS, kind)) return undefined;
  return PROTECTED_NAMESPACE_OBJECTS[kind as ProtectedKind].group === group ? (kind as ProtectedKind) : undefined;
}

export interface NamespacedObject {
  metadata: ObjectMeta;
}

const ALLOW: Verdict = Object.freeze({ violations: [], warnings: [] }) as Verdict;

export function reviewProtectedObject(
  ctx: ReviewContext,
  operation: Operation,
  kind: ProtectedKind,
  namespace: string,
  object: NamespacedObject | undefined,
  oldObject: NamespacedObject | undefined,
): Verdict {
  if ((operation !== 'CREATE' && operation !== 'UPDATE') || !object) return ALLOW;
  const name = object.metadata.name ?? '';
  if (name !== PROTECTED_NAMESPACE_OBJECTS[kind].name || isPrivileged(ctx.config, ctx.user)) return ALLOW;
  // The garbage collector drops the foregroundDeletion finalizer and owner references whose owner went.
  if (oldObject && isSystemController(ctx.config, ctx.user) && onlyDropsFinalizersOrOwners(object, oldObject))
    return ALLOW;
  const project = quotaProject(ctx, namespace);
  if (!project) return ALLOW; // outside projects these names are nobody's in particular
  const violations = checkProtectedObjectMetadata({
    subject: describeNamespacedObject(ctx, kind, namespace, name, project),
    who: describeUser(ctx.user),
    before: oldObject?.metadata ?? {},
    after: object.metadata,
  });
  return violations.length ? { violations, warnings: [] } : ALLOW;
}
