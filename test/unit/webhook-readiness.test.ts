/**
 * The webhook's readiness follows its watches (docs/design.md, "Headroom under concurrency"): /readyz
 * is 503 until the caches synced and again while a watch re-lists or is broken, so the Service routes
 * admissions to other replicas; such a replica refuses decisions that take a project's turn ([Q5]).
 */
import { TEST_NOW } from '../support/instant.js';
import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { WebhookMetrics } from '../../src/webhook/metrics.js';
import { assembleWebhook, type SnapshotSource } from '../../src/webhook/start.js';
import { aQuotaCreateRequest } from '../support/fixtures.js';

let server: Server | undefined;
afterEach(() => server?.close());

function source(state: { synced: boolean; upToDate: boolean }): SnapshotSource {
  const snapshot = MemorySnapshot.of({
    projects: [
      {
        metadata: { name: 'shop', uid: 'u1' },
        spec: { tenant: 'acme', owners: [{ kind: 'User', name: 'alice' }], quota: { hard: { 'requests.cpu': '4' } } },
      },
    ],
    namespaces: [
      { metadata: { name: 'shop-dev', labels: { 'tenantgate.io/project': 'shop', 'tenantgate.io/tenant': 'acme' } } },
    ],
  });
  return {
    snapshot,
    get synced() {
      return state.synced;
    },
    get upToDate() {
      return state.upToDate;
    },
    start() {},
    waitSynced: async () => {},
    stop: async () => {},
    onEvent() {},
  };
}

async function readyz(state: { synced: boolean; upToDate: boolean }): Promise<{ status: number; body: string }> {
  const { app } = assembleWebhook({ config: DEFAULT_CONFIG, source: source(state), metrics: new WebhookMetrics() });
  server = createServer(app);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  const res = await fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/readyz`);
  const body = await res.text();
  server.close();
  server = undefined;
  return { status: res.status, body };
}

describe('webhook readiness', () => {
  it('/readyz: 503 until synced, 503 while a watch re-lists or is broken, 200 otherwise', async () => {
    expect(await readyz({ synced: false, upToDate: false })).toEqual({ status: 503, body: 'caches not synced' });
    expect(await readyz({ synced: true, upToDate: false })).toEqual({
      status: 503,
      body: 'a watch is re-listing or broken',
    });
    expect(await readyz({ synced: true, upToDate: true })).toEqual({ status: 200, body: 'ok' });
  });

  it('/readyz: 503 "shutting down" once draining, while reviews are still decided', async () => {
    let draining = false;
    const { app } = assembleWebhook({
      config: DEFAULT_CONFIG,
      source: source({ synced: true, upToDate: true }),
      metrics: new WebhookMetrics(),
      draining: () => draining,
    });
    server = createServer(app);
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    draining = true;
    const ready = await fetch(`${base}/readyz`);
    expect({ status: ready.status, body: await ready.text() }).toEqual({ status: 503, body: 'shutting down' });
    const review = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: aQuotaCreateRequest('shop-dev'),
    };
    const res = await fetch(`${base}/validate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(review),
    });
    const answer = (await res.json()) as { response: { uid: string; allowed: boolean } };
    expect(res.status).toBe(200);
    expect(answer.response).toMatchObject({ uid: review.request.uid, allowed: true });
  });

  it('the guard wired to a source that is not up to date refuses a quota create with [Q5], and admits it once it is', async () => {
    const state = { synced: true, upToDate: false };
    const { guard } = assembleWebhook({ config: DEFAULT_CONFIG, source: source(state), metrics: new WebhookMetrics() });
    const s = source(state).snapshot;
    const ctx = { at: TEST_NOW, config: DEFAULT_CONFIG, snapshot: s, user: { username: 'alice', groups: [] } };
    expect((await guard.decide(ctx, aQuotaCreateRequest('shop-dev'))).violations.map((v) => v.rule)).toEqual(['Q5']);
    state.upToDate = true;
    expect((await guard.decide(ctx, aQuotaCreateRequest('shop-dev'))).violations).toEqual([]);
  });
});
