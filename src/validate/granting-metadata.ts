/**
 * The namespace labels and annotations that Kubernetes, or a platform it commonly runs on, reads as a
 * grant: setting, changing or removing one gives the namespace's pods or claims power they would not
 * have, or lifts a restriction the platform put there. T7 keeps every non-privileged subject off them on
 * every project namespace, whatever tenantgate.yaml's `protectedNamespaceMetadata` lists (that list adds
 * keys, it cannot take these away), and no Project may declare one for its namespaces (T7 offline), so
 * render never emits one. docs/rules.md (T7) has the same list with its sources. Pure.
 */

export type MetadataField = 'labels' | 'annotations';

export interface GrantingKey {
  /** Where Kubernetes or the platform reads it. */
  field: MetadataField;
  /** An exact key, or a prefix ending in `*`. */
  key: string;
  /** What a tenant would gain by setting, changing or removing it (in T7's messages). */
  grants: string;
  /** Who reads it: the component, the feature, the platform. */
  source: string;
  /** For a Project that declares it: where the same intent belongs instead. */
  instead?: string;
}

export const GRANTING_NAMESPACE_METADATA: readonly GrantingKey[] = [
  {
    field: 'labels',
    key: 'pod-security.kubernetes.io/*',
    grants: 'Pod Security admission: the level and version pods are held to, and what is audited or warned about',
    source: 'Kubernetes PodSecurity admission (enforce, enforce-version, audit, audit-version, warn, warn-version)',
    instead: "the Project's spec.podSecurity, which tenantgate turns into these labels",
  },
  {
    field: 'labels',
    key: 'resource.kubernetes.io/admin-access',
    grants: 'DRA admin access: a ResourceClaim with adminAccess reaches devices allocated to other namespaces',
    source: 'Kubernetes dynamic resource allocation, DRAAdminAccess (on by default since 1.34)',
  },
  {
    field: 'annotations',
    key: 'scheduler.alpha.kubernetes.io/node-selector',
    grants:
      'PodNodeSelector: the node selector every pod of the namespace gets; changed or removed, pods leave the ' +
      "platform's node pool",
    source: 'Kubernetes PodNodeSelector admission plugin',
  },
  {
    field: 'annotations',
    key: 'scheduler.alpha.kubernetes.io/defaultTolerations',
    grants: 'PodTolerationRestriction: tolerations every pod of the namespace gets (onto tainted, dedicated nodes)',
    source: 'Kubernetes PodTolerationRestriction admission plugin',
  },
  {
    field: 'annotations',
    key: 'scheduler.alpha.kubernetes.io/tolerationsWhitelist',
    grants: 'PodTolerationRestriction: the tolerations pods of the namespace may carry',
    source: 'Kubernetes PodTolerationRestriction admission plugin',
  },
  {
    field: 'annotations',
    key: 'openshift.io/node-selector',
    grants: "OpenShift's project node selector: the node selector every pod of the namespace gets (empty: any node)",
    source: 'OpenShift PodNodeSelector admission (project.openshift.io)',
  },
  {
    field: 'annotations',
    key: 'openshift.io/sa.scc.uid-range',
    grants: 'OpenShift SCC MustRunAsRange: the user IDs pods of the namespace run as (0/10000 includes root)',
    source: 'OpenShift security context constraints admission (pre-allocated values)',
  },
  {
    field: 'annotations',
    key: 'openshift.io/sa.scc.supplemental-groups',
    grants:
      "OpenShift SCC MustRunAs: the supplemental and fs groups of the namespace's pods (another namespace's " +
      'groups reach its volumes)',
    source: 'OpenShift security context constraints admission (pre-allocated values)',
  },
  {
    field: 'annotations',
    key: 'openshift.io/sa.scc.mcs',
    grants:
      "OpenShift SCC MustRunAs: the SELinux MCS level of the namespace's pods (another namespace's level reaches " +
      'its files)',
    source: 'OpenShift security context constraints admission (pre-allocated values)',
  },
  {
    field: 'labels',
    key: 'openshift.io/run-level',
    grants:
      'OpenShift run level 0 or 1: no security context constraints, quota or other OpenShift admission for the ' +
      'namespace',
    source: 'OpenShift admission (security context constraints, cluster resource quota)',
  },
  {
    field: 'labels',
    key: 'openshift.io/cluster-monitoring',
    grants:
      "OpenShift cluster monitoring: the platform's Prometheus, which reads every namespace's metrics, evaluates " +
      "the namespace's rules and scrapes its monitors",
    source: 'OpenShift cluster monitoring operator',
  },
  {
    field: 'labels',
    key: 'control-plane',
    grants:
      'AKS Admissions Enforcer: "true" takes the namespace out of every admission webhook the cluster installed ' +
      "(tenantgate's too)",
    source: 'Azure Kubernetes Service Admissions Enforcer (namespaceSelector control-plane NotIn [true])',
  },
  {
    field: 'labels',
    key: 'kubernetes.azure.com/managedby',
    grants:
      'AKS Admissions Enforcer: "aks" takes the namespace out of every admission webhook the cluster installed ' +
      "(tenantgate's too)",
    source:
      'Azure Kubernetes Service Admissions Enforcer (namespaceSelector kubernetes.azure.com/managedby NotIn [aks])',
  },
];

const GRANTING_LABEL_PATTERNS: readonly string[] = GRANTING_NAMESPACE_METADATA.filter((g) => g.field === 'labels').map(
  (g) => g.key,
);
const GRANTING_ANNOTATION_PATTERNS: readonly string[] = GRANTING_NAMESPACE_METADATA.filter(
  (g) => g.field === 'annotations',
).map((g) => g.key);

/** The keys and prefixes of one field, as T7's patterns (exact keys, prefixes ending in `*`). */
export function grantingPatterns(field: MetadataField): readonly string[] {
  return field === 'labels' ? GRANTING_LABEL_PATTERNS : GRANTING_ANNOTATION_PATTERNS;
}

/** Whether `key` matches the pattern `pattern` (exact, or a prefix when it ends in `*`). */
function keyMatches(pattern: string, key: string): boolean {
  return pattern.endsWith('*') ? key.startsWith(pattern.slice(0, -1)) : key === pattern;
}

/** The entry of the list `key` falls under in `field`, if any. */
export function grantingKey(field: MetadataField, key: string): GrantingKey | undefined {
  return GRANTING_NAMESPACE_METADATA.find((g) => g.field === field && keyMatches(g.key, key));
}

/** `map` without the keys of the list for `field` (what render may emit from a Project's declaration). */
export function withoutGrantingKeys(
  field: MetadataField,
  map: Readonly<Record<string, string>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(map)) if (!grantingKey(field, key)) out[key] = value;
  return out;
}
