/**
 * Wires the controller together: informers → snapshot → work queue keyed by project name → N workers
 * running the Reconciler; a periodic resync through the same queue; leader election deciding when
 * the workers run; /healthz and /readyz over HTTP, /metrics over HTTPS for allowed bearer tokens only.
 */
import * as k8s from '@kubernetes/client-node';
import { hostname } from 'node:os';
import { createCA, signCert } from '../certs/pki.js';
import { apiserverAccessReviews } from '../kube/access-reviews.js';
import type { TenantgateConfig } from '../config/config.js';
import { LABEL_PROJECT, type NamespaceObject, type Project, type ResourceQuotaObject } from '../validate/types.js';
import { canonicalJson } from '../canonical-json.js';
import { Informers, type CacheEvent } from '../kube/informers.js';
import { ControllerApi } from './kube.js';
import { LeaderElector, type LeaderElectionConfig } from './leader.js';
import { serveMetrics, serveProbes, type Served } from './http.js';
import { MetricsAccess } from './metrics-access.js';
import { ControllerMetrics } from './metrics.js';
import { ProjectGauges } from './project-metrics.js';
import { FleetLoop, FleetObservations } from './fleet-loop.js';
import { FleetGauges } from './fleet-metrics.js';
import { isFleetMember } from '../config/config.js';
import { LeanHubClient, loadHubKubeConfig, type HubClient } from '../fleet/hub-client.js';
import { parseResources } from '../validate/resource-lists.js';
import { ConfigMapLedger, type LedgerStore } from '../ledger/ledger.js';
import { managedObjects } from './managed-objects.js';
import { Reconciler } from './reconcile.js';
import { projectAccessCaches } from './project-access.js';
import type { ServingCertificate } from '../certs/reloading-tls.js';
import {
  readFrontProxyAuth,
  serveView,
  type FrontProxyAuth,
  type ViewServer,
  type ViewServerOptions,
} from '../view/server.js';
import type { RateLimiterOptions } from './workqueue.js';
import { Manager, type Runnable } from './manager.js';
import { ReconcileWorkers, reconcileScope, type ProjectQueue } from './reconcile-workers.js';

export type { ProjectQueue };
import { BurstGauges } from './burst-metrics.js';
import { DeletionGauges } from './deletion-metrics.js';
import { DiscoveryInventory } from './deletion/discovery-inventory.js';
import { getProcessClock, type Clock } from '../clock.js';

export interface ControllerOptions {
  kubeConfig: k8s.KubeConfig;
  config: TenantgateConfig;
  /** Concurrent reconciles (never two for one project). Default 4. */
  workers?: number;
  /** Namespace deletes one cascade sends at once. Default 10. */
  deleteConcurrency?: number;
  /** How soon a Project's deletion that waits for a confirmation or the breaker is looked at again. Default 10 s. */
  deletionRecheckMs?: number;
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
  /** Port for /healthz and /readyz over plain HTTP (the kubelet's probes); 0 picks a free one; undefined serves nothing. */
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

/**
 * Whether a cache event is a ResourceQuota update that changed nothing but `status.used` (what its pods
 * use): its spec, enforced `status.hard`, labels, annotations and deletion are as before.
 */
export function onlyUsageChanged(e: CacheEvent): boolean {
  if (e.kind !== 'ResourceQuota' || e.type !== 'update' || !e.old) return false;
  const before = e.old as ResourceQuotaObject;
  const after = e.object as ResourceQuotaObject;
  const same = (a: unknown, b: unknown) => canonicalJson(a ?? null) === canonicalJson(b ?? null);
  return (
    same(before.spec, after.spec) &&
    same(before.status?.hard, after.status?.hard) &&
    same(before.metadata.labels, after.metadata.labels) &&
    same(before.metadata.annotations, after.metadata.annotations) &&
    before.metadata.deletionTimestamp === after.metadata.deletionTimestamp
  );
}

/** The keys a cache event concerns (project names). */
export class KeyMapper {
  /** Declared namespace name → projects declaring it (a declared namespace may exist without the label). */
  private readonly declaredBy = new Map<string, Set<string>>();

