/**
 * The budget view (view.tenantgate.io/v1alpha1), pure: a request (method, path, query, Accept, the
 * caller the front proxy names) and the controller's cache in, a status and a JSON body out. No I/O:
 * the HTTPS edge (server.ts) authenticates the front proxy and writes the answer. Numbers come from
 * `projectBudget` (src/validate/budget.ts), the one budget arithmetic; nothing is stored, everything is
 * computed on request from the snapshot (docs/adr/0030-what-tenants-see.md).
 */
import {
  projectBudget,
  projectBudgetJson,
  usedIn,
  type ProjectBudget,
  type ProjectBudgetJson,
} from '../validate/budget.js';
import type { PricingConfig } from '../config/config.js';
import { priceSheet, projectCostJson, type ProjectCostJson } from '../validate/cost.js';
import { formatResources } from '../validate/resource-lists.js';
import { burstsJson, type BurstJson } from '../validate/bursts.js';
import { LABEL_PROJECT, type Project, type Snapshot, type Subject } from '../validate/types.js';
import { isOwner } from '../validate/rules/tenancy.js';
import { byMetadataName } from '../order.js';
import { budgetFleet, type BudgetFleetJson, type FleetSeen } from './fleet.js';
import { fleetProjectBudget } from '../fleet/give-back.js';

export const VIEW_GROUP = 'view.tenantgate.io';
const VIEW_VERSION = 'v1alpha1';
const VIEW_GROUP_VERSION = `${VIEW_GROUP}/${VIEW_VERSION}`;
export const VIEW_API_PATH = `/apis/${VIEW_GROUP_VERSION}`;

/** Who asks, as the apiserver authenticated them (the front proxy's headers, or the plugin's SelfSubjectReview). */
export interface Identity {
  username: string;
  groups: string[];
}

/** What a handler reads: the controller's cache (undefined until it has synced) and its cluster name. */
export interface ViewSource {
  snapshot(): Snapshot | undefined;
  /** tenantgate.yaml clusterName ('' unnamed): which budget of spec.clusters counts. */
  cluster: string;
  /** What the controller's fleet loop last saw of a project (fleet members only; src/view/fleet.ts). */
  fleet?(project: string): FleetSeen | undefined;
  /** tenantgate.yaml's price sheet: with it, every Budget and OwnedProject says what the allocation costs. */
  pricing?: PricingConfig;
}

/** Looks up what the fleet loop saw of a project (none outside fleet members). */
export type FleetLookup = (project: string) => FleetSeen | undefined;

export interface ViewRequest {
  method: string;
  /** The path without the query. */
  path: string;
  /** The Accept header ('' when absent). */
  accept: string;
  /** The caller as the front proxy forwards it. */
  user: Identity;
  /**
   * The instant (ms since the epoch) the request is answered at (the server's process clock): which bursts are active.
   */
  at: number;
}

export interface ViewResponse {
  status: number;
  body: unknown;
}

type NamespaceShareJson = ProjectBudgetJson['namespaces'][number];

export interface BudgetObject {
  apiVersion: typeof VIEW_GROUP_VERSION;
  kind: 'Budget';
  metadata: { name: string; namespace: string };
  project: string;
  tenant: string;
  cluster: string;
  resources: ProjectBudgetJson['resources'];
  /** This namespace's share. */
  namespace: NamespaceShareJson;
  /** Every namespace of the project, the same shape. */
  namespaces: NamespaceShareJson[];
  /** For a Project whose spec.fleet names this cluster: the fleet budget, E, the shares (src/view/fleet.ts). */
  fleet?: BudgetFleetJson;
  /**
   * The project's active and upcoming bursts on this cluster (docs/budgets.md#bursts); the budget
   * includes the active ones.
   */
  bursts?: BurstJson[];
  /** What the project's allocation costs per month, with tenantgate.yaml's pricing (docs/budgets.md#cost). */
  cost?: ProjectCostJson;
}

