/**
 * visibility: own (docs/visibility.md): tenants may not list Projects or namespaces cluster-wide, so
 * the controller keeps, per Project, a ClusterRole granting `get` on that Project and on its namespaces
 * by name, and a ClusterRoleBinding of it to the Project's owners (both named `tenantgate:project:<name>`,
 * labelled managed-by tenantgate, owned by the Project so the garbage collector removes them with it).
 * What they must be is pure (desiredProjectAccess, projectAccessMatches); projectAccessCaches watch
 * the ones that exist (label selector), so a reconcile writes only what differs.
 */
import type * as k8s from '@kubernetes/client-node';
import { PROJECT_VERSION } from '../kube/lists.js';
import { rbacSubject, type RbacSubject } from '../render/owner-binding.js';
import {
  ANNOTATION_PROJECT_UID,
  API_GROUP,
  LABEL_MANAGED_BY,
  LABEL_PROJECT,
  MANAGED_BY,
  type NamespaceObject,
  type Project,
} from '../validate/types.js';
import { cachesOf, type CachedObject, type ObjectCaches } from './managed-objects.js';

export type AccessKind = 'ClusterRole' | 'ClusterRoleBinding';
export const ACCESS_KINDS: readonly AccessKind[] = ['ClusterRole', 'ClusterRoleBinding'];
const PREFIX = 'tenantgate:project:';

/** The name of a project's ClusterRole and ClusterRoleBinding. */
export function projectAccessName(project: string): string {
  return `${PREFIX}${project}`;
}

interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  resourceNames: string[];
  verbs: string[];
}

interface AccessMetadata {
  name: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  ownerReferences: Array<{ apiVersion: string; kind: string; name: string; uid: string; controller: boolean }>;
  resourceVersion?: string;
}

export interface ClusterRoleObject {
  apiVersion: 'rbac.authorization.k8s.io/v1';
  kind: 'ClusterRole';
  metadata: AccessMetadata;
  rules: PolicyRule[];
}

export interface ClusterRoleBindingObject {
  apiVersion: 'rbac.authorization.k8s.io/v1';
  kind: 'ClusterRoleBinding';
  metadata: AccessMetadata;
  roleRef: { apiGroup: string; kind: string; name: string };
  subjects: RbacSubject[];
}

export type AccessObject = ClusterRoleObject | ClusterRoleBindingObject;

/**
 * What a Project's owners must be granted: `get` on the Project and on every namespace labelled for it
 * (none when it has none: an empty resourceNames would mean every namespace). Undefined for a Project
 * without a uid (not stored yet).
 */
export function desiredProjectAccess(
  project: Project,
  namespaces: Iterable<NamespaceObject>,
): { role: ClusterRoleObject; binding: ClusterRoleBindingObject } | undefined {
  const name = project.metadata.name ?? '';
  const uid = project.metadata.uid;
  if (!name || !uid) return undefined;
  const metadata = (): AccessMetadata => ({
    name: projectAccessName(name),
    labels: { [LABEL_PROJECT]: name, [LABEL_MANAGED_BY]: MANAGED_BY },
    annotations: { [ANNOTATION_PROJECT_UID]: uid },
    ownerReferences: [{ apiVersion: `${API_GROUP}/${PROJECT_VERSION}`, kind: 'Project', name, uid, controller: true }],
  });
  const names = [...namespaces]
    .filter((n) => n.metadata.labels?.[LABEL_PROJECT] === name && !n.metadata.deletionTimestamp)
    .map((n) => n.metadata.name ?? '')
    .filter(Boolean)
    .sort();
  const rules: PolicyRule[] = [
    { apiGroups: [API_GROUP], resources: ['projects'], resourceNames: [name], verbs: ['get'] },
  ];
  if (names.length > 0)
    rules.push({ apiGroups: [''], resources: ['namespaces'], resourceNames: names, verbs: ['get'] });
  return {
    role: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: metadata(), rules },
    binding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: metadata(),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: projectAccessName(name) },
      subjects: (project.spec.owners ?? []).map(rbacSubject),
    },
  };
}

const sorted = (xs: readonly string[] | undefined) => [...(xs ?? [])].sort().join('\u0000');
const ruleKey = (r: Partial<PolicyRule>) =>
  [sorted(r.apiGroups), sorted(r.resources), sorted(r.resourceNames), sorted(r.verbs)].join('\u0001');
const subjectKey = (s: RbacSubject) => `${s.kind}\u0000${s.namespace ?? ''}\u0000${s.name}`;

/**
 * Whether a stored object already is what `desired` says (rules or roleRef and subjects, labels, the Project's uid).
 */
export function projectAccessMatches(actual: CachedObject, desired: AccessObject): boolean {
  const meta = actual.metadata;
  if (!Object.entries(desired.metadata.labels).every(([k, v]) => meta.labels?.[k] === v)) return false;
  if (meta.annotations?.[ANNOTATION_PROJECT_UID] !== desired.metadata.annotations[ANNOTATION_PROJECT_UID]) return false;
  if (desired.kind === 'ClusterRole') {
    const have = ((actual.rules as Array<Partial<PolicyRule>> | undefined) ?? []).map(ruleKey).sort();
    const want = desired.rules.map(ruleKey).sort();
    return have.length === want.length && have.every((k, i) => k === want[i]);
  }
  const roleRef = actual.roleRef as ClusterRoleBindingObject['roleRef'] | undefined;
  if (roleRef?.kind !== desired.roleRef.kind || roleRef?.name !== desired.roleRef.name) return false;
  const have = ((actual.subjects as RbacSubject[] | undefined) ?? []).map(subjectKey).sort();
  const want = desired.subjects.map(subjectKey).sort();
  return have.length === want.length && have.every((k, i) => k === want[i]);
}

/**
 * Watch caches of the per-project ClusterRoles and ClusterRoleBindings (managed-by tenantgate), by name; a change is
 * reported as its project.
 */
export type ProjectAccessCaches = ObjectCaches<AccessKind>;

/** A ClusterRole or binding is filed under its name (tenantgate's prefix only), a change reported as its project. */
const ACCESS_KEYS = {
  keyOf: (o: k8s.KubernetesObject) => (o.metadata?.name?.startsWith(PREFIX) ? o.metadata.name : undefined),
  changeOf: (o: k8s.KubernetesObject) => o.metadata?.labels?.[LABEL_PROJECT] || undefined,
};

export const projectAccessCaches = cachesOf<AccessKind>({
  ClusterRole: { path: '/apis/rbac.authorization.k8s.io/v1/clusterroles', keys: ACCESS_KEYS },
  ClusterRoleBinding: { path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', keys: ACCESS_KEYS },
});
