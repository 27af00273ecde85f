/**
 * The deletion lifecycle's gauges (docs/adr/0096-deletion-loses-no-data.md), computed at scrape time
 * from the Projects in the cache (their conditions are the record: nothing is kept in memory, and a
 * standby replica reports the same):
 *
 * - tenantgate_project_deletion_waiting{project,reason}: 1 for a deleting Project whose cascade waits
 *   (reason AwaitingConfirmation: namespaces with data wait for a confirmation; BreakerTripped: the
 *   breaker holds every cascade); the chart's TenantgateProjectDeletionWaiting alert;
 * - tenantgate_deletion_breaker_tripped: 1 while a Project reports the breaker as tripped; the chart's
 *   TenantgateDeletionBreakerTripped alert.
 */
import type { Registry } from 'prom-client';
import { declareMetrics } from '../declare-metrics.js';
import type { Snapshot } from '../validate/types.js';
import {
  CONDITION_DELETION_CONFIRMED,
  CONDITION_DELETION_PAUSED,
  REASON_AWAITING_CONFIRMATION,
  REASON_BREAKER_TRIPPED,
} from './deletion/names.js';

/** The waiting deletions of a snapshot (pure): project → reason. */
export function waitingDeletions(snapshot: Snapshot): Array<{ project: string; reason: string }> {
  const out: Array<{ project: string; reason: string }> = [];
  for (const p of snapshot.projects()) {
    if (!p.metadata.deletionTimestamp) continue;
    const conditions = p.status?.conditions ?? [];
    const paused = conditions.some((c) => c.type === CONDITION_DELETION_PAUSED && c.status === 'True');
    const waiting = conditions.some((c) => c.type === CONDITION_DELETION_CONFIRMED && c.status === 'False');
    if (paused) out.push({ project: p.metadata.name ?? '', reason: REASON_BREAKER_TRIPPED });
    else if (waiting) out.push({ project: p.metadata.name ?? '', reason: REASON_AWAITING_CONFIRMATION });
  }
  return out.sort((a, b) => (a.project < b.project ? -1 : a.project > b.project ? 1 : 0));
}

export class DeletionGauges {
  constructor(registry: Registry, snapshot: () => Snapshot | undefined) {
    const declare = declareMetrics(registry);
    declare.gauge('tenantgate_project_deletion_waiting', {
      help:
        'A deleting Project whose cascade waits: for a confirmation (AwaitingConfirmation) ' +
        'or the breaker (BreakerTripped)',
      labelNames: ['project', 'reason'],
      collect() {
        this.reset();
        const s = snapshot();
        if (!s) return;
        for (const w of waitingDeletions(s)) this.set(w, 1);
      },
    });
    declare.gauge('tenantgate_deletion_breaker_tripped', {
      help: 'Whether the deletion breaker holds every cascade (a deleting Project reports it), 1 or 0',
      collect() {
        const s = snapshot();
        this.set(s && waitingDeletions(s).some((w) => w.reason === REASON_BREAKER_TRIPPED) ? 1 : 0);
      },
    });
  }
}
