/**
 * W5: ≥ 10,000 generated AdmissionReview bodies, valid and broken, over real HTTPS: no crash, every
 * answer a valid HTTP response, and nothing malformed is ever admitted.
 */
import fc from 'fast-check';
import { request, type Agent } from 'node:https';
import { Agent as HttpsAgent } from 'node:https';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import type { Server } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateWebhookCerts } from '../../src/certs/files.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { WebhookMetrics } from '../../src/webhook/metrics.js';
import { createApp, MAX_BODY_BYTES } from '../../src/webhook/server.js';
import { serveHttps } from '../../src/webhook/tls.js';

let server: Server;
let port: number;
let ca: Buffer;
let agent: Agent;

const snapshot = MemorySnapshot.of({
  projects: [{ metadata: { name: 'payments', uid: 'u1' }, spec: { tenant: 'acme', owners: [{ kind: 'Group', name: 'acme:payments-admins' }], quota: { hard: { 'requests.cpu': '4' } }, namespaceDefaults: { quota: { hard: { 'requests.cpu': '1' } } } } }],
  namespaces: [{ metadata: { name: 'payments-api', labels: { 'tenantgate.io/project': 'payments', 'tenantgate.io/tenant': 'acme' } } }],
  quotas: [{ metadata: { name: 'q', namespace: 'payments-api' }, spec: { hard: { 'requests.cpu': '3' } } }],
});

beforeAll(async () => {
  const certs = await generateWebhookCerts(await mkdtemp(join(tmpdir(), 'tg-fuzz-')));
  ca = await readFile(certs.caCert);
  const app = createApp({ config: DEFAULT_CONFIG, snapshot, ready: () => true, metrics: new WebhookMetrics() });
  server = serveHttps({ cert: certs.cert, key: certs.key }, app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as { port: number }).port;
  agent = new HttpsAgent({ keepAlive: true, maxSockets: 16, ca });
});

afterAll(async () => {
  agent.destroy();
  await new Promise<void>((r) => server.close(() => r()));
});

