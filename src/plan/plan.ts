/**
 * `tenantgate plan`: what a change of the Project declarations does to every budget on every cluster,
 * before it merges (docs/plan.md). Pure: in go the declarations before and after and each cluster's
 * live objects; out comes a Plan. The numbers are `projectBudget`'s (src/validate/budget.ts); the
 * refusals are the webhook's own rules run on a simulated sync (sync.ts), plus Q6 and Q7.
 */
import { strandedByAllowLists } from './allow-lists.js';
import type { TenantgateConfig } from '../config/config.js';
import {
  projectBudget,
  projectBudgetJson,
  sumResources,
  usedIn,
  type ProjectBudget,
  type ResourceBudget,
} from '../validate/budget.js';
import { namespacesOn } from '../validate/offline.js';
import { budgetList, budgetPath } from '../validate/budget/layers.js';
import { burstApplies, planBurstLines } from '../validate/bursts.js';
import { checkBudgetBelowUse, checkRemovedNamespaceInUse, removedProjectDeletes } from '../validate/rules/plan.js';
import type { Project, Resources, Snapshot } from '../validate/types.js';
import { fleetRollup, type HubShareRecord } from './fleet.js';
import { fleetProjectBudget } from '../fleet/give-back.js';
import { liveSnapshot, simulateSync } from './sync.js';
import { ceilCents, centsText, moneyJson, monthlyBudgetOf, priceSheet, sharesCost, ZERO } from '../validate/cost.js';
import type {
  CostLine,
  EntryChange,
  FleetRollup,
  LiveState,
  Plan,
  PlanEntry,
  PlanFinding,
  ProjectRollup,
  ResourceLine,
  RollupLine,
} from './types.js';

export interface PlanInput {
  config: TenantgateConfig;
  /** The declarations at the base revision; without it, each cluster's live Projects are the "before". */
  base?: { ref: string; projects: Project[] };
  /** The declarations in the working tree. */
  after: Project[];
  /** One per cluster. */
  live: LiveState[];
  /** Every project of `after`, changed or not (also what a plan without any change shows). */
  all?: boolean;
  /**
   * The hub's FleetBudgets read into ledgers, per Project with spec.fleet (`--hub`); absent: the hub
   * was not read (shares not shown, F2 not checked).
   */
  hub?: ReadonlyMap<string, HubShareRecord>;
  /**
   * The instant (ms since the epoch) the plan is made at (`plan --now`, else the process clock):
   * which bursts are active.
   */
  at: number;
}

const nameOf = (p: Project): string => p.metadata.name ?? '';

/** What of a project matters on one cluster: its budget there, the namespaces placed there and their quotas. */
function clusterView(p: Project | undefined, cluster: string, at: number): string {
  if (!p) return 'null';
  return JSON.stringify({
    tenant: p.spec.tenant,
    budget: sorted(budgetList(p, cluster, at)),
    maxNamespaces: p.spec.maxNamespaces ?? null,
    bursts: (p.spec.bursts ?? []).filter((b) => burstApplies(b, cluster)),
    defaults: sorted(p.spec.namespaceDefaults?.quota?.hard ?? {}),
    namespaces: namespacesOn(p, cluster)
      .map((n) => ({ name: n.name, quota: sorted(n.quota?.hard ?? {}), labels: sorted(n.labels ?? {}) }))
      .sort((a, b) => a.name.localeCompare(b.name)),
  });
}

/** The entry's burst lines at the plan's instant (`plan --now`), when there are any. */
function burstsOf(
  was: Project | undefined,
  will: Project | undefined,
  cluster: string,
  at: number,
): { bursts?: string[] } {
  const lines = planBurstLines(was, will, cluster, at);
  return lines.length > 0 ? { bursts: lines } : {};
}

function sorted(list: Record<string, string | number>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of Object.keys(list).sort()) out[k] = String(list[k]);
  return out;
}

function percent(part: ResourceBudget['headroom'], whole: ResourceBudget['budget']): number | undefined {
  if (!part || !whole || whole.sign() <= 0) return undefined;
  return Math.round((part.asApproximateFloat64() / whole.asApproximateFloat64()) * 100);
}

function resourceLines(before: ProjectBudget | undefined, after: ProjectBudget | undefined): ResourceLine[] {
  const names = [
    ...new Set([
      ...(after?.resources ?? []).map((r) => r.resource),
      ...(before?.resources ?? []).map((r) => r.resource),
    ]),
  ];
  return names.map((resource) => {
    const b = before?.resources.find((r) => r.resource === resource);
    const a = after?.resources.find((r) => r.resource === resource);
    return {
      resource,
      ...(b?.budget ? { budgetBefore: b.budget.toString() } : {}),
      ...(a?.budget ? { budgetAfter: a.budget.toString() } : {}),
      allocatedBefore: b?.allocated.toString() ?? '0',
      allocatedAfter: a?.allocated.toString() ?? '0',
      used: a?.used.toString() ?? '0',
      ...(a?.headroom ? { headroomAfter: a.headroom.toString() } : {}),
      ...(percent(a?.headroom, a?.budget) !== undefined ? { headroomPercent: percent(a?.headroom, a?.budget)! } : {}),
    };
  });
}

