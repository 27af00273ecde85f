/**
 * X1–X10, H1–H4: what a project's objects may use (docs/rules.md#allow-lists, and what each rule judges:
 * docs/adr/0095-allow-lists-in-the-api-server.md). One pure function per object kind, each returning the
 * violations of every rule that kind can break; H3 over a set of Projects. The objects are as the API
 * server sends them (untyped JSON): every field is read defensively.
 *
 * `old` is the old object of an UPDATE (undefined on CREATE): then a list item is judged only when the
 * old object's same field lacks it, a single-valued check only when its fields changed (`isNewItem`).
 */
import type { TenantgateConfig } from '../../config/config.js';
import {
  describeRegistries,
  describeToleration,
  effectiveAllowLists,
  hostnameProblem,
  imageAllowed,
  isNewItem,
  judgedToleration,
  SYSTEM_PRIORITY_PREFIX,
  suffixesOverlap,
  tolerationAllowed,
  tolerationListed,
  type EffectiveAllowLists,
  type VolumeOwnership,
} from '../allow-lists.js';
import { addressWithinAnyCidr, withinAnyCidr } from '../cidr.js';
import { LABEL_PROJECT, type FieldPath, type Project, type RuleId, type Toleration, type Violation } from '../types.js';

type Json = Record<string, unknown>;
/** The old object (or the part of it a check reads) on UPDATE; undefined on CREATE. */
type Old = Json | undefined;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const objectAt = (v: unknown, key: string): Json => (isObject(v) && isObject(v[key]) ? v[key] : {});
const listAt = (v: unknown, key: string): unknown[] => (isObject(v) && Array.isArray(v[key]) ? v[key] : []);
const stringAt = (v: unknown, key: string): string | undefined =>
  isObject(v) && typeof v[key] === 'string' ? v[key] : undefined;
const specOf = (o: Json): Json => objectAt(o, 'spec');

/** `read` over the old object: the old field's items, or the old part; undefined on CREATE. */
const before = <T>(old: Old, read: (o: Json) => T): T | undefined => (old === undefined ? undefined : read(old));

/** Whether a single-valued check is judged: on CREATE, or when one of its `fields` differs from the old object's. */
const changed = (now: Json, old: Old, fields: (o: Json) => unknown[]): boolean =>
  isNewItem(
    fields(now),
    before(old, (o) => [fields(o)]),
  );

/** What a rule needs to know about the object and its project. */
export interface AllowSubject {
  /** `Pod payments-batch/crit`. */
  subject: string;
  /** The object's kind and namespace (a TCPRoute's parents must be in the latter). */
  kind: string;
  namespace: string;
  project: Project;
  allow: EffectiveAllowLists;
  /**
   * The PersistentVolume a claim's new `spec.volumeName` names, and whose it is (X10). Absent: the
   * volume name is not judged (an update that keeps it, or `tenantgate plan` on bound claims).
   */
  volume?: VolumeOwnership;
}

export function allowSubject(
  config: TenantgateConfig,
  project: Project,
  kind: string,
  namespace: string,
  name: string,
): AllowSubject {
  const allow = effectiveAllowLists(config, project);
  return { subject: `${kind} ${namespace}/${name}`, kind, namespace, project, allow };
}

const listed = (values: readonly string[], none = 'none'): string => (values.length ? values.join(', ') : none);
const quoted = (label: string, value: unknown): string => `${label} ${JSON.stringify(value)}`;

function violation(rule: RuleId, s: AllowSubject, path: FieldPath, what: string, allowed: string): Violation {
  const project = s.project.metadata.name ?? '';
  return { rule, path, message: `${s.subject}: ${what} is not allowed for project ${project}; allowed: ${allowed}` };
}

/** X1, X6, X8, X9 on a pod spec (a Pod's `spec`, or a pod template's); `old` is the old pod's spec. */
function checkPodSpec(s: AllowSubject, spec: Json, path: FieldPath = ['spec'], old?: Json): Violation[] {
  return [
    ...priorityClassViolations(s, spec, path, old),
    ...runtimeClassViolations(s, spec, path, old),
    ...placementViolations(s, spec, path, old),
    ...registryViolations(s, spec, path, old),
  ];
}

export function checkPod(s: AllowSubject, pod: Json, old?: Json): Violation[] {
  return checkPodSpec(s, specOf(pod), ['spec'], before(old, specOf));
}