export interface OwnedProjectObject {
  apiVersion: typeof VIEW_GROUP_VERSION;
  kind: 'OwnedProject';
  metadata: { name: string };
  tenant: string;
  owners: Subject[];
  namespaces: string[];
  phase: string;
  budgetUse: string;
  resources: ProjectBudgetJson['resources'];
  bursts?: BurstJson[];
  cost?: ProjectCostJson;
}

interface ResourceInfo {
  name: string;
  singularName: string;
  namespaced: boolean;
  kind: string;
  verbs: string[];
  shortNames?: string[];
}

const RESOURCES: readonly ResourceInfo[] = [
  {
    name: 'budgets',
    singularName: 'budget',
    namespaced: true,
    kind: 'Budget',
    verbs: ['get', 'list'],
    shortNames: ['budget'],
  },
  {
    name: 'ownedprojects',
    singularName: 'ownedproject',
    namespaced: false,
    kind: 'OwnedProject',
    verbs: ['get', 'list'],
  },
];

// --- discovery -------------------------------------------------------------------------------------

const groupVersion = { groupVersion: VIEW_GROUP_VERSION, version: VIEW_VERSION };
const API_GROUP = {
  kind: 'APIGroup',
  apiVersion: 'v1',
  name: VIEW_GROUP,
  versions: [groupVersion],
  preferredVersion: groupVersion,
};
const API_GROUP_LIST = { kind: 'APIGroupList', apiVersion: 'v1', groups: [API_GROUP] };
export const API_RESOURCE_LIST = {
  kind: 'APIResourceList',
  apiVersion: 'v1',
  groupVersion: VIEW_GROUP_VERSION,
  resources: RESOURCES,
};

// --- the objects -----------------------------------------------------------------------------------

/** The project a namespace belongs to (its tenantgate.io/project label), when that Project exists. */
function projectOfNamespace(snapshot: Snapshot, namespace: string): Project | undefined {
  const label = snapshot.namespace(namespace)?.metadata.labels?.[LABEL_PROJECT];
  return label ? snapshot.project(label) : undefined;
}

/** The Budget of the namespace's project, seen from that namespace. */
export function budgetObject(
  snapshot: Snapshot,
  project: Project,
  namespace: string,
  cluster: string,
  at: number,
  fleetOf?: FleetLookup,
  pricing?: PricingConfig,
): BudgetObject {
  const b = projectBudget(snapshot, project, cluster, at);
  return budgetSeenFrom(
    projectBudgetJson(b),
    snapshot,
    namespace,
    at,
    fleetPart(snapshot, project, cluster, at, fleetOf),
    costPart(project, b, pricing),
  );
}

/** The cost of a project's allocation, when there is a price sheet. */
function costPart(project: Project, b: ProjectBudget, pricing: PricingConfig | undefined): ProjectCostJson | undefined {
  return pricing
    ? projectCostJson(
        priceSheet(pricing),
        project,
        b.namespaces.map((n) => n.allocated),
      )
    : undefined;
}

function fleetPart(
  snapshot: Snapshot,
  project: Project,
  cluster: string,
  at: number,
  fleetOf?: FleetLookup,
): BudgetFleetJson | undefined {
  if (!project.spec.fleet) return undefined;
  const fleetResources = Object.keys(project.spec.fleet.quota?.hard ?? {});
  return budgetFleet(
    project,
    cluster,
    fleetProjectBudget(snapshot, project, cluster, at, fleetResources).allocated,
    fleetOf?.(project.metadata.name ?? ''),
  );
}

/** The bursts part of a Budget or OwnedProject at instant `at`; absent when none is active or upcoming. */
function burstsOf(project: Project | undefined, cluster: string, at: number): { bursts?: BurstJson[] } {
  const list = project ? burstsJson(project, cluster, at) : [];
  return list.length > 0 ? { bursts: list } : {};
}

