/** Domain types shared by every entry point. Plain data, no I/O. */
import type { Quantity } from '../quantity/quantity.js';
import type { PodSecurityLevels } from './pod-security.js';

export const API_GROUP = 'tenantgate.io';
export const API_VERSION = 'tenantgate.io/v1alpha1';
export const PROJECT_KIND = 'Project';

export const LABEL_PROJECT = 'tenantgate.io/project';
export const LABEL_TENANT = 'tenantgate.io/tenant';
export const ANNOTATION_PROJECT_UID = 'tenantgate.io/project-uid';
export const FINALIZER_CASCADE = 'tenantgate.io/cascade-delete';
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'tenantgate';
export const LABEL_NAMESPACE_NAME = 'kubernetes.io/metadata.name';
/** The ResourceQuota tenantgate writes in a project namespace (render and the controller's default). */
export const DEFAULT_QUOTA_NAME = 'tenantgate-quota';
/**
 * Prefix of a project's headroom ledger ConfigMap in the system namespace (the webhook writes it, the controller
 * deletes it with the project).
 */
export const LEDGER_PREFIX = 'tenantgate-ledger-';

export type RuleId =
  | 'N1'
  | 'N2'
  | 'N3'
  | 'N4'
  | 'T1'
  | 'T2'
  | 'T3'
  | 'T4'
  | 'T5'
  | 'T6'
  | 'T7'
  | 'T8'
  // the allow-list parameters (AllowList) are written only by subjects that may manage them cluster-wide (CEL,
  // src/validate/policies/allow-list-params-policy.ts)
  | 'T9'
  | 'Q1'
  | 'Q2'
  | 'Q3'
  | 'Q4'
  | 'Q5'
  | 'Q6'
  | 'Q7'
  | 'F1'
  | 'F2' // fleet budgets (docs/adr/0039-fleet-budgets.md), F2 also from the webhook on a fleet member
  | 'F3' // the hub's admission policy on FleetBudget status writes (ADR 0039; CEL, src/fleet/fleet-shares-policy.ts)
  | 'B1'
  | 'B2' // bursts: a burst's declaration (B1); a burst that has ended cannot be added or changed (B2) — docs/budgets.md
  | 'D1'
  | 'D2'
  | 'D3'
  | 'D4' // deletion (docs/deletion.md): who confirms, the breaker, the CRD, what a removal deletes
  // cost: a project's allocation priced by tenantgate.yaml's price sheet stays within spec.costBudget — docs/budgets.md
  | 'C1'
  // allow-lists: what a project's pods, Services and claims may use (src/validate/rules/allow-lists.ts,
  // docs/rules.md#allow-lists)
  | 'X1'
  | 'X2'
  | 'X3'
  | 'X4'
  | 'X5'
  | 'X6'
  | 'X7'
  | 'X8'
  | 'X9'
  | 'X10'
  // hostnames: under the project's suffixes (H1), IngressClasses (H2), no overlap across projects offline (H3),
  // GatewayClasses (H4)
  | 'H1'
  | 'H2'
  | 'H3'
  | 'H4'
  | 'S1'; // S1: the object does not match the Project schema

/** A path into the reviewed document, e.g. ['spec', 'namespaces', 0, 'name']. */
export type FieldPath = ReadonlyArray<string | number>;

export interface Violation {
  rule: RuleId;
  message: string;
  /** Where in the offending object (for file:line:col). */
  path?: FieldPath;
  /** Which document the violation belongs to, when several are checked at once. */
  document?: number;
}

/** A ResourceList: resource name -> quantity as written (string or number). */
export type ResourceList = Record<string, string | number>;

export interface QuotaSpec {
  hard?: ResourceList;
}

export interface Subject {
  kind: 'User' | 'Group' | 'ServiceAccount';
  name: string;
  namespace?: string;
}