function priorityClassViolations(s: AllowSubject, spec: Json, path: FieldPath, old: Old): Violation[] {
  const a = s.allow;
  const priorityClass = stringAt(spec, 'priorityClassName');
  if (!priorityClass || !changed(spec, old, (x) => [stringAt(x, 'priorityClassName')])) return [];
  const ok = priorityClass.startsWith(SYSTEM_PRIORITY_PREFIX)
    ? a.systemPriorityClasses.includes(priorityClass)
    : a.priorityClasses === undefined || a.priorityClasses.includes(priorityClass);
  if (ok) return [];
  const extraSystem = a.systemPriorityClasses.length ? ` (and ${a.systemPriorityClasses.join(', ')})` : '';
  const allowed =
    a.priorityClasses === undefined
      ? `any PriorityClass but system-*${extraSystem}`
      : listed([...new Set([...a.priorityClasses, ...a.systemPriorityClasses])], 'no PriorityClass');
  return [violation('X1', s, [...path, 'priorityClassName'], quoted('priorityClassName', priorityClass), allowed)];
}

function runtimeClassViolations(s: AllowSubject, spec: Json, path: FieldPath, old: Old): Violation[] {
  const classes = s.allow.runtimeClasses;
  const runtimeClass = stringAt(spec, 'runtimeClassName');
  if (!runtimeClass || classes === undefined || classes.includes(runtimeClass)) return [];
  if (!changed(spec, old, (x) => [stringAt(x, 'runtimeClassName')])) return [];
  const what = quoted('runtimeClassName', runtimeClass);
  return [violation('X6', s, [...path, 'runtimeClassName'], what, listed(classes, 'no RuntimeClass'))];
}

/** A pod spec's tolerations as X8 judges them (to compare across an update). */
const tolerationsOf = (spec: Json) =>
  listAt(spec, 'tolerations')
    .filter(isObject)
    .map((t) => judgedToleration(t as Toleration));

/** X8 on a pod: the node selector, no nodeName, only allowed tolerations. */
function placementViolations(s: AllowSubject, spec: Json, path: FieldPath, old: Old): Violation[] {
  const out: Violation[] = [];
  const a = s.allow;
  const selector = objectAt(spec, 'nodeSelector');
  const wanted = Object.entries(a.nodeSelector);
  const wantedText = wanted.map(([k, v]) => `${k}=${v}`).join(', ');
  if (changed(spec, old, (x) => [objectAt(x, 'nodeSelector')])) {
    for (const [key, value] of wanted) {
      if (selector[key] === value) continue;
      const has = typeof selector[key] === 'string' ? `${key}=${String(selector[key])}` : `no ${key}`;
      const allowed = `a nodeSelector with ${wantedText}`;
      out.push(violation('X8', s, [...path, 'nodeSelector', key], `nodeSelector with ${has}`, allowed));
    }
  }
  const nodeName = stringAt(spec, 'nodeName');
  if (nodeName && changed(spec, old, (x) => [stringAt(x, 'nodeName')])) {
    const why = 'it skips the scheduler, the node selector and every NoSchedule taint';
    const what = `${quoted('nodeName', nodeName)} (${why})`;
    out.push(violation('X8', s, [...path, 'nodeName'], what, 'no nodeName (the scheduler places the pod)'));
  }
  const oldTolerations = before(old, tolerationsOf);
  const allowed = `${listed(a.tolerations.map(describeToleration), 'no toleration')} (and node.kubernetes.io/* ones)`;
  listAt(spec, 'tolerations').forEach((t, i) => {
    if (!isObject(t)) return;
    const toleration = t as Toleration;
    if (!isNewItem(judgedToleration(toleration), oldTolerations)) return;
    if (tolerationAllowed(toleration, a.tolerations)) return;
    out.push(violation('X8', s, [...path, 'tolerations', i], `toleration ${describeToleration(toleration)}`, allowed));
  });
  return out;
}

interface ImageItem {
  path: FieldPath;
  image: string;
  what: 'image' | 'image volume';
}

