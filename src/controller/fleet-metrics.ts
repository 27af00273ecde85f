/**
 * The controller's fleet metrics (docs/observability.md, docs/adr/0039-fleet-budgets.md), computed
 * at scrape time as the project metrics are (project-metrics.ts, ADR 0033): no API call at scrape. The
 * allocation comes from the cache; the share, what is lent, the fleet budget and E come from what the
 * give-back loop (fleet-loop.ts; every replica runs its checks, the leader alone writes) last read of
 * the hub and of the headroom ledger. `fleetSeries` is pure; `FleetGauges` serves it.
 */
import { processNow } from '../clock.js';
import type { Counter, Registry } from 'prom-client';
import { declareMetrics } from '../declare-metrics.js';
import { fleetProjectBudget } from '../fleet/give-back.js';
import { aboveRecord } from '../fleet/hub-record.js';
import { enforceableLimit } from '../fleet/shares.js';
import type { Snapshot } from '../validate/types.js';
import type { FleetObservations } from './fleet-loop.js';
import { scrapedGauges, type Labels, type Sample } from './project-metrics.js';

export interface FleetSeries {
  /** {project, cluster, member, resource}: every member's share in the hub's share record as last read. */
  share: Sample[];
  lendable: Sample[];
  /** {project, cluster, resource}: the fleet budget in the hub's share record. */
  budget: Sample[];
  /** {project, cluster, resource}: E, this member's enforced limit, as last read from the headroom ledger. */
  enforced: Sample[];
  /** {project, cluster, resource}: what the project's namespaces hold here (usage-counted), now. */
  allocated: Sample[];
  /**
   * {project, cluster, resource}: how much E is above this member's share − lendable in the hub's
   * record (0 when covered).
   */
  aboveRecord: Sample[];
  /** {project, cluster}: seconds since the loop last read the project's shares from the hub. */
  observedAge: Sample[];
  /** {cluster}: 1 when the last call to the hub was answered, 0 when not; absent before the first call. */
  hubReachable: Sample[];
  /** {cluster}: seconds since the hub last answered (since the loop started leading when it never did). */
  sinceContact: Sample[];
}

/**
 * The fleet series of this member: ages measured at `now` (the system clock, as the loop observed them),
 * budgets decided at `budgetAt` (the controller's clock; default the process clock).
 */
export function fleetSeries(
  snapshot: Snapshot,
  cluster: string,
  seen: FleetObservations,
  now: number,
  budgetAt: number = processNow(),
): FleetSeries {
  const out: FleetSeries = {
    share: [],
    lendable: [],
    budget: [],
    enforced: [],
    aboveRecord: [],
    allocated: [],
    observedAge: [],
    hubReachable: [],
    sinceContact: [],
  };
  for (const [name, o] of [...seen.projects].sort(([a], [b]) => a.localeCompare(b))) {
    const project = snapshot.project(name);
    if (!project?.spec.fleet) continue;
    const base: Labels = { project: name, cluster };
    out.observedAge.push({ labels: base, value: Math.max(0, (now - o.at) / 1000) });
    const resources = o.record ? [...o.record.budget.keys()].sort() : [...(o.enforced?.keys() ?? [])].sort();
    if (o.record) {
      for (const [resource, limit] of o.record.budget)
        out.budget.push({ labels: { ...base, resource }, value: limit.asFloat64Slow() });
      for (const [member, entry] of o.record.shares) {
        for (const resource of resources) {
          const labels = { ...base, member, resource };
          out.share.push({ labels, value: entry.share.get(resource)?.asFloat64Slow() ?? 0 });
          out.lendable.push({ labels, value: entry.lendable.get(resource)?.asFloat64Slow() ?? 0 });
        }
      }
    }
    if (o.enforced)
      for (const resource of resources)
        out.enforced.push({ labels: { ...base, resource }, value: o.enforced.get(resource)?.asFloat64Slow() ?? 0 });
    if (o.enforced && o.record) {
      const recorded = o.record.released.has(cluster) ? new Map() : enforceableLimit(o.record, cluster);
      const above = aboveRecord(o.enforced, recorded);
      for (const resource of resources)
        out.aboveRecord.push({ labels: { ...base, resource }, value: above.get(resource)?.asFloat64Slow() ?? 0 });
    }
    try {
      const b = fleetProjectBudget(snapshot, project, cluster, budgetAt, resources);
      for (const resource of resources)
        out.allocated.push({ labels: { ...base, resource }, value: b.allocated.get(resource)?.asFloat64Slow() ?? 0 });
    } catch {
      // tenantgate_project_metrics_failed counts the project already.
    }
  }
  if (seen.reachable !== undefined) out.hubReachable.push({ labels: { cluster }, value: seen.reachable ? 1 : 0 });
  const since = seen.lastContact ?? seen.startedAt;
  if (since !== undefined) out.sinceContact.push({ labels: { cluster }, value: Math.max(0, (now - since) / 1000) });
  return out;
}