export interface DeclaredNamespace {
  name: string;
  cluster?: string;
  quota?: QuotaSpec;
  /** This namespace's quota per declared tier (scoped ResourceQuotas); else namespaceDefaults.tiers. */
  tiers?: PriorityTiers;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface LimitRangeDefaults {
  default?: ResourceList;
  defaultRequest?: ResourceList;
  max?: ResourceList;
  min?: ResourceList;
}

interface FleetBudgetSpec {
  /** Σ over the member clusters of their shares never exceeds `quota.hard`. */
  quota?: QuotaSpec;
  /** The member clusters (their names in `spec.clusters`, `ARGOCD_ENV_CLUSTER`) sharing the budget. */
  clusters?: string[];
}

/**
 * A budget per PriorityClass (docs/budgets.md): keyed by the PriorityClass name. `quota.hard` bounds
 * what the project's pods of that class request across its namespaces (scoped ResourceQuotas); a tier
 * without `quota` is allowed and bounded by the project's budget only. Pods of a PriorityClass that is
 * not a declared tier are refused by the apiserver's own quota (a zero `pods` quota scoped to the
 * other classes).
 */
export type PriorityTiers = Record<string, { quota?: QuotaSpec }>;

/**
 * A time-bound increase of the budget, approved in git (docs/budgets.md): while `from ≤ now < until`
 * the project's budget (and, with `namespace`, that namespace's quota) grows by `quota.hard`.
 */
export interface Burst {
  /** Unique in the project; a burst that has ended is kept as is or removed, never changed (B2). */
  name: string;
  /** RFC 3339 instants. */
  from: string;
  until: string;
  reason: string;
  quota: QuotaSpec;
  /** A declared namespace whose quota the controller raises by `quota.hard` while the burst is active. */
  namespace?: string;
  /** Which cluster's budget it raises; every cluster when absent. */
  cluster?: string;
}

/** A monthly cost ceiling, in the currency of tenantgate.yaml's `pricing` (docs/budgets.md). */
interface CostBudget {
  /** A decimal amount per month, e.g. "1500" or "1499.99". */
  monthly: string;
}

export interface ProjectSpec {
  tenant: string;
  displayName?: string;
  owners?: Subject[];
  quota?: QuotaSpec;
  clusters?: Record<string, { quota?: QuotaSpec }>;
  /** A budget for the fleet as a whole, shared by `clusters`, enforced on the members (ADR 0039). */
  fleet?: FleetBudgetSpec;
  /** Budgets per PriorityClass (docs/budgets.md). */
  tiers?: PriorityTiers;
  /** Time-bound increases approved in git (docs/budgets.md). */
  bursts?: Burst[];
  /** What the project's allocation may cost per month (docs/budgets.md). */
  costBudget?: CostBudget;
  maxNamespaces?: number;
  /** What the Project's deletion does to its namespaces; absent: tenantgate.yaml deletion.policy (ADR 0096). */
  deletionPolicy?: 'Delete' | 'Orphan';
  namespaceDefaults?: { quota?: QuotaSpec; limitRange?: LimitRangeDefaults; tiers?: PriorityTiers };
  /** Pod Security Standards levels by mode; a mode not given takes tenantgate.yaml's `podSecurity`. */
  podSecurity?: Partial<PodSecurityLevels>;
  networkIsolation?: boolean;
  /**
   * With networkIsolation: what the isolation NetworkPolicy allows besides the project's own namespaces (and DNS out).
   */
  network?: NetworkBaseline;
  namespaces?: DeclaredNamespace[];
  /**
   * What the project's pods, Services, routes and claims may use; a field not given takes tenantgate.yaml's `allow`
   * (src/validate/allow-lists.ts).
   */
  allow?: AllowLists;
}

/**
 * What the isolation NetworkPolicy of a project namespace allows besides traffic within the project and
 * DNS to kube-system (docs/network.md). A field a Project does not give takes tenantgate.yaml's `network`.
 */
export interface NetworkBaseline {
  /** Where the project's pods may connect besides its own namespaces and DNS. */
  egress?: {
    /** Namespaces (by name) the pods may reach. */
    namespaces?: string[];
    /** CIDRs the pods may reach (outside the cluster: databases, APIs). */
    cidrs?: string[];
  };
  /** Who may connect to the project's pods besides its own namespaces. */
  allowFrom?: {
    /** The namespaces of every project of the same tenant (label tenantgate.io/tenant). Default false. */
    sameTenant?: boolean;
    /** Namespaces (by name), such as the ingress controller's. */
    namespaces?: string[];
  };
}

/** A toleration as a Pod carries it (core/v1 Toleration). */
export interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: '' | 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  tolerationSeconds?: number;
}