/** Every image of a pod spec: its containers', init and ephemeral containers', and its image volumes' references. */
function imagesOf(spec: Json): ImageItem[] {
  const containers = (['initContainers', 'containers', 'ephemeralContainers'] as const).flatMap((field) =>
    listAt(spec, field).flatMap((c, i): ImageItem[] => {
      const image = stringAt(c, 'image');
      return image === undefined ? [] : [{ path: [field, i, 'image'], image, what: 'image' }];
    }),
  );
  const volumes = listAt(spec, 'volumes').flatMap((v, i): ImageItem[] => {
    const image = stringAt(objectAt(v, 'image'), 'reference');
    return image === undefined ? [] : [{ path: ['volumes', i, 'image', 'reference'], image, what: 'image volume' }];
  });
  return [...containers, ...volumes];
}

/** X9: every image, judged when the old pod had it nowhere (an ephemeral container may reuse the pod's image). */
function registryViolations(s: AllowSubject, spec: Json, path: FieldPath, old: Old): Violation[] {
  const registries = s.allow.registries;
  if (registries === undefined) return [];
  const allowed = `images starting with ${describeRegistries(registries)}`;
  const oldImages = before(old, (o) => imagesOf(o).map((i) => i.image));
  return imagesOf(spec).flatMap(({ path: at, image, what }) => {
    if (!isNewItem(image, oldImages) || imageAllowed(image, registries)) return [];
    return [violation('X9', s, [...path, ...at], quoted(what, image), allowed)];
  });
}

/** What X2 allows as an address a tenant claims. */
const addressesAllowed = (a: EffectiveAllowLists, none: string): string =>
  a.externalIPs.length ? `addresses in ${a.externalIPs.join(', ')}` : none;
const NO_CIDR = 'no address (the project has no externalIPs CIDR)';

/** X2, X3, X4 on a Service. */
export function checkService(s: AllowSubject, service: Json, old?: Json): Violation[] {
  const spec = specOf(service);
  const oldSpec = before(old, specOf);
  return [
    ...serviceAddressViolations(s, spec, oldSpec),
    ...serviceTypeViolations(s, spec, oldSpec),
    ...sourceRangeViolations(s, spec, oldSpec),
  ];
}

const serviceType = (spec: Json): string => stringAt(spec, 'type') ?? 'ClusterIP';

/** X2: `externalIPs` and `loadBalancerIP` inside the project's CIDRs. */
function serviceAddressViolations(s: AllowSubject, spec: Json, old: Old): Violation[] {
  const out: Violation[] = [];
  const cidrs = s.allow.externalIPs;
  const oldIPs = before(old, (o) => listAt(o, 'externalIPs'));
  listAt(spec, 'externalIPs').forEach((ip, i) => {
    if (!isNewItem(ip, oldIPs) || (typeof ip === 'string' && addressWithinAnyCidr(ip, cidrs))) return;
    const allowed = addressesAllowed(s.allow, 'no externalIPs');
    out.push(violation('X2', s, ['spec', 'externalIPs', i], quoted('externalIPs', ip), allowed));
  });
  const ip = stringAt(spec, 'loadBalancerIP');
  if (ip && changed(spec, old, (x) => [stringAt(x, 'loadBalancerIP')]) && !addressWithinAnyCidr(ip, cidrs)) {
    const allowed = addressesAllowed(s.allow, NO_CIDR);
    out.push(violation('X2', s, ['spec', 'loadBalancerIP'], quoted('loadBalancerIP', ip), allowed));
  }
  return out;
}

const NODE_PORT_OPEN = 'a node port on every node, open beyond the source ranges';
const NO_NODE_PORT = '(NodePort is not an allowed type)';

/** X3: the type; without NodePort allowed, no node port (a LoadBalancer sets allocateLoadBalancerNodePorts: false). */
function serviceTypeViolations(s: AllowSubject, spec: Json, old: Old): Violation[] {
  const out: Violation[] = [];
  const types = s.allow.serviceTypes;
  const type = serviceType(spec);
  if (type !== 'ClusterIP' && !types.includes(type) && changed(spec, old, (x) => [serviceType(x)])) {
    out.push(violation('X3', s, ['spec', 'type'], `type ${type}`, ['ClusterIP', ...types].join(', ')));
  }
  if (types.includes('NodePort')) return out;
  const allocate = spec.allocateLoadBalancerNodePorts;
  // Unset is what the API server defaults to true.
  const allocating = (x: Json) => [serviceType(x), x.allocateLoadBalancerNodePorts ?? true];
  if (type === 'LoadBalancer' && allocate !== false && changed(spec, old, allocating)) {
    const what =
      allocate === undefined
        ? `a LoadBalancer with allocateLoadBalancerNodePorts unset (the API server makes it true: ${NODE_PORT_OPEN})`
        : `${quoted('allocateLoadBalancerNodePorts', allocate)} (${NODE_PORT_OPEN})`;
    const allowed = `allocateLoadBalancerNodePorts: false ${NO_NODE_PORT}`;
    out.push(violation('X3', s, ['spec', 'allocateLoadBalancerNodePorts'], what, allowed));
  }
  const nodePortOf = (port: unknown): unknown => (isObject(port) ? port.nodePort : undefined);
  const oldNodePorts = before(old, (o) => listAt(o, 'ports').map(nodePortOf));
  listAt(spec, 'ports').forEach((port, i) => {
    const nodePort = nodePortOf(port);
    if (nodePort === undefined || nodePort === 0 || !isNewItem(nodePort, oldNodePorts)) return;
    const what = `nodePort ${JSON.stringify(nodePort)}`;
    out.push(violation('X3', s, ['spec', 'ports', i, 'nodePort'], what, `no nodePort ${NO_NODE_PORT}`));
  });
  return out;
}

