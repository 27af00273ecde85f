/** HTTPS with certificate reload: the files are polled and swapped in without a restart. */
import { createServer, type Server } from 'node:https';
import type { RequestListener } from 'node:http';
import { readTlsFiles, reloadOnChange } from '../certs/reloading-tls.js';

/**
 * How long an idle keep-alive connection stays open: longer than the apiserver keeps one (its webhook
 * client's transport takes Go's default idle timeout, 90 s). The side that closes an idle connection
 * first races the other side's next request on it; when the server closes first, the apiserver may
 * have just written an admission POST there, which Go does not retry: "failed calling webhook … EOF",
 * and the request is refused (docs/adr/0004-webhook.md).
 */
export const KEEP_ALIVE_TIMEOUT_MS = 120_000;

/** The apiserver's idle timeout for its connections to webhooks (Go's http.DefaultTransport). */
export const APISERVER_IDLE_TIMEOUT_MS = 90_000;

export interface TlsFiles {
  cert: string;
  key: string;
  /**
   * A CA bundle callers' certificates are verified against (reloaded with the pair). The handshake
   * asks for a certificate but does not fail without one: the handler answers (client-auth.ts).
   */
  clientCa?: string;
}

export function serveHttps(
  files: TlsFiles,
  handler: RequestListener,
  log: (m: string) => void = () => {},
  pollMs = 1000,
): Server & { reloadNow(): void } {
  // The pair and the client CA are read, checked and reloaded together (src/certs/reloading-tls.ts).
  const paths = { cert: files.cert, key: files.key, ...(files.clientCa ? { ca: files.clientCa } : {}) };
  const initial = readTlsFiles(paths);
  const clientAuth = files.clientCa ? { requestCert: true, rejectUnauthorized: false } : {};
  const server = createServer({ ...initial, ...clientAuth, minVersion: 'TLSv1.2' }, handler) as Server & {
    reloadNow(): void;
  };
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  const tls = reloadOnChange(server, paths, initial, { log, pollMs });
  server.reloadNow = () => void tls.reloadNow();
  return server;
}
