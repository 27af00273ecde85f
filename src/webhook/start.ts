/** `tenantgate webhook`: wires config, watch caches, headroom guard and HTTPS together. */
import { processNow } from '../clock.js';
import * as k8s from '@kubernetes/client-node';
import { setFlagsFromString } from 'node:v8';
import type { TenantgateConfig } from '../config/config.js';
import { loadConfig } from '../config/load.js';
import type { RuntimeOptions } from '../runtime-options.js';
import { WEBHOOK_DEFAULTS, type WebhookCliOptions } from './options.js';
import { createLogger, infoRecorder, logFunction, type Logger } from '../log.js';
import { Informers, type CacheEvent } from '../kube/informers.js';
import { ClusterLists } from '../kube/lists.js';
import type { MemorySnapshot } from '../validate/snapshot.js';
import { HeadroomGuard, type CacheStreams } from './headroom/guard.js';
import { WatermarkProbe } from '../kube/watermark-probe.js';
import { ConfigMapLedger, type LedgerStore } from '../ledger/ledger.js';
import { WebhookMetrics } from './metrics.js';
import { createApp, type AdmissionDecision, type Decide, type WebhookApp } from './server.js';
import { serveHttps } from './tls.js';
import { persistentVolumeReader, readingPersistentVolumes, type ReadPersistentVolume } from './persistent-volumes.js';
import { LeanApiClient } from '../kube/lean-client.js';
import { drainable, type ShutdownResult, type ShutdownTimings } from './graceful.js';
import {
  authorizeClient,
  parseAllowedNames,
  peerIdentity,
  reservationTtlMs,
  UNAUTHENTICATED_RESERVATION_TTL_SECONDS,
  type ClientAuthResult,
} from './client-auth.js';
import type { IncomingMessage } from 'node:http';
import { listen } from '../listen.js';
import { loadKubeConfig } from '../kube/kubeconfig.js';
import { isFleetMember } from '../config/config.js';
import { LeanHubClient, loadHubKubeConfig, type HubClient } from '../fleet/hub-client.js';
import { parseResources } from '../validate/resource-lists.js';
import type { FleetGuardOptions } from './headroom/fleet-growth.js';
import {
  decisionRecords,
  type DecisionRecordOptions,
  type DecisionRecords,
  type DecisionSummary,
} from './decision-records.js';

/** Where the webhook reads the cluster from: informers in production, a fixed snapshot in benchmarks. */
export interface SnapshotSource {
  readonly snapshot: MemorySnapshot;
  readonly synced: boolean;
  /** Synced and every watch connected (not re-listing, not broken); a source without watches is always current. */
  readonly upToDate?: boolean;
  start(): void;
  waitSynced(): Promise<void>;
  stop(): Promise<void>;
  onEvent(listener: (e: CacheEvent) => void): void;
  /**
   * The watch streams' marks and catch-up (docs/adr/0003-headroom-ledger.md); absent: ledger
   * entries leave only by expiry.
   */
  readonly streams?: CacheStreams;
}

export interface WebhookParts {
  config: TenantgateConfig;
  source: SnapshotSource;
  /** The cross-replica headroom ledger (Q5); undefined: this process serialises alone. */
  ledger?: LedgerStore;
  metrics?: WebhookMetrics;
  log?: (message: string) => void;
  now?: () => number;
  onDecision?: (decision: AdmissionDecision) => void;
  /**
   * Who may send reviews (client-auth.ts); absent: anyone, and reservations live at most
   * UNAUTHENTICATED_RESERVATION_TTL_SECONDS.
   */
  authenticate?: (req: IncomingMessage) => ClientAuthResult;
  /** True once a graceful shutdown began (/readyz 503, reviews still served). */
  draining?: () => boolean;
  /** This cluster as a fleet member (needs `ledger`): its hub and policy; the guard's metric hooks are added here. */
  fleet?: Omit<FleetGuardOptions, 'onTransfer' | 'onHubCall' | 'onEnforced'>;
  /**
   * X10: reads the PersistentVolume a claim names; absent, such a claim is refused (the volume's project is unknown).
   */
  readPersistentVolume?: ReadPersistentVolume;
}

export interface AssembledWebhook {
  app: WebhookApp;
  guard: HeadroomGuard;
  metrics: WebhookMetrics;
}

