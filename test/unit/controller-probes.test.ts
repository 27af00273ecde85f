/** The controller's probe port: /readyz follows the caches' first sync and, after it, whether every watch is connected. */
import { afterEach, describe, expect, it } from 'vitest';
import { serveProbes, type Served } from '../../src/controller/http.js';

let served: Served | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

async function readyz(state: { ready: boolean; current: boolean }): Promise<{ status: number; text: string }> {
  served = await serveProbes({
    port: 0,
    host: '127.0.0.1',
    healthy: () => true,
    ready: () => state.ready,
    current: () => state.current,
  });
  const r = await fetch(`http://127.0.0.1:${served.port}/readyz`);
  return { status: r.status, text: await r.text() };
}

describe('controller /readyz', () => {
  it('is 503 before the caches have synced', async () => {
    expect(await readyz({ ready: false, current: false })).toEqual({ status: 503, text: 'caches not synced\n' });
  });

  it('is 503 while a watch re-lists, reconnects or is broken (an API server or etcd restart), though synced once', async () => {
    expect(await readyz({ ready: true, current: false })).toEqual({
      status: 503,
      text: 'a watch is re-listing or broken\n',
    });
  });

  it('is 200 when synced and every watch is connected', async () => {
    expect(await readyz({ ready: true, current: true })).toEqual({ status: 200, text: 'ok\n' });
  });
});
