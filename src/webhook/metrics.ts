import { Registry } from 'prom-client';
import { declareInformerMetrics, declareMetrics } from '../declare-metrics.js';

export class WebhookMetrics {
  readonly registry = new Registry();
  private readonly declare = declareMetrics(this.registry);
  readonly requests = this.declare.counter('tenantgate_webhook_requests_total', {
    help: 'Admission requests by path, operation, kind and verdict',
    labelNames: ['path', 'operation', 'kind', 'verdict'],
  });
  readonly latency = this.declare.histogram('tenantgate_webhook_request_duration_seconds', {
    help: 'Admission request latency by path, operation, kind and verdict',
    labelNames: ['path', 'operation', 'kind', 'verdict'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
  });
  private readonly informers = declareInformerMetrics(this.declare, 'webhook', 'Objects in the watch caches');
  readonly informerRestarts = this.informers.informerRestarts;
  readonly informerSynced = this.informers.informerSynced;
  readonly cacheObjects = this.informers.cacheObjects;
  readonly badRequests = this.declare.counter('tenantgate_webhook_bad_requests_total', {
    help: 'Requests refused before review (malformed, too large, unknown path)',
    labelNames: ['code'],
  });
  readonly denials = this.declare.counter('tenantgate_webhook_denials_total', {
    help: 'Violations in denied validations, by rule id (a denial naming two rules counts for both)',
    labelNames: ['rule'],
  });
  readonly ledgerBatchSize = this.declare.histogram('tenantgate_webhook_ledger_batch_size', {
    help: 'Admitted changes recorded per headroom ledger write (group commit); the count is the number of writes',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128],
  });
  readonly ledgerRoundPhase = this.declare.histogram('tenantgate_webhook_ledger_round_phase_seconds', {
    help:
      'Time a headroom ledger batch spent per phase (queued, turn, read, ready, decide, write, lost); queued once ' +
      'per batch, the others per compare-and-swap round',
    labelNames: ['phase'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2],
  });
  readonly catchUps = this.declare.counter('tenantgate_webhook_catch_ups_total', {
    help:
      "Waits for this replica's watches to reach a ledger's settled marks, by outcome: streamed (they advanced by " +
      'themselves), probed (after the watermark probe), behind (not in time: [Q5])',
    labelNames: ['outcome'],
  });
  readonly reservations = this.declare.counter('tenantgate_webhook_reservations_total', {
    help: 'Cross-replica headroom reservations by outcome',
    labelNames: ['outcome'],
  });
  // Fleet budgets on a member (docs/adr/0039-fleet-budgets.md, docs/observability.md).
  readonly fleetEnforcedLimit = this.declare.gauge('tenantgate_fleet_enforced_limit', {
    help:
      "This member's enforced limit E of a fleet-budgeted project, per resource, as this replica last read or " +
      'raised it',
    labelNames: ['project', 'resource'],
  });
  readonly fleetTransfers = this.declare.counter('tenantgate_fleet_transfers_total', {
    help:
      'Growths beyond the enforced limit asked of the hub, by result (granted, refused, unreachable, unusable, ' +
      'failed)',
    labelNames: ['result'],
  });
  readonly fleetHubRequests = this.declare.counter('tenantgate_fleet_hub_requests_total', {
    help: 'Calls to the fleet hub by operation (read, write) and outcome (ok, not-found, conflict, error, timeout)',
    labelNames: ['op', 'outcome'],
  });
  readonly fleetHubLatency = this.declare.histogram('tenantgate_fleet_hub_request_duration_seconds', {
    help: 'Latency of calls to the fleet hub by operation',
    labelNames: ['op'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2],
  });
  readonly fleetHubReachable = this.declare.gauge('tenantgate_fleet_hub_reachable', {
    help: "1 when this replica's last call to the fleet hub was answered, 0 when it was not (no call yet: absent)",
  });
}