/** The headroom guard, kept honest by the source's cache events. No I/O. */
export function wireGuard(
  parts: Pick<WebhookParts, 'config' | 'source' | 'ledger' | 'now' | 'authenticate' | 'fleet'> & {
    metrics: WebhookMetrics;
  },
): HeadroomGuard {
  const { config, source, metrics } = parts;
  if (parts.fleet && !parts.ledger)
    throw new Error(
      `tenantgate.yaml: fleet.hubKubeconfig is set but the webhook runs without the headroom ledger; a fleet ` +
        `member keeps its enforced limit there (crossReplicaReservation: true)`,
    );
  const guard = new HeadroomGuard({
    // Without client authentication anyone who reaches the webhook can reserve: hold it shorter (ADR 0034).
    ttlMs: reservationTtlMs(config.reservationTtlSeconds, parts.authenticate !== undefined),
    ...(parts.ledger ? { ledger: parts.ledger } : {}),
    ...(parts.now ? { now: parts.now } : {}),
    cacheCurrent: () => source.upToDate ?? source.synced,
    // Every replica honours the settled marks; only with ledgerSettlement does it settle (ADR 0003).
    ...(parts.ledger && source.streams
      ? { settlement: { streams: source.streams, settles: config.ledgerSettlement } }
      : {}),
    onReservation: (outcome) => metrics.reservations.inc({ outcome }),
    onLedgerWrite: (records) => metrics.ledgerBatchSize.observe(records),
    onRoundPhase: (phase, ms) => metrics.ledgerRoundPhase.observe({ phase }, ms / 1000),
    ...(parts.fleet ? { fleet: withFleetMetrics(parts.fleet, metrics) } : {}),
  });
  source.onEvent(({ kind, type: event, object }) => {
    const meta = object.metadata ?? {};
    const namespace = kind === 'Namespace' ? (meta.name ?? '') : (meta.namespace ?? '');
    if (kind === 'Project') {
      if (event === 'delete') guard.forgetProject(meta.name ?? '');
      return;
    }
    guard.observe({ snapshot: source.snapshot, config, at: processNow() }, namespace);
  });
  return guard;
}

/** The fleet member's options with the webhook's fleet metrics as hooks. */
function withFleetMetrics(fleet: NonNullable<WebhookParts['fleet']>, metrics: WebhookMetrics): FleetGuardOptions {
  return {
    ...fleet,
    onTransfer: (result) => metrics.fleetTransfers.inc({ result }),
    onHubCall: ({ op, outcome, seconds }) => {
      metrics.fleetHubRequests.inc({ op, outcome });
      metrics.fleetHubLatency.observe({ op }, seconds);
      metrics.fleetHubReachable.set(outcome === 'error' || outcome === 'timeout' ? 0 : 1);
    },
    onEnforced: (project, enforced) => {
      for (const [resource, q] of enforced) metrics.fleetEnforcedLimit.set({ project, resource }, q.asFloat64Slow());
    },
  };
}

/**
 * The app serving the guard's decisions (`decide` replaces guard.decide, e.g. to observe it). No I/O.
 * A decision may wait only for the ledger (`mayWait`, default: whether there is one); a `decide` that
 * waits otherwise must say so.
 */
export function webhookApp(
  parts: WebhookParts & { metrics: WebhookMetrics; guard: HeadroomGuard; decide?: Decide; mayWait?: boolean },
): WebhookApp {
  const { config, source, metrics, guard } = parts;
  return createApp({
    config,
    snapshot: source.snapshot,
    ready: () => source.synced,
    current: () => source.upToDate ?? source.synced,
    ...(parts.draining ? { draining: parts.draining } : {}),
    metrics,
    decide: parts.readPersistentVolume
      ? readingPersistentVolumes(parts.decide ?? guard.decide, parts.readPersistentVolume, parts.log)
      : (parts.decide ?? guard.decide),
    mayWait: parts.mayWait ?? parts.ledger !== undefined,
    pending: guard.pending,
    cacheSizes: () => ({ pending: guard.pendingCount }),
    ...(parts.log ? { log: parts.log } : {}),
    ...(parts.onDecision ? { onDecision: parts.onDecision } : {}),
    ...(parts.authenticate ? { authenticate: parts.authenticate } : {}),
  });
}

