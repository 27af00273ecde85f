/**
 * X1–X10, H1–H4: what a project's objects may use (docs/rules.md#allow-lists). One pure function per object
 * kind, each returning the violations of every rule that kind can break; H3 over a set of Projects.
 * The objects are as the apiserver sends them (untyped JSON): every field is read defensively.
 */
import type { TenantgateConfig } from '../../config/config.js';
import {
  describeToleration,
  effectiveAllowLists,
  hostnameProblem,
  SYSTEM_PRIORITY_PREFIX,
  suffixesOverlap,
  tolerationAllowed,
  type EffectiveAllowLists,
  type VolumeOwnership,
} from '../allow-lists.js';
import { withinAnyCidr } from '../cidr.js';
import { LABEL_PROJECT, type FieldPath, type Project, type RuleId, type Toleration, type Violation } from '../types.js';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const objectAt = (v: unknown, key: string): Json => (isObject(v) && isObject(v[key]) ? v[key] : {});
const listAt = (v: unknown, key: string): unknown[] => (isObject(v) && Array.isArray(v[key]) ? v[key] : []);
const stringAt = (v: unknown, key: string): string | undefined => (isObject(v) && typeof v[key] === 'string' ? v[key] : undefined);

/** What a rule needs to know about the object and its project. */
export interface AllowSubject {
  /** `Pod payments-batch/crit`. */
  subject: string;
  project: Project;
  allow: EffectiveAllowLists;
  /**
   * The PersistentVolume a claim's new `spec.volumeName` names, and whose it is (X10). Absent: the
   * volume name is not judged (an update that keeps it, or `tenantgate plan` on bound claims).
   */
  volume?: VolumeOwnership;
}

export function allowSubject(config: TenantgateConfig, project: Project, kind: string, namespace: string, name: string): AllowSubject {
  return { subject: `${kind} ${namespace}/${name}`, project, allow: effectiveAllowLists(config, project) };
}

const listed = (values: readonly string[], none = 'none'): string => (values.length ? values.join(', ') : none);

function violation(rule: RuleId, s: AllowSubject, path: FieldPath, what: string, allowed: string): Violation {
  return { rule, path, message: `${s.subject}: ${what} is not allowed for project ${s.project.metadata.name ?? ''}; allowed: ${allowed}` };
}

/** X1, X6, X8, X9 on a pod spec (a Pod's `spec`, or a pod template's). */
export function checkPodSpec(s: AllowSubject, spec: Json, path: FieldPath = ['spec']): Violation[] {
  const out: Violation[] = [];
  const a = s.allow;
  const priorityClass = stringAt(spec, 'priorityClassName');
  if (priorityClass) {
    const system = priorityClass.startsWith(SYSTEM_PRIORITY_PREFIX);
    const ok = system ? a.systemPriorityClasses.includes(priorityClass) : a.priorityClasses === undefined || a.priorityClasses.includes(priorityClass);
    if (!ok) {
      const allowed = a.priorityClasses === undefined ? `any PriorityClass but system-*${a.systemPriorityClasses.length ? ` (and ${a.systemPriorityClasses.join(', ')})` : ''}` : listed([...a.priorityClasses, ...a.systemPriorityClasses.filter((c) => !a.priorityClasses?.includes(c))], 'no PriorityClass');
      out.push(violation('X1', s, [...path, 'priorityClassName'], `priorityClassName ${JSON.stringify(priorityClass)}`, allowed));
    }
  }
  const runtimeClass = stringAt(spec, 'runtimeClassName');
  if (runtimeClass && a.runtimeClasses !== undefined && !a.runtimeClasses.includes(runtimeClass)) {
    out.push(violation('X6', s, [...path, 'runtimeClassName'], `runtimeClassName ${JSON.stringify(runtimeClass)}`, listed(a.runtimeClasses, 'no RuntimeClass')));
  }
  const selector = objectAt(spec, 'nodeSelector');
  const wanted = Object.entries(a.nodeSelector);
  const wantedText = wanted.map(([k, v]) => `${k}=${v}`).join(', ');
  for (const [key, value] of wanted) {
    if (selector[key] !== value) {
      const has = typeof selector[key] === 'string' ? `${key}=${String(selector[key])}` : `no ${key}`;
      out.push(violation('X8', s, [...path, 'nodeSelector', key], `nodeSelector with ${has}`, `a nodeSelector with ${wantedText}`));
    }
  }
  const nodeName = stringAt(spec, 'nodeName');
  if (nodeName && wanted.length > 0) {
    out.push(violation('X8', s, [...path, 'nodeName'], `nodeName ${JSON.stringify(nodeName)} (it skips the scheduler and the node selector)`, `no nodeName, a nodeSelector with ${wantedText}`));
  }
  listAt(spec, 'tolerations').forEach((t, i) => {
    if (!isObject(t)) return;
    const toleration = t as Toleration;
    if (tolerationAllowed(toleration, a.tolerations)) return;
    out.push(violation('X8', s, [...path, 'tolerations', i], `toleration ${describeToleration(toleration)}`, `${listed(a.tolerations.map(describeToleration), 'no toleration')} (and node.kubernetes.io/* ones)`));
  });
  if (a.registries !== undefined) {
    for (const field of ['initContainers', 'containers', 'ephemeralContainers']) {
      listAt(spec, field).forEach((c, i) => {
        const image = stringAt(c, 'image');
        if (image === undefined || a.registries?.some((r) => image.startsWith(r))) return;
        out.push(violation('X9', s, [...path, field, i, 'image'], `image ${JSON.stringify(image)}`, `images starting with ${listed(a.registries ?? [])}`));
      });
    }
  }
  return out;
}