/**
 * What a project's objects may use (rules X1–X9, H1–H3, docs/rules.md#allow-lists). Every field is optional;
 * a field a Project does not give takes tenantgate.yaml's `allow` (field by field, `services` key by key).
 */
export interface AllowLists {
  /** PriorityClass names; absent: any class but `system-*`, which a Project must name itself. */
  priorityClasses?: string[];
  services?: {
    /** CIDRs `spec.externalIPs` may take; absent or empty: no externalIPs. */
    externalIPs?: string[];
    /** Service types besides ClusterIP; absent or empty: ClusterIP only. */
    types?: Array<'NodePort' | 'LoadBalancer' | 'ExternalName'>;
    /** When given: a LoadBalancer Service sets spec.loadBalancerSourceRanges, each inside one of these CIDRs. */
    loadBalancerSourceRanges?: string[];
  };
  hostnames?: {
    /**
     * DNS suffixes the project's hostnames end with (`shop.example.com` admits itself and `*.shop.example.com`);
     * absent: no hostname.
     */
    suffixes?: string[];
    /** Whether a hostname may be a wildcard (`*.shop.example.com`). Default false. */
    wildcards?: boolean;
  };
  /** IngressClass names an Ingress may name; absent: any. */
  ingressClasses?: string[];
  /** GatewayClass names a Gateway may name (`spec.gatewayClassName`); absent: any. */
  gatewayClasses?: string[];
  /** Which PersistentVolumes a claim may bind by `spec.volumeName` (X10); the project's own always. */
  persistentVolumes?: {
    /**
     * Whether a claim may name a PersistentVolume of no project (no label, no claim from a project
     * namespace). Default false.
     */
    unowned?: boolean;
  };
  /** StorageClass names a PersistentVolumeClaim may name; absent: any. */
  storageClasses?: string[];
  /** RuntimeClass names a Pod may name; absent: any. */
  runtimeClasses?: string[];
  /** DeviceClass names a ResourceClaim (or template) may request; absent: any. */
  deviceClasses?: string[];
  /** Where the project's pods run: they carry this node selector and no other toleration than these. */
  nodePlacement?: {
    nodeSelector?: Record<string, string>;
    /** Tolerations a pod may carry (besides node.kubernetes.io/* ones); absent or empty: none. */
    tolerations?: Toleration[];
  };
  /** Image prefixes (`registry.example.com/`, `ghcr.io/acme/`); absent: any image. */
  registries?: string[];
}

export interface ObjectMeta {
  name?: string;
  /**
   * Set instead of a name on CREATE: the apiserver appends five random characters (after the mutating webhooks, before
   * the validating ones).
   */
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: Array<Record<string, unknown>>;
  deletionTimestamp?: string;
  creationTimestamp?: string;
}

export interface ProjectCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

export type NamespaceHealth =
  'Healthy' | 'Missing' | 'Terminating' | 'QuotaMissing' | 'QuotaMismatch' | 'LabelMismatch';

export interface ProjectStatus {
  phase?: 'Active' | 'Terminating' | 'Degraded';
  observedGeneration?: number;
  allocated?: Record<string, string>;
  used?: Record<string, string>;
  headroom?: Record<string, string>;
  namespaces?: Array<{ name: string; health: NamespaceHealth; phase?: string; message?: string }>;
  namespaceCount?: number;
  /** Short text for the printer column, e.g. "requests.cpu 16/20". */
  budgetUse?: string;
  conditions?: ProjectCondition[];
}

