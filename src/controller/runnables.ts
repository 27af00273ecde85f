/**
 * The controller's runnables, one builder each, controller-runtime style: each runnable says whether it
 * needs the lease and which group it starts in (manager.ts runs them). They share one core (the API
 * client, the caches, the metrics, the clock, the log: controllerCore); startController (controller.ts)
 * builds the core, then each runnable, and hands them to the manager.
 */
import { hostname } from 'node:os';
import { createCA, signCert } from '../certs/pki.js';
import { apiserverAccessReviews } from '../kube/access-reviews.js';
import { isFleetMember } from '../config/config.js';
import { API_GROUP, LABEL_PROJECT } from '../validate/types.js';
import { ALLOW_LIST_PLURAL } from '../validate/allow-list-params.js';
import { AllowListFinalizers, DEFAULT_RECHECK_MS } from './allow-list-finalizer.js';
import type { DiscoveryInventory } from './deletion/discovery-inventory.js';
import { Informers } from '../kube/informers.js';
import { LeanHubClient, loadHubKubeConfig, type HubClient } from '../fleet/hub-client.js';
import { parseResources } from '../validate/resource-lists.js';
import { ConfigMapLedger, type LedgerStore } from '../ledger/ledger.js';
import { readFrontProxyAuth, serveView, type ViewServer } from '../view/server.js';
import type { Clock } from '../clock.js';
import { ControllerApi } from './kube.js';
import { LeaderElector, type LeaderElectionConfig } from './leader.js';
import { serveMetrics, serveProbes, type Served } from './http.js';
import { MetricsAccess } from './metrics-access.js';
import { ControllerMetrics } from './metrics.js';
import { ProjectGauges } from './project-metrics.js';
import { BurstGauges } from './burst-metrics.js';
import { DeletionGauges } from './deletion-metrics.js';
import { FleetLoop, type FleetObservations } from './fleet-loop.js';
import { FleetGauges } from './fleet-metrics.js';
import { managedObjects, type ManagedObjects } from './managed-objects.js';
import { projectAccessCaches, type ProjectAccessCaches } from './project-access.js';
import { Reconciler, type ReconcilerOptions } from './reconcile.js';
import { ReconcileWorkers, reconcileScope } from './reconcile-workers.js';
import type { Manager, Runnable } from './manager.js';
import type { ControllerOptions } from './controller-options.js';
import { CONTROLLER_DEFAULTS } from './options.js';

export type ControllerLog = (message: string, fields?: Record<string, unknown>) => void;

/** What the metrics and the budget view read: the cache once it has synced, and this cluster's name. */
interface SyncedCache {
  snapshot: () => Informers['snapshot'] | undefined;
  cluster: string;
  pricing?: NonNullable<ControllerOptions['config']['pricing']>;
  /** The instant budgets are decided at: the controller's clock. */
  budgetAt: () => number;
}

/** What every runnable shares. */
export interface ControllerCore {
  readonly options: ControllerOptions;
  readonly log: ControllerLog;
  /** The one clock reconciles decide at (reconcile.ts); leases and backoffs keep the system clock. */
  readonly clock: Clock;
  readonly metrics: ControllerMetrics;
  readonly api: ControllerApi;
  readonly informers: Informers;
  /** The owners' RoleBindings, LimitRanges, NetworkPolicies and AllowLists in project namespaces. */
  readonly managed: ManagedObjects;
  /** The per-project ClusterRoles and bindings: watched only with visibility: own (the chart grants it then). */
  readonly access: ProjectAccessCaches | undefined;
  /** Every cache has synced. */
  synced(): boolean;
  readonly syncedCache: SyncedCache;
}

