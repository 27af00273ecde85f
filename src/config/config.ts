/** Cluster configuration: one YAML file, defaults built in. Parsing only, no I/O here. */
import { parse as parseYaml } from 'yaml';
import { CONFIG_SCHEMA, configErrors, type DELETION_POLICIES } from './schema.js';
import { withSchemaDefaults, type Resolved } from './schema-types.js';
import type { ResourceList } from '../validate/types.js';
import { Quantity } from '../quantity/quantity.js';
import { countedName } from '../validate/counted-name.js';
import { nonCanonicalCidrs } from '../validate/rules/cidrs.js';

/** tenantgate.yaml once parsed, its defaults filled in: what CONFIG_SCHEMA (schema.ts) declares, option by option. */
export type TenantgateConfig = Omit<Resolved<typeof CONFIG_SCHEMA>, 'apiVersion' | 'kind'>;

export type DeletionPolicy = (typeof DELETION_POLICIES)[number];
export type DeletionConfig = TenantgateConfig['deletion'];
export type PricingConfig = NonNullable<TenantgateConfig['pricing']>;
export type ArgoCdConfig = TenantgateConfig['argocd'];

/** The built-in configuration: every default of CONFIG_SCHEMA. */
export const DEFAULT_CONFIG: TenantgateConfig = resolved({});

/** A document valid against CONFIG_SCHEMA with its defaults filled in, without apiVersion and kind. */
function resolved(doc: object): TenantgateConfig {
  const {
    apiVersion: _apiVersion,
    kind: _kind,
    ...config
  } = withSchemaDefaults(doc, CONFIG_SCHEMA) as Resolved<typeof CONFIG_SCHEMA>;
  return config;
}

export class ConfigError extends Error {}

/** Parses `tenantgate.yaml` text; unknown keys are errors so typos do not silently fall back to defaults. */
export function parseConfig(text: string, where = 'tenantgate.yaml'): TenantgateConfig {
  let doc: unknown;
  try {
    doc = parseYaml(text) ?? {};
  } catch (err) {
    throw new ConfigError(`${where}: not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  return configFromObject(doc, where);
}

/**
 * Validates a parsed configuration against CONFIG_SCHEMA and fills in the defaults. Throws
 * ConfigError with every problem.
 */
export function configFromObject(doc: unknown, where = 'tenantgate.yaml'): TenantgateConfig {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new ConfigError(
      `${where}: must be a YAML mapping of the keys ${Object.keys(CONFIG_SCHEMA.properties).join(', ')}`,
    );
  const errors = configErrors(doc, where);
  if (errors.length > 0) throw new ConfigError(errors.join('\n'));
  const config = resolved(doc);
  const fleetErrors = [
    ...fleetConfigErrors(config, where),
    ...pricingErrors(config, where),
    ...cidrErrors(config, where),
  ];
  if (fleetErrors.length > 0) throw new ConfigError(fleetErrors.join('\n'));
  return config;
}

/** The CIDRs of `network` and `allow` in canonical form (as a Project's, S1): the schema checks only their shape. */
function cidrErrors(config: TenantgateConfig, where: string): string[] {
  return nonCanonicalCidrs(config).map(
    ({ path, index, value, problem }) => `${where}: ${path.join('.')}[${index}] ${JSON.stringify(value)} ${problem}`,
  );
}

/** Whether this cluster takes part in a fleet (a hub kubeconfig is configured). */
export function isFleetMember(config: Pick<TenantgateConfig, 'fleet'>): boolean {
  return config.fleet.hubKubeconfig !== '';
}

/** What the schema cannot say about `fleet`: a member needs a name and the ledger; keep ≤ above. */
function fleetConfigErrors(config: TenantgateConfig, where: string): string[] {
  const out: string[] = [];
  const keep = parseQuantities(config.fleet.keep);
  const above = parseQuantities(config.fleet.above);
  for (const [key, list] of [
    ['keep', keep],
    ['above', above],
  ] as const) {
    for (const [resource, q] of list)
      if (q.sign() < 0) out.push(`${where}: fleet.${key}.${resource} is ${q.toString()}; allowed: a quantity ≥ 0`);
  }
  for (const [resource, limit] of above) {
    const k = keep.get(resource);
    if (k && limit.cmp(k) < 0)
      out.push(
        `${where}: fleet.above.${resource} is ${String(config.fleet.above[resource])}, below fleet.keep.` +
          `${resource} ${String(config.fleet.keep[resource])}; allowed: at least keep (the band between them is ` +
          `the hysteresis)`,
      );
  }
  if (config.fleet.giveBackAfterSeconds < config.fleet.offerAfterSeconds)
    out.push(
      `${where}: fleet.giveBackAfterSeconds is ${config.fleet.giveBackAfterSeconds}, below ` +
        `fleet.offerAfterSeconds ${config.fleet.offerAfterSeconds}; allowed: at least offerAfterSeconds (room is ` +
        `offered first, given back later)`,
    );
  if (!isFleetMember(config)) return out;
  if (config.clusterName === '')
    out.push(
      `${where}: fleet.hubKubeconfig is set but clusterName is ""; allowed: this cluster's name in the Projects' ` +
        `spec.fleet.clusters`,
    );
  if (!config.crossReplicaReservation)
    out.push(
      `${where}: fleet.hubKubeconfig is set but crossReplicaReservation is false; allowed: true (a fleet member ` +
        `keeps its enforced limit in the headroom ledger, docs/adr/0039-fleet-budgets.md)`,
    );
  return out;
}

/**
 * What the schema cannot say about `pricing`: each `per` is a quantity above zero, and no quantity has
 * two prices (`cpu` and `requests.cpu` are one quantity to Kubernetes' quota: counted-name.ts countedName).
 */
function pricingErrors(config: TenantgateConfig, where: string): string[] {
  const out: string[] = [];
  const perHour = config.pricing?.perHour ?? {};
  for (const [resource, { per }] of Object.entries(perHour)) {
    const q = Quantity.tryParse(per);
    if (q && q.sign() <= 0)
      out.push(
        `${where}: pricing.perHour.${resource}.per is ${JSON.stringify(per)}; allowed: a quantity above 0 such ` +
          `as 1, 1Gi (the price is per that much)`,
      );
    const counted = countedName(resource);
    if (counted !== resource && Object.hasOwn(perHour, counted)) {
      out.push(
        `${where}: pricing.perHour.${resource} and pricing.perHour.${counted} price the same quantity (a ` +
          `ResourceQuota counts a pod's ${resource} requests under both names); allowed: one of them`,
      );
    }
  }
  return out;
}

function parseQuantities(list: ResourceList): Map<string, Quantity> {
  const out = new Map<string, Quantity>();
  for (const [resource, value] of Object.entries(list)) {
    const q = Quantity.tryParse(String(value));
    if (q) out.set(resource, q);
  }
  return out;
}

export function projectPrefix(config: TenantgateConfig, project: string): string {
  return config.namespacePrefix.replaceAll('{project}', project);
}

/** Whether the subject is one of Kubernetes' own controllers listed in `systemControllers`. */
export function isSystemController(config: TenantgateConfig, user: { username?: string }): boolean {
  return user.username !== undefined && config.systemControllers.includes(user.username);
}

export function isPrivileged(config: TenantgateConfig, user: { username?: string; groups?: string[] }): boolean {
  if (user.username && config.privileged.users.includes(user.username)) return true;
  return (user.groups ?? []).some((g) => config.privileged.groups.includes(g));
}