/** X4: a LoadBalancer has source ranges, each inside an allowed CIDR. */
function sourceRangeViolations(s: AllowSubject, spec: Json, old: Old): Violation[] {
  const cidrs = s.allow.loadBalancerSourceRanges;
  if (serviceType(spec) !== 'LoadBalancer' || cidrs === undefined) return [];
  const out: Violation[] = [];
  const field = 'loadBalancerSourceRanges';
  const ranges = listAt(spec, field);
  const allowed = `${field} inside ${listed(cidrs)}`;
  if (ranges.length === 0 && changed(spec, old, (x) => [serviceType(x), listAt(x, field)])) {
    out.push(violation('X4', s, ['spec', field], `a LoadBalancer without ${field} (open to every address)`, allowed));
  }
  const oldRanges = before(old, (o) => listAt(o, field));
  ranges.forEach((r, i) => {
    if (!isNewItem(r, oldRanges) || (typeof r === 'string' && withinAnyCidr(r, cidrs))) return;
    out.push(violation('X4', s, ['spec', field, i], quoted(field, r), allowed));
  });
  return out;
}

/**
 * H1 on one hostname. `what` names it (`host "a.example.com"`); `everyHostname` says what an empty one is
 * (`a rule without host`): it claims every hostname and is never allowed.
 */
function hostViolation(s: AllowSubject, path: FieldPath, host: string, what: string, everyHostname = ''): Violation[] {
  const { hostnameSuffixes: suffixes, wildcardHostnames: wildcards } = s.allow;
  const problem = hostnameProblem(host, suffixes, wildcards);
  if (!problem) return [];
  const allowed = suffixes.length
    ? `hostnames under ${suffixes.join(', ')}${wildcards ? ', wildcards included' : ', no wildcard'}`
    : 'no hostname (the project has no hostname suffix)';
  return [violation('H1', s, path, `${host === '' ? everyHostname : what} (${problem})`, allowed)];
}

const hostnameOf = (v: unknown): string => (typeof v === 'string' ? v : '');
/** A hostname as H1 compares it across an update: lowercased, as it judges it. */
const hostKey = (host: string): string => host.toLowerCase();
const INGRESS_CLASS_ANNOTATION = 'kubernetes.io/ingress.class';

interface HostItem {
  path: FieldPath;
  host: string;
  /** What an empty host is called in a message. */
  empty: string;
}

/** An Ingress spec's hostnames, one list: a defaultBackend and a rule without host are '' (every hostname). */
function ingressHostsOf(spec: Json): HostItem[] {
  const backend: HostItem[] = isObject(spec.defaultBackend)
    ? [{ path: ['spec', 'defaultBackend'], host: '', empty: 'a defaultBackend' }]
    : [];
  const rules = listAt(spec, 'rules').map((rule, i): HostItem => ({
    path: ['spec', 'rules', i, 'host'],
    host: hostnameOf(stringAt(rule, 'host')),
    empty: 'a rule without host',
  }));
  const tls = listAt(spec, 'tls').flatMap((t, i) =>
    listAt(t, 'hosts').map((h, j): HostItem => ({
      path: ['spec', 'tls', i, 'hosts', j],
      host: hostnameOf(h),
      empty: 'an empty tls host',
    })),
  );
  return [...backend, ...rules, ...tls];
}

