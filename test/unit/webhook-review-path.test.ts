/**
 * The review path's per-request work (src/webhook/server.ts): a decision gets an AbortSignal only when
 * it may wait (mayWait, set by start.ts when there is a ledger), and that signal aborts when the caller
 * goes away before the answer; the answer is the AdmissionReview envelope around the response.
 */
import { createServer, request, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Verdict } from '../../src/validate/admission.js';
import { WebhookMetrics } from '../../src/webhook/metrics.js';
import { createApp, type Decide } from '../../src/webhook/server.js';

const snapshot = MemorySnapshot.of({});
const review = JSON.stringify({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: 'r1',
    kind: { group: '', version: 'v1', kind: 'Namespace' },
    operation: 'CREATE',
    userInfo: { username: 'alice' },
    object: { metadata: { name: 'x' } },
  },
});
let server: Server | undefined;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

async function serve(decide: Decide, mayWait?: boolean): Promise<number> {
  server = createServer(
    createApp({
      config: DEFAULT_CONFIG,
      snapshot,
      ready: () => true,
      metrics: new WebhookMetrics(),
      decide,
      ...(mayWait === undefined ? {} : { mayWait }),
    }),
  );
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  return (server.address() as { port: number }).port;
}

const post = (port: number) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method: 'POST', path: '/validate', headers: { 'content-type': 'application/json' } },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(review);
  });

const allow: Verdict = { violations: [], warnings: ['[Q4] close to the budget'] };

describe('the review path', () => {
  it('without mayWait a decision gets no signal; the answer is the AdmissionReview envelope', async () => {
    const signals: Array<AbortSignal | undefined> = [];
    const port = await serve((_ctx, _req, signal) => (signals.push(signal), allow), false);
    const answer = await post(port);
    expect(signals).toEqual([undefined]);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'r1', allowed: true, warnings: ['[Q4] close to the budget'] },
    });
  });

  it('with mayWait (the default) a decision gets a signal that aborts when the caller leaves before the answer', async () => {
    let signal: AbortSignal | undefined;
    let release: (() => void) | undefined;
    const port = await serve((_ctx, _req, s) => {
      signal = s;
      return new Promise<Verdict>((resolve) => (release = () => resolve(allow)));
    });
    const req = request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/validate',
      headers: { 'content-type': 'application/json' },
    });
    req.on('error', () => {});
    req.end(review);
    await expect.poll(() => signal).toBeDefined();
    expect(signal!.aborted).toBe(false);
    req.destroy();
    await expect.poll(() => signal!.aborted).toBe(true);
    release!();
  });
});
