/**
 * Per-project budget metrics of the controller, computed at scrape time from the informer cache
 * (docs/adr/0033-observability.md): nothing is kept or recomputed between scrapes,
 * no API call is made, and a deleted Project's series are gone from the next scrape. The numbers are
 * `projectBudget` (src/validate/budget.ts), the same answer the Project status and `tenantgate plan`
 * show; `projectSeries` maps it to samples (pure), `ProjectGauges` serves them through prom-client's
 * `collect()` callbacks.
 */
import { processNow } from '../clock.js';
import type { Registry } from 'prom-client';
import { declareMetrics } from '../declare-metrics.js';
import { projectBudget } from '../validate/budget.js';
import type { PricingConfig } from '../config/config.js';
import { monthlyBudgetOf, priceSheet, sharesCost, type Rational } from '../validate/cost.js';
import { PROJECT_PHASES } from '../validate/schema/project-schema.js';
import type { Project, Snapshot } from '../validate/types.js';
import { classifyNamespaces } from './cascade.js';

export type Labels = Record<string, string>;
export interface Sample {
  labels: Labels;
  value: number;
}

/** A gauge computed at scrape time: its help, label names, and the samples it takes from a scrape's series. */
interface ScrapedGauge<S> {
  help: string;
  labelNames: readonly string[];
  pick: (series: S) => Sample[];
}

/**
 * A factory of gauges computed at scrape time: each one, when collected, is refilled with the samples
 * `pick` takes from the series `compute()` returns (computed once per scrape: the gauges' collect() calls
 * of one scrape run in the same tick; none while it returns undefined).
 */
export function scrapedGauges<S>(registry: Registry, compute: () => S | undefined) {
  const declare = declareMetrics(registry);
  let memo: S | undefined;
  const current = () => {
    if (memo) return memo;
    memo = compute();
    if (memo) setImmediate(() => (memo = undefined));
    return memo;
  };
  return (name: string, { help, labelNames, pick }: ScrapedGauge<S>) =>
    declare.gauge(name, {
      help,
      labelNames,
      collect() {
        this.reset();
        const series = current();
        if (series) for (const s of pick(series)) this.set(s.labels, s.value);
      },
    });
}

export interface ProjectSeries {
  /** {project, tenant, cluster, resource}: only resources with a budget on this cluster. */
  budget: Sample[];
  /** {project, tenant, cluster, resource}: every budgeted or allocated resource. */
  allocated: Sample[];
  used: Sample[];
  /** budget − allocated; negative when over budget; only resources with a budget. */
  headroom: Sample[];
  /** {project, tenant, cluster}: namespaces counted against the budget on this cluster. */
  namespaces: Sample[];
  /** {project, tenant, cluster, phase}: 1 for the phase the status reports, 0 for the others. */
  phase: Sample[];
  /** {project, tenant, cluster}: 1 while the Project is being deleted (its cascade runs). */
  cascadeInProgress: Sample[];
  /** {project, tenant, cluster}: namespaces the cascade still has to see gone (0 when not deleting). */
  cascadeNamespacesRemaining: Sample[];
  /** {project, tenant, cluster, currency}: what the allocation costs per month (with tenantgate.yaml's pricing). */
  cost: Sample[];
  /** {project, tenant, cluster, currency}: spec.costBudget.monthly (with pricing, for projects that declare one). */
  costBudget: Sample[];
  /** Projects whose budget could not be computed (their budget series are left out), with why. */
  failed: Array<{ project: string; error: string }>;
}

/** An exact amount as a sample value (a double: the nearest one to the exact quotient for amounts of money). */
function sampleOf(amount: Rational): number {
  return Number(amount.n) / Number(amount.d);
}

/** Every series for every project in the snapshot, as the controller on cluster `cluster` ('' when unnamed) sees it. */
/** The series of every Project of `snapshot`, their budgets decided at `at` (default: the process clock). */
export function projectSeries(
  snapshot: Snapshot,
  cluster: string,
  pricing?: PricingConfig,
  at: number = processNow(),
): ProjectSeries {
  const out: ProjectSeries = {
    budget: [],
    allocated: [],
    used: [],
    headroom: [],
    namespaces: [],
    phase: [],
    cascadeInProgress: [],
    cascadeNamespacesRemaining: [],
    cost: [],
    costBudget: [],
    failed: [],
  };
  const sheet = pricing ? priceSheet(pricing) : undefined;
  for (const project of snapshot.projects()) {
    const name = project.metadata.name ?? '';
    if (name === '') continue;
    const base: Labels = { project: name, tenant: project.spec?.tenant ?? '', cluster };
    const phase = project.status?.phase;
    for (const p of PROJECT_PHASES) out.phase.push({ labels: { ...base, phase: p }, value: phase === p ? 1 : 0 });
    const deleting = Boolean(project.metadata.deletionTimestamp);
    out.cascadeInProgress.push({ labels: base, value: deleting ? 1 : 0 });
    out.cascadeNamespacesRemaining.push({ labels: base, value: deleting ? remainingNamespaces(snapshot, project) : 0 });
    try {
      const b = projectBudget(snapshot, project, cluster, at);
      out.namespaces.push({ labels: base, value: b.namespaces.length });
      for (const r of b.resources) {
        const labels = { ...base, resource: r.resource };
        // Sample values: cores for cpu, bytes for memory, a count for pods.
        if (r.budget) out.budget.push({ labels, value: r.budget.asFloat64Slow() });
        out.allocated.push({ labels, value: r.allocated.asFloat64Slow() });
        out.used.push({ labels, value: r.used.asFloat64Slow() });
        if (r.headroom) out.headroom.push({ labels, value: r.headroom.asFloat64Slow() });
      }
      if (sheet) {
        const labels = { ...base, currency: sheet.currency };
        out.cost.push({
          labels,
          value: sampleOf(
            sharesCost(
              sheet,
              b.namespaces.map((n) => n.allocated),
            ),
          ),
        });
        const budget = monthlyBudgetOf(project);
        if (budget) out.costBudget.push({ labels, value: sampleOf(budget) });
      }
    } catch (err) {
      out.failed.push({ project: name, error: err instanceof Error ? err.message : String(err) });
    }
  }
  return out;
}

