/**
 * What the plugin shows, built from what it read: the caller's identity, the projects it owns, a
 * project's budget. Two sources give the same shapes: the budget view API (view.tenantgate.io, served
 * by the controller) and, where that API is not served, the objects themselves (Projects, namespaces,
 * quotas) put through `projectBudget` — the one budget arithmetic (src/validate/budget.ts). Pure.
 */
import { projectBudget, projectBudgetJson, type ProjectBudgetJson as BaseBudgetJson } from '../validate/budget.js';
import { Quantity } from '../quantity/quantity.js';
import { budgetList } from '../validate/budget/layers.js';
import { burstsJson, type BurstJson } from '../validate/bursts.js';
import { processNow } from '../clock.js';
import { MemorySnapshot } from '../validate/snapshot.js';
import {
  LABEL_PROJECT,
  type NamespaceObject,
  type Project,
  type ResourceQuotaObject,
  type Subject,
} from '../validate/types.js';
import type { Identity } from '../view/api.js';
import { cmpStr } from '../order.js';

import type { BudgetFleetJson } from '../view/fleet.js';
import type { ProjectCostJson } from '../validate/cost.js';

/**
 * A project's budget as the plugin shows it: the view's Budget adds, for a fleet-budgeted project, its
 * fleet part, and with tenantgate.yaml's pricing its monthly cost (only the view has the price sheet:
 * tenants may not read the configuration).
 */
export type ProjectBudgetJson = BaseBudgetJson & { bursts?: BurstJson[] } & {
  fleet?: BudgetFleetJson;
  cost?: ProjectCostJson;
};

/** `kubectl auth whoami -o json` (a SelfSubjectReview) → the identity the apiserver sees, impersonation included. */
export function identityFromReview(review: unknown): Identity {
  const info = (review as { status?: { userInfo?: { username?: unknown; groups?: unknown } } } | null)?.status
    ?.userInfo;
  if (!info || typeof info.username !== 'string')
    throw new Error(
      `SelfSubjectReview: status.userInfo.username is ${JSON.stringify(info?.username)}, expected the caller's ` +
        `user name (a string)`,
    );
  const groups = Array.isArray(info.groups) ? info.groups.filter((g): g is string => typeof g === 'string') : [];
  return { username: info.username, groups };
}

/** Whether `who` is one of the project's owners: its user, one of its groups, or its ServiceAccount. */
/** One line of `kubectl tenantgate projects` (and its -o json item). */
export interface ProjectRow {
  name: string;
  tenant: string;
  owners: Subject[];
  namespaces: string[];
  phase: string;
  budgetUse: string;
}

/** From a Project and the namespaces labelled for it (the direct path). */
export function projectRow(project: Project, namespaces: readonly NamespaceObject[]): ProjectRow {
  const name = project.metadata.name ?? '';
  return {
    name,
    tenant: project.spec.tenant,
    owners: project.spec.owners ?? [],
    namespaces: namespaces
      .filter((n) => n.metadata.labels?.[LABEL_PROJECT] === name)
      .map((n) => n.metadata.name ?? '')
      .sort(),
    phase: project.status?.phase ?? '',
    budgetUse: project.status?.budgetUse ?? '',
  };
}

/** From an OwnedProject of the view API. */
export function projectRowFromView(item: unknown): ProjectRow {
  const o = item as {
    metadata?: { name?: unknown };
    tenant?: unknown;
    owners?: unknown;
    namespaces?: unknown;
    phase?: unknown;
    budgetUse?: unknown;
  };
  const name = o?.metadata?.name;
  if (typeof name !== 'string')
    throw new Error(`OwnedProject: metadata.name is ${JSON.stringify(name)}, expected a string`);
  return {
    name,
    tenant: typeof o.tenant === 'string' ? o.tenant : '',
    owners: Array.isArray(o.owners) ? (o.owners as Subject[]) : [],
    namespaces: Array.isArray(o.namespaces)
      ? (o.namespaces as unknown[]).filter((n): n is string => typeof n === 'string').sort()
      : [],
    phase: typeof o.phase === 'string' ? o.phase : '',
    budgetUse: typeof o.budgetUse === 'string' ? o.budgetUse : '',
  };
}