/** The namespaces using `resource`, for Q6's message: "web-a 2, web-b 1". */
function usersOf(snapshot: Snapshot, budget: ProjectBudget, resource: string): string {
  return budget.namespaces
    .map((n) => [n.namespace, usedIn(snapshot, n.namespace).get(resource)] as const)
    .filter(([, q]) => q && q.sign() > 0)
    .map(([ns, q]) => `${ns} ${q!.toString()}`)
    .join(', ');
}

/** The pods a namespace runs, as its quotas count them (`pods`, else `count/pods`). */
function podsIn(snapshot: Snapshot, namespace: string): { resource: string; used: string } | undefined {
  const used = usedIn(snapshot, namespace);
  for (const resource of ['pods', 'count/pods']) {
    const q = used.get(resource);
    if (q) return { resource, used: q.toString() };
  }
  return undefined;
}

/** A Project's deletionPolicy, else tenantgate.yaml's (ADR 0096). */
function deletionPolicy(project: Project, config: TenantgateConfig): 'Delete' | 'Orphan' {
  const own = (project.spec as { deletionPolicy?: unknown }).deletionPolicy;
  return own === 'Orphan' || own === 'Delete' ? own : config.deletion.policy;
}

/** Plural of a kind as D4 prints it ("1 PersistentVolumeClaim", "2 PersistentVolumeClaims"). */
function counted(n: number, kind: string): string {
  return `${n} ${kind}${n === 1 ? '' : 's'}`;
}

/**
 * What a namespace holds that a deletion loses (D4): its PersistentVolumeClaims and running pods from the
 * objects read with the cluster, else what its quotas count (`persistentvolumeclaims`, `pods` in use).
 */
function holdingsOf(live: LiveState, snapshot: Snapshot, namespace: string): string[] {
  if (live.objects) {
    type Obj = { kind?: string; metadata?: { namespace?: string }; status?: { phase?: string } };
    const here = (live.objects as Obj[]).filter((o) => o.metadata?.namespace === namespace);
    const claims = here.filter((o) => o.kind === 'PersistentVolumeClaim').length;
    const pods = here.filter((o) => o.kind === 'Pod' && o.status?.phase === 'Running').length;
    return [
      ...(claims ? [counted(claims, 'PersistentVolumeClaim')] : []),
      ...(pods ? [counted(pods, 'running Pod')] : []),
    ];
  }
  const used = usedIn(snapshot, namespace);
  const out: string[] = [];
  for (const keys of [
    ['persistentvolumeclaims', 'count/persistentvolumeclaims'],
    ['pods', 'count/pods'],
  ]) {
    const key = keys.find((k) => used.get(k) && !used.get(k)!.isZero());
    if (key) out.push(`${key} ${used.get(key)!.toString()} in use`);
  }
  return out;
}

