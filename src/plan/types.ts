/**
 * What `tenantgate plan` computes: plain JSON (quantities in Kubernetes' canonical form), so the
 * `--output json` of a plan from live clusters and of one from snapshot files compare equal.
 */
import type { ProjectBudgetJson } from '../validate/budget.js';
import type { NamespaceObject, Project, ResourceQuotaObject, RuleId } from '../validate/types.js';

/** What one cluster holds now, as `tenantgate snapshot` writes it (or as read live). */
export interface LiveState {
  /** The cluster name (the key of `spec.clusters`, render's ARGOCD_ENV_CLUSTER). */
  cluster: string;
  /** Where it came from, for people: "context kind-local", "snapshot local.yaml". Not in the plan's JSON. */
  source?: string;
  /** When it was read (RFC 3339). */
  takenAt?: string;
  projects: Project[];
  namespaces: NamespaceObject[];
  quotas: ResourceQuotaObject[];
  /**
   * The objects of the project namespaces the allow-lists judge (Pods, Services, claims, Ingresses,
   * Gateway API objects, ResourceClaims), when they were read (`tenantgate snapshot` and the live
   * reader of `plan --cluster` read them): a narrowed list is checked against them (src/plan/allow-lists.ts).
   */
  objects?: Array<Record<string, unknown>>;
}

export type EntryChange = 'added' | 'removed' | 'changed' | 'unchanged';

export interface ResourceLine {
  resource: string;
  budgetBefore?: string;
  budgetAfter?: string;
  allocatedBefore: string;
  allocatedAfter: string;
  /** What the namespaces use after the change (the quotas' status.used; removed namespaces no longer count). */
  used: string;
  headroomAfter?: string;
  /** headroomAfter / budgetAfter in whole percent (negative when over budget). */
  headroomPercent?: number;
}

export interface PlanFinding {
  rule: RuleId;
  message: string;
  /** The object whose sync is refused ("ResourceQuota web-frontend/tenantgate-quota"), when one is. */
  object?: string;
  /**
   * `webhook`: the admission webhook would refuse the object; `plan`: found by plan (Q6, Q7, objects a narrowed
   * allow-list strands).
   */
  by: 'webhook' | 'plan';
}

export interface PlanEntry {
  project: string;
  tenant: string;
  cluster: string;
  change: EntryChange;
  resources: ResourceLine[];
  namespaces: {
    /** Declared for this cluster after the change and not before. */
    added: string[];
    /** Declared before and not after (Argo CD prunes them), or all of a removed project's. */
    removed: string[];
    /** Declared before and after with another quota. */
    changed: string[];
    /** Labelled for the project on the cluster but declared nowhere: a tenant made them. */
    selfService: string[];
    countBefore: number;
    countAfter: number;
    maxNamespaces?: number;
  };
  before: ProjectBudgetJson | null;
  after: ProjectBudgetJson | null;
  /**
   * The bursts the change adds, changes or removes, and the active or upcoming ones
   * (docs/budgets.md#bursts); absent when none.
   */
  bursts?: string[];
  /** What the allocation costs per month before and after, when tenantgate.yaml has pricing (docs/budgets.md#cost). */
  cost?: CostLine;
  findings: PlanFinding[];
  /** D4: what a removal deletes and the confirmations it will ask for; warnings, never a refusal. Absent when none. */
  warnings?: PlanFinding[];
}

/** Monthly amounts as plain decimals with 2 places, rounded up to the cent ("1350.00"). */
export interface CostLine {
  currency: string;
  before: string;
  after: string;
  /** after − before ("230.00", "-12.50"). */
  change: string;
  /** spec.costBudget.monthly after the change. */
  budget?: string;
}

export interface RollupLine {
  resource: string;
  budget?: string;
  allocated: string;
  used: string;
  headroom?: string;
  headroomPercent?: number;
  /** cluster → headroom after (and percent), for clusters that budget the resource. */
  perCluster: Record<string, { headroom?: string; headroomPercent?: number }>;
}

export interface ProjectRollup {
  project: string;
  clusters: string[];
  resources: RollupLine[];
}

/** One member of a fleet roll-up (docs/adr/0039-fleet-budgets.md). */
export interface FleetMemberLine {
  /** What its namespaces hold after the change; absent for a former member (it only gives back). */
  allocated?: string;
  /**
   * `live`: read from the cluster (self-service namespaces included); `declared`: plan was not given the cluster, its
   * declarations count.
   */
  counted?: 'live' | 'declared';
  /** What its namespaces use (quotas' status.used), when plan read the cluster. */
  used?: string;
  /** Its share of the fleet budget on the hub, and the part it offers to lend; when plan read the hub. */
  share?: string;
  lendable?: string;
}

export interface FleetLine {
  resource: string;
  budgetBefore?: string;
  budgetAfter: string;
  /** Σ over the members of what their namespaces hold after the change. */
  allocated: string;
  used: string;
  /** budgetAfter − allocated: room the fleet still has (negative when over). */
  headroom: string;
  headroomPercent?: number;
  /** Σ shares the members hold on the hub, and budgetAfter − that (room no member holds); when plan read the hub. */
  shares?: string;
  pool?: string;
  perMember: Record<string, FleetMemberLine>;
}

export interface FleetRollup {
  project: string;
  /** spec.fleet.clusters after the change. */
  members: string[];
  /** Clusters no longer in spec.fleet.clusters that still hold a share on the hub. */
  formerMembers?: string[];
  /** Whether the hub's FleetBudget was read (`--hub`): 'not-read', 'missing' (none there yet), 'read', 'unreadable'. */
  hub: 'not-read' | 'missing' | 'read' | 'unreadable';
  hubProblems?: string[];
  resources: FleetLine[];
  /** F1 (allocation above the new fleet budget), F2 (the new budget below the shares held). */
  findings: PlanFinding[];
}

export interface Plan {
  /** The git revision compared with; absent when the live Projects were the "before". */
  base?: string;
  clusters: Array<{ name: string; takenAt?: string }>;
  /** Whether any project differs on any cluster between before and after. */
  changed: boolean;
  entries: PlanEntry[];
  /** Per project across clusters (only with more than one cluster). */
  rollup: ProjectRollup[];
  /** Per Project with spec.fleet (after the change): the fleet budget, shares, allocation, headroom. */
  fleet: FleetRollup[];
  /** Findings in all entries and fleet roll-ups; the plan fails when this is not 0. */
  findings: number;
}