export function controllerCore(options: ControllerOptions, clock: Clock, log: ControllerLog): ControllerCore {
  const metrics = new ControllerMetrics();
  const api = new ControllerApi(options.kubeConfig, metrics);
  if (options.leaderElection) api.identity = options.leaderElection.identity;
  const informers = new Informers(options.kubeConfig, api, {
    log,
    metrics,
    ...(options.projectSelector ? { projectSelector: options.projectSelector } : {}),
  });
  const managed = managedObjects(options.kubeConfig, (kind) => api.listManaged(kind), { log, metrics });
  const access =
    options.config.visibility === 'own'
      ? projectAccessCaches(options.kubeConfig, (kind) => api.listAccess(kind), { log, metrics })
      : undefined;
  const synced = () => informers.synced && managed.synced && (access?.synced ?? true);
  const syncedCache: SyncedCache = {
    snapshot: () => (synced() ? informers.snapshot : undefined),
    cluster: options.config.clusterName,
    ...(options.config.pricing ? { pricing: options.config.pricing } : {}),
    budgetAt: () => clock.now(),
  };
  return { options, log, clock, metrics, api, informers, managed, access, synced, syncedCache };
}

/** The gauges computed from the cache at scrape time (ADR 0033); registered once, they need no runnable. */
export function observeGauges(core: ControllerCore): void {
  const { metrics, syncedCache, clock } = core;
  // tenantgate_project_*: project-metrics.ts.
  new ProjectGauges(metrics.registry).observe(syncedCache);
  // tenantgate_project_burst_*: the bursts at the controller's clock (burst-metrics.ts).
  new BurstGauges(metrics.registry, syncedCache, () => clock.now());
  // tenantgate_project_deletion_waiting, tenantgate_deletion_breaker_tripped (ADR 0096): the Projects' conditions.
  new DeletionGauges(metrics.registry, syncedCache.snapshot);
}

/** The caches (no lease, group caches): what every other runnable reads. */
export function cachesRunnable(core: ControllerCore): Runnable {
  const { informers, managed, access } = core;
  return {
    name: 'caches',
    needsLeaderElection: false,
    group: 'caches',
    start: () => {
      informers.start();
      managed.start();
      access?.start();
    },
    stop: async () => {
      await Promise.all([informers.stop(), managed.stop(), access?.stop()]);
    },
  };
}

/**
 * The reconcilers (need the lease): N workers over the leader's queue (reconcile-workers.ts). Every line
 * a reconcile logs carries its project and reconcile id (as controller-runtime's logger does).
 */
export function reconcileRunnable(core: ControllerCore, inventory: ReconcilerOptions['inventory']): ReconcileWorkers {
  const { options, log, informers, metrics } = core;
  const reconciler = new Reconciler({
    api: core.api,
    informers,
    managed: core.managed,
    ...(core.access ? { access: core.access } : {}),
    clock: core.clock,
    config: options.config,
    log: (message: string) => log(message, reconcileScope.getStore()),
    ...(options.deleteConcurrency ? { deleteConcurrency: options.deleteConcurrency } : {}),
    ...(inventory ? { inventory } : {}),
    ...(options.deletionRecheckMs ? { deletionRecheckMs: options.deletionRecheckMs } : {}),
  });
  return new ReconcileWorkers({
    reconciler,
    metrics,
    informers,
    log,
    workers: Math.max(1, options.workers ?? CONTROLLER_DEFAULTS.workers),
    resyncMs: Math.max(0, options.config.resyncPeriodSeconds * 1000),
    ...(options.rateLimiter ? { rateLimiter: options.rateLimiter } : {}),
  });
}

/** The AllowLists' finalizers, decided on the caches and the inventory's lists (allow-list-finalizer.ts). */
export function allowListFinalizersRunnable(
  core: ControllerCore,
  inventory: Pick<DiscoveryInventory, 'remaining'>,
): AllowListFinalizers {
  const { informers, managed, api, log, options } = core;
  const isAllowList = (r: { group: string; resource: string }) =>
    r.group === API_GROUP && r.resource === ALLOW_LIST_PLURAL;
  return new AllowListFinalizers(
    {
      cache: managed.caches.AllowList,
      namespace: (name) => {
        const ns = informers.snapshot.namespace(name);
        return ns ? { deletionTimestamp: ns.metadata.deletionTimestamp } : undefined;
      },
      remaining: (namespace) => inventory.remaining(namespace, isAllowList),
      release: (allowList) => api.releaseAllowList(allowList),
      log,
    },
    options.deletionRecheckMs ?? DEFAULT_RECHECK_MS,
  );
}