export function planChange(input: PlanInput): Plan {
  const entries: PlanEntry[] = [];
  const budgetsAfter = new Map<string, Map<string, ProjectBudget>>();
  const fleetBudgetsAfter = new Map<string, Map<string, ProjectBudget>>();
  let anyChange = false;
  const pending: Array<{ entry: PlanEntry; touched: boolean }> = [];

  for (const live of input.live) {
    const cluster = live.cluster;
    const now = liveSnapshot(live);
    const before = input.base?.projects ?? live.projects;
    const sync = simulateSync(live, before, input.after, input.config, input.at);
    const names = [...new Set([...before.map(nameOf), ...input.after.map(nameOf)])].filter(Boolean).sort();
    for (const name of names) {
      const was = before.find((p) => nameOf(p) === name);
      const will = input.after.find((p) => nameOf(p) === name);
      const touched = clusterView(was, cluster, input.at) !== clusterView(will, cluster, input.at);
      if (touched) anyChange = true;
      const change: EntryChange = !was ? 'added' : !will ? 'removed' : touched ? 'changed' : 'unchanged';
      const budgetBefore = was ? projectBudget(now, was, cluster, input.at) : undefined;
      const budgetAfter = will
        ? projectBudget(sync.after, sync.after.project(name) ?? will, cluster, input.at)
        : undefined;
      if (budgetAfter) {
        if (!budgetsAfter.has(name)) budgetsAfter.set(name, new Map());
        budgetsAfter.get(name)!.set(cluster, budgetAfter);
      }
      if (will?.spec.fleet) {
        // The fleet roll-up counts every fleet-budgeted resource, also where this cluster's own
        // budget does not name it.
        if (!fleetBudgetsAfter.has(name)) fleetBudgetsAfter.set(name, new Map());
        fleetBudgetsAfter
          .get(name)!
          .set(
            cluster,
            fleetProjectBudget(
              sync.after,
              sync.after.project(name) ?? will,
              cluster,
              input.at,
              Object.keys(will.spec.fleet.quota?.hard ?? {}),
            ),
          );
      }
      const declaredBefore = new Map(
        was ? namespacesOn(was, cluster).map((n) => [n.name, JSON.stringify(sorted(n.quota?.hard ?? {}))]) : [],
      );
      const declaredAfter = new Map(
        will ? namespacesOn(will, cluster).map((n) => [n.name, JSON.stringify(sorted(n.quota?.hard ?? {}))]) : [],
      );
      const pruned = sync.pruned.get(name) ?? [];
      const removed = [
        ...new Set([...[...declaredBefore.keys()].filter((n) => !declaredAfter.has(n)), ...pruned]),
      ].sort();
      const liveMembers = [...now.namespacesOfProject(name)].map((n) => n.metadata.name ?? '');
      const findings: PlanFinding[] = sync.refusals
        .filter((r) => r.project === name)
        .map((r) => ({
          rule: r.violation.rule,
          message: r.violation.message,
          object: r.object,
          by: 'webhook' as const,
        }));
      if (budgetBefore && budgetAfter && will) {
        for (const v of checkBudgetBelowUse(
          name,
          cluster,
          budgetBefore.resources,
          budgetAfter.resources,
          (r) => usersOf(sync.after, budgetAfter, r),
          budgetPath(will, cluster),
        )) {
          findings.push({ rule: v.rule, message: v.message, object: `Project ${name}`, by: 'plan' });
        }
      }
      if (was && will && live.objects)
        findings.push(...strandedByAllowLists(input.config, was, will, new Set(liveMembers), live.objects));
      for (const ns of pruned) {
        for (const v of checkRemovedNamespaceInUse(
          name,
          cluster,
          ns,
          podsIn(now, ns),
          will ? 'undeclared' : 'project-removed',
        ))
          findings.push({ rule: v.rule, message: v.message, object: `Namespace ${ns}`, by: 'plan' });
      }
      const warnings: PlanFinding[] =
        was && !will && liveMembers.length > 0
          ? removedProjectDeletes(
              name,
              cluster,
              liveMembers.sort().map((ns) => ({ namespace: ns, holds: holdingsOf(live, now, ns) })),
              deletionPolicy(was, input.config),
            ).map((v) => ({ rule: v.rule, message: v.message, object: `Project ${name}`, by: 'plan' as const }))
          : [];
      const entry: PlanEntry = {
        project: name,
        tenant: (will ?? was)!.spec.tenant,
        cluster,
        change,
        resources: resourceLines(budgetBefore, budgetAfter),
        ...burstsOf(was, will, cluster, input.at),
        namespaces: {
          added: [...declaredAfter.keys()].filter((n) => !declaredBefore.has(n)).sort(),
          removed,
          changed: [...declaredAfter]
            .filter(([n, q]) => declaredBefore.has(n) && declaredBefore.get(n) !== q)
            .map(([n]) => n)
            .sort(),
          selfService: liveMembers.filter((n) => !declaredBefore.has(n) && !declaredAfter.has(n)).sort(),
          countBefore: liveMembers.length,
          countAfter: [...sync.after.namespacesOfProject(name)].length,
          ...(typeof will?.spec.maxNamespaces === 'number' ? { maxNamespaces: will.spec.maxNamespaces } : {}),
        },
        before: budgetBefore ? projectBudgetJson(budgetBefore) : null,
        after: budgetAfter ? projectBudgetJson(budgetAfter) : null,
        ...costOf(input.config, budgetBefore, budgetAfter, will),
        findings,
        ...(warnings.length > 0 ? { warnings } : {}),
      };
      pending.push({ entry, touched });
    }
  }

  // Changed entries, and any entry a sync would refuse; every one with --all or when nothing changed.
  const showAll = input.all || !anyChange;
  for (const { entry, touched } of pending) if (showAll || touched || entry.findings.length > 0) entries.push(entry);
  entries.sort((a, b) => a.project.localeCompare(b.project) || a.cluster.localeCompare(b.cluster));
  const shown = new Set(entries.map((e) => e.project));
  const { rollups: fleet, changed: fleetChanged } = fleetRollups(input, fleetBudgetsAfter, shown, showAll);
  return {
    ...(input.base ? { base: input.base.ref } : {}),
    clusters: input.live.map((l) => ({ name: l.cluster, ...(l.takenAt ? { takenAt: l.takenAt } : {}) })),
    changed: anyChange || fleetChanged,
    entries,
    rollup:
      input.live.length > 1
        ? [...budgetsAfter]
            .filter(([p]) => shown.has(p))
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([p, byCluster]) => rollup(p, byCluster))
        : [],
    fleet,
    findings: entries.reduce((n, e) => n + e.findings.length, 0) + fleet.reduce((n, f) => n + f.findings.length, 0),
  };
}