/** Wires the request path: the source's events keep the guard honest, the guard decides, the app serves. No I/O. */
export function assembleWebhook(parts: WebhookParts): AssembledWebhook {
  const metrics = parts.metrics ?? new WebhookMetrics();
  const guard = wireGuard({ ...parts, metrics });
  return { app: webhookApp({ ...parts, metrics, guard }), guard, metrics };
}

export interface WebhookOptions {
  config: TenantgateConfig;
  /**
   * The apiserver: informers and (with crossReplicaReservation) the ConfigMap ledger use it unless
   * `source`/`ledger` are given.
   */
  kubeConfig?: k8s.KubeConfig;
  source?: SnapshotSource;
  /** null: no ledger even when the configuration asks for one. */
  ledger?: LedgerStore | null;
  /** The fleet hub (default: from tenantgate.yaml fleet.hubKubeconfig when set). */
  hub?: HubClient;
  cert: string;
  key: string;
  /** The CA that signs the apiserver's client certificate: only callers it verifies may send reviews. */
  clientCa?: string;
  /** With clientCa: the common names allowed (empty: any certificate it signed). */
  clientAllowedNames?: readonly string[];
  port: number;
  host?: string;
  log?: (message: string) => void;
  now?: () => number;
  onDecision?: (decision: AdmissionDecision) => void;
}

/** How long X10's GET of a PersistentVolume may take before the claim is refused (under the webhook's own timeout). */
const PERSISTENT_VOLUME_READ_TIMEOUT_MS = 3_000;

/** The drain delay and in-flight timeout of `tenantgate webhook` on SIGTERM (docs/adr/0004-webhook.md). */
const DEFAULT_SHUTDOWN: ShutdownTimings = {
  drainDelayMs: WEBHOOK_DEFAULTS.shutdownDelaySeconds * 1000,
  inFlightTimeoutMs: 10_000,
};

export interface RunningWebhook {
  port: number;
  cache: SnapshotSource;
  guard: HeadroomGuard;
  metrics: WebhookMetrics;
  /** Stops at once: connections and requests in flight are cut. */
  stop(): Promise<void>;
  /** Not ready, keep serving for the drain delay, stop accepting, finish the requests in flight, then stop. */
  shutdown(timings?: Partial<ShutdownTimings>): Promise<ShutdownResult>;
}