export function checkPod(s: AllowSubject, pod: Json): Violation[] {
  return checkPodSpec(s, objectAt(pod, 'spec'));
}

/** X2, X3, X4 on a Service. */
export function checkService(s: AllowSubject, service: Json): Violation[] {
  const out: Violation[] = [];
  const spec = objectAt(service, 'spec');
  const a = s.allow;
  listAt(spec, 'externalIPs').forEach((ip, i) => {
    if (typeof ip === 'string' && withinAnyCidr(ip, a.externalIPs)) return;
    out.push(violation('X2', s, ['spec', 'externalIPs', i], `externalIPs ${JSON.stringify(ip)}`, a.externalIPs.length ? `addresses in ${a.externalIPs.join(', ')}` : 'no externalIPs'));
  });
  const type = stringAt(spec, 'type') ?? 'ClusterIP';
  if (type !== 'ClusterIP' && !a.serviceTypes.includes(type)) {
    out.push(violation('X3', s, ['spec', 'type'], `type ${type}`, ['ClusterIP', ...a.serviceTypes].join(', ')));
  }
  if (type === 'LoadBalancer' && a.loadBalancerSourceRanges !== undefined) {
    const ranges = listAt(spec, 'loadBalancerSourceRanges');
    const allowed = `loadBalancerSourceRanges inside ${listed(a.loadBalancerSourceRanges)}`;
    if (ranges.length === 0) out.push(violation('X4', s, ['spec', 'loadBalancerSourceRanges'], 'a LoadBalancer without loadBalancerSourceRanges (open to every address)', allowed));
    ranges.forEach((r, i) => {
      if (typeof r === 'string' && withinAnyCidr(r, a.loadBalancerSourceRanges ?? [])) return;
      out.push(violation('X4', s, ['spec', 'loadBalancerSourceRanges', i], `loadBalancerSourceRanges ${JSON.stringify(r)}`, allowed));
    });
  }
  return out;
}

function hostViolation(s: AllowSubject, path: FieldPath, host: string): Violation[] {
  const problem = hostnameProblem(host, s.allow.hostnameSuffixes, s.allow.wildcardHostnames);
  if (!problem) return [];
  const what = host === '' ? `a rule without host (${problem})` : `host ${JSON.stringify(host)} (${problem})`;
  const allowed = s.allow.hostnameSuffixes.length
    ? `hostnames under ${s.allow.hostnameSuffixes.join(', ')}${s.allow.wildcardHostnames ? ', wildcards included' : ', no wildcard'}`
    : 'no hostname (the project has no hostname suffix)';
  return [violation('H1', s, path, what, allowed)];
}

