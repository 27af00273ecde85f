/**
 * The LimitRange and the isolation NetworkPolicy every project namespace gets from its Project
 * (`spec.namespaceDefaults.limitRange`, `spec.networkIsolation` with `spec.network`). Render emits them for declared
 * namespaces; the controller creates them in self-service namespaces and repairs deleted or edited
 * ones. Both use these functions, so Argo CD and the controller never disagree about their content.
 * Pure.
 */
import { canonicalJson, sortedKeys } from '../canonical-json.js';
import { parseResources } from '../validate/resource-lists.js';
import {
  LABEL_MANAGED_BY,
  LABEL_PROJECT,
  LABEL_TENANT,
  MANAGED_BY,
  type LimitRangeDefaults,
  type NetworkBaseline,
  type Project,
  type ResourceList,
} from '../validate/types.js';

import { LIMITRANGE_NAME, NETWORK_POLICY_NAME } from '../validate/managed-names.js';

export { LIMITRANGE_NAME, NETWORK_POLICY_NAME };

interface ManagedMetadata {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  resourceVersion?: string;
}

interface LimitRangeItem extends LimitRangeDefaults {
  type: 'Container';
}

export interface LimitRangeObject {
  apiVersion: 'v1';
  kind: 'LimitRange';
  metadata: ManagedMetadata;
  spec: { limits: LimitRangeItem[] };
}

/** A label requirement of a namespace selector: here only `Exists` (the label is set, to any value). */
interface LabelExists {
  key: string;
  operator: 'Exists';
}

/** A NetworkPolicy peer the isolation policy uses: namespaces by label, or addresses. */
type NetworkPeer =
  | { namespaceSelector: { matchLabels: Record<string, string>; matchExpressions?: LabelExists[] } }
  | { ipBlock: { cidr: string } };

export interface NetworkPolicyObject {
  apiVersion: 'networking.k8s.io/v1';
  kind: 'NetworkPolicy';
  metadata: ManagedMetadata;
  spec: {
    podSelector: Record<string, never>;
    policyTypes: ['Ingress', 'Egress'];
    ingress: [{ from: NetworkPeer[] }];
    egress: Array<{ to: NetworkPeer[]; ports?: Array<{ protocol: 'UDP' | 'TCP'; port: number }> }>;
  };
}

/** The label the apiserver sets on every namespace to its name (it cannot be changed). */
const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';
/** Where cluster DNS runs: the isolation policy always lets pods reach port 53 there. */
const DNS_NAMESPACE = 'kube-system';

/** A Project's network baseline with tenantgate.yaml's filled in, field by field. */
function effectiveNetwork(
  project: Project,
  defaults: NetworkBaseline = {},
): Required<{
  egress: Required<NonNullable<NetworkBaseline['egress']>>;
  allowFrom: Required<NonNullable<NetworkBaseline['allowFrom']>>;
}> {
  const own = project.spec.network ?? {};
  return {
    egress: {
      namespaces: own.egress?.namespaces ?? defaults.egress?.namespaces ?? [],
      cidrs: own.egress?.cidrs ?? defaults.egress?.cidrs ?? [],
    },
    allowFrom: {
      sameTenant: own.allowFrom?.sameTenant ?? defaults.allowFrom?.sameTenant ?? false,
      namespaces: own.allowFrom?.namespaces ?? defaults.allowFrom?.namespaces ?? [],
    },
  };
}

/**
 * `allowFrom.sameTenant`: the namespaces of the tenant's projects. The tenant label alone is not enough:
 * with `requireProjectForUsers: false` a tenant may create a namespace outside every project carrying
 * any tenant label. A namespace with a project label is a project's (T2 keeps its tenant label equal to
 * that project's tenant; only the project's owners and privileged subjects create one, T4, and only
 * privileged subjects add or change the label later, T3).
 */
function sameTenantPeer(tenant: string): NetworkPeer {
  const matchExpressions: LabelExists[] = [{ key: LABEL_PROJECT, operator: 'Exists' }];
  return { namespaceSelector: { matchLabels: { [LABEL_TENANT]: tenant }, matchExpressions } };
}

const byNames = (names: readonly string[]): NetworkPeer[] =>
  [...new Set(names)].sort().map((n) => ({ namespaceSelector: { matchLabels: { [NAMESPACE_NAME_LABEL]: n } } }));

const LIMIT_KEYS = ['default', 'defaultRequest', 'max', 'min'] as const;

function managedMetadata(project: Project, name: string, namespace: string): ManagedMetadata {
  return { name, namespace, labels: { [LABEL_PROJECT]: project.metadata.name ?? '', [LABEL_MANAGED_BY]: MANAGED_BY } };
}

/** The LimitRange the namespace must have, or undefined when the Project declares none. */
export function limitRangeFor(project: Project, namespace: string): LimitRangeObject | undefined {
  const limits = project.spec.namespaceDefaults?.limitRange;
  if (!limits || !LIMIT_KEYS.some((k) => limits[k] && Object.keys(limits[k]!).length > 0)) return undefined;
  const item: LimitRangeItem = { type: 'Container' };
  for (const key of LIMIT_KEYS) if (limits[key]) item[key] = sortedKeys(limits[key]!);
  return {
    apiVersion: 'v1',
    kind: 'LimitRange',
    metadata: managedMetadata(project, LIMITRANGE_NAME, namespace),
    spec: { limits: [item] },
  };
}

/**
 * The isolation NetworkPolicy, or undefined without `networkIsolation`: ingress only from the project's
 * own namespaces and `network.allowFrom` (the tenant's other projects, named namespaces); egress only to
 * the project's namespaces, DNS (port 53) in kube-system and `network.egress` (named namespaces, CIDRs).
 * `defaults` is tenantgate.yaml's `network`. Same input, same object (lists sorted).
 */