/** The fleet's hub and ledgers: the options', or, on a fleet member, opened from tenantgate.yaml. */
export function fleetIo(options: ControllerOptions): { hub: HubClient; ledger: LedgerStore } | undefined {
  if (options.fleet) return options.fleet;
  if (!isFleetMember(options.config)) return undefined;
  return {
    hub: new LeanHubClient(loadHubKubeConfig(options.config.fleet.hubKubeconfig)),
    ledger: new ConfigMapLedger(options.kubeConfig, options.config.systemNamespace),
  };
}

/**
 * Fleet budgets (fleet-loop.ts, fleet-metrics.ts, ADR 0039): the give-back and offer loop checks on every
 * replica (no lease: a standby's view and metrics show the shares, its idle clocks run) and writes only
 * while this replica leads (`fleet-writes`, which needs the lease).
 */
export function fleetRunnables(
  core: ControllerCore,
  io: { hub: HubClient; ledger: LedgerStore },
  observations: FleetObservations,
): Runnable[] {
  const { options, informers, metrics, log } = core;
  const { fleet } = options.config;
  new FleetGauges(metrics.registry, { ...core.syncedCache, observations });
  const writes = new FleetWrites();
  const loop = new FleetLoop({
    cluster: options.config.clusterName,
    hub: io.hub,
    ledger: io.ledger,
    snapshot: () => informers.snapshot,
    policy: {
      keep: parseResources(fleet.keep),
      above: parseResources(fleet.above),
      offerAfterMs: fleet.offerAfterSeconds * 1000,
      giveBackAfterMs: fleet.giveBackAfterSeconds * 1000,
    },
    checkEveryMs: fleet.checkEverySeconds * 1000,
    observations,
    log,
    acts: () => writes.allowed(),
    clock: core.clock,
  });
  const checks: Runnable = {
    name: 'fleet-loop',
    needsLeaderElection: false,
    start: () => loop.start(),
    stop: () => loop.stop(),
  };
  return [writes, checks];
}

/** Closes the fleet's hub client and ledger the controller opened (no lease; among the servers, stopped first). */
export function fleetClientsRunnable(io: { hub: HubClient; ledger: LedgerStore }): Runnable {
  return {
    name: 'fleet-clients',
    needsLeaderElection: false,
    group: 'servers',
    start: () => {},
    stop: async () => {
      io.hub.close();
      (io.ledger as ConfigMapLedger).close();
    },
  };
}

/** The lease campaign (leader.ts): the manager starts what needs the lease when it is won. */
export function leaseCampaign(core: ControllerCore, config: LeaderElectionConfig, manager: Manager): LeaderElector {
  const elector = new LeaderElector(core.api, config, {
    log: core.log,
    onStartedLeading: () => {
      core.metrics.leaderTransitions.inc();
      manager.wonLease();
    },
    onStoppedLeading: () => manager.lostLease(),
  });
  manager.useLeaseCampaign(elector);
  return elector;
}

/** A server as a runnable that needs no lease: started (listening) before the caches, stopped after them. */
export class ServerRunnable<S extends { close(): Promise<void> }> implements Runnable {
  readonly needsLeaderElection = false;
  readonly group = 'servers';
  /** What listens, once started. */
  served: S | undefined;

  constructor(
    readonly name: string,
    private readonly listen: () => Promise<S>,
  ) {}

  async start(): Promise<void> {
    this.served = await this.listen();
  }

  async stop(): Promise<void> {
    await this.served?.close();
  }
}