/** The Budget object of project budget `b`, seen from one of its namespaces. */
function budgetSeenFrom(
  b: ProjectBudgetJson,
  snapshot: Snapshot,
  namespace: string,
  at: number,
  fleet?: BudgetFleetJson,
  cost?: ProjectCostJson,
): BudgetObject {
  const share = b.namespaces.find((n) => n.namespace === namespace) ?? {
    // Labelled, yet counted against no budget here (being deleted, for instance): what it uses, no share.
    namespace,
    allocated: {},
    used: formatResources(usedIn(snapshot, namespace)),
    hard: {},
    defaulted: false,
  };
  return {
    apiVersion: VIEW_GROUP_VERSION,
    kind: 'Budget',
    metadata: { name: b.project, namespace },
    project: b.project,
    tenant: b.tenant,
    cluster: b.cluster,
    resources: b.resources,
    namespace: share,
    namespaces: b.namespaces,
    ...(fleet ? { fleet } : {}),
    ...burstsOf(snapshot.project(b.project), b.cluster, at),
    ...(cost ? { cost } : {}),
  };
}

export function ownedProjectObject(
  snapshot: Snapshot,
  project: Project,
  cluster: string,
  at: number,
  pricing?: PricingConfig,
): OwnedProjectObject {
  const name = project.metadata.name ?? '';
  const budget = projectBudget(snapshot, project, cluster, at);
  const b = projectBudgetJson(budget);
  const cost = costPart(project, budget, pricing);
  return {
    apiVersion: VIEW_GROUP_VERSION,
    kind: 'OwnedProject',
    metadata: { name },
    tenant: project.spec.tenant,
    owners: project.spec.owners ?? [],
    namespaces: [...snapshot.namespacesOfProject(name)].map((n) => n.metadata.name ?? '').sort(),
    phase: project.status?.phase ?? '',
    budgetUse: project.status?.budgetUse ?? '',
    resources: b.resources,
    ...burstsOf(project, cluster, at),
    ...(cost ? { cost } : {}),
  };
}

/** Every Budget in a namespace: one (named after its project) or none outside projects. */
function budgetsIn(
  snapshot: Snapshot,
  namespace: string,
  cluster: string,
  at: number,
  fleetOf?: FleetLookup,
  pricing?: PricingConfig,
): BudgetObject[] {
  const project = projectOfNamespace(snapshot, namespace);
  return project ? [budgetObject(snapshot, project, namespace, cluster, at, fleetOf, pricing)] : [];
}

/** Every Budget of every project namespace (`kubectl get budgets -A`). */
function allBudgets(
  snapshot: Snapshot,
  cluster: string,
  at: number,
  fleetOf?: FleetLookup,
  pricing?: PricingConfig,
): BudgetObject[] {
  const out: BudgetObject[] = [];
  for (const project of [...snapshot.projects()].sort(byMetadataName)) {
    // One budget per project, seen from each of its namespaces (the budget covers them all).
    const counted = projectBudget(snapshot, project, cluster, at);
    const budget = projectBudgetJson(counted);
    const fleet = fleetPart(snapshot, project, cluster, at, fleetOf);
    const cost = costPart(project, counted, pricing);
    for (const ns of [...snapshot.namespacesOfProject(project.metadata.name ?? '')].sort(byMetadataName))
      out.push(budgetSeenFrom(budget, snapshot, ns.metadata.name ?? '', at, fleet, cost));
  }
  return out;
}

function ownedProjects(
  snapshot: Snapshot,
  user: Identity,
  cluster: string,
  at: number,
  pricing?: PricingConfig,
): OwnedProjectObject[] {
  return [...snapshot.projects()]
    .filter((p) => isOwner(p, user))
    .sort(byMetadataName)
    .map((p) => ownedProjectObject(snapshot, p, cluster, at, pricing));
}

// --- Table output (kubectl get) --------------------------------------------------------------------

