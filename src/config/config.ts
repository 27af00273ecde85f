/** Cluster configuration (SPEC §2.3): one YAML file, defaults built in. Parsing only, no I/O here. */
import { parse as parseYaml } from 'yaml';

export interface TenantgateConfig {
  /** Name of this cluster; selects `spec.clusters[name]` budgets. Empty: the default budget. */
  clusterName: string;
  privileged: { users: string[]; groups: string[] };
  reserved: { names: string[]; prefixes: string[] };
  /** Namespace prefix template; `{project}` is replaced with the project name. */
  namespacePrefix: string;
  requireProjectForUsers: boolean;
  /** Q4 warns when headroom falls below this fraction of the budget. */
  headroomWarningThreshold: number;
  resyncPeriodSeconds: number;
  /** Namespace tenantgate itself runs in (excluded from the webhook). */
  systemNamespace: string;
  /** Q5: reserve allocations with a compare-and-swap write across replicas. */
  crossReplicaReservation: boolean;
  /** How long an admitted-but-not-yet-seen allocation keeps counting. */
  reservationTtlSeconds: number;
  /**
   * T7: namespace label and annotation keys only privileged subjects may add, change or remove. An entry
   * is an exact key or a prefix ending in `*` (`pod-security.kubernetes.io/*`).
   */
  protectedNamespaceMetadata: { labels: string[]; annotations: string[] };
}

export const DEFAULT_CONFIG: TenantgateConfig = {
  clusterName: '',
  privileged: {
    // Argo CD's application controller is deliberately absent (ADR 0007): list the identity that syncs
    // the platform's Project repository explicitly.
    users: ['system:serviceaccount:tenantgate-system:tenantgate-controller'],
    groups: ['system:masters'],
  },
  reserved: { names: ['default'], prefixes: ['kube-', 'openshift-', 'tenantgate-'] },
  namespacePrefix: '{project}-',
  requireProjectForUsers: true,
  headroomWarningThreshold: 0.1,
  resyncPeriodSeconds: 300,
  systemNamespace: 'tenantgate-system',
  crossReplicaReservation: true,
  reservationTtlSeconds: 30,
  protectedNamespaceMetadata: {
    labels: ['pod-security.kubernetes.io/*', 'tenantgate.io/*'],
    annotations: [
      'tenantgate.io/*',
      'scheduler.alpha.kubernetes.io/node-selector',
      'scheduler.alpha.kubernetes.io/defaultTolerations',
      'scheduler.alpha.kubernetes.io/tolerationsWhitelist',
    ],
  },
};

export class ConfigError extends Error {}

type Json = Record<string, unknown>;

function pick<T>(obj: Json, key: string, kind: 'string' | 'boolean' | 'number' | 'string[]', fallback: T, where: string): T {
  const value = obj[key];
  if (value === undefined || value === null) return fallback;
  const ok =
    kind === 'string[]'
      ? Array.isArray(value) && value.every((v) => typeof v === 'string')
      : typeof value === kind;
  if (!ok) {
    throw new ConfigError(`${where}: field ${key} is ${JSON.stringify(value)}; it must be a ${kind === 'string[]' ? 'list of strings' : kind}`);
  }
  return value as T;
}

/** Parses `tenantgate.yaml` text; unknown keys are errors so typos do not silently fall back to defaults. */
export function parseConfig(text: string, where = 'tenantgate.yaml'): TenantgateConfig {
  const doc = (parseYaml(text) ?? {}) as unknown;
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError(`${where}: must be a YAML mapping`);
  return configFromObject(doc as Json, where);
}

const KNOWN_KEYS = new Set([
  'apiVersion', 'kind', 'clusterName', 'privileged', 'reserved', 'namespacePrefix', 'requireProjectForUsers',
  'headroomWarningThreshold', 'resyncPeriodSeconds', 'systemNamespace', 'crossReplicaReservation', 'reservationTtlSeconds', 'protectedNamespaceMetadata',
]);

export function configFromObject(obj: Json, where = 'tenantgate.yaml'): TenantgateConfig {
  for (const key of Object.keys(obj)) {
    if (!KNOWN_KEYS.has(key)) throw new ConfigError(`${where}: unknown field ${key}; allowed: ${[...KNOWN_KEYS].join(', ')}`);
  }
  const d = DEFAULT_CONFIG;
  const privileged = (obj.privileged ?? {}) as Json;
  const reserved = (obj.reserved ?? {}) as Json;
  const protectedMetadata = (obj.protectedNamespaceMetadata ?? {}) as Json;
  const config: TenantgateConfig = {
    clusterName: pick(obj, 'clusterName', 'string', d.clusterName, where),
    privileged: {
      users: pick(privileged, 'users', 'string[]', d.privileged.users, `${where} privileged`),
      groups: pick(privileged, 'groups', 'string[]', d.privileged.groups, `${where} privileged`),
    },
    reserved: {
      names: pick(reserved, 'names', 'string[]', d.reserved.names, `${where} reserved`),
      prefixes: pick(reserved, 'prefixes', 'string[]', d.reserved.prefixes, `${where} reserved`),
    },
    namespacePrefix: pick(obj, 'namespacePrefix', 'string', d.namespacePrefix, where),
    requireProjectForUsers: pick(obj, 'requireProjectForUsers', 'boolean', d.requireProjectForUsers, where),
    headroomWarningThreshold: pick(obj, 'headroomWarningThreshold', 'number', d.headroomWarningThreshold, where),
    resyncPeriodSeconds: pick(obj, 'resyncPeriodSeconds', 'number', d.resyncPeriodSeconds, where),
    systemNamespace: pick(obj, 'systemNamespace', 'string', d.systemNamespace, where),
    crossReplicaReservation: pick(obj, 'crossReplicaReservation', 'boolean', d.crossReplicaReservation, where),
    reservationTtlSeconds: pick(obj, 'reservationTtlSeconds', 'number', d.reservationTtlSeconds, where),
    protectedNamespaceMetadata: {
      labels: pick(protectedMetadata, 'labels', 'string[]', d.protectedNamespaceMetadata.labels, `${where} protectedNamespaceMetadata`),
      annotations: pick(protectedMetadata, 'annotations', 'string[]', d.protectedNamespaceMetadata.annotations, `${where} protectedNamespaceMetadata`),
    },
  };
  if (!config.namespacePrefix.includes('{project}')) {
    throw new ConfigError(`${where}: namespacePrefix ${JSON.stringify(config.namespacePrefix)} must contain {project}`);
  }
  if (!(config.headroomWarningThreshold >= 0 && config.headroomWarningThreshold < 1)) {
    throw new ConfigError(`${where}: headroomWarningThreshold ${config.headroomWarningThreshold} must be in [0, 1)`);
  }
  return config;
}

export function projectPrefix(config: TenantgateConfig, project: string): string {
  return config.namespacePrefix.replaceAll('{project}', project);
}

export function isPrivileged(config: TenantgateConfig, user: { username?: string; groups?: string[] }): boolean {
  if (user.username && config.privileged.users.includes(user.username)) return true;
  return (user.groups ?? []).some((g) => config.privileged.groups.includes(g));
}
