/**
 * The owners' RoleBinding in every project namespace (the tenancy boundary's RBAC half): binds the
 * project's owners to the ClusterRole `tenantgate-project-owner` (Kubernetes' `admin` plus managing the
 * namespace object itself and its ResourceQuotas). Render emits it for declared namespaces; the
 * controller creates it for self-service ones and repairs it. Both use this one function, so Argo CD
 * and the controller never disagree about its content. Pure.
 */
import { LABEL_MANAGED_BY, LABEL_PROJECT, MANAGED_BY, type Project, type Subject } from '../validate/types.js';

import { OWNERS_BINDING_NAME } from '../validate/managed-names.js';

export { OWNERS_BINDING_NAME };
export const PROJECT_OWNER_ROLE = 'tenantgate-project-owner';

export interface RbacSubject {
  kind: string;
  name: string;
  namespace?: string;
  apiGroup?: string;
}

export interface RoleBindingObject {
  apiVersion: 'rbac.authorization.k8s.io/v1';
  kind: 'RoleBinding';
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    annotations?: Record<string, string>;
    resourceVersion?: string;
  };
  roleRef: { apiGroup: string; kind: string; name: string };
  subjects: RbacSubject[];
}

export function rbacSubject(s: Subject): RbacSubject {
  return s.kind === 'ServiceAccount'
    ? { kind: 'ServiceAccount', name: s.name, namespace: s.namespace ?? '' }
    : { apiGroup: 'rbac.authorization.k8s.io', kind: s.kind, name: s.name };
}

/** The binding a project namespace must have (no subjects when the project has no owners: privileged subjects only). */
export function ownerBinding(project: Project, namespace: string): RoleBindingObject {
  const owners = project.spec.owners ?? [];
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: {
      name: OWNERS_BINDING_NAME,
      namespace,
      labels: { [LABEL_PROJECT]: project.metadata.name ?? '', [LABEL_MANAGED_BY]: MANAGED_BY },
    },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: PROJECT_OWNER_ROLE },
    subjects: owners.map(rbacSubject),
  };
}

const subjectKey = (s: RbacSubject) => `${s.kind}\u0000${s.namespace ?? ''}\u0000${s.name}`;

/** Whether an existing binding grants exactly what `desired` does (labels included, order of subjects not). */
export function ownerBindingMatches(
  actual: Pick<RoleBindingObject, 'roleRef' | 'subjects' | 'metadata'>,
  desired: RoleBindingObject,
): boolean {
  if (actual.roleRef?.kind !== desired.roleRef.kind || actual.roleRef?.name !== desired.roleRef.name) return false;
  const have = (actual.subjects ?? []).map(subjectKey).sort();
  const want = desired.subjects.map(subjectKey).sort();
  if (have.length !== want.length || have.some((k, i) => k !== want[i])) return false;
  return Object.entries(desired.metadata.labels).every(([k, v]) => actual.metadata?.labels?.[k] === v);
}