export function isolationPolicyFor(
  project: Project,
  namespace: string,
  defaults: NetworkBaseline = {},
): NetworkPolicyObject | undefined {
  if (!project.spec.networkIsolation) return undefined;
  const own: NetworkPeer = { namespaceSelector: { matchLabels: { [LABEL_PROJECT]: project.metadata.name ?? '' } } };
  const net = effectiveNetwork(project, defaults);
  const from: NetworkPeer[] = [
    own,
    ...(net.allowFrom.sameTenant ? [sameTenantPeer(project.spec.tenant)] : []),
    ...byNames(net.allowFrom.namespaces),
  ];
  const egress: NetworkPolicyObject['spec']['egress'] = [
    { to: [own] },
    {
      to: byNames([DNS_NAMESPACE]),
      ports: [
        { protocol: 'UDP', port: 53 },
        { protocol: 'TCP', port: 53 },
      ],
    },
  ];
  const extra: NetworkPeer[] = [
    ...byNames(net.egress.namespaces),
    ...[...new Set(net.egress.cidrs)].sort().map((cidr) => ({ ipBlock: { cidr } })),
  ];
  if (extra.length > 0) egress.push({ to: extra });
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: managedMetadata(project, NETWORK_POLICY_NAME, namespace),
    spec: { podSelector: {}, policyTypes: ['Ingress', 'Egress'], ingress: [{ from }], egress },
  };
}

/** The isolation policy in words, for events: who may connect, where pods may go. */
export function describeIsolationPolicy(policy: NetworkPolicyObject): string {
  const peer = (p: NetworkPeer) => {
    if ('ipBlock' in p) return p.ipBlock.cidr;
    const { matchLabels, matchExpressions = [] } = p.namespaceSelector;
    const labels = Object.entries(matchLabels).map(([k, v]) => `${k}=${v}`);
    return [...labels, ...matchExpressions.map((e) => e.key)].join(',');
  };
  const egress = policy.spec.egress.map(
    (r) => r.to.map(peer).join(' | ') + (r.ports ? ` (port ${r.ports[0]!.port})` : ''),
  );
  return (
    `ingress only from namespaces ${policy.spec.ingress[0].from.map(peer).join(' | ')}; egress only to ` +
    `${egress.join(' | ')}`
  );
}

/**
 * What the apiserver stores for a Container limit: a missing default limit takes max, a missing
 * default request takes the default limit, else min (Kubernetes' LimitRange defaulting). Comparing with
 * this avoids rewriting, on every pass, a LimitRange the apiserver completed.
 */
export function storedLimitItem(item: LimitRangeDefaults): Required<LimitRangeDefaults> {
  const out: Required<LimitRangeDefaults> = {
    default: { ...item.default },
    defaultRequest: { ...item.defaultRequest },
    max: { ...item.max },
    min: { ...item.min },
  };
  for (const [k, v] of Object.entries(out.max)) if (!(k in out.default)) out.default[k] = v;
  for (const [k, v] of Object.entries(out.default)) if (!(k in out.defaultRequest)) out.defaultRequest[k] = v;
  for (const [k, v] of Object.entries(out.min)) if (!(k in out.defaultRequest)) out.defaultRequest[k] = v;
  return out;
}

/**
 * Two resource lists hold the same quantities (`0.5` and `500m` are equal; unparsable values are compared as written).
 */
function sameQuantities(a: ResourceList | undefined, b: ResourceList | undefined): boolean {
  const left = Object.keys(a ?? {});
  if (left.length !== Object.keys(b ?? {}).length) return false;
  if (left.some((k) => !(k in (b ?? {})))) return false;
  try {
    const pa = parseResources(a);
    const pb = parseResources(b);
    return [...pa].every(([k, q]) => pb.get(k)?.cmp(q) === 0);
  } catch {
    return JSON.stringify(a) === JSON.stringify(b);
  }
}

function hasLabels(
  actual: { metadata?: { labels?: Record<string, string> } },
  desired: { metadata: ManagedMetadata },
): boolean {
  return Object.entries(desired.metadata.labels).every(([k, v]) => actual.metadata?.labels?.[k] === v);
}

/** Whether a stored LimitRange limits exactly as `desired` does (after the apiserver's defaulting), with our labels. */
export function limitRangeMatches(
  actual: {
    metadata?: { labels?: Record<string, string> };
    spec?: { limits?: Array<LimitRangeDefaults & { type?: string }> };
  },
  desired: LimitRangeObject,
): boolean {
  if (!hasLabels(actual, desired)) return false;
  const have = actual.spec?.limits ?? [];
  const want = desired.spec.limits;
  if (have.length !== want.length) return false;
  return want.every((w, i) => {
    const h = have[i]!;
    if (h.type !== w.type) return false;
    const stored = storedLimitItem(w);
    const extra = h as Record<string, unknown>;
    if (
      Object.keys(extra).some(
        (k) => k !== 'type' && !(LIMIT_KEYS as readonly string[]).includes(k) && extra[k] !== undefined,
      )
    )
      return false;
    return LIMIT_KEYS.every((k) => sameQuantities(h[k] ?? {}, stored[k]));
  });
}

/**
 * Whether a stored NetworkPolicy is exactly the isolation policy (any added rule or port is a change), with our labels.
 */
export function isolationPolicyMatches(
  actual: { metadata?: { labels?: Record<string, string> }; spec?: unknown },
  desired: NetworkPolicyObject,
): boolean {
  return hasLabels(actual, desired) && canonicalJson(actual.spec) === canonicalJson(desired.spec);
}
