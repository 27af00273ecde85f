/** `tenantgate webhook`: wires config, watch caches, headroom guard and HTTPS together. */
import * as k8s from '@kubernetes/client-node';
import { parseArgs } from 'node:util';
import type { TenantgateConfig } from '../config/config.js';
import { loadConfig } from '../config/load.js';
import { Informers } from '../kube/informers.js';
import { ClusterLists } from '../kube/lists.js';
import { HeadroomGuard } from './headroom.js';
import { ConfigMapLedger } from './ledger.js';
import { WebhookMetrics } from './metrics.js';
import { createApp } from './server.js';
import { serveHttps } from './tls.js';

export interface WebhookOptions {
  config: TenantgateConfig;
  kubeConfig: k8s.KubeConfig;
  cert: string;
  key: string;
  port: number;
  host?: string;
  log?: (message: string) => void;
}

export interface RunningWebhook {
  port: number;
  cache: Informers;
  guard: HeadroomGuard;
  stop(): Promise<void>;
}

export async function startWebhook(options: WebhookOptions): Promise<RunningWebhook> {
  const log = options.log ?? ((m: string) => process.stderr.write(`${new Date().toISOString()} webhook: ${m}\n`));
  const { config } = options;
  const metrics = new WebhookMetrics();
  const cache = new Informers(options.kubeConfig, new ClusterLists(options.kubeConfig), { log, metrics });
  const guard = new HeadroomGuard({
    ttlMs: config.reservationTtlSeconds * 1000,
    ledger: config.crossReplicaReservation ? new ConfigMapLedger(options.kubeConfig, config.systemNamespace) : undefined,
    onReservation: (outcome) => metrics.reservations.inc({ outcome }),
  });
  cache.onEvent(({ kind, type: event, object }) => {
    const meta = object.metadata ?? {};
    const namespace = kind === 'Namespace' ? (meta.name ?? '') : (meta.namespace ?? '');
    if (kind === 'Project') return;
    // Objects of the first list were there before any reservation this process could hold.
    if (event === 'add' && cache.synced) guard.markSeen(namespace, kind === 'ResourceQuota' ? meta.name : undefined);
    guard.observe({ snapshot: cache.snapshot, config }, namespace);
  });
  const app = createApp({
    config,
    snapshot: cache.snapshot,
    ready: () => cache.synced,
    metrics,
    decide: guard.decide,
    pending: guard.pending,
    cacheSizes: () => ({ pending: guard.pendingCount }),
    log,
  });
  const server = serveHttps({ cert: options.cert, key: options.key }, app, log);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  log(`listening on https://${options.host ?? '0.0.0.0'}:${port}; syncing caches`);
  cache.start();
  void cache.waitSynced().then(() => log(`caches synced: ${JSON.stringify(cache.snapshot.sizes)}`));
  return {
    port,
    cache,
    guard,
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await cache.stop();
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
