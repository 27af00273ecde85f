import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * The lowest port the kernel hands out to outgoing connections (and to `listen(0)`), from
 * /proc/sys/net/ipv4/ip_local_port_range; Linux's default when it cannot be read.
 */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) ? low : 32768;
  } catch {
    return 32768;
  }
}

/** The ports picked from: above the well-known ones, below the ephemeral range. */
const PICK_FROM = 10_000;
const PICK_BELOW = ephemeralLow();

/** Whether `port` (0: any) can be bound on 127.0.0.1 now; the port bound, released again, or undefined. */
function tryBind(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.on('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : undefined));
    });
  });
}

/**
 * A free TCP port on 127.0.0.1 (bound, then released). It is picked below the kernel's ephemeral range:
 * between the check and the server's own bind, an outgoing connection of any process on the machine may
 * take an ephemeral port (a kube-apiserver of the other test shard once failed to start so), but never
 * one below that range. Falls back to an ephemeral one when the range leaves no room below it.
 */
export async function freePort(): Promise<number> {
  if (PICK_BELOW - PICK_FROM >= 1000) {
    for (let attempt = 0; attempt < 50; attempt++) {
      const port = await tryBind(PICK_FROM + Math.floor(Math.random() * (PICK_BELOW - PICK_FROM)));
      if (port !== undefined) return port;
    }
  }
  const port = await tryBind(0);
  if (port === undefined) throw new Error('no free port on 127.0.0.1');
  return port;
}