/** The budget from the objects (the fallback path): the same function the controller's status and the view use. */
export function budgetFromObjects(
  project: Project,
  namespaces: readonly NamespaceObject[],
  quotas: readonly ResourceQuotaObject[],
  cluster: string,
): ProjectBudgetJson {
  const snapshot = MemorySnapshot.of({ projects: [project], namespaces: [...namespaces], quotas: [...quotas] });
  const at = processNow();
  const b = projectBudgetJson(projectBudget(snapshot, project, cluster, at));
  const bursts = burstsJson(project, cluster, at);
  return bursts.length > 0 ? { ...b, bursts } : b;
}

/** A Budget object of the view API → the same JSON `budgetFromObjects` gives. */
export function budgetFromView(budget: unknown): ProjectBudgetJson {
  const b = budget as Partial<ProjectBudgetJson> & { metadata?: { name?: string; namespace?: string } };
  const where = `Budget ${b?.metadata?.namespace ?? '?'}/${b?.metadata?.name ?? '?'}`;
  if (typeof b?.project !== 'string')
    throw new Error(`${where}: project is ${JSON.stringify(b?.project)}, expected the project's name`);
  if (!Array.isArray(b.resources))
    throw new Error(
      `${where}: resources is ${JSON.stringify(b.resources)}, expected a list of {resource, budget?, allocated, ` +
        `used, headroom?}`,
    );
  if (!Array.isArray(b.namespaces))
    throw new Error(
      `${where}: namespaces is ${JSON.stringify(b.namespaces)}, expected a list of {namespace, allocated, used, ` +
        `hard, defaulted}`,
    );
  return {
    project: b.project,
    tenant: b.tenant ?? '',
    cluster: b.cluster ?? '',
    resources: b.resources.map((r) => ({
      resource: r.resource,
      ...(r.budget !== undefined ? { budget: r.budget } : {}),
      allocated: r.allocated,
      used: r.used,
      ...(r.headroom !== undefined ? { headroom: r.headroom } : {}),
    })),
    namespaces: [...b.namespaces]
      .map((n) => ({
        namespace: n.namespace,
        allocated: n.allocated ?? {},
        used: n.used ?? {},
        hard: n.hard ?? {},
        defaulted: n.defaulted === true,
      }))
      .sort((x, y) => cmpStr(x.namespace, y.namespace)),
    ...(b.fleet && typeof b.fleet === 'object' && Array.isArray(b.fleet.resources) ? { fleet: b.fleet } : {}),
    ...(Array.isArray(b.bursts) ? { bursts: b.bursts } : {}),
    ...(isCost(b.cost) ? { cost: b.cost } : {}),
  };
}

/** Whether a view's `cost` has the shape the plugin prints (currency and amounts as plain decimals). */
function isCost(c: unknown): c is ProjectCostJson {
  const o = c as Partial<ProjectCostJson> | undefined;
  const amount = (v: unknown) => typeof v === 'string' && /^-?[0-9]+\.[0-9]{2}$/.test(v);
  return (
    typeof o?.currency === 'string' &&
    amount(o.monthly) &&
    (o.budget === undefined || amount(o.budget)) &&
    (o.headroom === undefined || amount(o.headroom)) &&
    typeof o.resources === 'object' &&
    o.resources !== null
  );
}

/**
 * The cluster the controller counted the project for, from its status (allocated + headroom = the
 * budget it used): the direct path cannot read tenantgate.yaml's clusterName (tenants may not read the
 * config). The one `spec.clusters` key whose budget matches and differs from `spec.quota`; '' otherwise.
 */
export function clusterFromStatus(project: Project): string {
  const allocated = project.status?.allocated ?? {};
  const headroom = project.status?.headroom ?? {};
  if (!project.spec.clusters || Object.keys(headroom).length === 0) return '';
  const seen: Record<string, Quantity> = {};
  for (const [r, h] of Object.entries(headroom)) {
    const room = Quantity.tryParse(h);
    if (!room) return '';
    const used = Quantity.tryParse(allocated[r] ?? '0');
    seen[r] = used ? room.add(used) : room;
  }
  const matches = (list: Record<string, string | number>) => {
    const keys = Object.keys(list);
    return (
      keys.length === Object.keys(seen).length &&
      keys.every((r) => seen[r] !== undefined && Quantity.tryParse(list[r])?.cmp(seen[r]!) === 0)
    );
  };
  const at = processNow();
  if (matches(budgetList(project, '', at))) return '';
  const found = Object.keys(project.spec.clusters).filter(
    (c) => project.spec.clusters?.[c]?.quota?.hard && matches(budgetList(project, c, at)),
  );
  return found.length === 1 ? found[0]! : '';
}
