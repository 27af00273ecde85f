/** HTTPS with certificate reload: the files are polled and swapped in without a restart. */
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { RequestListener } from 'node:http';

export interface TlsFiles {
  cert: string;
  key: string;
}

export function serveHttps(files: TlsFiles, handler: RequestListener, log: (m: string) => void = () => {}, pollMs = 1000): Server & { reloadNow(): void } {
  const read = () => ({ cert: readFileSync(files.cert), key: readFileSync(files.key) });
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
  watchFile(files.cert, { interval: pollMs }, onChange);
  watchFile(files.key, { interval: pollMs }, onChange);
  server.on('close', () => {
    unwatchFile(files.cert, onChange);
    unwatchFile(files.key, onChange);
  });
  return server;
}