/** Whether the client asked for a meta.k8s.io/v1 Table (kubectl get does, unless -o json/yaml). */
export function wantsTable(accept: string): boolean {
  return accept.split(',').some((part) => {
    const params = new Map(
      part
        .split(';')
        .slice(1)
        .map((p) => p.trim().split('=') as [string, string]),
    );
    return params.get('as') === 'Table' && params.get('g') === 'meta.k8s.io' && params.get('v') === 'v1';
  });
}

interface Column {
  name: string;
  type: string;
  format?: string;
  description: string;
  priority: number;
}

const BUDGET_COLUMNS: Column[] = [
  {
    name: 'Name',
    type: 'string',
    format: 'name',
    description: 'The project (the Budget is named after it)',
    priority: 1,
  },
  { name: 'Resource', type: 'string', description: 'A budgeted or allocated resource', priority: 0 },
  { name: 'Budget', type: 'string', description: "The project's budget on this cluster (- when none)", priority: 0 },
  {
    name: 'Allocated',
    type: 'string',
    description: "What the project's namespaces hold, counted as the quota rules count it",
    priority: 0,
  },
  {
    name: 'Used',
    type: 'string',
    description: "What the project's namespaces use (their quotas' status.used)",
    priority: 0,
  },
  {
    name: 'Headroom',
    type: 'string',
    description: 'Budget minus allocated (negative when over budget; - without a budget)',
    priority: 0,
  },
];

const OWNED_COLUMNS: Column[] = [
  { name: 'Name', type: 'string', format: 'name', description: 'The project', priority: 0 },
  { name: 'Tenant', type: 'string', description: 'spec.tenant', priority: 0 },
  { name: 'Namespaces', type: 'integer', description: 'Namespaces labelled for the project', priority: 0 },
  { name: 'Phase', type: 'string', description: 'status.phase', priority: 0 },
  { name: 'Budget Use', type: 'string', description: 'status.budgetUse', priority: 0 },
];

function partial(metadata: { name: string; namespace?: string }) {
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata };
}

/**
 * One row per resource of each Budget: RESOURCE, BUDGET, ALLOCATED, USED, HEADROOM (NAME with -o wide);
 * with a price sheet, one more row for the monthly cost (`cost/month (USD)`).
 */
function budgetTable(budgets: readonly BudgetObject[]) {
  const rows = budgets.flatMap((b) => {
    const lines = b.resources.length > 0 ? b.resources : [undefined];
    const perResource = lines.map((r) => ({
      cells: [
        b.metadata.name,
        r?.resource ?? '<none>',
        r?.budget ?? '-',
        r?.allocated ?? '-',
        r?.used ?? '-',
        r?.headroom ?? '-',
      ],
      object: partial(b.metadata),
    }));
    const c = b.cost;
    return c
      ? [
          ...perResource,
          {
            cells: [b.metadata.name, `cost/month (${c.currency})`, c.budget ?? '-', c.monthly, '-', c.headroom ?? '-'],
            object: partial(b.metadata),
          },
        ]
      : perResource;
  });
  return { kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata: {}, columnDefinitions: BUDGET_COLUMNS, rows };
}

function ownedProjectTable(items: readonly OwnedProjectObject[]) {
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: {},
    columnDefinitions: OWNED_COLUMNS,
    rows: items.map((p) => ({
      cells: [p.metadata.name, p.tenant, p.namespaces.length, p.phase || '-', p.budgetUse || '-'],
      object: partial(p.metadata),
    })),
  };
}

// --- errors ----------------------------------------------------------------------------------------

export function status(
  code: number,
  reason: string,
  message: string,
  details?: { name?: string; kind?: string },
): ViewResponse {
  return {
    status: code,
    body: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason,
      ...(details ? { details: { group: VIEW_GROUP, ...details } } : {}),
      code,
    },
  };
}