/** H1, H2 on an Ingress (networking.k8s.io/v1). */
export function checkIngress(s: AllowSubject, ingress: Json, old?: Json): Violation[] {
  const oldHosts = before(old, (o) => ingressHostsOf(specOf(o)).map((h) => hostKey(h.host)));
  const hosts = ingressHostsOf(specOf(ingress)).flatMap(({ path, host, empty }) =>
    isNewItem(hostKey(host), oldHosts) ? hostViolation(s, path, host, quoted('host', host), empty) : [],
  );
  return [...ingressClassViolations(s, ingress, old), ...hosts];
}

/** H2: `spec.ingressClassName` and the annotation `kubernetes.io/ingress.class`: each given one listed, one given. */
function ingressClassViolations(s: AllowSubject, ingress: Json, old: Old): Violation[] {
  const classes = s.allow.ingressClasses;
  // Given: set and not empty.
  const given = (v: string | undefined) => (v === '' ? undefined : v);
  const classNameOf = (o: Json) => given(stringAt(specOf(o), 'ingressClassName'));
  const annotationOf = (o: Json) =>
    given(stringAt(objectAt(objectAt(o, 'metadata'), 'annotations'), INGRESS_CLASS_ANNOTATION));
  if (classes === undefined || !changed(ingress, old, (o) => [classNameOf(o), annotationOf(o)])) return [];
  const allowed = listed(classes, 'no IngressClass');
  const className = classNameOf(ingress);
  const annotation = annotationOf(ingress);
  const out: Violation[] = [];
  if (className === undefined && annotation === undefined) {
    const what = `an Ingress without ingressClassName or ${INGRESS_CLASS_ANNOTATION} (the default class)`;
    out.push(violation('H2', s, ['spec', 'ingressClassName'], what, allowed));
  }
  if (className !== undefined && !classes.includes(className)) {
    out.push(violation('H2', s, ['spec', 'ingressClassName'], quoted('ingressClassName', className), allowed));
  }
  if (annotation !== undefined && !classes.includes(annotation)) {
    const what = quoted(`annotation ${INGRESS_CLASS_ANNOTATION}`, annotation);
    out.push(violation('H2', s, ['metadata', 'annotations', INGRESS_CLASS_ANNOTATION], what, allowed));
  }
  return out;
}

/** A route's hostnames, none standing for every hostname of its listener (''). */
const routeHostnames = (spec: Json): string[] => {
  const hostnames = listAt(spec, 'hostnames').map((h) => hostKey(hostnameOf(h)));
  return hostnames.length ? hostnames : [''];
};

/** H1 on a route with hostnames (HTTPRoute, GRPCRoute, TLSRoute): `spec.hostnames`, none meaning every hostname. */
export function checkRoute(s: AllowSubject, route: Json, old?: Json): Violation[] {
  const spec = specOf(route);
  const oldHostnames = before(old, (o) => routeHostnames(specOf(o)));
  if (listAt(spec, 'hostnames').length === 0) {
    if (!isNewItem('', oldHostnames)) return [];
    return hostViolation(s, ['spec', 'hostnames'], '', '', 'a route without hostnames');
  }
  return listAt(spec, 'hostnames').flatMap((h, i) => {
    const host = hostnameOf(h);
    if (!isNewItem(hostKey(host), oldHostnames)) return [];
    return hostViolation(s, ['spec', 'hostnames', i], host, quoted('hostname', host), 'an empty hostname');
  });
}

/**
 * H1 on a TCPRoute or UDPRoute: it has no hostname, so it may attach only to parents in its own namespace
 * (every `parentRefs[].namespace` unset or its own).
 */
export function checkPortRoute(s: AllowSubject, route: Json, old?: Json): Violation[] {
  const namespacesOf = (o: Json) => listAt(specOf(o), 'parentRefs').map((ref) => stringAt(ref, 'namespace'));
  const oldNamespaces = before(old, namespacesOf);
  return listAt(specOf(route), 'parentRefs').flatMap((ref, i) => {
    const namespace = stringAt(ref, 'namespace');
    if (namespace === undefined || namespace === s.namespace || !isNewItem(namespace, oldNamespaces)) return [];
    const why = `a ${s.kind} has no hostname to bound what it serves`;
    const what = `${quoted('parentRef into namespace', namespace)} (${why})`;
    return [violation('H1', s, ['spec', 'parentRefs', i, 'namespace'], what, `parents in ${s.namespace}`)];
  });
}

