/** Cluster configuration: one YAML file, defaults built in. Parsing only, no I/O here. */
import { parse as parseYaml } from 'yaml';
import { CONFIG_SCHEMA, configErrors, DELETION_POLICIES, VISIBILITIES } from './schema.js';
import type { PodSecurityLevels } from '../validate/pod-security.js';
import type { AllowLists, NetworkBaseline, ResourceList } from '../validate/types.js';
import { Quantity } from '../quantity/quantity.js';
import { countedName } from '../validate/counted-name.js';
import { nonCanonicalCidrs } from '../validate/rules/cidrs.js';

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
   * Q5: a ledger entry leaves once the writer's cache shows its object, and replicas catch up to the
   * ledger's settled marks before deciding (docs/adr/0003-headroom-ledger.md). Switch
   * it on only once every webhook replica runs a version that knows it; off one TTL before a downgrade.
   */
  ledgerSettlement: boolean;
  /**
   * Who sees what (docs/visibility.md): `all`, every tenant reads every Project and lists namespaces;
   * `own`, a tenant reads only the Projects it owns and their namespaces (the controller keeps a
   * per-project ClusterRole for the owners; the chart's tenant RBAC grants no cluster-wide reads).
   */
  visibility: Visibility;
  /**
   * T7: namespace label and annotation keys only privileged subjects may add, change or remove, besides
   * the ones that grant power, which are protected whatever this lists (GRANTING_NAMESPACE_METADATA,
   * src/validate/granting-metadata.ts). An entry is an exact key or a prefix ending in `*` (`example.com/*`).
   */
  protectedNamespaceMetadata: { labels: string[]; annotations: string[] };
  /**
   * Kubernetes' own controllers (namespace controller, garbage collector, quota controller) by user
   * name. They are neither privileged nor owners, yet must finish what an authorised subject started:
   * deleting the contents of a terminating namespace, collecting dependents, writing status
   * (docs/adr/0002-rule-engine.md).
   */
  systemControllers: string[];
  /** The Pod Security Standards levels of project namespaces unless a Project sets its own. */
  podSecurity: PodSecurityLevels;
  /** The tenants' Argo CD AppProjects `tenantgate render --app-projects` emits (docs/argocd.md). */
  argocd: ArgoCdConfig;
  /** This cluster as a member of a fleet sharing Projects' fleet budgets (docs/fleet.md). */
  fleet: FleetMemberConfig;
  /**
   * The price sheet (docs/budgets.md#cost): what a project's allocation costs, for `spec.costBudget`
   * (C1), the budget view, the plugin, the metrics and `tenantgate plan`. Absent (the default): no
   * cost anywhere, and a Project with a costBudget is refused (C1) rather than left unchecked.
   */
  pricing?: PricingConfig;
  /**
   * The allow-lists of every Project, field by field, where a Project gives none (docs/rules.md#allow-lists);
   * `{project}` and `{tenant}` in hostname suffixes stand for the project's name and tenant. Default:
   * nothing, so what attacks other tenants (system-* PriorityClasses, externalIPs, NodePort and
   * LoadBalancer Services, hostnames, tolerations) is refused and the rest is open.
   */
  allow: AllowLists;
  /** The network baseline of every Project with networkIsolation, field by field, where a Project gives none (docs/network.md). */
  network: NetworkBaseline;
  /** What a Project's deletion does to its namespaces, and the breaker (docs/adr/0096-deletion-loses-no-data.md). */
  deletion: DeletionConfig;
}

export type DeletionPolicy = (typeof DELETION_POLICIES)[number];

export interface DeletionConfig {
  /** A Project without `spec.deletionPolicy`: `Delete` (cascade, asking before data goes) or `Orphan` (release). */
  policy: DeletionPolicy;
  /** D2: more deletions than this within the window pause every cascade until an operator resumes. */
  breaker: { windowSeconds: number; maxProjects: number; maxShare: number };
}

export interface PricingConfig {
  /** ISO 4217 code (USD, EUR): the currency of every price and of every Project's costBudget. */
  currency: string;
  /** Hours a month is billed for (730: 365 × 24 / 12, as the cloud bills count). */
  hoursPerMonth: number;
  /** Resource name (as a ResourceQuota counts it, without a tier) → the price per hour of `per` of it. */
  perHour: Record<string, { price: string; per: string | number }>;
}

