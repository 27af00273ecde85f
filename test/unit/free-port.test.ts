/** The harness's free ports (test/support/devcluster/ports.ts): below the kernel's ephemeral range, and bindable. */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from '../support/devcluster/ports.js';

const ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

describe('freePort', () => {
  it.skipIf(!(ephemeralLow - 10_000 >= 1000))(
    'picks ports below the ephemeral range, which no outgoing connection takes',
    async () => {
      const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
      for (const port of ports) {
        expect(port).toBeGreaterThanOrEqual(10_000);
        expect(port).toBeLessThan(ephemeralLow);
      }
    },
  );

  it('returns a port a server can then bind', async () => {
    const port = await freePort();
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.on('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    await new Promise<void>((r) => server.close(() => r()));
  });
});