/**
 * The fleet roll-up of every Project with spec.fleet that is shown, whose fleet declaration
 * changed, or that has a fleet finding.
 */
function fleetRollups(
  input: PlanInput,
  budgetsAfter: Map<string, Map<string, ProjectBudget>>,
  shown: Set<string>,
  showAll: boolean,
): { rollups: FleetRollup[]; changed: boolean } {
  const out: FleetRollup[] = [];
  let anyChange = false;
  for (const after of [...input.after].sort((a, b) => nameOf(a).localeCompare(nameOf(b)))) {
    const name = nameOf(after);
    if (!after.spec.fleet) continue;
    const before = (input.base?.projects ?? input.live.flatMap((l) => l.projects)).find((p) => nameOf(p) === name);
    const r = fleetRollup({
      project: name,
      before,
      after,
      budgets: budgetsAfter.get(name) ?? new Map(),
      hub: input.hub?.get(name) ?? { state: 'not-read' },
    });
    if (!r) continue;
    const changed = JSON.stringify(before?.spec.fleet ?? null) !== JSON.stringify(after.spec.fleet);
    anyChange ||= changed;
    if (showAll || shown.has(name) || changed || r.findings.length > 0) out.push(r);
  }
  return { rollups: out, changed: anyChange };
}

/** One project across clusters: the sums of budget, allocation, use and headroom, and each cluster's headroom. */
function rollup(project: string, byCluster: Map<string, ProjectBudget>): ProjectRollup {
  const budgets = [...byCluster.values()];
  const budget: Resources = sumResources(budgets.map((b) => b.budget));
  const allocated = sumResources(budgets.map((b) => b.allocated));
  const used = sumResources(budgets.map((b) => b.used));
  const headroom = sumResources(budgets.map((b) => b.headroom));
  const names = [...new Set(budgets.flatMap((b) => b.resources.map((r) => r.resource)))].sort(
    (a, b) => Number(!budget.has(a)) - Number(!budget.has(b)) || a.localeCompare(b),
  );
  const resources: RollupLine[] = names.map((resource) => {
    const perCluster: RollupLine['perCluster'] = {};
    for (const [cluster, b] of byCluster) {
      const line = b.resources.find((r) => r.resource === resource);
      if (!line?.headroom) continue;
      const pct = percent(line.headroom, line.budget);
      perCluster[cluster] = {
        headroom: line.headroom.toString(),
        ...(pct !== undefined ? { headroomPercent: pct } : {}),
      };
    }
    const total = budget.get(resource);
    const room = headroom.get(resource);
    const pct = percent(room, total);
    return {
      resource,
      ...(total ? { budget: total.toString() } : {}),
      allocated: allocated.get(resource)?.toString() ?? '0',
      used: used.get(resource)?.toString() ?? '0',
      ...(room ? { headroom: room.toString() } : {}),
      ...(pct !== undefined ? { headroomPercent: pct } : {}),
      perCluster,
    };
  });
  return { project, clusters: [...byCluster.keys()], resources };
}

/** The cost line of an entry, when tenantgate.yaml has pricing: the allocation before and after, priced. */
function costOf(
  config: TenantgateConfig,
  before: ProjectBudget | undefined,
  after: ProjectBudget | undefined,
  will: Project | undefined,
): { cost?: CostLine } {
  if (!config.pricing) return {};
  const sheet = priceSheet(config.pricing);
  const was = before
    ? sharesCost(
        sheet,
        before.namespaces.map((n) => n.allocated),
      )
    : ZERO;
  const is = after
    ? sharesCost(
        sheet,
        after.namespaces.map((n) => n.allocated),
      )
    : ZERO;
  const budget = will ? monthlyBudgetOf(will) : undefined;
  return {
    cost: {
      currency: sheet.currency,
      before: moneyJson(was),
      after: moneyJson(is),
      change: centsText(ceilCents(is) - ceilCents(was)).replaceAll(',', ''),
      ...(budget ? { budget: moneyJson(budget) } : {}),
    },
  };
}

/** Whether any sync of the plan would be refused (the command's exit status 1). */
export function planFails(plan: Plan): boolean {
  return plan.findings > 0;
}