/** Listener protocols whose hostname Gateway API ignores: not judged. */
const HOSTLESS_PROTOCOLS = new Set(['TCP', 'UDP']);

/** The hostname ('' when unset: every hostname) of each listener whose hostname is judged, by index. */
const judgedListeners = (spec: Json): Array<{ index: number; hostname: string }> =>
  listAt(spec, 'listeners').flatMap((listener, index) => {
    if (HOSTLESS_PROTOCOLS.has(stringAt(listener, 'protocol') ?? '')) return [];
    return [{ index, hostname: hostnameOf(stringAt(listener, 'hostname')) }];
  });

/** H1 on the listeners of a Gateway or a ListenerSet. */
function listenerViolations(s: AllowSubject, spec: Json, old: Old): Violation[] {
  const oldHostnames = before(old, (o) => judgedListeners(o).map((l) => hostKey(l.hostname)));
  return judgedListeners(spec).flatMap(({ index, hostname }) => {
    if (!isNewItem(hostKey(hostname), oldHostnames)) return [];
    const path = ['spec', 'listeners', index, 'hostname'];
    return hostViolation(s, path, hostname, quoted('listener hostname', hostname), 'a listener without hostname');
  });
}

/** A Gateway address: its type defaulted (IPAddress). */
const gatewayAddress = (a: unknown): { type: string; value: string } => ({
  type: stringAt(a, 'type') ?? 'IPAddress',
  value: stringAt(a, 'value') ?? '',
});
/** A Gateway address as compared across an update: a Hostname's value lowercased, as H1 judges it. */
const addressKey = (a: { type: string; value: string }) =>
  a.type === 'Hostname' ? { ...a, value: hostKey(a.value) } : a;

/** X2 and H1 on a Gateway's `spec.addresses`: IPAddress in the CIDRs, Hostname under the suffixes, no other type. */
function gatewayAddressViolations(s: AllowSubject, spec: Json, old: Old): Violation[] {
  const cidrs = s.allow.externalIPs;
  const oldAddresses = before(old, (o) => listAt(o, 'addresses').map((a) => addressKey(gatewayAddress(a))));
  return listAt(spec, 'addresses').flatMap((entry, i): Violation[] => {
    const { type, value } = gatewayAddress(entry);
    if (!isNewItem(addressKey({ type, value }), oldAddresses)) return [];
    const path: FieldPath = ['spec', 'addresses', i];
    if (type === 'Hostname') {
      return hostViolation(s, [...path, 'value'], value, quoted('address', value), 'a Hostname address without value');
    }
    if (type === 'IPAddress') {
      if (addressWithinAnyCidr(value, cidrs)) return [];
      return [violation('X2', s, [...path, 'value'], quoted('address', value), addressesAllowed(s.allow, NO_CIDR))];
    }
    const ips = cidrs.length ? `of type IPAddress in ${cidrs.join(', ')}, ` : '';
    const allowed = `addresses ${ips}of type Hostname under the hostname suffixes`;
    return [violation('X2', s, [...path, 'type'], quoted('address of type', type), allowed)];
  });
}

/** H4 on a Gateway's GatewayClass, X2 and H1 on its addresses, H1 on its listeners (TCP and UDP ones aside). */
export function checkGateway(s: AllowSubject, gateway: Json, old?: Json): Violation[] {
  const spec = specOf(gateway);
  const oldSpec = before(old, specOf);
  const out: Violation[] = [];
  const className = stringAt(spec, 'gatewayClassName') ?? '';
  const classes = s.allow.gatewayClasses;
  const judged = classes !== undefined && !classes.includes(className);
  if (judged && changed(spec, oldSpec, (x) => [stringAt(x, 'gatewayClassName')])) {
    const allowed = listed(classes, 'no GatewayClass');
    out.push(violation('H4', s, ['spec', 'gatewayClassName'], quoted('gatewayClassName', className), allowed));
  }
  return [...out, ...gatewayAddressViolations(s, spec, oldSpec), ...listenerViolations(s, spec, oldSpec)];
}

/** H1 on a ListenerSet's (or XListenerSet's) listeners, like a Gateway's. */
export function checkListenerSet(s: AllowSubject, listenerSet: Json, old?: Json): Violation[] {
  return listenerViolations(s, specOf(listenerSet), before(old, specOf));
}