/** /healthz and /readyz over plain HTTP (the kubelet's probes). */
export function probesRunnable(core: ControllerCore, port: number, healthy: () => boolean): ServerRunnable<Served> {
  const { options, informers, managed, access } = core;
  return new ServerRunnable('probes', () =>
    serveProbes({
      port,
      host: options.probeHost ?? CONTROLLER_DEFAULTS.host,
      healthy,
      ready: core.synced,
      current: () => informers.upToDate && managed.upToDate && (access?.upToDate ?? true),
    }),
  );
}

/**
 * /metrics over HTTPS behind a TokenReview and a SubjectAccessReview; without a serving certificate, one
 * made at start (`ca`: the PEM that verifies it).
 */
export function metricsRunnable(core: ControllerCore, port: number): ServerRunnable<Served & { ca?: string }> {
  const { options, log } = core;
  return new ServerRunnable('metrics', async () => {
    let tls = options.metricsTls;
    let ca: string | undefined;
    if (!tls) {
      const made = await selfSignedMetricsCertificate();
      tls = made;
      ca = made.ca;
      log('metrics: no serving certificate given, serving /metrics with a self-signed one made at start');
    }
    const reviews = new MetricsAccess(apiserverAccessReviews(options.kubeConfig));
    const served = await serveMetrics({
      ...tls,
      port,
      host: options.metricsHost ?? CONTROLLER_DEFAULTS.host,
      metrics: core.metrics,
      access: reviews,
      log,
    });
    return Object.assign(served, ca ? { ca } : {});
  });
}

/** The budget view, which every replica serves from its own caches (docs/adr/0030-what-tenants-see.md). */
export function viewRunnable(
  core: ControllerCore,
  v: NonNullable<ControllerOptions['view']>,
  fleetSeen: FleetObservations,
): ServerRunnable<ViewServer> {
  const { options, log } = core;
  return new ServerRunnable('budget-view', async () => {
    const auth = v.auth ?? (await readFrontProxyAuth(options.kubeConfig));
    const view = await serveView({
      ...('certFile' in v ? { certFile: v.certFile, keyFile: v.keyFile } : { cert: v.cert, key: v.key }),
      port: v.port,
      host: v.host,
      auth,
      ...(v.auth ? {} : { reload: () => readFrontProxyAuth(options.kubeConfig) }),
      source: { ...core.syncedCache, fleet: (project: string) => fleetSeen.projects.get(project) },
      log,
      ...(v.onRequest ? { onRequest: v.onRequest } : {}),
    });
    log(`budget view (view.tenantgate.io) serving on ${v.host}:${view.port}`);
    return view;
  });
}

/** Queues a project again when one of its managed objects or access objects changes (the leader's queue). */
export function queueObjectChanges(core: ControllerCore, reconcilers: ReconcileWorkers): void {
  core.managed.onChange((namespace) => {
    const project = core.informers.snapshot.namespace(namespace)?.metadata.labels?.[LABEL_PROJECT];
    if (project) reconcilers.queue()?.add(project);
  });
  core.access?.onChange((project) => reconcilers.queue()?.add(project));
}

/**
 * The fleet loop's writes (lowering its enforced limit, writing to the hub): a runnable that needs the
 * lease and does nothing but allow them.
 */
class FleetWrites implements Runnable {
  readonly name = 'fleet-writes';
  readonly needsLeaderElection = true;
  private running = false;

  allowed(): boolean {
    return this.running;
  }

  start(): void {
    this.running = true;
  }

  async stop(): Promise<void> {
    this.running = false;
  }
}

/**
 * A CA and a serving certificate it signs, for localhost, this host's name and 127.0.0.1
 * (controller-runtime makes one too when given none).
 */
async function selfSignedMetricsCertificate(): Promise<{ cert: string; key: string; ca: string }> {
  const ca = await createCA('tenantgate-controller-metrics-ca', 365);
  const serving = await signCert(ca, {
    commonName: 'tenantgate-controller-metrics',
    dnsNames: ['localhost', hostname()],
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
    days: 365,
  });
  return { cert: serving.certPem, key: serving.keyPem, ca: ca.certPem };
}