const PROJECT = ['project', 'cluster'] as const;
const RESOURCE = ['project', 'cluster', 'resource'] as const;
const MEMBER = ['project', 'cluster', 'member', 'resource'] as const;

export class FleetGauges {
  /** Give-backs and offers the loop wrote, by kind and result. */
  readonly returns: Counter<'cluster' | 'kind' | 'result'>;

  constructor(
    registry: Registry,
    source: {
      snapshot(): Snapshot | undefined;
      cluster: string;
      observations: FleetObservations;
      now?: () => number;
      /** The instant budgets are decided at (bursts): the controller's clock; default the process clock. */
      budgetAt?: () => number;
    },
  ) {
    const gauge = scrapedGauges(registry, () => {
      const snapshot = source.snapshot();
      if (!snapshot) return undefined;
      const { cluster, observations, now, budgetAt } = source;
      return fleetSeries(snapshot, cluster, observations, now?.() ?? Date.now(), budgetAt?.());
    });
    gauge('tenantgate_fleet_share', {
      help: "Each member's share of a project's fleet budget, in the hub's share record as this member last read it",
      labelNames: MEMBER,
      pick: (s) => s.share,
    });
    gauge('tenantgate_fleet_lendable', {
      help: 'The part of a member share it offers to the other members (no longer enforced)',
      labelNames: MEMBER,
      pick: (s) => s.lendable,
    });
    gauge('tenantgate_fleet_budget', {
      help: "A project's fleet budget in the hub's share record",
      labelNames: RESOURCE,
      pick: (s) => s.budget,
    });
    gauge('tenantgate_fleet_controller_enforced_limit', {
      help: "E: what this member lets a fleet-budgeted project allocate, from the project's headroom ledger",
      labelNames: RESOURCE,
      pick: (s) => s.enforced,
    });
    gauge('tenantgate_fleet_enforced_above_record', {
      help:
        "How much E is above this member's share − lendable in the hub's record (the hub restored from an older " +
        'backup, a share given back outside the protocol, a release): 0 when the record covers E',
      labelNames: RESOURCE,
      pick: (s) => s.aboveRecord,
    });
    gauge('tenantgate_fleet_allocated', {
      help: "What a fleet-budgeted project's namespaces hold on this member (usage-counted)",
      labelNames: RESOURCE,
      pick: (s) => s.allocated,
    });
    gauge('tenantgate_fleet_observed_age_seconds', {
      help: "Seconds since the give-back loop last read a project's shares from the hub",
      labelNames: PROJECT,
      pick: (s) => s.observedAge,
    });
    gauge('tenantgate_fleet_controller_hub_reachable', {
      help: "1 when the give-back loop's last call to the fleet's hub was answered, else 0",
      labelNames: ['cluster'],
      pick: (s) => s.hubReachable,
    });
    gauge('tenantgate_fleet_hub_seconds_since_contact', {
      help: 'Seconds since the hub last answered the give-back loop (since it started leading, when never)',
      labelNames: ['cluster'],
      pick: (s) => s.sinceContact,
    });
    this.returns = declareMetrics(registry).counter('tenantgate_fleet_returns_total', {
      help:
        'Offers and give-backs the give-back loop wrote to the hub, by result (stored, refused, unreachable, ' +
        'failed)',
      labelNames: ['cluster', 'kind', 'result'],
    });
    source.observations.onCount = (kind, result) => this.returns.inc({ cluster: source.cluster, kind, result });
  }
}