/** The composition root of `tenantgate webhook`: the parts, their defaults from a kubeconfig, HTTPS. */
export async function startWebhook(options: WebhookOptions): Promise<RunningWebhook> {
  const log = options.log ?? ((m: string) => process.stderr.write(`${new Date().toISOString()} webhook: ${m}\n`));
  const { config, kubeConfig } = options;
  const metrics = new WebhookMetrics();
  const needKube = (what: string): k8s.KubeConfig => {
    if (!kubeConfig) throw new Error(`startWebhook: ${what} needs a kubeConfig`);
    return kubeConfig;
  };
  // Settlement (ADR 0003): the caches' watermarks and the probe that advances idle streams, on every
  // replica with the ledger, whether it settles or not: each honours the marks (ADR 0003).
  const probe =
    options.source === undefined && config.crossReplicaReservation
      ? new WatermarkProbe(needKube('the watermark probe'), config.systemNamespace)
      : undefined;
  const source =
    options.source ??
    new Informers(needKube('the informers'), new ClusterLists(needKube('the informers')), {
      log,
      metrics,
      ...(probe
        ? { streams: { probe: () => probe.probe(), onCatchUp: (outcome) => metrics.catchUps.inc({ outcome }) } }
        : {}),
    });
  const ownLedger =
    options.ledger === undefined && config.crossReplicaReservation
      ? new ConfigMapLedger(needKube('the headroom ledger'), config.systemNamespace, log)
      : undefined;
  const ledger = options.ledger === null ? undefined : (options.ledger ?? ownLedger);
  const ownHub =
    options.hub === undefined && isFleetMember(config)
      ? new LeanHubClient(loadHubKubeConfig(config.fleet.hubKubeconfig))
      : undefined;
  const hub = options.hub ?? ownHub;
  const fleet = hub ? fleetMemberOptions(config, hub, log) : undefined;
  if (fleet)
    log(
      `fleet member ${config.clusterName}: growth beyond a fleet-budgeted project's enforced limit asks the hub (` +
        `${config.fleet.hubKubeconfig || 'given'})`,
    );
  const policy = { allowedNames: options.clientAllowedNames ?? [] };
  const authenticate = options.clientCa
    ? (req: IncomingMessage) => authorizeClient(peerIdentity(req), policy)
    : undefined;
  if (authenticate)
    log(
      `admission reviews only from clients with a certificate signed by ${options.clientCa}` +
        `${policy.allowedNames.length ? ` named ${policy.allowedNames.join(', ')}` : ''}`,
    );
  else
    log(
      `no --client-ca: anyone who reaches this port can send admission reviews; reservations live at most ` +
        `${Math.min(config.reservationTtlSeconds, UNAUTHENTICATED_RESERVATION_TTL_SECONDS)} s (docs/design.md "Who ` +
        `may spend headroom")`,
    );
  let drain: { readonly draining: boolean } = { draining: false };
  const readPersistentVolume = kubeConfig
    ? persistentVolumeReader(new LeanApiClient(kubeConfig, { timeoutMs: PERSISTENT_VOLUME_READ_TIMEOUT_MS }))
    : undefined;
  const { app, guard } = assembleWebhook({
    config,
    source,
    metrics,
    log,
    ...(readPersistentVolume ? { readPersistentVolume } : {}),
    ...(ledger ? { ledger } : {}),
    ...(options.now ? { now: options.now } : {}),
    ...(options.onDecision ? { onDecision: options.onDecision } : {}),
    ...(authenticate ? { authenticate } : {}),
    ...(fleet ? { fleet } : {}),
    draining: () => drain.draining,
  });
  const server = serveHttps(
    { cert: options.cert, key: options.key, ...(options.clientCa ? { clientCa: options.clientCa } : {}) },
    app,
    log,
  );
  const drainableServer = drainable(server);
  drain = drainableServer;
  const listening = await listen(server, options.port, options.host ?? WEBHOOK_DEFAULTS.host);
  const { port } = listening;
  log(`listening on https://${options.host ?? WEBHOOK_DEFAULTS.host}:${port}; syncing caches`);
  source.start();
  void source.waitSynced().then(() => log(`caches synced: ${JSON.stringify(source.snapshot.sizes)}`));
  /** After the server stopped: the informers' watches and the ledger's connection. */
  const releaseClients = async () => {
    await source.stop();
    probe?.close();
    ownLedger?.close();
    ownHub?.close();
  };
  return {
    port,
    cache: source,
    guard,
    metrics,
    async stop() {
      await listening.close();
      await releaseClients();
    },
    async shutdown(timings = {}) {
      const result = await drainableServer.shutdown({ ...DEFAULT_SHUTDOWN, ...timings }, log);
      await releaseClients();
      return result;
    },
  };
}

/** The guard's fleet options from tenantgate.yaml (cluster name, keep/above) and a hub client. */
function fleetMemberOptions(
  config: TenantgateConfig,
  hub: HubClient,
  log?: (message: string) => void,
): NonNullable<WebhookParts['fleet']> {
  return {
    cluster: config.clusterName,
    hub,
    policy: { keep: parseResources(config.fleet.keep), above: parseResources(config.fleet.above) },
    ...(log ? { log } : {}),
  };
}

/**
 * V8 flags `tenantgate webhook` sets on itself for its first cache sync (ADR 0004): with
 * `--optimize-for-size` the heap that 10k projects / 50k namespaces / 50k quotas leave behind stays
 * under P3's 300 MB (440 MB without), but the flag also costs the request path 1.5–2× CPU, so it is
 * switched off again once the caches have synced (`--no-…`; flags with a value stay). The environment
 * variable TENANTGATE_WEBHOOK_V8_FLAGS replaces the list ("" for none), for operators and benchmarks.
 */
const WEBHOOK_V8_FLAGS = '--optimize-for-size';

