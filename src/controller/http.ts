/**
 * The controller's HTTP side, split as controller-runtime splits it (docs/adr/0033-observability.md):
 * the probes /healthz (lease renewed) and /readyz (caches synced) over plain HTTP for the kubelet, and
 * /metrics (every project's name, tenant, budget and usage) over HTTPS, only for a bearer token whose
 * user may `get` the non-resource URL /metrics (metrics-access.ts).
 */
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { loadServingCertificate, reloadOnChange, type ServingCertificate } from '../certs/reloading-tls.js';
import { describeError } from '../kube/errors.js';
import { listen } from '../listen.js';
import type { ControllerMetrics } from './metrics.js';
import { METRICS_PATH, type MetricsAccess } from './metrics-access.js';

export interface Served {
  port: number;
  close(): Promise<void>;
}

function plain(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res
    .writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...headers })
    .end(text);
}

function readOnly(req: IncomingMessage, res: ServerResponse): string | undefined {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD' }).end();
    return undefined;
  }
  return (req.url ?? '/').split('?')[0] ?? '/';
}

/**
 * /healthz and /readyz over plain HTTP: what the kubelet probes. Nothing else is served here. /readyz
 * answers 503 until the caches have synced, and again while a watch re-lists, reconnects or is broken
 * (`current`): the controller's cache is stale then (an API server or etcd restart), as the webhook's.
 */
export async function serveProbes(o: {
  port: number;
  host: string;
  healthy: () => boolean;
  ready: () => boolean;
  current?: () => boolean;
}): Promise<Served> {
  const server = createServer((req, res) => {
    const path = readOnly(req, res);
    if (path === undefined) return;
    if (path === '/healthz') {
      const ok = o.healthy();
      plain(res, ok ? 200 : 500, ok ? 'ok\n' : 'leader lease not renewed\n');
    } else if (path === '/readyz') {
      if (!o.ready()) plain(res, 503, 'caches not synced\n');
      else if (o.current && !o.current()) plain(res, 503, 'a watch is re-listing or broken\n');
      else plain(res, 200, 'ok\n');
    } else {
      plain(
        res,
        404,
        'not found: the probe port serves /healthz and /readyz; /metrics is on the metrics port (HTTPS, bearer ' +
          'token)\n',
      );
    }
  });
  return listen(server, o.port, o.host);
}

/** The serving certificate: PEM text, or files reloaded when they change (src/certs/reloading-tls.ts). */
export type MetricsServerOptions = ServingCertificate & {
  port: number;
  host: string;
  metrics: ControllerMetrics;
  access: MetricsAccess;
  log?: (message: string, fields?: Record<string, unknown>) => void;
};

/**
 * /metrics over HTTPS: 401 without an accepted token, 403 for a user not allowed, the metrics only after both reviews.
 */
export async function serveMetrics(o: MetricsServerOptions): Promise<Served> {
  const log = o.log ?? (() => {});
  const serving = loadServingCertificate(o);
  const server = createHttpsServer({ cert: serving.material.cert, key: serving.material.key }, (req, res) => {
    const path = readOnly(req, res);
    if (path === undefined) return;
    if (path !== METRICS_PATH) {
      plain(res, 404, 'not found: the metrics port serves /metrics\n');
      return;
    }
    o.access
      .check(req.headers.authorization)
      .then(async (decision) => {
        if (decision.status !== 200) {
          // 401 without a token is every stray scanner; log what an operator would act on.
          if (decision.status !== 401)
            log(`metrics: refused ${path} (${decision.status}): ${decision.message}`, { user: decision.user });
          plain(
            res,
            decision.status,
            `${decision.message}\n`,
            decision.status === 401 ? { 'www-authenticate': 'Bearer' } : {},
          );
          return;
        }
        const text = await o.metrics.registry.metrics();
        res
          .writeHead(200, { 'content-type': o.metrics.registry.contentType, 'cache-control': 'no-store' })
          .end(req.method === 'HEAD' ? undefined : text);
      })
      .catch((err: unknown) => {
        log(`metrics: ${path} failed: ${describeError(err)}`);
        if (!res.headersSent) plain(res, 500, 'Internal error\n');
        else res.destroy();
      });
  });
  if (serving.files) reloadOnChange(server, serving.files, serving.material, { log: (m) => log(`metrics: ${m}`) });
  return listen(server, o.port, o.host);
}