  constructor(private readonly informers: Informers) {}

  keysFor(e: CacheEvent): Set<string> {
    const keys = new Set<string>();
    const labelOf = (o: { metadata?: { labels?: Record<string, string> } } | undefined) =>
      o?.metadata?.labels?.[LABEL_PROJECT];
    const addDeclared = (ns: string) => {
      for (const p of this.declaredBy.get(ns) ?? []) keys.add(p);
    };
    if (e.kind === 'Project') {
      const name = e.object.metadata?.name ?? '';
      keys.add(name);
      this.index(
        name,
        e.old as Project | undefined,
        e.type === 'delete' ? undefined : (e.object as unknown as Project),
      );
    } else if (e.kind === 'Namespace') {
      const name = e.object.metadata?.name ?? '';
      for (const l of [labelOf(e.object), labelOf(e.old)]) if (l) keys.add(l);
      addDeclared(name);
    } else {
      const namespace = e.object.metadata?.namespace ?? '';
      const ns = this.informers.snapshot.namespace(namespace) as NamespaceObject | undefined;
      for (const l of [labelOf(ns as never), labelOf(e.object), labelOf(e.old)]) if (l) keys.add(l);
      addDeclared(namespace);
    }
    keys.delete('');
    return keys;
  }

  private index(project: string, before: Project | undefined, after: Project | undefined): void {
    for (const d of before?.spec?.namespaces ?? []) this.declaredBy.get(d.name)?.delete(project);
    for (const d of after?.spec?.namespaces ?? []) {
      let set = this.declaredBy.get(d.name);
      if (!set) this.declaredBy.set(d.name, (set = new Set()));
      set.add(project);
    }
  }
}

/**
 * The informers' events to the leader's queue (`queue()`; undefined while not leading): every project
 * an event concerns is queued at once, except after a usage-only quota change (onlyUsageChanged), which
 * queues it `usageSettleMs` later (ControllerOptions.usageSettleMs; default 1000, 0: at once). The key
 * mapper sees every event, leader or not.
 */
export function queueCacheEvents(
  informers: Pick<Informers, 'onEvent'>,
  mapper: Pick<KeyMapper, 'keysFor'>,
  queue: () => ProjectQueue | undefined,
  usageSettleMs = 1000,
): void {
  const settleMs = Math.max(0, usageSettleMs);
  informers.onEvent((e) => {
    const keys = mapper.keysFor(e); // indexes declared namespaces, leader or not
    const q = queue();
    if (!q) return;
    const settle = settleMs > 0 && onlyUsageChanged(e);
    for (const key of keys) {
      if (settle) q.addAfter(key, settleMs);
      else q.add(key);
    }
  });
}

export async function startController(options: ControllerOptions): Promise<RunningController> {
  const clock = options.clock ?? getProcessClock();
  const log = options.log ?? ((m: string) => process.stderr.write(`${new Date().toISOString()} controller: ${m}\n`));
  const metrics = new ControllerMetrics();
  const api = new ControllerApi(options.kubeConfig, metrics);
  if (options.leaderElection) api.identity = options.leaderElection.identity;
  const informers = new Informers(options.kubeConfig, api, {
    log,
    metrics,
    ...(options.projectSelector ? { projectSelector: options.projectSelector } : {}),
  });
  const managed = managedObjects(options.kubeConfig, (kind) => api.listManaged(kind), { log, metrics });
  // visibility: own — the per-project ClusterRoles and bindings, watched only then (and only then does the chart grant it).
  const access =
    options.config.visibility === 'own'
      ? projectAccessCaches(options.kubeConfig, (kind) => api.listAccess(kind), { log, metrics })
      : undefined;
  const synced = () => informers.synced && managed.synced && (access?.synced ?? true);
  // What the metrics and the budget view read: the cache once it has synced, and this cluster's name.
  const syncedCache = {
    snapshot: () => (synced() ? informers.snapshot : undefined),
    cluster: options.config.clusterName,
    ...(options.config.pricing ? { pricing: options.config.pricing } : {}),
  };
  // tenantgate_project_*: computed from the cache at scrape time (project-metrics.ts, ADR 0033).
  new ProjectGauges(metrics.registry).observe(syncedCache);
  // tenantgate_project_burst_*: the bursts at the process clock's instant (burst-metrics.ts).
  new BurstGauges(metrics.registry, syncedCache, () => clock.now());
  // tenantgate_project_deletion_waiting, tenantgate_deletion_breaker_tripped (ADR 0096): from the Projects' conditions.
  new DeletionGauges(metrics.registry, syncedCache.snapshot);
  // What a deleting Project's namespaces hold (discovery, then short lists): decides what waits for a confirmation.
  const inventory = new DiscoveryInventory(options.kubeConfig);

  const manager = new Manager({
    leaderElection: options.leaderElection !== false,
    onLeading: (leading) => metrics.leader.set(leading ? 1 : 0),
  });

  // The reconcilers (they need the lease): every line a reconcile logs carries its project and reconcile id (as controller-runtime's logger does).
  const reconcileLog = (message: string) => log(message, reconcileScope.getStore());
  const reconciler = new Reconciler({
    api,
    informers,
    managed,
    ...(access ? { access } : {}),
    clock,
    config: options.config,
    log: reconcileLog,
    ...(options.deleteConcurrency ? { deleteConcurrency: options.deleteConcurrency } : {}),
    inventory,
    ...(options.deletionRecheckMs ? { deletionRecheckMs: options.deletionRecheckMs } : {}),
  });
  const reconcilers = new ReconcileWorkers({
    reconciler,
    metrics,
    informers,
    log,
    workers: Math.max(1, options.workers ?? 4),
    resyncMs: Math.max(0, options.config.resyncPeriodSeconds * 1000),
    ...(options.rateLimiter ? { rateLimiter: options.rateLimiter } : {}),
  });
  manager.add(reconcilers);
  const mapper = new KeyMapper(informers);
  queueCacheEvents(informers, mapper, () => reconcilers.queue(), options.usageSettleMs);
  managed.onChange((namespace) => {
    const project = informers.snapshot.namespace(namespace)?.metadata.labels?.[LABEL_PROJECT];
    if (project) reconcilers.queue()?.add(project);
  });
  access?.onChange((project) => reconcilers.queue()?.add(project));

  // Fleet budgets: the give-back and offer loop checks on every replica (a standby's view and metrics show the shares,
  // its idle clocks run) and writes only while this replica leads (fleet-loop.ts, fleet-metrics.ts, ADR 0039).
  const fleetSeen = new FleetObservations();
  const fleetIo =
    options.fleet ??
    (isFleetMember(options.config)
      ? {
          hub: new LeanHubClient(loadHubKubeConfig(options.config.fleet.hubKubeconfig)),
          ledger: new ConfigMapLedger(options.kubeConfig, options.config.systemNamespace),
        }
      : undefined);
  if (fleetIo) {
    new FleetGauges(metrics.registry, { ...syncedCache, observations: fleetSeen });
    const writes = new FleetWrites();
    const loop = new FleetLoop({
      cluster: options.config.clusterName,
      hub: fleetIo.hub,
      ledger: fleetIo.ledger,
      snapshot: () => informers.snapshot,
      policy: {
        keep: parseResources(options.config.fleet.keep),
        above: parseResources(options.config.fleet.above),
        offerAfterMs: options.config.fleet.offerAfterSeconds * 1000,
        giveBackAfterMs: options.config.fleet.giveBackAfterSeconds * 1000,
      },
      checkEveryMs: options.config.fleet.checkEverySeconds * 1000,
      observations: fleetSeen,
      log,
      acts: () => writes.allowed(),
    });
    manager.add(writes);
    manager.add({
      name: 'fleet-loop',
      needsLeaderElection: false,
      start: () => loop.start(),
      stop: () => loop.stop(),
    });
  }

  let elector: LeaderElector | undefined;
  if (options.leaderElection) {
    elector = new LeaderElector(api, options.leaderElection, {
      log,
      onStartedLeading: () => {
        metrics.leaderTransitions.inc();
        manager.wonLease();
      },
      onStoppedLeading: () => manager.lostLease(),
    });
    manager.useLeaseCampaign(elector);
  }

  // The servers (no lease): the probes over HTTP; /metrics over HTTPS behind a TokenReview and a SubjectAccessReview;
  // the budget view, which every replica serves from its own caches (docs/adr/0030-what-tenants-see.md).
  let probes: Served | undefined;
  if (options.probePort !== undefined) {
    const probePort = options.probePort;
    manager.add(
      server(
        'probes',
        async () =>
          (probes = await serveProbes({
            port: probePort,
            host: options.probeHost ?? '0.0.0.0',
            healthy: () => (elector ? elector.healthy() : true),
            ready: synced,
            current: () => informers.upToDate && managed.upToDate && (access?.upToDate ?? true),
          })),
      ),
    );
  }
  let metricsCa: string | undefined;
  let metricsServer: Served | undefined;
  if (options.metricsPort !== undefined) {
    const metricsPort = options.metricsPort;
    manager.add(
      server('metrics', async () => {
        let tls = options.metricsTls;
        if (!tls) {
          const made = await selfSignedMetricsCertificate();
          tls = made;
          metricsCa = made.ca;
          log('metrics: no serving certificate given, serving /metrics with a self-signed one made at start');
        }
        const reviews = new MetricsAccess(apiserverAccessReviews(options.kubeConfig));
        return (metricsServer = await serveMetrics({
          ...tls,
          port: metricsPort,
          host: options.metricsHost ?? '0.0.0.0',
          metrics,
          access: reviews,
          log,
        }));
      }),
    );
  }
  let view: ViewServer | undefined;
  if (options.view) {
    const v = options.view;
    manager.add(
      server('budget-view', async () => {
        const auth = v.auth ?? (await readFrontProxyAuth(options.kubeConfig));
        view = await serveView({
          ...('certFile' in v ? { certFile: v.certFile, keyFile: v.keyFile } : { cert: v.cert, key: v.key }),
          port: v.port,
          host: v.host,
          auth,
          ...(v.auth ? {} : { reload: () => readFrontProxyAuth(options.kubeConfig) }),
          source: { ...syncedCache, fleet: (project: string) => fleetSeen.projects.get(project) },
          log,
          ...(v.onRequest ? { onRequest: v.onRequest } : {}),
        });
        log(`budget view (view.tenantgate.io) serving on ${v.host}:${view.port}`);
        return view;
      }),
    );
  }
  // The fleet's hub client and ledger are closed after the servers stop, when the controller opened them.
  if (fleetIo && !options.fleet) {
    const io = fleetIo;
    manager.add({
      name: 'fleet-clients',
      needsLeaderElection: false,
      group: 'servers',
      start: () => {},
      stop: async () => {
        io.hub.close();
        (io.ledger as ConfigMapLedger).close();
      },
    });
  }

  // The caches (no lease): what every other runnable reads.
  manager.add({
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
  });

  metrics.leader.set(0);
  await manager.start();
  void Promise.all([informers.waitSynced(), managed.waitSynced(), access?.waitSynced()]).then(() => {
    log(`caches synced: ${JSON.stringify(informers.snapshot.sizes)}`);
    manager.cachesSynced();
  });

  return {
    metrics,
    informers,
    port: metricsServer?.port,
    metricsCa,
    probePort: probes?.port,
    viewPort: view?.port,
    fleet: fleetSeen,
    isLeader: () => manager.isLeading(),
    synced,
    async stop() {
      await manager.stop();
      inventory.close();
      log('stopped');
    },
  };
}

/** A server as a runnable that needs no lease: started (listening) before the caches, stopped after them. */
function server(name: string, listen: () => Promise<{ close(): Promise<void> }>): Runnable {
  let served: { close(): Promise<void> } | undefined;
  return {
    name,
    needsLeaderElection: false,
    group: 'servers',
    start: async () => {
      served = await listen();
    },
    stop: async () => {
      await served?.close();
    },
  };
}

/** The fleet loop's writes (lowering its enforced limit, writing to the hub): a runnable that needs the lease and does nothing but allow them. */
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

/** A CA and a serving certificate it signs, for localhost, this host's name and 127.0.0.1 (controller-runtime makes one too when given none). */
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
