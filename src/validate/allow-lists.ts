/**
 * A project's effective allow-lists (docs/rules.md#allow-lists): its `spec.allow` field by field, else
 * tenantgate.yaml's `allow`; and the hostname arithmetic the rules need (suffixes; CIDRs are src/validate/cidr.ts).
 * Pure: no I/O.
 */
import type { TenantgateConfig } from '../config/config.js';
import { LABEL_PROJECT, type AllowLists, type Project, type Toleration } from './types.js';

/** What a project's objects may use, every default applied. `undefined` for a list means "any". */
export interface EffectiveAllowLists {
  /** Undefined: any class but system-*. */
  priorityClasses: readonly string[] | undefined;
  /** system-* classes the Project itself names (never from tenantgate.yaml). */
  systemPriorityClasses: readonly string[];
  externalIPs: readonly string[];
  serviceTypes: readonly string[];
  loadBalancerSourceRanges: readonly string[] | undefined;
  hostnameSuffixes: readonly string[];
  wildcardHostnames: boolean;
  ingressClasses: readonly string[] | undefined;
  gatewayClasses: readonly string[] | undefined;
  /** Whether a claim may bind a PersistentVolume of no project by volumeName (X10). */
  unownedVolumes: boolean;
  storageClasses: readonly string[] | undefined;
  runtimeClasses: readonly string[] | undefined;
  deviceClasses: readonly string[] | undefined;
  nodeSelector: Readonly<Record<string, string>>;
  tolerations: readonly Toleration[];
  registries: readonly string[] | undefined;
}

export const SYSTEM_PRIORITY_PREFIX = 'system-';

/** `{project}` and `{tenant}` of a tenantgate.yaml hostname suffix, filled in. */
function fill(template: string, project: Project): string {
  return template.replaceAll('{project}', project.metadata.name ?? '').replaceAll('{tenant}', project.spec.tenant);
}

export function effectiveAllowLists(config: TenantgateConfig, project: Project): EffectiveAllowLists {
  const own: AllowLists = project.spec.allow ?? {};
  const d: AllowLists = config.allow;
  const classes = own.priorityClasses ?? d.priorityClasses?.filter((c) => !c.startsWith(SYSTEM_PRIORITY_PREFIX));
  const suffixes = own.hostnames?.suffixes ?? (d.hostnames?.suffixes ?? []).map((s) => fill(s, project));
  return {
    priorityClasses: classes,
    systemPriorityClasses: (own.priorityClasses ?? []).filter((c) => c.startsWith(SYSTEM_PRIORITY_PREFIX)),
    externalIPs: own.services?.externalIPs ?? d.services?.externalIPs ?? [],
    serviceTypes: own.services?.types ?? d.services?.types ?? [],
    loadBalancerSourceRanges: own.services?.loadBalancerSourceRanges ?? d.services?.loadBalancerSourceRanges,
    hostnameSuffixes: suffixes,
    wildcardHostnames: own.hostnames?.wildcards ?? d.hostnames?.wildcards ?? false,
    ingressClasses: own.ingressClasses ?? d.ingressClasses,
    gatewayClasses: own.gatewayClasses ?? d.gatewayClasses,
    unownedVolumes: own.persistentVolumes?.unowned ?? d.persistentVolumes?.unowned ?? false,
    storageClasses: own.storageClasses ?? d.storageClasses,
    runtimeClasses: own.runtimeClasses ?? d.runtimeClasses,
    deviceClasses: own.deviceClasses ?? d.deviceClasses,
    nodeSelector: own.nodePlacement?.nodeSelector ?? d.nodePlacement?.nodeSelector ?? {},
    tolerations: own.nodePlacement?.tolerations ?? d.nodePlacement?.tolerations ?? [],
    registries: own.registries ?? d.registries,
  };
}

/** Whether `host` is `suffix` or a name under it. */
function underSuffix(host: string, suffix: string): boolean {
  return host === suffix || host.endsWith(`.${suffix}`);
}

/** Whether two suffixes claim a common hostname (one is the other or under it). */
export function suffixesOverlap(a: string, b: string): boolean {
  return underSuffix(a, b) || underSuffix(b, a);
}

/**
 * Why `host` is not allowed by `suffixes`/`wildcards`, or undefined when it is. A wildcard
 * `*.x` needs `wildcards` and `x` under a suffix; an empty host (every hostname) is never allowed.
 */
export function hostnameProblem(host: string, suffixes: readonly string[], wildcards: boolean): string | undefined {
  if (host === '') return 'no hostname matches every hostname';
  const lower = host.toLowerCase();
  const wildcard = lower.startsWith('*.');
  const name = wildcard ? lower.slice(2) : lower;
  if (wildcard && !wildcards) return 'wildcard hostnames are not allowed';
  if (name.includes('*')) return 'a wildcard is allowed only as the first label';
  if (!suffixes.some((s) => underSuffix(name, s))) return "it is outside the project's hostname suffixes";
  return undefined;
}

/**
 * Tolerations every pod may carry: Kubernetes' own node conditions (the apiserver adds not-ready
 * and unreachable to every pod).
 */
const NODE_CONDITION_TAINT_PREFIX = 'node.kubernetes.io/';

/**
 * Whether a toleration is one of the allowed ones: same key, operator (unset = Equal), value (when Equal),
 * and an allowed effect that is unset (every effect) or the same. A device request's tolerations are judged
 * by this alone (X8, devices).
 */
