/**
 * Starting and stopping the HTTP(S) servers tenantgate runs (the webhook, the controller's probes, the budget view).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Listening {
  /** The port bound (the one asked for, or the free one picked for 0). */
  readonly port: number;
  /** Stops accepting, drops kept-alive connections, and resolves once the server has closed. */
  close(): Promise<void>;
}

/** Listens on host:port; rejects with the bind error (e.g. EADDRINUSE). */
export async function listen(server: Server, port: number, host: string): Promise<Listening> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