/** Sets the flags; returns what undoes the boolean ones, to call once the caches have synced. */
export function applyWebhookV8Flags(env: NodeJS.ProcessEnv = process.env): { flags: string[]; afterSync: () => void } {
  const flags = (env.TENANTGATE_WEBHOOK_V8_FLAGS ?? WEBHOOK_V8_FLAGS).split(/\s+/).filter(Boolean);
  for (const flag of flags) setFlagsFromString(flag);
  const undo = flags
    .filter((f) => /^--[a-z][a-z0-9-]*$/.test(f) && !f.startsWith('--no-'))
    .map((f) => `--no-${f.slice(2)}`);
  return { flags, afterSync: () => undo.forEach((f) => setFlagsFromString(f)) };
}

/** One JSON record per admission decision, as `tenantgate webhook` writes it (the P1 bench wires the same). */
export function decisionLog(logger: Logger): (decision: AdmissionDecision) => void {
  return infoRecorder<AdmissionDecision>(logger, 'admission decision');
}

/**
 * The decision records of `tenantgate webhook --allowed-decisions`: with `all` exactly decisionLog; with
 * `summary` a record per denial, error, warning or slow decision and a summary record for the rest.
 * @public bench/comparisons/review-ab.ts imports it from a built tree by name.
 */
export function webhookDecisionRecords(logger: Logger, options: DecisionRecordOptions): DecisionRecords {
  return decisionRecords(
    decisionLog(logger),
    infoRecorder<DecisionSummary>(logger, 'admission decisions summarised'),
    options,
  );
}

/** What `tenantgate webhook`'s flags say about serving: the address, the certificate, who may send reviews. */
export function webhookServing(
  o: WebhookCliOptions,
): Pick<WebhookOptions, 'cert' | 'key' | 'clientCa' | 'clientAllowedNames' | 'port' | 'host'> {
  return {
    cert: o.cert,
    key: o.key,
    ...(o.clientCa ? { clientCa: o.clientCa, clientAllowedNames: parseAllowedNames(o.clientAllowedNames) } : {}),
    port: o.port,
    host: o.host,
  };
}

/** `tenantgate webhook` (flags in src/cli/webhook.ts). */
export async function runWebhook(o: RuntimeOptions & WebhookCliOptions): Promise<number> {
  const logger = createLogger({ name: 'webhook', level: o.logLevel, format: o.logFormat, sync: false });
  const log = logFunction(logger);
  const v8flags = applyWebhookV8Flags();
  if (v8flags.flags.length) log(`V8 flags until the caches have synced: ${v8flags.flags.join(' ')}`);
  const config = await loadConfig(o.config, { optional: o.configOptional === true, log });
  const kc = loadKubeConfig(o.kubeconfig);
  const records = webhookDecisionRecords(logger, {
    allowed: o.allowedDecisions ?? 'all',
    ...(o.slowDecisionMs !== undefined ? { slowMs: o.slowDecisionMs } : {}),
  });
  if (o.allowedDecisions === 'summary')
    log(
      `allowed decisions: summarised every 10 s; denials, errors, warnings and decisions of ` +
        `${o.slowDecisionMs ?? 'the default'} ms or more recorded one by one`,
    );
  const running = await startWebhook({ config, kubeConfig: kc, ...webhookServing(o), log, onDecision: records.record });
  void running.cache.waitSynced().then(v8flags.afterSync);
  process.stdout.write(`${JSON.stringify({ port: running.port })}\n`);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  // A second signal ends the process at once (an operator's second Ctrl-C).
  const force = () => {
    log('second signal: exiting now');
    process.exit(1);
  };
  process.once('SIGTERM', force);
  process.once('SIGINT', force);
  const timings = {
    ...DEFAULT_SHUTDOWN,
    ...(o.shutdownDelay !== undefined ? { drainDelayMs: o.shutdownDelay * 1000 } : {}),
  };
  log(
    `${signal}: graceful shutdown (drain ${timings.drainDelayMs} ms, then at most ${timings.inFlightTimeoutMs} ` +
      `ms for requests in flight)`,
  );
  const { cut } = await running.shutdown(timings);
  records.stop();
  log(cut === 0 ? 'stopped: every request in flight was answered' : `stopped: ${cut} request(s) cut`);
  const code = cut === 0 ? 0 : 1;
  // Anything left holding the event loop must not keep a stopped webhook alive.
  setTimeout(() => process.exit(code), 2_000).unref();
  return code;
}