/** H1, H2 on an Ingress (networking.k8s.io/v1). */
export function checkIngress(s: AllowSubject, ingress: Json): Violation[] {
  const out: Violation[] = [];
  const spec = objectAt(ingress, 'spec');
  const className = stringAt(spec, 'ingressClassName');
  const classes = s.allow.ingressClasses;
  if (classes !== undefined) {
    if (!className) out.push(violation('H2', s, ['spec', 'ingressClassName'], 'an Ingress without ingressClassName (the default class)', listed(classes, 'no IngressClass')));
    else if (!classes.includes(className)) out.push(violation('H2', s, ['spec', 'ingressClassName'], `ingressClassName ${JSON.stringify(className)}`, listed(classes, 'no IngressClass')));
  }
  if (isObject(spec.defaultBackend)) out.push(...hostViolation(s, ['spec', 'defaultBackend'], ''));
  listAt(spec, 'rules').forEach((rule, i) => out.push(...hostViolation(s, ['spec', 'rules', i, 'host'], stringAt(rule, 'host') ?? '')));
  listAt(spec, 'tls').forEach((tls, i) =>
    listAt(tls, 'hosts').forEach((host, j) => out.push(...hostViolation(s, ['spec', 'tls', i, 'hosts', j], typeof host === 'string' ? host : ''))),
  );
  return out;
}

/** H1 on a Gateway API route (HTTPRoute, GRPCRoute, TLSRoute): `spec.hostnames`, none meaning every hostname of the listener. */
export function checkRoute(s: AllowSubject, route: Json): Violation[] {
  const hostnames = listAt(objectAt(route, 'spec'), 'hostnames');
  if (hostnames.length === 0) return hostViolation(s, ['spec', 'hostnames'], '');
  return hostnames.flatMap((h, i) => hostViolation(s, ['spec', 'hostnames', i], typeof h === 'string' ? h : ''));
}

/** H1 on a Gateway's listeners (a listener without hostname serves every hostname), H4 on its GatewayClass. */
export function checkGateway(s: AllowSubject, gateway: Json): Violation[] {
  const spec = objectAt(gateway, 'spec');
  const out: Violation[] = [];
  const className = stringAt(spec, 'gatewayClassName') ?? '';
  const classes = s.allow.gatewayClasses;
  if (classes !== undefined && !classes.includes(className)) {
    out.push(violation('H4', s, ['spec', 'gatewayClassName'], `gatewayClassName ${JSON.stringify(className)}`, listed(classes, 'no GatewayClass')));
  }
  listAt(spec, 'listeners').forEach((l, i) => out.push(...hostViolation(s, ['spec', 'listeners', i, 'hostname'], stringAt(l, 'hostname') ?? '')));
  return out;
}

/** X5 and X10 on a PersistentVolumeClaim (one without storageClassName takes the cluster's default class and is not judged by X5). */
export function checkPersistentVolumeClaim(s: AllowSubject, claim: Json): Violation[] {
  const spec = objectAt(claim, 'spec');
  const out: Violation[] = [];
  const className = stringAt(spec, 'storageClassName');
  const classes = s.allow.storageClasses;
  if (className && classes !== undefined && !classes.includes(className)) {
    out.push(violation('X5', s, ['spec', 'storageClassName'], `storageClassName ${JSON.stringify(className)}`, listed(classes, 'no StorageClass')));
  }
  const volumeName = stringAt(spec, 'volumeName');
  if (volumeName && s.volume?.name === volumeName) out.push(...volumeNameViolation(s, s.volume));
  if (isObject(spec.selector)) out.push(...selectorViolation(s, spec.selector));
  return out;
}

/** What X10 allows a claim of the project to bind. */
function volumesAllowed(s: AllowSubject): string {
  const project = s.project.metadata.name ?? '';
  return `PersistentVolumes of project ${project} (label ${LABEL_PROJECT}=${project}, or a claimRef into its namespaces)${s.allow.unownedVolumes ? ' and of no project' : ''}`;
}