/** The namespaces the cascade deletes (owned: label and project-uid match) that the cache still shows. */
function remainingNamespaces(snapshot: Snapshot, project: Project): number {
  return classifyNamespaces(project, [...snapshot.namespacesOfProject(project.metadata.name ?? '')]).owned.length;
}

export interface ProjectMetricsSource {
  /** The cache to read, or undefined while it has not synced (no series then). */
  snapshot(): Snapshot | undefined;
  cluster: string;
  /** tenantgate.yaml's price sheet; without it no cost series. */
  pricing?: PricingConfig;
  /** The instant budgets are decided at (bursts): the controller's clock; default the process clock. */
  budgetAt?: () => number;
}

const PROJECT = ['project', 'tenant', 'cluster'] as const;
const RESOURCE = ['project', 'tenant', 'cluster', 'resource'] as const;
const COST = [...PROJECT, 'currency'] as const;

/** The gauges; each `collect()` refills its gauge from one `projectSeries` computed once per scrape. */
export class ProjectGauges {
  private source: ProjectMetricsSource | undefined;

  constructor(registry: Registry) {
    const gauge = scrapedGauges(registry, () => {
      const snapshot = this.source?.snapshot();
      if (!snapshot || !this.source) return undefined;
      return projectSeries(snapshot, this.source.cluster, this.source.pricing, this.source.budgetAt?.());
    });
    gauge('tenantgate_project_budget', {
      help: 'Budget of a project on this cluster per resource (cores, bytes, counts)',
      labelNames: RESOURCE,
      pick: (s) => s.budget,
    });
    gauge('tenantgate_project_allocated', {
      help: "What a project's namespaces hold per resource, counted as the quota rules count it",
      labelNames: RESOURCE,
      pick: (s) => s.allocated,
    });
    gauge('tenantgate_project_used', {
      help: "What a project's namespaces use per resource (their quotas' status.used)",
      labelNames: RESOURCE,
      pick: (s) => s.used,
    });
    gauge('tenantgate_project_headroom', {
      help: 'Budget minus allocated per resource; negative when over budget',
      labelNames: RESOURCE,
      pick: (s) => s.headroom,
    });
    gauge('tenantgate_project_namespaces', {
      help: "Namespaces counted against a project's budget on this cluster",
      labelNames: PROJECT,
      pick: (s) => s.namespaces,
    });
    gauge('tenantgate_project_phase', {
      help: "1 for the phase a project's status reports (Active, Terminating, Degraded), else 0",
      labelNames: [...PROJECT, 'phase'],
      pick: (s) => s.phase,
    });
    gauge('tenantgate_project_cascade_in_progress', {
      help: "1 while a project is being deleted and its namespaces' cascade runs",
      labelNames: PROJECT,
      pick: (s) => s.cascadeInProgress,
    });
    gauge('tenantgate_project_cascade_namespaces_remaining', {
      help: 'Namespaces the cascade of a deleted project still waits for',
      labelNames: PROJECT,
      pick: (s) => s.cascadeNamespacesRemaining,
    });
    gauge('tenantgate_project_cost_monthly', {
      help: "What a project's allocation on this cluster costs per month, priced by tenantgate.yaml's pricing",
      labelNames: COST,
      pick: (s) => s.cost,
    });
    gauge('tenantgate_project_cost_budget_monthly', {
      help: "A project's spec.costBudget.monthly (C1), in the currency of tenantgate.yaml's pricing",
      labelNames: COST,
      pick: (s) => s.costBudget,
    });
    gauge('tenantgate_project_metrics_failed', {
      help: 'Projects whose budget could not be computed at this scrape (their budget series are left out)',
      labelNames: [],
      pick: (s) => [{ labels: {}, value: s.failed.length }],
    });
  }

  /** Starts serving the series of `source` (before: none). */
  observe(source: ProjectMetricsSource): void {
    this.source = source;
  }
}
