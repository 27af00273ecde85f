/**
 * A project's effective allow-lists (docs/rules.md#allow-lists): its `spec.allow` field by field, else
 * tenantgate.yaml's `allow`; and the address arithmetic the rules need (CIDRs, hostname suffixes).
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

/** An address as a bit string (32 or 128 bits), or undefined when it is not an IPv4 or IPv6 address. */
export function addressBits(address: string): { family: 4 | 6; bits: bigint } | undefined {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(address)) {
    const parts = address.split('.').map(Number);
    if (parts.some((p) => p > 255)) return undefined;
    return { family: 4, bits: parts.reduce((acc, p) => (acc << 8n) | BigInt(p), 0n) };
  }
  if (!/^[0-9a-fA-F:]+$/.test(address) || !address.includes(':')) return undefined;
  const halves = address.split('::');
  if (halves.length > 2) return undefined;
  const groups = (h: string) => (h === '' ? [] : h.split(':'));
  const head = groups(halves[0] ?? '');
  const tail = halves.length === 2 ? groups(halves[1] ?? '') : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  if (all.some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g))) return undefined;
  return { family: 6, bits: all.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n) };
}

export interface Cidr {
  family: 4 | 6;
  bits: bigint;
  prefix: number;
}

/** A CIDR (`203.0.113.0/24`, `2001:db8::/64`), or undefined when it is not one. A bare address is a /32 or /128. */
export function parseCidr(text: string): Cidr | undefined {
  const [address = '', prefixText, extra] = text.split('/');
  if (extra !== undefined) return undefined;
  const parsed = addressBits(address);
  if (!parsed) return undefined;
  const width = parsed.family === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? width : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!(prefix >= 0 && prefix <= width)) return undefined;
  return { family: parsed.family, bits: parsed.bits, prefix };
}

/**
 * The CIDR in the form Kubernetes 1.36+ stores (StrictIPCIDRValidation): the network address with its
 * host bits zero, IPv4 without leading zeros, IPv6 compressed as RFC 5952 says (the URL host serializer
 * writes it so), and the prefix length.
 */
export function canonicalCidr(c: Cidr): string {
  const width = c.family === 4 ? 32 : 128;
  const hostBits = BigInt(width - c.prefix);
  const network = (c.bits >> hostBits) << hostBits;
  if (c.family === 4) return `${[24n, 16n, 8n, 0n].map((shift) => (network >> shift) & 255n).join('.')}/${c.prefix}`;
  const groups = Array.from({ length: 8 }, (_, i) => ((network >> BigInt(112 - 16 * i)) & 0xffffn).toString(16));
  return `${new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1)}/${c.prefix}`;
}

/** Why `text` is not a CIDR in canonical form (undefined: it is one), with the form to write. */
export function cidrProblem(text: string): string | undefined {
  const parsed = text.includes('/') ? parseCidr(text) : undefined;
  if (!parsed) return 'is not a CIDR (an address, "/", a prefix length: 203.0.113.0/24, 2001:db8::/64)';
  const canonical = canonicalCidr(parsed);
  return canonical === text ? undefined : `is not in canonical form (host bits zero, no leading zeros, IPv6 compressed and lowercase; Kubernetes 1.36+ refuses other forms in a NetworkPolicy): write ${JSON.stringify(canonical)}`;
}

/** Whether `inner` (an address or a CIDR) lies inside `outer`. */
export function cidrContains(outer: Cidr, inner: Cidr): boolean {
  if (outer.family !== inner.family || inner.prefix < outer.prefix) return false;
  const width = BigInt(outer.family === 4 ? 32 : 128);
  const shift = width - BigInt(outer.prefix);
  return outer.bits >> shift === inner.bits >> shift;
}

/** Whether `text` (an address or CIDR) lies inside one of `allowed` (CIDR texts; unparsable ones admit nothing). */
export function withinAnyCidr(text: string, allowed: readonly string[]): boolean {
  const inner = parseCidr(text);
  if (!inner) return false;
  return allowed.some((a) => {
    const outer = parseCidr(a);
    return outer !== undefined && cidrContains(outer, inner);
  });
}

/** Whether `host` is `suffix` or a name under it. */
export function underSuffix(host: string, suffix: string): boolean {
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
  if (!suffixes.some((s) => underSuffix(name, s))) return 'it is outside the project\'s hostname suffixes';
  return undefined;
}

/** Tolerations every pod may carry: Kubernetes' own node conditions (the apiserver adds not-ready and unreachable to every pod). */
export const NODE_CONDITION_TAINT_PREFIX = 'node.kubernetes.io/';

/** Whether a pod's toleration is one of the allowed ones (same key, operator, value; an allowed effect "" covers every effect). */
export function tolerationAllowed(t: Toleration, allowed: readonly Toleration[]): boolean {
  if (t.key?.startsWith(NODE_CONDITION_TAINT_PREFIX)) return true;
  const operator = (x: Toleration) => x.operator ?? 'Equal';
  return allowed.some(
    (a) => (a.key ?? '') === (t.key ?? '') && operator(a) === operator(t) && (operator(a) === 'Exists' || (a.value ?? '') === (t.value ?? '')) && (!a.effect || a.effect === t.effect),
  );
}

/** A toleration as text, for messages: `dedicated=gpu:NoSchedule`, `dedicated:Exists`, `Exists` (every taint). */
export function describeToleration(t: Toleration): string {
  const op = t.operator ?? 'Equal';
  const head = op === 'Exists' ? (t.key ? `${t.key}:Exists` : 'Exists (every taint)') : `${t.key ?? ''}=${t.value ?? ''}`;
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
export function volumeOwnership(name: string, volume: PersistentVolumeLike | null | undefined, projectOfNamespace: (namespace: string) => string | undefined): VolumeOwnership {
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
