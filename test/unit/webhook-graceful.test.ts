/**
 * src/webhook/graceful.ts on a real loopback HTTP server: while draining, requests are still answered
 * (with Connection: close); after the drain the server stops accepting, and a request in flight is
 * answered before the server closes; one that outlives the in-flight timeout is cut. The drain delay is
 * a promise the test releases, so nothing here depends on how fast the machine is.
 */
import { createServer, request, Agent, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { drainable } from '../../src/webhook/graceful.js';

interface Answer {
  status: number;
  connection: string | undefined;
  body: string;
}

function get(port: number, path: string, agent: Agent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setTimeout(r, 5));
}

let server: Server | undefined;
const agents: Agent[] = [];

afterEach(async () => {
  for (const a of agents.splice(0)) a.destroy();
  if (server?.listening) {
    server.closeAllConnections();
    await new Promise((r) => server!.close(r));
  }
  server = undefined;
});

/** A server whose /slow answers when `release` is called, /fast at once. */
async function startServer(sleep: (ms: number) => Promise<void>) {
  const release = deferred();
  let slowArrived = false;
  server = createServer((req, res) => {
    if (req.url === '/slow') {
      slowArrived = true;
      void release.promise.then(() => res.end('done'));
    } else res.end('ok');
  });
  const drain = drainable(server, { sleep });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  agents.push(agent);
  return { drain, port, agent, release: release.resolve, slowArrived: () => slowArrived };
}

describe('graceful shutdown of a server', () => {
  it('serves during the drain with Connection: close, then stops accepting and answers the request in flight before closing', async () => {
    const drained = deferred();
    const s = await startServer(() => drained.promise);
    const before = await get(s.port, '/fast', s.agent);
    expect(before).toEqual({ status: 200, connection: 'keep-alive', body: 'ok' });

    const slow = get(s.port, '/slow', s.agent);
    await until(s.slowArrived);
    const logs: string[] = [];
    const stopped = s.drain.shutdown({ drainDelayMs: 5_000, inFlightTimeoutMs: 60_000 }, (m) => logs.push(m));
    expect(s.drain.draining).toBe(true);

    // Draining: still answered, and the connection is not kept for another request.
    const during = await get(s.port, '/fast', s.agent);
    expect(during).toEqual({ status: 200, connection: 'close', body: 'ok' });

    drained.resolve();
    await until(() => server!.listening === false);
    await expect(get(s.port, '/fast', new Agent())).rejects.toThrow(/ECONNREFUSED/);
    expect(s.drain.inFlight).toBe(1);

    s.release();
    expect(await slow).toEqual({ status: 200, connection: 'close', body: 'done' });
    expect(await stopped).toEqual({ cut: 0 });
    expect(s.drain.inFlight).toBe(0);
    expect(logs.join('\n')).toMatch(/1 request\(s\) in flight/);
  });

  it('cuts a request that outlives the in-flight timeout and says so', async () => {
    const s = await startServer(() => Promise.resolve());
    const slow = get(s.port, '/slow', s.agent);
    await until(s.slowArrived);
    const stopped = await s.drain.shutdown({ drainDelayMs: 0, inFlightTimeoutMs: 50 });
    expect(stopped).toEqual({ cut: 1 });
    await expect(slow).rejects.toThrow(/socket hang up|ECONNRESET/);
  });

  it('a second shutdown call waits for the first', async () => {
    const s = await startServer(() => Promise.resolve());
    const first = s.drain.shutdown({ drainDelayMs: 0, inFlightTimeoutMs: 1_000 });
    expect(s.drain.shutdown({ drainDelayMs: 0, inFlightTimeoutMs: 1_000 })).toBe(first);
    expect(await first).toEqual({ cut: 0 });
  });
});