/** X5 and X10 on a PersistentVolumeClaim (one without storageClassName takes the default class, not judged by X5). */
export function checkPersistentVolumeClaim(s: AllowSubject, claim: Json, old?: Json): Violation[] {
  const spec = specOf(claim);
  const oldSpec = before(old, specOf);
  const out: Violation[] = [];
  const className = stringAt(spec, 'storageClassName');
  const classes = s.allow.storageClasses;
  const judged = className && classes !== undefined && !classes.includes(className);
  if (judged && changed(spec, oldSpec, (x) => [stringAt(x, 'storageClassName')])) {
    const allowed = listed(classes, 'no StorageClass');
    out.push(violation('X5', s, ['spec', 'storageClassName'], quoted('storageClassName', className), allowed));
  }
  const volumeName = stringAt(spec, 'volumeName');
  if (volumeName && s.volume?.name === volumeName) out.push(...volumeNameViolation(s, s.volume));
  if (isObject(spec.selector) && changed(spec, oldSpec, (x) => [x.selector])) {
    out.push(...selectorViolation(s, spec.selector));
  }
  return out;
}

/** What X10 allows a claim of the project to bind. */
function volumesAllowed(s: AllowSubject): string {
  const project = s.project.metadata.name ?? '';
  return (
    `PersistentVolumes of project ${project} (label ${LABEL_PROJECT}=${project}, or a claimRef into its namespaces)` +
    `${s.allow.unownedVolumes ? ' and of no project' : ''}`
  );
}

/** X10 on `spec.volumeName`: the volume is the project's (or of no project, when the project allows that). */
function volumeNameViolation(s: AllowSubject, volume: VolumeOwnership): Violation[] {
  const project = s.project.metadata.name ?? '';
  const path: FieldPath = ['spec', 'volumeName'];
  const named = `volumeName ${JSON.stringify(volume.name)}`;
  if (!volume.read)
    return [
      violation(
        'X10',
        s,
        path,
        `${named} (the webhook could not read that PersistentVolume, so whose it is is unknown)`,
        volumesAllowed(s),
      ),
    ];
  if (!volume.exists) {
    if (s.allow.unownedVolumes) return [];
    return [
      violation(
        'X10',
        s,
        path,
        `${named} (no such PersistentVolume: one created later under that name would belong to no project)`,
        volumesAllowed(s),
      ),
    ];
  }
  if (volume.project === project) return [];
  if (volume.project === undefined) {
    if (s.allow.unownedVolumes) return [];
    return [violation('X10', s, path, `${named} (a PersistentVolume of no project: ${volume.by})`, volumesAllowed(s))];
  }
  return [
    violation(
      'X10',
      s,
      path,
      `${named} (a PersistentVolume of project ${volume.project}: ${volume.by})`,
      volumesAllowed(s),
    ),
  ];
}

/**
 * X10 on `spec.selector`: the claim may bind only volumes labelled for its project, so the selector must
 * require `tenantgate.io/project` = the project (matchLabels, or matchExpressions In with that one value).
 */
function selectorViolation(s: AllowSubject, selector: Json): Violation[] {
  const project = s.project.metadata.name ?? '';
  if (objectAt(selector, 'matchLabels')[LABEL_PROJECT] === project) return [];
  const pinned = listAt(selector, 'matchExpressions').some((e) => {
    const values = listAt(e, 'values');
    return (
      stringAt(e, 'key') === LABEL_PROJECT &&
      stringAt(e, 'operator') === 'In' &&
      values.length > 0 &&
      values.every((v) => v === project)
    );
  });
  if (pinned) return [];
  return [
    violation(
      'X10',
      s,
      ['spec', 'selector'],
      `a selector without ${LABEL_PROJECT}=${project} (it may bind another project's PersistentVolume)`,
      `a selector with matchLabels ${LABEL_PROJECT}: ${project}`,
    ),
  ];
}

interface DeviceItem<T> {
  path: FieldPath;
  value: T;
}

/** Each request of a ResourceClaim spec: itself (v1beta1, flat), its v1 `exactly`, its `firstAvailable` entries. */
function deviceRequestsOf(claimSpec: Json): Array<DeviceItem<Json>> {
  return listAt(objectAt(claimSpec, 'devices'), 'requests').flatMap((request, i) => {
    if (!isObject(request)) return [];
    const base: FieldPath = ['devices', 'requests', i];
    const exactly = isObject(request.exactly) ? [{ path: [...base, 'exactly'], value: request.exactly }] : [];
    const alternatives = listAt(request, 'firstAvailable').flatMap((sub, j) =>
      isObject(sub) ? [{ path: [...base, 'firstAvailable', j], value: sub }] : [],
    );
    return [{ path: base, value: request }, ...exactly, ...alternatives];
  });
}

