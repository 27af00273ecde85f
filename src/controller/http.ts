/** The controller's HTTP side: /healthz (lease renewed), /readyz (caches synced), /metrics (Prometheus). */
import { createServer } from 'node:http';
import { listen } from '../listen.js';
import type { ControllerMetrics } from './metrics.js';

export interface Probes {
  port: number;
  close(): Promise<void>;
}

export async function serveProbes(o: { port: number; host: string; healthy: () => boolean; ready: () => boolean; metrics: ControllerMetrics }): Promise<Probes> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405).end();
      return;
    }
    if (path === '/healthz') {
      const ok = o.healthy();
      res.writeHead(ok ? 200 : 500, { 'content-type': 'text/plain' }).end(ok ? 'ok\n' : 'leader lease not renewed\n');
    } else if (path === '/readyz') {
      const ok = o.ready();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ok\n' : 'caches not synced\n');
    } else if (path === '/metrics') {
      o.metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': o.metrics.registry.contentType }).end(text),
        (err: unknown) => res.writeHead(500).end(String(err)),
      );
    } else {
      res.writeHead(404).end();
    }
  });
  return listen(server, o.port, o.host);
}