// --- routing ---------------------------------------------------------------------------------------

const ok = (body: unknown): ViewResponse => ({ status: 200, body });
const list = (kind: string, items: unknown[]) => ({
  apiVersion: VIEW_GROUP_VERSION,
  kind,
  metadata: { resourceVersion: '' },
  items,
});

/** Answers one request. Discovery needs no cache; everything else waits for the cache to have synced (503 before). */
export function handle(req: ViewRequest, source: ViewSource): ViewResponse {
  const path = req.path.replace(/\/+$/, '') || '/';
  if (req.method !== 'GET')
    return status(
      405,
      'MethodNotAllowed',
      `the budget view is read-only: ${req.method} ${path} is not supported (verbs: get, list)`,
    );
  if (path === '/apis') return ok(API_GROUP_LIST);
  if (path === `/apis/${VIEW_GROUP}`) return ok(API_GROUP);
  const prefix = VIEW_API_PATH;
  if (path === prefix) return ok(API_RESOURCE_LIST);
  if (!path.startsWith(`${prefix}/`))
    return status(404, 'NotFound', `${path}: not served here (the budget view serves ${prefix})`);
  const parts = path
    .slice(prefix.length + 1)
    .split('/')
    .map(decodeURIComponent);
  const snapshot = source.snapshot();
  if (!snapshot)
    return status(
      503,
      'ServiceUnavailable',
      "the budget view is not ready: the controller's caches have not synced yet",
    );
  const table = wantsTable(req.accept);

  // /namespaces/{ns}/budgets[/{name}]
  if (parts[0] === 'namespaces' && parts.length >= 3 && parts.length <= 4 && parts[2] === 'budgets') {
    const namespace = parts[1]!;
    const fleetOf = source.fleet?.bind(source);
    const budgets = budgetsIn(snapshot, namespace, source.cluster, req.at, fleetOf, source.pricing);
    if (parts.length === 3) return ok(table ? budgetTable(budgets) : list('BudgetList', budgets));
    const name = parts[3]!;
    const found = budgets.find((b) => b.metadata.name === name);
    if (!found) {
      const why =
        budgets.length === 0
          ? `namespace ${namespace} belongs to no project, so it has no budget`
          : `the Budget in namespace ${namespace} is ${budgets[0]!.metadata.name} (named after its project)`;
      return status(404, 'NotFound', `budgets.${VIEW_GROUP} "${name}" not found: ${why}`, { name, kind: 'budgets' });
    }
    return ok(table ? budgetTable([found]) : found);
  }
  // /budgets (every namespace)
  if (parts.length === 1 && parts[0] === 'budgets') {
    const budgets = allBudgets(snapshot, source.cluster, req.at, source.fleet?.bind(source), source.pricing);
    return ok(table ? budgetTable(budgets) : list('BudgetList', budgets));
  }
  // /ownedprojects[/{name}]
  if (parts[0] === 'ownedprojects' && parts.length <= 2) {
    if (parts.length === 1) {
      const mine = ownedProjects(snapshot, req.user, source.cluster, req.at, source.pricing);
      return ok(table ? ownedProjectTable(mine) : list('OwnedProjectList', mine));
    }
    const name = parts[1]!;
    const project = snapshot.project(name);
    const found =
      project && isOwner(project, req.user)
        ? ownedProjectObject(snapshot, project, source.cluster, req.at, source.pricing)
        : undefined;
    if (!found)
      return status(
        404,
        'NotFound',
        `ownedprojects.${VIEW_GROUP} "${name}" not found: ${req.user.username} owns no project of that name`,
        { name, kind: 'ownedprojects' },
      );
    return ok(table ? ownedProjectTable([found]) : found);
  }
  return status(
    404,
    'NotFound',
    `${path}: no such resource in ${VIEW_GROUP_VERSION} (resources: ${RESOURCES.map((r) => r.name).join(', ')})`,
  );
}
