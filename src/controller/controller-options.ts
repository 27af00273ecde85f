/**
 * What startController (controller.ts) takes and gives back.
 */
import type * as k8s from '@kubernetes/client-node';
import type { TenantgateConfig } from '../config/config.js';
import type { Informers } from '../kube/informers.js';
import type { LedgerStore } from '../ledger/ledger.js';
import type { HubClient } from '../fleet/hub-client.js';
import type { ServingCertificate } from '../certs/reloading-tls.js';
import type { FrontProxyAuth, ViewServerOptions } from '../view/server.js';
import type { Clock } from '../clock.js';
import type { LeaderElectionConfig } from './leader.js';
import type { ControllerMetrics } from './metrics.js';
import type { FleetObservations } from './fleet-loop.js';
import type { RateLimiterOptions } from './workqueue.js';

export interface ControllerOptions {
  kubeConfig: k8s.KubeConfig;
  config: TenantgateConfig;
  /** Concurrent reconciles (never two for one project). Default 4. */
  workers?: number;
  /** Namespace deletes one cascade sends at once. Default 10. */
  deleteConcurrency?: number;
  /** How soon a Project's deletion that waits for a confirmation or the breaker is looked at again. Default 30 s. */
  deletionRecheckMs?: number;
  /** How long discovery is reused by the inventory of a deleting Project's namespaces. Default 60 s. */
  discoveryTtlMs?: number;
  /**
   * Port for /metrics over HTTPS, answered only for a bearer token whose user may get the non-resource
   * URL /metrics (TokenReview, SubjectAccessReview: docs/adr/0033-observability.md); 0 picks
   * a free one; undefined serves nothing.
   */
  metricsPort?: number;
  metricsHost?: string;
  /**
   * Serving certificate of /metrics: files (reloaded when they change) or PEM text; absent: a
   * self-signed one made at start (RunningController.metricsCa).
   */
  metricsTls?: ServingCertificate;
  /**
   * Port for /healthz and /readyz over plain HTTP (the kubelet's probes); 0 picks a free one; undefined serves nothing.
   */
  probePort?: number;
  probeHost?: string;
  /** false: reconcile without a lease (a single replica, tests). */
  leaderElection?: false | LeaderElectionConfig;
  /** Only Projects matching this label selector are reconciled. */
  projectSelector?: string;
  rateLimiter?: RateLimiterOptions;
  /**
   * A ResourceQuota event that changes only what is in use (`status.used`: every pod started or gone)
   * reconciles its project this long after the first such change, so a burst of pods costs one
   * reconcile and one status write per project per interval instead of one per pod. Default 1000 ms;
   * 0 reconciles at once. Other changes (a quota's spec, its enforced `status.hard`, labels, deletion)
   * reconcile at once.
   */
  usageSettleMs?: number;
  /** Log lines; `fields` carry the structured part (project, reconcile id…). */
  log?: (message: string, fields?: Record<string, unknown>) => void;
  /**
   * Serve the budget view (view.tenantgate.io, src/view/) over HTTPS on every replica, leader or not.
   * `auth` defaults to kube-system/extension-apiserver-authentication (re-read every 10 minutes).
   */
  view?: ServingCertificate & {
    port: number;
    host: string;
    auth?: FrontProxyAuth;
    onRequest?: ViewServerOptions['onRequest'];
  };
  /**
   * The fleet's hub and the headroom ledgers for the give-back loop (docs/adr/0039-fleet-budgets.md);
   * default, on a fleet member (tenantgate.yaml fleet.hubKubeconfig set): the hub from that kubeconfig,
   * the ledgers in systemNamespace.
   */
  fleet?: { hub: HubClient; ledger: LedgerStore };
  /**
   * The clock reconciles decide at and the burst gauges read (default: the process clock, src/clock.ts).
   * The lease, the work queue's backoffs and delays and the fleet loop's timers keep the system clock.
   */
  clock?: Clock;
}

export interface RunningController {
  readonly metrics: ControllerMetrics;
  readonly informers: Informers;
  /** The HTTPS port of /metrics, when served. */
  readonly port: number | undefined;
  /** The PEM that verifies the metrics certificate when it was made at start (no metricsTls given). */
  readonly metricsCa: string | undefined;
  /** The HTTP port of /healthz and /readyz, when served. */
  readonly probePort: number | undefined;
  /** The budget view's HTTPS port, when served. */
  readonly viewPort: number | undefined;
  /** What the give-back loop last saw (empty unless this replica leads a fleet member). */
  readonly fleet: FleetObservations;
  isLeader(): boolean;
  synced(): boolean;
  /** Graceful stop: finish the items in hand, release the lease, stop watching. */
  stop(): Promise<void>;
}