/** X10 on `spec.volumeName`: the volume is the project's (or of no project, when the project allows that). */
function volumeNameViolation(s: AllowSubject, volume: VolumeOwnership): Violation[] {
  const project = s.project.metadata.name ?? '';
  const path: FieldPath = ['spec', 'volumeName'];
  const named = `volumeName ${JSON.stringify(volume.name)}`;
  if (!volume.read) return [violation('X10', s, path, `${named} (the webhook could not read that PersistentVolume, so whose it is is unknown)`, volumesAllowed(s))];
  if (!volume.exists) {
    if (s.allow.unownedVolumes) return [];
    return [violation('X10', s, path, `${named} (no such PersistentVolume: one created later under that name would belong to no project)`, volumesAllowed(s))];
  }
  if (volume.project === project) return [];
  if (volume.project === undefined) {
    if (s.allow.unownedVolumes) return [];
    return [violation('X10', s, path, `${named} (a PersistentVolume of no project: ${volume.by})`, volumesAllowed(s))];
  }
  return [violation('X10', s, path, `${named} (a PersistentVolume of project ${volume.project}: ${volume.by})`, volumesAllowed(s))];
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
    return stringAt(e, 'key') === LABEL_PROJECT && stringAt(e, 'operator') === 'In' && values.length > 0 && values.every((v) => v === project);
  });
  if (pinned) return [];
  return [violation('X10', s, ['spec', 'selector'], `a selector without ${LABEL_PROJECT}=${project} (it may bind another project's PersistentVolume)`, `a selector with matchLabels ${LABEL_PROJECT}: ${project}`)];
}

/** The device class names of a ResourceClaim spec: resource.k8s.io v1 (`exactly`) and v1beta1 (flat), with `firstAvailable`. */
function deviceClassesOf(claimSpec: Json): Array<{ path: FieldPath; name: string }> {
  const out: Array<{ path: FieldPath; name: string }> = [];
  listAt(objectAt(claimSpec, 'devices'), 'requests').forEach((request, i) => {
    const base: FieldPath = ['devices', 'requests', i];
    const flat = stringAt(request, 'deviceClassName');
    if (flat) out.push({ path: [...base, 'deviceClassName'], name: flat });
    const exactly = stringAt(objectAt(request, 'exactly'), 'deviceClassName');
    if (exactly) out.push({ path: [...base, 'exactly', 'deviceClassName'], name: exactly });
    listAt(request, 'firstAvailable').forEach((sub, j) => {
      const name = stringAt(sub, 'deviceClassName');
      if (name) out.push({ path: [...base, 'firstAvailable', j, 'deviceClassName'], name });
    });
  });
  return out;
}

/** X7 on a ResourceClaim (`spec`) or a ResourceClaimTemplate (`spec.spec`). */
export function checkResourceClaim(s: AllowSubject, object: Json, template: boolean): Violation[] {
  const classes = s.allow.deviceClasses;
  if (classes === undefined) return [];
  const base: FieldPath = template ? ['spec', 'spec'] : ['spec'];
  const spec = template ? objectAt(objectAt(object, 'spec'), 'spec') : objectAt(object, 'spec');
  return deviceClassesOf(spec)
    .filter((d) => !classes.includes(d.name))
    .map((d) => violation('X7', s, [...base, ...d.path], `deviceClassName ${JSON.stringify(d.name)}`, listed(classes, 'no DeviceClass')));
}

/**
 * H3 offline: no two Projects claim a common hostname (their suffixes, tenantgate.yaml's templates
 * filled in, do not overlap), so admission judges a hostname against its own project only. Quadratic
 * in the number of suffixes, which is small.
 */
export function checkHostnameSuffixOverlaps(config: TenantgateConfig, projects: ReadonlyArray<{ project: Project; document?: number }>): Violation[] {
  const claims = projects.flatMap(({ project, document }) =>
    effectiveAllowLists(config, project).hostnameSuffixes.map((suffix, index) => ({ project, document, suffix, index })),
  );
  const out: Violation[] = [];
  for (let i = 0; i < claims.length; i++) {
    for (let j = i + 1; j < claims.length; j++) {
      const a = claims[i];
      const b = claims[j];
      if (!a || !b || a.project.metadata.name === b.project.metadata.name || !suffixesOverlap(a.suffix, b.suffix)) continue;
      out.push({
        rule: 'H3',
        path: ['spec', 'allow', 'hostnames', 'suffixes', b.index],
        ...(b.document !== undefined ? { document: b.document } : {}),
        message: `Project ${b.project.metadata.name ?? ''}: hostname suffix ${JSON.stringify(b.suffix)} overlaps ${JSON.stringify(a.suffix)} of project ${a.project.metadata.name ?? ''}; allowed: suffixes no other project's suffix equals, contains or lies under`,
      });
    }
  }
  return out;
}
