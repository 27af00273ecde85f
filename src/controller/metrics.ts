/** Prometheus metrics of the controller (one registry per controller, so tests can run several in one process). */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export type WriteVerb = 'create' | 'update' | 'patch' | 'delete';

export class ControllerMetrics {
  readonly registry = new Registry();
  readonly queueDepth = new Gauge({
    name: 'tenantgate_controller_queue_depth',
    help: 'Keys ready in the work queue',
    registers: [this.registry],
  });
  readonly queueWaiting = new Gauge({
    name: 'tenantgate_controller_queue_waiting',
    help: 'Keys waiting for a delay (backoff, requeue) before they are ready',
    registers: [this.registry],
  });
  readonly reconcileTotal = new Counter({
    name: 'tenantgate_controller_reconcile_total',
    help: 'Reconciles of a Project by result (done, requeue, error)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly reconcileErrors = new Counter({
    name: 'tenantgate_controller_reconcile_errors_total',
    help: 'Reconciles that failed and were requeued with backoff',
    registers: [this.registry],
  });
  readonly reconcileDuration = new Histogram({
    name: 'tenantgate_controller_reconcile_duration_seconds',
    help: 'Time to reconcile one Project',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly apiWrites = new Counter({
    name: 'tenantgate_controller_api_writes_total',
    help: 'Writes the controller sent to the API server, by verb and resource (leases: leader election)',
    labelNames: ['verb', 'resource'] as const,
    registers: [this.registry],
  });
  readonly apiWriteErrors = new Counter({
    name: 'tenantgate_controller_api_write_errors_total',
    help: 'Writes refused by the API server, by verb, resource and HTTP code',
    labelNames: ['verb', 'resource', 'code'] as const,
    registers: [this.registry],
  });
  readonly leader = new Gauge({
    name: 'tenantgate_controller_leader',
    help: '1 while this replica holds the leader lease and reconciles, else 0',
    registers: [this.registry],
  });
  readonly leaderTransitions = new Counter({
    name: 'tenantgate_controller_leader_acquired_total',
    help: 'Times this replica acquired the lease',
    registers: [this.registry],
  });
  readonly informerRestarts = new Counter({
    name: 'tenantgate_controller_informer_restarts_total',
    help: 'Informer restarts after a list or watch error, by resource',
    labelNames: ['resource'] as const,
    registers: [this.registry],
  });
  readonly informerSynced = new Gauge({
    name: 'tenantgate_controller_informer_synced',
    help: '1 once the informer of a resource has listed',
    labelNames: ['resource'] as const,
    registers: [this.registry],
  });
  readonly cacheObjects = new Gauge({
    name: 'tenantgate_controller_cache_objects',
    help: 'Objects in the controller cache',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  countWrite(verb: WriteVerb, resource: string): void {
    this.apiWrites.inc({ verb, resource });
  }

  /** Writes so far by "verb resource" (e.g. "update projects/status"), for tests and the bench. */
  async writes(): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const v of (await this.apiWrites.get()).values) out[`${v.labels.verb} ${v.labels.resource}`] = v.value;
    return out;
  }

  async reconciles(): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const v of (await this.reconcileTotal.get()).values) out[String(v.labels.result)] = v.value;
    return out;
  }
}

/** Sums a `writes()` result, leaving out leader-election lease renewals. */
export function reconcileWrites(writes: Record<string, number>): number {
  let n = 0;
  for (const [k, v] of Object.entries(writes)) if (!k.endsWith(' leases')) n += v;
  return n;
}
