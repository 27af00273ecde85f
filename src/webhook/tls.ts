/** HTTPS with certificate reload: the files are polled and swapped in without a restart. */
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { RequestListener } from 'node:http';

export interface TlsFiles {
  cert: string;
  key: string;
  /**
   * A CA bundle callers' certificates are verified against (reloaded with the pair). The handshake
   * asks for a certificate but does not fail without one: the handler answers (client-auth.ts).
   */
  clientCa?: string;
}

export function serveHttps(files: TlsFiles, handler: RequestListener, log: (m: string) => void = () => {}, pollMs = 1000): Server & { reloadNow(): void } {
  const read = () => ({
    cert: readFileSync(files.cert),
    key: readFileSync(files.key),
    ...(files.clientCa ? { ca: readFileSync(files.clientCa), requestCert: true, rejectUnauthorized: false } : {}),
  });
  const server = createServer({ ...read(), minVersion: 'TLSv1.2' }, handler) as Server & { reloadNow(): void };
  server.keepAliveTimeout = 65_000;
  const reload = () => {
    try {
      server.setSecureContext({ ...read(), minVersion: 'TLSv1.2' });
      // Kept-alive connections were made with the old certificate and would keep it as long as the
      // apiserver keeps using them; idle ones are closed so every new request handshakes with the new one.
      server.closeIdleConnections();
      log(`reloaded TLS certificate from ${files.cert}`);
    } catch (err) {
      // A half-written pair (cert updated, key not yet) fails here; the next change retries.
      log(`keeping the previous TLS certificate: ${(err as Error).message}`);
    }
  };
  server.reloadNow = reload;
  const onChange = (curr: { mtimeMs: number }, prev: { mtimeMs: number }) => {
    if (curr.mtimeMs !== prev.mtimeMs) reload();
  };
  const watched = [files.cert, files.key, ...(files.clientCa ? [files.clientCa] : [])];
  for (const file of watched) watchFile(file, { interval: pollMs }, onChange);
  server.on('close', () => {
    for (const file of watched) unwatchFile(file, onChange);
  });
  return server;
}
