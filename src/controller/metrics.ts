/** Prometheus metrics of the controller (one registry per controller, so tests can run several in one process). */
import { Registry } from 'prom-client';
import { declareInformerMetrics, declareMetrics } from '../declare-metrics.js';

export type WriteVerb = 'create' | 'update' | 'patch' | 'delete';

export class ControllerMetrics {
  readonly registry = new Registry();
  private readonly declare = declareMetrics(this.registry);
  readonly queueDepth = this.declare.gauge('tenantgate_controller_queue_depth', {
    help: 'Keys ready in the work queue',
  });
  readonly queueWaiting = this.declare.gauge('tenantgate_controller_queue_waiting', {
    help: 'Keys waiting for a delay (backoff, requeue) before they are ready',
  });
  readonly reconcileTotal = this.declare.counter('tenantgate_controller_reconcile_total', {
    help: 'Reconciles of a Project by result (done, requeue, error)',
    labelNames: ['result'],
  });
  readonly reconcileErrors = this.declare.counter('tenantgate_controller_reconcile_errors_total', {
    help: 'Reconciles that failed and were requeued with backoff',
  });
  readonly reconcileDuration = this.declare.histogram('tenantgate_controller_reconcile_duration_seconds', {
    help: 'Time to reconcile one Project',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  });
  readonly apiWrites = this.declare.counter('tenantgate_controller_api_writes_total', {
    help: 'Writes the controller sent to the API server, by verb and resource (leases: leader election)',
    labelNames: ['verb', 'resource'],
  });
  readonly apiWriteErrors = this.declare.counter('tenantgate_controller_api_write_errors_total', {
    help: 'Writes refused by the API server, by verb, resource and HTTP code',
    labelNames: ['verb', 'resource', 'code'],
  });
  readonly leader = this.declare.gauge('tenantgate_controller_leader', {
    help: '1 while this replica holds the leader lease and reconciles, else 0',
  });
  readonly leaderTransitions = this.declare.counter('tenantgate_controller_leader_acquired_total', {
    help: 'Times this replica acquired the lease',
  });
  private readonly informers = declareInformerMetrics(this.declare, 'controller', 'Objects in the controller cache');
  readonly informerRestarts = this.informers.informerRestarts;
  readonly informerSynced = this.informers.informerSynced;
  readonly cacheObjects = this.informers.cacheObjects;

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
