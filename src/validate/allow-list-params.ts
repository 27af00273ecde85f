/**
 * The parameters of the allow-list ValidatingAdmissionPolicies (docs/adr/0095-allow-lists-in-the-api-server.md):
 * one `AllowList` named `tenantgate-allow` in every project namespace, holding the Project's allow-lists
 * resolved over tenantgate.yaml's defaults (effectiveAllowLists). Render emits it for declared namespaces,
 * the controller creates and repairs it in every project namespace; both call `allowListFor`, so Argo CD
 * and the controller never disagree about its content. Pure: no I/O.
 */
import { canonicalJson, sortedKeys } from '../canonical-json.js';
import type { TenantgateConfig } from '../config/config.js';
import { effectiveAllowLists } from './allow-lists.js';
import { API_VERSION, LABEL_MANAGED_BY, LABEL_PROJECT, MANAGED_BY, type Project, type Toleration } from './types.js';

export const ALLOW_LIST_KIND = 'AllowList';
export const ALLOW_LIST_PLURAL = 'allowlists';
/** The one AllowList of a project namespace: the policies' `paramRef.name`. */
export const ALLOW_LIST_NAME = 'tenantgate-allow';
/**
 * Holds the AllowList until nothing it judges is left in its namespace: the policies refuse any write of a
 * judged object whose AllowList is missing, so a PVC's finalizer removed after it would keep a deleted
 * namespace Terminating (the controller takes it off: src/controller/allow-list-finalizer.ts).
 */
export const FINALIZER_ALLOW_LIST = 'tenantgate.io/outlive-judged-objects';

/** A list of names, or `any: true` (and no names) where the Project and tenantgate.yaml leave it unset. */
interface NameList {
  any: boolean;
  names: string[];
}

/**
 * An allowed toleration with every field present (operator `Equal` and `''` where the Project leaves
 * them unset), so that a policy compares fields without asking whether they are there. Same meaning
 * as the Project's (tolerationAllowed): `effect: ''` covers every effect, `value` counts only with Equal.
 */
export interface AllowedToleration {
  key: string;
  operator: 'Exists' | 'Equal';
  value: string;
  effect: '' | 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
}

/** `AllowList.spec`: every list of docs/rules.md#allow-lists, resolved. */
export interface AllowListSpec {
  project: string;
  tenant: string;
  /** `any`: every class but system-*. */
  priorityClasses: NameList;
  /** system-* classes the Project itself names. */
  systemPriorityClasses: string[];
  services: {
    /** Service types allowed besides ClusterIP. */
    types: string[];
    /** CIDRs of externalIPs, loadBalancerIP and Gateway addresses. */
    externalIPs: string[];
    loadBalancerSourceRanges: { any: boolean; cidrs: string[] };
  };
  hostnames: { suffixes: string[]; wildcards: boolean };
  ingressClasses: NameList;
  gatewayClasses: NameList;
  storageClasses: NameList;
  runtimeClasses: NameList;
  deviceClasses: NameList;
  nodeSelector: Record<string, string>;
  tolerations: AllowedToleration[];
  registries: { any: boolean; prefixes: string[] };
  persistentVolumes: { unowned: boolean };
}

export interface AllowListObject {
  apiVersion: typeof API_VERSION;
  kind: typeof ALLOW_LIST_KIND;
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers: string[];
    resourceVersion?: string;
  };
  spec: AllowListSpec;
}

const nameList = (list: readonly string[] | undefined): NameList => ({
  any: list === undefined,
  names: [...(list ?? [])],
});

function allowedToleration(t: Toleration): AllowedToleration {
  return { key: t.key ?? '', operator: t.operator ?? 'Equal', value: t.value ?? '', effect: t.effect ?? '' };
}

/** The parameters of `project`'s namespaces: its allow-lists over tenantgate.yaml's `allow`, field by field. */
export function allowListParams(config: TenantgateConfig, project: Project): AllowListSpec {
  const a = effectiveAllowLists(config, project);
  return {
    project: project.metadata.name ?? '',
    tenant: project.spec.tenant,
    priorityClasses: nameList(a.priorityClasses),
    systemPriorityClasses: [...a.systemPriorityClasses],
    services: {
      types: [...a.serviceTypes],
      externalIPs: [...a.externalIPs],
      loadBalancerSourceRanges: {
        any: a.loadBalancerSourceRanges === undefined,
        cidrs: [...(a.loadBalancerSourceRanges ?? [])],
      },
    },
    hostnames: { suffixes: [...a.hostnameSuffixes], wildcards: a.wildcardHostnames },
    ingressClasses: nameList(a.ingressClasses),
    gatewayClasses: nameList(a.gatewayClasses),
    storageClasses: nameList(a.storageClasses),
    runtimeClasses: nameList(a.runtimeClasses),
    deviceClasses: nameList(a.deviceClasses),
    nodeSelector: sortedKeys(a.nodeSelector),
    tolerations: a.tolerations.map(allowedToleration),
    registries: { any: a.registries === undefined, prefixes: [...(a.registries ?? [])] },
    persistentVolumes: { unowned: a.unownedVolumes },
  };
}

/** The AllowList namespace `namespace` of `project` must have. */
export function allowListFor(config: TenantgateConfig, project: Project, namespace: string): AllowListObject {
  return {
    apiVersion: API_VERSION,
    kind: ALLOW_LIST_KIND,
    metadata: {
      name: ALLOW_LIST_NAME,
      namespace,
      labels: { [LABEL_PROJECT]: project.metadata.name ?? '', [LABEL_MANAGED_BY]: MANAGED_BY },
      finalizers: [FINALIZER_ALLOW_LIST],
    },
    spec: allowListParams(config, project),
  };
}

/**
 * Whether a stored AllowList says exactly what `desired` does (any other field is a change), with our labels
 * and finalizer (one being deleted keeps what it has: its finalizer goes, then it is made again).
 */
export function allowListMatches(
  actual: {
    metadata?: { labels?: Record<string, string>; finalizers?: string[]; deletionTimestamp?: unknown };
    spec?: unknown;
  },
  desired: AllowListObject,
): boolean {
  const labelled = Object.entries(desired.metadata.labels).every(([k, v]) => actual.metadata?.labels?.[k] === v);
  const held =
    Boolean(actual.metadata?.deletionTimestamp) || Boolean(actual.metadata?.finalizers?.includes(FINALIZER_ALLOW_LIST));
  return labelled && held && canonicalJson(actual.spec) === canonicalJson(desired.spec);
}