export interface Project {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: ProjectSpec;
  status?: ProjectStatus;
}

export interface NamespaceObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  /**
   * `kubernetes` (the apiserver adds it on CREATE); any other entry only the namespaces/finalize subresource removes.
   */
  spec?: { finalizers?: string[] };
  status?: { phase?: string; conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
}

export interface ResourceQuotaObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: { hard?: ResourceList; scopes?: string[]; scopeSelector?: unknown };
  status?: { hard?: ResourceList; used?: ResourceList };
}

/**
 * What the rules may know about the cluster. Offline it is built from the declarations; the webhook
 * feeds it from informer caches. Lookups only: implementations must not do I/O.
 */
export interface Snapshot {
  projects(): Iterable<Project>;
  project(name: string): Project | undefined;
  namespace(name: string): NamespaceObject | undefined;
  /** Namespaces carrying the project label for this project. */
  namespacesOfProject(project: string): Iterable<NamespaceObject>;
  quotasInNamespace(namespace: string): Iterable<ResourceQuotaObject>;
  /**
   * Optional memo of `effectiveQuota(quotasInNamespace(namespace))` (quota-hold.ts); a snapshot that
   * offers it must forget a namespace's entry whenever one of its quotas changes. The result is read-only (`Resources`
   * is a ReadonlyMap).
   */
  effectiveQuotaOf?(namespace: string): ReadonlyMap<string, Quantity>;
  /** Optional memo of `quotaHold(quotasInNamespace(namespace))`, forgotten like effectiveQuotaOf. */
  heldQuotaOf?(namespace: string): ReadonlyMap<string, Quantity>;
  /**
   * What a namespace's unscoped quotas last reported in use (`status.used`) when its last unscoped
   * quota was deleted; kept until the namespace is gone or an unscoped quota appears again; nothing
   * for a namespace seen live whose quotas were not seen to go; undefined when unknown (first seen
   * terminating). A terminating namespace without quotas counts with it (`terminatingWithoutQuota` in
   * shares.ts), with the whole budget when it is unknown.
   */
  lastQuotaUsageOf?(namespace: string): ReadonlyMap<string, Quantity> | undefined;
  /**
   * Optional memo of a project's observed shares on a cluster (`projectShares` in shares.ts, no
   * change, nothing pending); a snapshot that offers it must forget or update a project's entry whenever
   * its Project, the namespaces labelled for it or their quotas change, and must not answer for an
   * instant `at` whose budget differs from the one the entry was computed with (`sharesHoldAt` in
   * shares.ts: a burst started or ended). The result is read-only (`Resources` is a ReadonlyMap).
   */
  projectSharesOf?(project: Project, cluster: string, at: number): ProjectShares;
  /**
   * The fleet-cap layer of a project's budget on a cluster (validate/budget/layers.ts): per
   * fleet-budgeted resource the most this member cluster may allocate; undefined when the project is
   * not capped here. Offered by the snapshot a fleet member decides with (src/fleet/member-budget.ts).
   */
  budgetCapOf?(project: Project, cluster: string): Resources | undefined;
}

/** Parsed resource lists: resource name → quantity. */
export type Resources = ReadonlyMap<string, Quantity>;

export interface NamespaceShare {
  namespace: string;
  resources: Resources;
  /** True when the share comes (partly) from namespaceDefaults because no quota covers it yet. */
  defaulted: boolean;
}

export interface ProjectShares {
  readonly project: Project;
  readonly cluster: string;
  /** The instant (ms since the epoch) the shares were computed at. */
  readonly at: number;
  /** The project's budget list at `at` (budgetListIn): the shares hold at any instant with this same list. */
  readonly budget: ResourceList;
  readonly shares: readonly NamespaceShare[];
  /** The observed share of `namespace`, when the project has it. */
  shareOf(namespace: string): NamespaceShare | undefined;
  /** Σ of the shares of every namespace but `namespace` (all of them when it has none). */
  othersTotal(namespace: string): Resources;
}