function post(path: string, body: string | Buffer): Promise<{ status: number; body: string; contentType: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, contentType: String(res.headers['content-type'] ?? '') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const userInfo = fc.record({ username: fc.constantFrom('alice', 'bob', 'admin', ''), groups: fc.array(fc.constantFrom('acme:payments-admins', 'system:masters', 'tenants'), { maxLength: 2 }) });
const anything = fc.anything({ maxDepth: 3 });
const nsObject = fc.record({ apiVersion: fc.constant('v1'), kind: fc.constant('Namespace'), metadata: fc.record({ name: fc.constantFrom('payments-x', 'foo', 'kube-a', 'payments-api'), labels: fc.option(fc.dictionary(fc.constantFrom('tenantgate.io/project', 'team'), fc.constantFrom('payments', 'web')), { nil: undefined }) }) });
const validRequest = fc.record({
  uid: fc.uuid(),
  kind: fc.constantFrom({ group: '', version: 'v1', kind: 'Namespace' }, { group: '', version: 'v1', kind: 'ResourceQuota' }, { group: 'tenantgate.io', version: 'v1alpha1', kind: 'Project' }, { group: 'apps', version: 'v1', kind: 'Deployment' }),
  operation: fc.constantFrom('CREATE', 'UPDATE', 'DELETE'),
  userInfo,
  namespace: fc.constantFrom('payments-api', 'default', ''),
  object: fc.oneof(nsObject, anything.filter((a) => typeof a === 'object' && a !== null && !Array.isArray(a))),
  oldObject: fc.option(nsObject, { nil: undefined }),
  dryRun: fc.boolean(),
});
const validReview = fc.record({ apiVersion: fc.constant('admission.k8s.io/v1'), kind: fc.constant('AdmissionReview'), request: validRequest });

/** Broken envelopes: the webhook must answer 400 and never an AdmissionReview that admits. */
const brokenReview = fc.oneof(
  anything.map((a) => JSON.stringify(a)),
  validReview.map((r) => JSON.stringify({ ...r, apiVersion: 'admission.k8s.io/v1beta1' })),
  validReview.map((r) => JSON.stringify({ ...r, kind: 'Pod' })),
  validReview.map((r) => JSON.stringify({ apiVersion: r.apiVersion, kind: r.kind })),
  validReview.map((r) => JSON.stringify({ ...r, request: { ...r.request, uid: 42 } })),
  validReview.map((r) => JSON.stringify({ ...r, request: { ...r.request, operation: 'EXPLODE' } })),
  validReview.map((r) => JSON.stringify({ ...r, request: { ...r.request, userInfo: { groups: 'system:masters' } } })),
  validReview.map((r) => JSON.stringify({ ...r, request: { ...r.request, object: [1, 2, 3] } })),
  validReview.map((r) => JSON.stringify(r).slice(0, Math.max(1, JSON.stringify(r).length - 7))),
  fc.string().map((s) => `{${s}`),
);

function checkAnswer(res: { status: number; body: string; contentType: string }, broken: boolean): void {
  expect([200, 400]).toContain(res.status);
  expect(res.contentType).toContain('application/json');
  const parsed = JSON.parse(res.body);
  if (broken) {
    expect(res.status).toBe(400);
    expect(typeof parsed.error).toBe('string');
    expect(parsed.response).toBeUndefined();
  } else if (res.status === 200) {
    expect(parsed.apiVersion).toBe('admission.k8s.io/v1');
    expect(typeof parsed.response.allowed).toBe('boolean');
  }
}

describe('webhook fuzz (W5)', () => {
  it('answers 10,000 generated bodies without crashing or admitting broken input', async () => {
    let total = 0;
    for (const [arb, broken, runs] of [
      [validReview.map((r) => JSON.stringify(r)), false, 5000],
      [brokenReview, true, 5000],
    ] as const) {
      await fc.assert(
        fc.asyncProperty(arb, async (body) => {
          total++;
          for (const path of ['/validate', '/mutate']) {
            const res = await post(path, body);
            checkAnswer(res, broken);
            if (!broken && res.status === 200) {
              const request = (JSON.parse(body) as { request: { uid: string } }).request;
              expect(JSON.parse(res.body).response.uid).toBe(request.uid);
            }
          }
        }),
        { numRuns: runs },
      );
    }
    expect(total).toBeGreaterThanOrEqual(10_000);
  }, 300_000);

  it('refuses oversized bodies with 413 and unknown paths with 404, and still serves afterwards', async () => {
    const big = Buffer.alloc(MAX_BODY_BYTES + 1024, 'a');
    expect((await post('/validate', big)).status).toBe(413);
    expect((await post('/nope', '{}')).status).toBe(404);
    const ok = await post('/validate', JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'u', kind: { group: '', version: 'v1', kind: 'Namespace' }, operation: 'CREATE', userInfo: { username: 'bob', groups: [] }, object: { metadata: { name: 'payments-x' } } } }));
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body).response).toMatchObject({ uid: 'u', allowed: false, status: { code: 403 } });
  });

  it('fails closed before the caches synced', async () => {
    const app = createApp({ config: DEFAULT_CONFIG, snapshot, ready: () => false, metrics: new WebhookMetrics() });
    const { default: supertestless } = await import('node:http');
    const plain = supertestless.createServer(app);
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', () => r()));
    const p = (plain.address() as { port: number }).port;
    const body = JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'x', kind: { group: '', version: 'v1', kind: 'Namespace' }, operation: 'CREATE', userInfo: { username: 'admin', groups: ['system:masters'] }, object: { metadata: { name: 'anything' } } } });
    const res = await fetch(`http://127.0.0.1:${p}/validate`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    const json = (await res.json()) as { response: { allowed: boolean; status: { code: number; message: string } } };
    expect(json.response.allowed).toBe(false);
    expect(json.response.status.code).toBe(503);
    expect((await fetch(`http://127.0.0.1:${p}/readyz`)).status).toBe(503);
    plain.close();
  });
});
