/**
 * The bursts' metrics (docs/budgets.md#bursts), computed at scrape time from the informer cache like
 * the other project gauges (project-metrics.ts, ADR 0033), at the process clock's instant:
 *
 * - tenantgate_project_burst_active{project,tenant,cluster,burst}: 1 while active, 0 before and after;
 * - tenantgate_project_burst_ends_in_seconds{…,burst}: seconds left of an active burst (the chart's
 *   TenantgateBurstEndingSoon alert);
 * - tenantgate_project_over_budget_after_burst{…,namespace,resource}: what a namespace uses above its
 *   declared quota after its bursts ended (cores, bytes, counts; the quota is held there until usage
 *   allows lowering it; the TenantgateOverBudgetAfterBurst alert).
 */
import type { Registry } from 'prom-client';
import { Quantity } from '../quantity/quantity.js';
import { burstApplies, burstPhase, instantOf } from '../validate/bursts.js';
import type { Snapshot } from '../validate/types.js';
import { planBurstQuotas } from './burst-quotas.js';
import { scrapedGauges, type ProjectMetricsSource, type Sample } from './project-metrics.js';

export interface BurstSeries {
  active: Sample[];
  endsIn: Sample[];
  overAfter: Sample[];
}

/** Every burst series of the snapshot at instant `at` on cluster `cluster` (pure). */
export function burstSeries(snapshot: Snapshot, cluster: string, at: number): BurstSeries {
  const out: BurstSeries = { active: [], endsIn: [], overAfter: [] };
  for (const project of snapshot.projects()) {
    const name = project.metadata.name ?? '';
    if (!name || project.metadata.deletionTimestamp) continue;
    const base = { project: name, tenant: project.spec?.tenant ?? '', cluster };
    for (const b of project.spec?.bursts ?? []) {
      if (!b || !burstApplies(b, cluster)) continue;
      const phase = burstPhase(b, at);
      out.active.push({ labels: { ...base, burst: b.name }, value: phase === 'active' ? 1 : 0 });
      if (phase === 'active')
        out.endsIn.push({ labels: { ...base, burst: b.name }, value: (instantOf(b.until)! - at) / 1000 });
    }
    for (const a of planBurstQuotas(project, snapshot, cluster, at).above) {
      out.overAfter.push({
        labels: { ...base, namespace: a.namespace, resource: a.resource },
        value: Quantity.parse(a.used).sub(Quantity.parse(a.declared)).asFloat64Slow(),
      });
    }
  }
  return out;
}

const BURST = ['project', 'tenant', 'cluster', 'burst'] as const;

/** The gauges; one burstSeries per scrape. */
export class BurstGauges {
  constructor(registry: Registry, source: ProjectMetricsSource, now: () => number) {
    const gauge = scrapedGauges(registry, () => {
      const snapshot = source.snapshot();
      return snapshot && burstSeries(snapshot, source.cluster, now());
    });
    gauge('tenantgate_project_burst_active', {
      help: "1 while a project's burst is active on this cluster (from ≤ now < until), 0 before and after",
      labelNames: BURST,
      pick: (s) => s.active,
    });
    gauge('tenantgate_project_burst_ends_in_seconds', {
      help: 'Seconds until an active burst ends',
      labelNames: BURST,
      pick: (s) => s.endsIn,
    });
    gauge('tenantgate_project_over_budget_after_burst', {
      help:
        'What a namespace uses above its declared quota after its bursts ended (its quota is held at the usage ' +
        'until it can be lowered)',
      labelNames: ['project', 'tenant', 'cluster', 'namespace', 'resource'],
      pick: (s) => s.overAfter,
    });
  }
}
