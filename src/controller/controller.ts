/**
 * Wires the controller together: informers → snapshot → work queue keyed by project name → N workers
 * running the Reconciler; a periodic resync through the same queue; leader election deciding when
 * the workers run; /healthz and /readyz over HTTP, /metrics over HTTPS for allowed bearer tokens only.
 * Each runnable has its builder in runnables.ts and says whether it needs the lease; manager.ts runs them.
 */
import { canonicalJson } from '../canonical-json.js';
import { getProcessClock } from '../clock.js';
import { LABEL_PROJECT, type NamespaceObject, type Project, type ResourceQuotaObject } from '../validate/types.js';
import type { CacheEvent, Informers } from '../kube/informers.js';
import { FleetObservations } from './fleet-loop.js';
import { Manager } from './manager.js';
import type { ProjectQueue } from './reconcile-workers.js';
import { DiscoveryInventory } from './deletion/discovery-inventory.js';
import type { ControllerOptions, RunningController } from './controller-options.js';
import {
  allowListFinalizersRunnable,
  cachesRunnable,
  controllerCore,
  fleetClientsRunnable,
  fleetIo,
  fleetRunnables,
  leaseCampaign,
  metricsRunnable,
  observeGauges,
  probesRunnable,
  queueObjectChanges,
  reconcileRunnable,
  viewRunnable,
  type ControllerLog,
} from './runnables.js';

export type { ControllerOptions, ProjectQueue, RunningController };

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
  const log: ControllerLog =
    options.log ?? ((m: string) => process.stderr.write(`${new Date().toISOString()} controller: ${m}\n`));
  const core = controllerCore(options, clock, log);
  const { metrics, informers, managed, access } = core;
  observeGauges(core);
  // What a deleting Project's namespaces hold (discovery, then short lists): decides what waits for a confirmation.
  const inventory = new DiscoveryInventory(options.kubeConfig, options.discoveryTtlMs);
  const manager = new Manager({
    leaderElection: options.leaderElection !== false,
    onLeading: (leading) => metrics.leader.set(leading ? 1 : 0),
  });

  // Needs the lease: the reconcilers, fed by the caches' events.
  const reconcilers = reconcileRunnable(core, inventory);
  manager.add(reconcilers);
  queueCacheEvents(informers, new KeyMapper(informers), () => reconcilers.queue(), options.usageSettleMs);
  queueObjectChanges(core, reconcilers);
  // Needs the lease: an AllowList held until nothing it judges is left in its namespace.
  manager.add(allowListFinalizersRunnable(core, inventory));
  // Fleet budgets: the loop's checks (no lease) and its writes (the lease).
  const fleetSeen = new FleetObservations();
  const fleet = fleetIo(options);
  if (fleet) for (const r of fleetRunnables(core, fleet, fleetSeen)) manager.add(r);
  const elector = options.leaderElection ? leaseCampaign(core, options.leaderElection, manager) : undefined;

  // No lease: the servers, then the caches.
  const healthy = () => (elector ? elector.healthy() : true);
  const probes = options.probePort !== undefined ? probesRunnable(core, options.probePort, healthy) : undefined;
  const metricsServer = options.metricsPort !== undefined ? metricsRunnable(core, options.metricsPort) : undefined;
  const view = options.view ? viewRunnable(core, options.view, fleetSeen) : undefined;
  for (const r of [probes, metricsServer, view]) if (r) manager.add(r);
  // The fleet's hub client and ledger are closed once the other servers stopped, when the controller opened them.
  if (fleet && !options.fleet) manager.add(fleetClientsRunnable(fleet));
  manager.add(cachesRunnable(core));

  metrics.leader.set(0);
  await manager.start();
  void Promise.all([informers.waitSynced(), managed.waitSynced(), access?.waitSynced()]).then(() => {
    log(`caches synced: ${JSON.stringify(informers.snapshot.sizes)}`);
    manager.cachesSynced();
  });

  return {
    metrics,
    informers,
    port: metricsServer?.served?.port,
    metricsCa: metricsServer?.served?.ca,
    probePort: probes?.served?.port,
    viewPort: view?.served?.port,
    fleet: fleetSeen,
    isLeader: () => manager.isLeading(),
    synced: core.synced,
    async stop() {
      await manager.stop();
      inventory.close();
      log('stopped');
    },
  };
}