/** Hours of a month when `pricing.hoursPerMonth` is not given. */
const DEFAULT_HOURS_PER_MONTH = 730;

interface FleetMemberConfig {
  /**
   * The hub's kubeconfig file (the Secret tenantgate-fleet-hub, mounted). Empty (the default): this
   * cluster is no fleet member and every Project keeps its per-cluster budget. Set: `clusterName` must
   * be set and `crossReplicaReservation` on (the enforced limit lives in the headroom ledger).
   */
  hubKubeconfig: string;
  /** Free room to ask for beyond a growth's need, per fleet-budgeted resource (a chunk: the next growths need no hub write). */
  keep: ResourceList;
  /** Give back only free room above this (≥ keep); the band between keep and above is the hysteresis. */
  above: ResourceList;
  /**
   * The controller's give-back loop (docs/adr/0039-fleet-budgets.md): room held above `above` for
   * this long is offered to the other members (lendable). Default equal to giveBackAfterSeconds: no
   * offers, since a member's own growth does not take back what it offered (it asks the pool).
   */
  offerAfterSeconds: number;
  /** Room held above `above` for this long (≥ offerAfterSeconds) is given back to the pool, offered part included. */
  giveBackAfterSeconds: number;
  /** How often the controller's leader checks every fleet-budgeted Project against the hub. */
  checkEverySeconds: number;
}

export interface ArgoCdConfig {
  /** Argo CD's namespace: where the AppProjects go. */
  namespace: string;
  /**
   * The repositories a tenant's Applications may use (AppProject `sourceRepos`); `{tenant}` is replaced
   * with the tenant. Empty (the default): render refuses to emit AppProjects that would admit nothing.
   */
  sourceRepos: string[];
  /** The Argo CD destination server of namespaces without `cluster` (the cluster Argo CD runs in). */
  defaultServer: string;
  /** tenantgate cluster name → Argo CD server URL; a cluster not listed is matched by its Argo CD cluster name. */
  clusterServers: Record<string, string>;
  /**
   * With Argo CD's sync impersonation: the ServiceAccount a tenant's syncs run as (`namespace:name`, or
   * `name` in the destination namespace; `{tenant}` is replaced). Empty (the default): no
   * `destinationServiceAccounts`.
   */
  syncServiceAccount: string;
}

type Visibility = (typeof VISIBILITIES)[number];

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
  ledgerSettlement: true,
  visibility: 'all',
  // The keys that grant power (Pod Security, DRA admin access, PodNodeSelector…) are protected besides these.
  protectedNamespaceMetadata: { labels: ['tenantgate.io/*'], annotations: ['tenantgate.io/*'] },
  systemControllers: [
    // kube-controller-manager with --use-service-account-credentials (kubeadm, kind, EKS, GKE, AKS)…
    'system:serviceaccount:kube-system:namespace-controller',
    'system:serviceaccount:kube-system:generic-garbage-collector',
    'system:serviceaccount:kube-system:resourcequota-controller',
    // …and without it: one identity for every controller.
    'system:kube-controller-manager',
  ],
  podSecurity: { enforce: 'baseline', warn: 'restricted', audit: 'restricted' },
  argocd: {
    namespace: 'argocd',
    sourceRepos: [],
    defaultServer: 'https://kubernetes.default.svc',
    clusterServers: {},
    syncServiceAccount: '',
  },
  fleet: {
    hubKubeconfig: '',
    keep: {},
    above: {},
    offerAfterSeconds: 300,
    giveBackAfterSeconds: 900,
    checkEverySeconds: 60,
  },
  allow: {},
  network: {},
  deletion: { policy: 'Delete', breaker: { windowSeconds: 600, maxProjects: 3, maxShare: 0.1 } },
};

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

/** A section of the configuration: each key of `defaults` as `given` sets it (neither null nor undefined), else its default. */
function withDefaults<T extends object>(given: Partial<T> | undefined, defaults: T): T {
  const out = { ...defaults };
  for (const key of Object.keys(defaults) as Array<keyof T>) {
    const value = given?.[key];
    if (value !== undefined && value !== null) out[key] = value as T[keyof T];
  }
  return out;
}