export function tolerationListed(t: Toleration, allowed: readonly Toleration[]): boolean {
  const operator = (x: Toleration) => x.operator ?? 'Equal';
  return allowed.some(
    (a) =>
      (a.key ?? '') === (t.key ?? '') &&
      operator(a) === operator(t) &&
      (operator(a) === 'Exists' || (a.value ?? '') === (t.value ?? '')) &&
      (!a.effect || a.effect === t.effect),
  );
}

/** Whether a pod's toleration is allowed: a node condition's (`node.kubernetes.io/*`), or a listed one. */
export function tolerationAllowed(t: Toleration, allowed: readonly Toleration[]): boolean {
  return (t.key?.startsWith(NODE_CONDITION_TAINT_PREFIX) ?? false) || tolerationListed(t, allowed);
}

/**
 * Whether an image matches a registry prefix (X9). A prefix ending in `/` matches what starts with it;
 * another matches itself or what continues with `/`, and, when it names a repository (it contains a `/`),
 * what continues with a tag (`:`) or a digest (`@`). So `registry.example.com` does not match
 * `registry.example.com.evil.io/x`, nor `docker.io/library/nginx` `docker.io/library/nginx-evil`.
 */
function imageMatchesPrefix(image: string, prefix: string): boolean {
  if (prefix.endsWith('/')) return image.startsWith(prefix);
  if (image === prefix || image.startsWith(`${prefix}/`)) return true;
  return prefix.includes('/') && (image.startsWith(`${prefix}:`) || image.startsWith(`${prefix}@`));
}

export function imageAllowed(image: string, prefixes: readonly string[]): boolean {
  return prefixes.some((p) => imageMatchesPrefix(image, p));
}

/** How images may start under `prefixes`, for messages: `registry.example.com/, docker.io/library/nginx:, …`. */
export function describeRegistries(prefixes: readonly string[]): string {
  const starts = prefixes.flatMap((p) => {
    if (p.endsWith('/')) return [p];
    return p.includes('/') ? [`${p}:`, `${p}@`, `${p}/`] : [`${p}/`];
  });
  return starts.length ? starts.join(', ') : 'none';
}

/**
 * What an UPDATE adds (docs/adr/0095-allow-lists-in-the-api-server.md): an item is new unless the old
 * object's same field holds an equal one (JSON equality: every field, key order aside). `oldItems`
 * undefined is a CREATE: everything is new. A single-valued check passes its fields as one item (a
 * tuple) and the old object's as the only old item, so it is judged exactly when one of them changed.
 * Callers pass items as the rule judges them (the API server's policies compare the same forms): a
 * toleration by `judgedToleration`, a hostname lowercased, a field's default filled in.
 */
export function isNewItem(item: unknown, oldItems: readonly unknown[] | undefined): boolean {
  return oldItems === undefined || !oldItems.some((old) => sameJson(old, item));
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  }
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keys = (o: Record<string, unknown>) => Object.keys(o).filter((k) => o[k] !== undefined);
  return keys(x).length === keys(y).length && keys(x).every((k) => sameJson(x[k], y[k]));
}

/**
 * A toleration as the rules judge it, to compare across an update: key, operator (unset = Equal), value and
 * effect, each given ('' when unset); `tolerationSeconds` is not judged.
 */
export function judgedToleration(t: Toleration): Required<Omit<Toleration, 'tolerationSeconds'>> {
  return { key: t.key ?? '', operator: t.operator ?? 'Equal', value: t.value ?? '', effect: t.effect ?? '' };
}

/** A toleration as text, for messages: `dedicated=gpu:NoSchedule`, `dedicated:Exists`, `Exists` (every taint). */
export function describeToleration(t: Toleration): string {
  const op = t.operator ?? 'Equal';
  const head =
    op === 'Exists' ? (t.key ? `${t.key}:Exists` : 'Exists (every taint)') : `${t.key ?? ''}=${t.value ?? ''}`;
  return t.effect ? `${head}:${t.effect}` : head;
}

/** A PersistentVolume as the webhook reads it (core/v1): what says which project it belongs to. */
export interface PersistentVolumeLike {
  metadata?: { name?: string; labels?: Record<string, string> };
  spec?: { claimRef?: { namespace?: string; name?: string } };
}

/**
 * Whom the PersistentVolume a claim names belongs to (X10): `read: false` when the webhook could not
 * read it, `exists: false` when there is none of that name.
 */
export type VolumeOwnership =
  | { name: string; read: false }
  | { name: string; read: true; exists: false }
  | { name: string; read: true; exists: true; project: string | undefined; by: string };

/**
 * Which project a PersistentVolume belongs to: its `tenantgate.io/project` label (set by the platform),
 * else the project of the namespace its `spec.claimRef` names (it was provisioned for, or bound to, a
 * claim there; a Released volume keeps that claimRef). Neither: no project.
 */
export function volumeOwnership(
  name: string,
  volume: PersistentVolumeLike | null | undefined,
  projectOfNamespace: (namespace: string) => string | undefined,
): VolumeOwnership {
  if (volume === undefined) return { name, read: false };
  if (volume === null) return { name, read: true, exists: false };
  const labelled = volume.metadata?.labels?.[LABEL_PROJECT];
  if (labelled) return { name, read: true, exists: true, project: labelled, by: `label ${LABEL_PROJECT}=${labelled}` };
  const claim = volume.spec?.claimRef;
  if (claim?.namespace) {
    const project = projectOfNamespace(claim.namespace);
    return { name, read: true, exists: true, project, by: `claimRef ${claim.namespace}/${claim.name ?? ''}` };
  }
  return { name, read: true, exists: true, project: undefined, by: 'no label, no claimRef' };
}
