/**
 * W5: ≥ 10,000 generated AdmissionReview bodies, valid and broken, over real HTTPS to the app wired as
 * in production (the HeadroomGuard's decide and pending, with an in-memory ledger): no crash, a
 * well-formed envelope always gets 200, a broken one 400, and oracles catch an accidental admit — a
 * non-privileged namespace CREATE outside the user's projects, a quota over the headroom — and a
 * denial without a rule id. The seed is printed and can be pinned with FUZZ_SEED; FUZZ_RUNS scales the
 * run (`npm run fuzz`: 100,000 cases).
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
import { HeadroomGuard } from '../../src/webhook/headroom.js';
import { MemoryLedger } from '../support/memory-ledger.js';
import { Quantity } from '../../src/validate/quantity.js';

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.FUZZ_RUNS ?? 10_000);
const stats = { cases: 0, crashes: 0, accidentalAdmits: 0, denials: 0, oracleCases: 0 };
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
  const guard = new HeadroomGuard({ ttlMs: 30_000, ledger: new MemoryLedger() });
  const app = createApp({ config: DEFAULT_CONFIG, snapshot, ready: () => true, metrics: new WebhookMetrics(), decide: guard.decide, pending: guard.pending });
  console.log(`[webhook-fuzz] seed ${SEED} (FUZZ_SEED=${SEED} reproduces), ${RUNS} cases`);
  server = serveHttps({ cert: certs.cert, key: certs.key }, app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as { port: number }).port;
  agent = new HttpsAgent({ keepAlive: true, maxSockets: 16, ca });
});

afterAll(async () => {
  console.log(`[webhook-fuzz] ${JSON.stringify(stats)}`);
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
const CPU = ['100m', '500m', '1', '1500m', '2', '5', '1e3'];
const quotaObject = fc.record({
  apiVersion: fc.constant('v1'),
  kind: fc.constant('ResourceQuota'),
  metadata: fc.record({ name: fc.constantFrom('q', 'extra', 'tenantgate-quota') }),
  spec: fc.record({ hard: fc.record({ 'requests.cpu': fc.constantFrom(...CPU) }) }),
});
const validRequest = fc.record({
  uid: fc.uuid(),
  kind: fc.constantFrom({ group: '', version: 'v1', kind: 'Namespace' }, { group: '', version: 'v1', kind: 'ResourceQuota' }, { group: 'tenantgate.io', version: 'v1alpha1', kind: 'Project' }, { group: 'apps', version: 'v1', kind: 'Deployment' }),
  operation: fc.constantFrom('CREATE', 'UPDATE', 'DELETE'),
  userInfo,
  // payments-new is not in the cache: a quota there counts against payments' headroom (4 − 3 = 1 CPU).
  namespace: fc.constantFrom('payments-api', 'payments-new', 'default', ''),
  object: fc.oneof(nsObject, quotaObject, anything.filter((a) => typeof a === 'object' && a !== null && !Array.isArray(a))),
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

interface FuzzRequest {
  uid: string;
  kind: { kind: string };
  operation: string;
  namespace: string;
  userInfo: { username: string; groups: string[] };
  object?: { metadata?: { name?: unknown }; spec?: { hard?: Record<string, unknown> } };
}

/** What must be denied whatever else is true (SPEC T4/T6, Q1); undefined when the oracle has no opinion. */
function mustDeny(path: string, r: FuzzRequest): string | undefined {
  if (path !== '/validate') return undefined;
  const privileged = r.userInfo.groups.includes('system:masters');
  const owner = r.userInfo.groups.includes('acme:payments-admins');
  const name = r.object?.metadata?.name;
  if (r.kind.kind === 'Namespace' && r.operation === 'CREATE' && !privileged && typeof name === 'string' && !(owner && name.startsWith('payments-'))) {
    return `non-privileged ${r.userInfo.username || '(anonymous)'} creates namespace ${name} outside its projects`;
  }
  const cpu = r.object?.spec?.hard?.['requests.cpu'];
  if (r.kind.kind === 'ResourceQuota' && (r.operation === 'CREATE' || r.operation === 'UPDATE') && r.namespace === 'payments-new' && typeof cpu === 'string' && Quantity.parse(cpu).cmp(Quantity.parse('1')) > 0) {
    return `quota asking requests.cpu ${cpu} in payments-new, where 1 fits`;
  }
  return undefined;
}

function checkAnswer(res: { status: number; body: string; contentType: string }, broken: boolean, path: string, request?: FuzzRequest): void {
  stats.cases++;
  if (res.status >= 500) stats.crashes++;
  expect(res.contentType).toContain('application/json');
  const parsed = JSON.parse(res.body);
  if (broken) {
    expect(res.status).toBe(400);
    expect(typeof parsed.error).toBe('string');
    expect(parsed.response).toBeUndefined();
    return;
  }
  expect(res.status, res.body).toBe(200);
  expect(parsed.apiVersion).toBe('admission.k8s.io/v1');
  expect(typeof parsed.response.allowed).toBe('boolean');
  const why = mustDeny(path, request!);
  if (why) stats.oracleCases++;
  if (why && parsed.response.allowed) stats.accidentalAdmits++;
  expect(parsed.response.allowed, `accidental admit: ${why}`).toBe(why ? false : parsed.response.allowed);
  if (!parsed.response.allowed) {
    stats.denials++;
    // Every denial names its rules; 503 (not ready) and Q5 retries carry their own text.
    if (parsed.response.status.code === 403) for (const line of String(parsed.response.status.message).split('\n')) expect(line).toMatch(/^\[(S1|N[1-4]|T[1-7]|Q[1-5])\] /);
  }
}

describe('webhook fuzz (W5)', () => {
  it(`answers ${RUNS} generated bodies: 200 for every envelope, 400 for every broken one, no accidental admit`, async () => {
    let total = 0;
    for (const [arb, broken, runs] of [
      [validReview.map((r) => JSON.stringify(r)), false, RUNS / 2],
      [brokenReview, true, RUNS / 2],
    ] as const) {
      await fc.assert(
        fc.asyncProperty(arb, async (body) => {
          total++;
          for (const path of ['/validate', '/mutate']) {
            const res = await post(path, body);
            const request = broken ? undefined : (JSON.parse(body) as { request: FuzzRequest }).request;
            checkAnswer(res, broken, path, request);
            if (request) expect(JSON.parse(res.body).response.uid).toBe(request.uid);
          }
        }),
        { numRuns: runs, seed: SEED },
      );
    }
    expect(total).toBeGreaterThanOrEqual(RUNS);
    expect(stats.crashes).toBe(0);
    expect(stats.accidentalAdmits).toBe(0);
    // The oracles had something to judge: the generators reach both kinds of must-deny request.
    expect(stats.denials).toBeGreaterThan(RUNS / 20);
    expect(stats.oracleCases).toBeGreaterThan(RUNS / 200);
  }, 3_600_000);

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