/** The device class names of a ResourceClaim spec's requests, wherever they sit. */
function deviceClassesOf(claimSpec: Json): Array<DeviceItem<string>> {
  return deviceRequestsOf(claimSpec).flatMap(({ path, value }) => {
    const name = stringAt(value, 'deviceClassName');
    return name ? [{ path: [...path, 'deviceClassName'], value: name }] : [];
  });
}

/** The tolerations of a ResourceClaim spec's requests, wherever they sit. */
function deviceTolerationsOf(claimSpec: Json): Array<DeviceItem<Json>> {
  return deviceRequestsOf(claimSpec).flatMap(({ path, value }) =>
    listAt(value, 'tolerations').flatMap((t, k) =>
      isObject(t) ? [{ path: [...path, 'tolerations', k], value: t }] : [],
    ),
  );
}

/**
 * X7, and X8 on device tolerations (no node.kubernetes.io/ exception), on a ResourceClaim (`spec`) or a
 * ResourceClaimTemplate (`spec.spec`).
 */
export function checkResourceClaim(s: AllowSubject, object: Json, template: boolean, old?: Json): Violation[] {
  const base: FieldPath = template ? ['spec', 'spec'] : ['spec'];
  const claimSpecOf = (o: Json) => (template ? objectAt(specOf(o), 'spec') : specOf(o));
  const spec = claimSpecOf(object);
  const oldSpec = before(old, claimSpecOf);
  const out: Violation[] = [];
  const classes = s.allow.deviceClasses;
  if (classes !== undefined) {
    const oldClasses = before(oldSpec, (o) => deviceClassesOf(o).map((d) => d.value));
    for (const d of deviceClassesOf(spec)) {
      if (classes.includes(d.value) || !isNewItem(d.value, oldClasses)) continue;
      const allowed = listed(classes, 'no DeviceClass');
      out.push(violation('X7', s, [...base, ...d.path], quoted('deviceClassName', d.value), allowed));
    }
  }
  const allowed = s.allow.tolerations;
  const oldTolerations = before(oldSpec, (o) =>
    deviceTolerationsOf(o).map((t) => judgedToleration(t.value as Toleration)),
  );
  for (const t of deviceTolerationsOf(spec)) {
    const toleration = t.value as Toleration;
    if (tolerationListed(toleration, allowed) || !isNewItem(judgedToleration(toleration), oldTolerations)) continue;
    const what = `device toleration ${describeToleration(toleration)}`;
    out.push(violation('X8', s, [...base, ...t.path], what, listed(allowed.map(describeToleration), 'no toleration')));
  }
  return out;
}

/**
 * H3 offline: no two Projects claim a common hostname (their suffixes, tenantgate.yaml's templates
 * filled in, do not overlap), so admission judges a hostname against its own project only. Quadratic
 * in the number of suffixes, which is small.
 */
export function checkHostnameSuffixOverlaps(
  config: TenantgateConfig,
  projects: ReadonlyArray<{ project: Project; document?: number }>,
): Violation[] {
  const claims = projects.flatMap(({ project, document }) =>
    effectiveAllowLists(config, project).hostnameSuffixes.map((suffix, index) => ({
      project,
      document,
      suffix,
      index,
    })),
  );
  const out: Violation[] = [];
  for (let i = 0; i < claims.length; i++) {
    for (let j = i + 1; j < claims.length; j++) {
      const a = claims[i];
      const b = claims[j];
      if (!a || !b || a.project.metadata.name === b.project.metadata.name || !suffixesOverlap(a.suffix, b.suffix))
        continue;
      out.push({
        rule: 'H3',
        path: ['spec', 'allow', 'hostnames', 'suffixes', b.index],
        ...(b.document !== undefined ? { document: b.document } : {}),
        message:
          `Project ${b.project.metadata.name ?? ''}: hostname suffix ${JSON.stringify(b.suffix)} overlaps ` +
          `${JSON.stringify(a.suffix)} of project ${a.project.metadata.name ?? ''}; allowed: suffixes no other ` +
          `project's suffix equals, contains or lies under`,
      });
    }
  }
  return out;
}