/** Validates a parsed configuration against CONFIG_SCHEMA and fills in the defaults. Throws ConfigError with every problem. */
export function configFromObject(doc: unknown, where = 'tenantgate.yaml'): TenantgateConfig {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new ConfigError(
      `${where}: must be a YAML mapping of the keys ${Object.keys(CONFIG_SCHEMA.properties).join(', ')}`,
    );
  const errors = configErrors(doc, where);
  if (errors.length > 0) throw new ConfigError(errors.join('\n'));
  const given = doc as Partial<TenantgateConfig>;
  const d = DEFAULT_CONFIG;
  const config: TenantgateConfig = {
    clusterName: given.clusterName ?? d.clusterName,
    privileged: withDefaults(given.privileged, d.privileged),
    reserved: withDefaults(given.reserved, d.reserved),
    namespacePrefix: given.namespacePrefix ?? d.namespacePrefix,
    requireProjectForUsers: given.requireProjectForUsers ?? d.requireProjectForUsers,
    headroomWarningThreshold: given.headroomWarningThreshold ?? d.headroomWarningThreshold,
    resyncPeriodSeconds: given.resyncPeriodSeconds ?? d.resyncPeriodSeconds,
    systemNamespace: given.systemNamespace ?? d.systemNamespace,
    crossReplicaReservation: given.crossReplicaReservation ?? d.crossReplicaReservation,
    reservationTtlSeconds: given.reservationTtlSeconds ?? d.reservationTtlSeconds,
    ledgerSettlement: given.ledgerSettlement ?? d.ledgerSettlement,
    visibility: given.visibility ?? d.visibility,
    protectedNamespaceMetadata: withDefaults(given.protectedNamespaceMetadata, d.protectedNamespaceMetadata),
    systemControllers: given.systemControllers ?? d.systemControllers,
    podSecurity: withDefaults(given.podSecurity, d.podSecurity),
    argocd: withDefaults(given.argocd, d.argocd),
    fleet: withDefaults(given.fleet, d.fleet),
    allow: given.allow ?? d.allow,
    network: given.network ?? d.network,
    deletion: {
      policy: given.deletion?.policy ?? d.deletion.policy,
      breaker: withDefaults(given.deletion?.breaker, d.deletion.breaker),
    },
  };
  if (given.pricing) {
    const perHour: PricingConfig['perHour'] = {};
    for (const [resource, p] of Object.entries(given.pricing.perHour))
      perHour[resource] = { price: p.price, per: p.per ?? '1' };
    config.pricing = {
      currency: given.pricing.currency,
      hoursPerMonth: given.pricing.hoursPerMonth ?? DEFAULT_HOURS_PER_MONTH,
      perHour,
    };
  }
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
        `${where}: fleet.above.${resource} is ${String(config.fleet.above[resource])}, below fleet.keep.${resource} ${String(config.fleet.keep[resource])}; allowed: at least keep (the band between them is the hysteresis)`,
      );
  }
  if (config.fleet.giveBackAfterSeconds < config.fleet.offerAfterSeconds)
    out.push(
      `${where}: fleet.giveBackAfterSeconds is ${config.fleet.giveBackAfterSeconds}, below fleet.offerAfterSeconds ${config.fleet.offerAfterSeconds}; allowed: at least offerAfterSeconds (room is offered first, given back later)`,
    );
  if (!isFleetMember(config)) return out;
  if (config.clusterName === '')
    out.push(
      `${where}: fleet.hubKubeconfig is set but clusterName is ""; allowed: this cluster's name in the Projects' spec.fleet.clusters`,
    );
  if (!config.crossReplicaReservation)
    out.push(
      `${where}: fleet.hubKubeconfig is set but crossReplicaReservation is false; allowed: true (a fleet member keeps its enforced limit in the headroom ledger, docs/adr/0039-fleet-budgets.md)`,
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
        `${where}: pricing.perHour.${resource}.per is ${JSON.stringify(per)}; allowed: a quantity above 0 such as 1, 1Gi (the price is per that much)`,
      );
    const counted = countedName(resource);
    if (counted !== resource && Object.hasOwn(perHour, counted)) {
      out.push(
        `${where}: pricing.perHour.${resource} and pricing.perHour.${counted} price the same quantity (a ResourceQuota counts a pod's ${resource} requests under both names); allowed: one of them`,
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
