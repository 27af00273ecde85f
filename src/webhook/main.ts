/** `tenantgate webhook`: wires config, watch caches, headroom guard and HTTPS together. */
import * as k8s from '@kubernetes/client-node';
import { parseArgs } from 'node:util';
import type { TenantgateConfig } from '../config/config.js';
import { loadConfig } from '../config/load.js';
import type { Express } from 'express';
import { Informers, type CacheEvent } from '../kube/informers.js';
import { ClusterLists } from '../kube/lists.js';
import type { MemorySnapshot } from '../validate/snapshot.js';
import { HeadroomGuard } from './headroom.js';
import { ConfigMapLedger, type LedgerStore } from './ledger.js';
import { WebhookMetrics } from './metrics.js';
import type { AdmissionRequest } from './review.js';
import { createApp, type Decide } from './server.js';
import { serveHttps } from './tls.js';

/** Where the webhook reads the cluster from: informers in production, a fixed snapshot in benchmarks. */
export interface SnapshotSource {
  readonly snapshot: MemorySnapshot;
  readonly synced: boolean;
  start(): void;
  waitSynced(): Promise<void>;
  stop(): Promise<void>;
  onEvent(listener: (e: CacheEvent) => void): void;
}

export interface WebhookParts {
  config: TenantgateConfig;
  source: SnapshotSource;
  /** The cross-replica headroom ledger (Q5); undefined: this process serialises alone. */
  ledger?: LedgerStore;
  metrics?: WebhookMetrics;
  log?: (message: string) => void;
  now?: () => number;
  /** Called after each admitted, non-dry-run decision that grows an allocation (benchmarks emulate the watch with it). */
  onAdmitted?: (request: AdmissionRequest) => void;
}

export interface AssembledWebhook {
  app: Express;
  guard: HeadroomGuard;
  metrics: WebhookMetrics;
}

/** Wires the request path: the source's events keep the guard honest, the guard decides, the app serves. No I/O. */
export function assembleWebhook(parts: WebhookParts): AssembledWebhook {
  const { config, source } = parts;
  const metrics = parts.metrics ?? new WebhookMetrics();
  const guard = new HeadroomGuard({
    ttlMs: config.reservationTtlSeconds * 1000,
    ...(parts.ledger ? { ledger: parts.ledger } : {}),
    ...(parts.now ? { now: parts.now } : {}),
    onReservation: (outcome) => metrics.reservations.inc({ outcome }),
  });
  source.onEvent(({ kind, type: event, object }) => {
    const meta = object.metadata ?? {};
    const namespace = kind === 'Namespace' ? (meta.name ?? '') : (meta.namespace ?? '');
    if (kind === 'Project') return;
    // Objects of the first list were there before any reservation this process could hold.
    if (event === 'add' && source.synced) guard.markSeen(namespace, kind === 'ResourceQuota' ? meta.name : undefined);
    guard.observe({ snapshot: source.snapshot, config }, namespace);
  });
  const onAdmitted = parts.onAdmitted;
  const decide: Decide = onAdmitted
    ? async (ctx, request) => {
        const verdict = await guard.decide(ctx, request);
        if (verdict.violations.length === 0 && verdict.allocation?.grows && !request.dryRun) onAdmitted(request);
        return verdict;
      }
    : guard.decide;
  const app = createApp({
    config,
    snapshot: source.snapshot,
    ready: () => source.synced,
    metrics,
    decide,
    pending: guard.pending,
    cacheSizes: () => ({ pending: guard.pendingCount }),
    ...(parts.log ? { log: parts.log } : {}),
  });
  return { app, guard, metrics };
}

export interface WebhookOptions {
  config: TenantgateConfig;
  /** The apiserver: informers and (with crossReplicaReservation) the ConfigMap ledger use it unless `source`/`ledger` are given. */
  kubeConfig?: k8s.KubeConfig;
  source?: SnapshotSource;
  /** null: no ledger even when the configuration asks for one. */
  ledger?: LedgerStore | null;
  cert: string;
  key: string;
  port: number;
  host?: string;
  log?: (message: string) => void;
  now?: () => number;
}

export interface RunningWebhook {
  port: number;
  cache: SnapshotSource;
  guard: HeadroomGuard;
  metrics: WebhookMetrics;
  stop(): Promise<void>;
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
  const source = options.source ?? new Informers(needKube('the informers'), new ClusterLists(needKube('the informers')), { log, metrics });
  const ledger = options.ledger === null ? undefined : (options.ledger ?? (config.crossReplicaReservation ? new ConfigMapLedger(needKube('the headroom ledger'), config.systemNamespace) : undefined));
  const { app, guard } = assembleWebhook({ config, source, metrics, log, ...(ledger ? { ledger } : {}), ...(options.now ? { now: options.now } : {}) });
  const server = serveHttps({ cert: options.cert, key: options.key }, app, log);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  log(`listening on https://${options.host ?? '0.0.0.0'}:${port}; syncing caches`);
  source.start();
  void source.waitSynced().then(() => log(`caches synced: ${JSON.stringify(source.snapshot.sizes)}`));
  return {
    port,
    cache: source,
    guard,
    metrics,
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await source.stop();
    },
  };
}

export async function runWebhook(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      config: { type: 'string' },
      'config-optional': { type: 'boolean', default: false },
      kubeconfig: { type: 'string' },
      port: { type: 'string', default: '8443' },
      host: { type: 'string', default: '0.0.0.0' },
      cert: { type: 'string', default: 'certs/tls.pem' },
      key: { type: 'string', default: 'certs/tls-key.pem' },
    },
  });
  const kc = new k8s.KubeConfig();
  if (values.kubeconfig) kc.loadFromFile(values.kubeconfig);
  else kc.loadFromDefault();
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port is ${values.port}; allowed: 0–65535`);
  const running = await startWebhook({ config: await loadConfig(values.config, { optional: values['config-optional'], log: (m) => process.stderr.write(`${m}\n`) }), kubeConfig: kc, cert: values.cert, key: values.key, port, host: values.host });
  process.stdout.write(`${JSON.stringify({ port: running.port })}\n`);
  await new Promise<void>((resolve) => {
    const stop = () => void running.stop().then(resolve);
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  return 0;
}
