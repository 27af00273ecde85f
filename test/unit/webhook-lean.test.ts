/**
 * The lean admission path (src/webhook/server.ts): POST /validate and /mutate are served without
 * Express, with the same answers — 400 for bad JSON or envelopes, 413 past 3 MiB (declared or
 * streamed), 404 for other paths — and whatever the lean path does not take (compressed bodies,
 * other charsets) still reaches Express's body parser; a decision that throws or rejects is a denial
 * (500) on either path. Also: the webhook's asynchronous decision log
 * loses nothing when the process exits.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, request, type Server } from 'node:http';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { WebhookMetrics } from '../../src/webhook/metrics.js';
import { createApp, MAX_BODY_BYTES, type AdmissionDecision } from '../../src/webhook/server.js';

const metrics = new WebhookMetrics();
const decisions: AdmissionDecision[] = [];
let server: Server;
let port = 0;

beforeAll(async () => {
  const snapshot = MemorySnapshot.of({
    projects: [
      {
        metadata: { name: 'shop', uid: 'u1' },
        spec: { tenant: 'acme', owners: [{ kind: 'Group', name: 'shop-admins' }] },
      },
    ],
  });
  server = createServer(
    createApp({ config: DEFAULT_CONFIG, snapshot, ready: () => true, metrics, onDecision: (d) => decisions.push(d) }),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

interface Answer {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

/** One request on a fresh connection; `chunks` are written one by one (chunked encoding when no content-length). */
function send(
  method: string,
  path: string,
  chunks: Array<string | Buffer>,
  headers: Record<string, string | number> = {},
  to = port,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: to,
        path,
        method,
        agent: false,
        headers: { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      },
    );
    // The server may answer (413) and close before the whole body is written.
    req.on('error', (err) =>
      (err as NodeJS.ErrnoException).code === 'EPIPE' || (err as NodeJS.ErrnoException).code === 'ECONNRESET'
        ? undefined
        : reject(err),
    );
    for (const c of chunks) req.write(c);
    req.end();
  });
}

/** A kind tenantgate does not judge: admitted whatever its name, so only the HTTP path is under test. */
const review = (uid: string, name = 'web') =>
  JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
      namespace: 'shop-x',
      operation: 'CREATE',
      name,
      userInfo: { username: 'mallory', groups: ['shop-admins'] },
      object: { metadata: { name } },
    },
  });

describe('the lean admission path', () => {
  it('decides /validate and /validate?timeout=10s (as the apiserver calls it) and answers one JSON AdmissionReview', async () => {
    for (const path of ['/validate', '/validate?timeout=10s']) {
      const res = await send('POST', path, [review(`u-${path}`)]);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.body));
      const json = JSON.parse(res.body);
      expect(json).toMatchObject({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        response: { uid: `u-${path}`, allowed: true },
      });
    }
    expect(decisions.at(-1)).toMatchObject({ uid: 'u-/validate?timeout=10s', path: 'validate', verdict: 'allowed' });
    expect(await metrics.registry.metrics()).toMatch(
      /tenantgate_webhook_requests_total\{path="validate",operation="CREATE",kind="other",verdict="allowed"\} 2/,
    );
  });

  it('answers 400 to a body that is not JSON, and to JSON that is not an AdmissionReview', async () => {
    const broken = await send('POST', '/validate', ['{"apiVersion": ']);
    expect(broken.status).toBe(400);
    expect(JSON.parse(broken.body).error).toMatch(/^invalid JSON body: /);
    expect(JSON.parse(broken.body).response).toBeUndefined();
    for (const body of ['[]', '"x"', '{}', '']) {
      const res = await send('POST', '/mutate', [body]);
      expect(res.status, body).toBe(400);
      expect(JSON.parse(res.body).error).toMatch(/^invalid AdmissionReview: /);
    }
    // Split in chunks, across a multi-byte character, and with a byte-order mark: still one JSON text.
    const whole = Buffer.from(`\ufeff${review('u-split', 'shop-ü')}`);
    const at = whole.indexOf('ü') + 1;
    const split = await send('POST', '/validate', [whole.subarray(0, at), whole.subarray(at)]);
    expect(split.status).toBe(200);
    expect(JSON.parse(split.body).response.uid).toBe('u-split');
  });

  it('answers 413 past 3 MiB, declared or streamed, and serves the next request', async () => {
    const declared = await send('POST', '/validate', [Buffer.alloc(MAX_BODY_BYTES + 1, 'a')]);
    expect(declared.status).toBe(413);
    expect(JSON.parse(declared.body).error).toBe(`request body larger than ${MAX_BODY_BYTES} bytes`);
    const chunk = Buffer.alloc(1024 * 1024, ' ');
    const streamed = await send('POST', '/validate', [chunk, chunk, chunk, chunk, chunk]);
    expect(streamed.status).toBe(413);
    expect(streamed.headers.connection).toBe('close');
    // Exactly the limit is fine (a JSON text padded with spaces).
    const padded = review('u-limit');
    const atLimit = await send('POST', '/validate', [padded + ' '.repeat(MAX_BODY_BYTES - Buffer.byteLength(padded))]);
    expect(atLimit.status).toBe(200);
    expect((await send('POST', '/validate', [review('u-after')])).status).toBe(200);
    expect(await metrics.registry.metrics()).toMatch(/tenantgate_webhook_bad_requests_total\{code="413"\} 2/);
  });

  it('leaves other paths and methods to Express: 404 as before', async () => {
    for (const [method, path] of [
      ['POST', '/nope'],
      ['GET', '/validate'],
      ['POST', '/validate/x'],
      ['PUT', '/mutate'],
    ] as const) {
      const res = await send(method, path, method === 'GET' ? [] : ['{}']);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(JSON.parse(res.body).error).toMatch(/^not found/);
    }
    expect((await send('GET', '/healthz', [])).body).toBe('ok');
  });

  it('sends compressed bodies and other charsets through body-parser, as before', async () => {
    const gz = await send('POST', '/validate', [gzipSync(review('u-gzip'))], { 'content-encoding': 'gzip' });
    expect(gz.status).toBe(200);
    expect(JSON.parse(gz.body).response.uid).toBe('u-gzip');
    const latin = await send('POST', '/validate', [review('u-latin')], {
      'content-type': 'application/json; charset=latin1',
    });
    expect(latin.status).toBe(400);
    const utf8 = await send('POST', '/validate', [review('u-utf8')], {
      'content-type': 'application/json; charset=UTF-8',
    });
    expect(JSON.parse(utf8.body).response.uid).toBe('u-utf8');
  });
});

describe('a decision that fails', () => {
  it('is a denial with code 500, never an admission: thrown, rejected, through the lean path or Express', async () => {
    const snapshot = MemorySnapshot.of({});
    const failures = [
      () => {
        throw new Error('snapshot corrupt');
      },
      () => Promise.reject(new Error('snapshot corrupt')),
    ];
    for (const decide of failures) {
      const failing = createServer(
        createApp({
          config: DEFAULT_CONFIG,
          snapshot,
          ready: () => true,
          metrics: new WebhookMetrics(),
          decide,
          log: () => {},
        }),
      );
      await new Promise<void>((r) => failing.listen(0, '127.0.0.1', () => r()));
      const at = (failing.address() as { port: number }).port;
      try {
        for (const viaExpress of [false, true]) {
          const body = review('u-fail');
          // A gzip body goes through Express's body parser; a plain one through the lean path.
          const res = viaExpress
            ? await send('POST', '/validate', [gzipSync(body)], { 'content-encoding': 'gzip' }, at)
            : await send('POST', '/validate', [body], {}, at);
          expect(res.status).toBe(200);
          expect(JSON.parse(res.body).response).toMatchObject({
            uid: 'u-fail',
            allowed: false,
            status: { code: 500, message: 'tenantgate could not evaluate its rules: snapshot corrupt' },
          });
        }
      } finally {
        await new Promise<void>((r) => failing.close(() => r()));
      }
    }
  });
});

describe('the webhook decision log (pino, asynchronous)', () => {
  it('flushes every record when the process exits right after logging', () => {
    const script = `
      import { createLogger } from ${JSON.stringify(join(process.cwd(), 'src', 'log.ts'))};
      import { decisionLog } from ${JSON.stringify(join(process.cwd(), 'src', 'webhook', 'start.ts'))};
      const record = decisionLog(createLogger({ name: 'webhook', format: 'json', sync: false }));
      for (let i = 0; i < 2000; i++) record({ uid: 'u' + i, path: 'validate', kind: 'Namespace', user: 'x', operation: 'CREATE', dryRun: false, verdict: 'allowed', rules: [], ms: 0.1 });
      process.exit(0);
    `;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      cwd: process.cwd(),
    });
    const lines = r.stderr
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('{'));
    expect(lines).toHaveLength(2000);
    expect(JSON.parse(lines[1999]!)).toMatchObject({ uid: 'u1999', msg: 'admission decision', component: 'webhook' });
  }, 60_000); // a child process loading TypeScript: seconds on a busy machine

  it('batches records (no write per record) and still writes a lone record within about a second', () => {
    // stderr is a file here, so the script can see how much has been written so far.
    const script = `
      import { fstatSync } from 'node:fs';
      import { createLogger } from ${JSON.stringify(join(process.cwd(), 'src', 'log.ts'))};
      import { decisionLog } from ${JSON.stringify(join(process.cwd(), 'src', 'webhook', 'start.ts'))};
      const record = decisionLog(createLogger({ name: 'webhook', format: 'json', sync: false }));
      const one = (i) => record({ uid: 'u' + i, path: 'validate', kind: 'Namespace', user: 'x', operation: 'CREATE', dryRun: false, verdict: 'allowed', rules: [], ms: 0.1 });
      one(0);
      const sizes = [];
      setTimeout(() => sizes.push(fstatSync(2).size), 100);
      setTimeout(() => { sizes.push(fstatSync(2).size); process.stdout.write(JSON.stringify(sizes)); process.exit(0); }, 1600);
    `;
    const dir = mkdtempSync(join(tmpdir(), 'tenantgate-log-'));
    const fd = openSync(join(dir, 'stderr'), 'w');
    try {
      const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        encoding: 'utf8',
        cwd: process.cwd(),
        stdio: ['ignore', 'pipe', fd],
      });
      const [early, late] = JSON.parse(r.stdout) as [number, number];
      expect(early).toBe(0); // one record (< 4 KiB) waits for the batch or the periodic flush
      expect(late).toBeGreaterThan(0); // the periodic flush (1 s) wrote it
      expect(readFileSync(join(dir, 'stderr'), 'utf8')).toMatch(/"uid":"u0"/);
    } finally {
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the decision log timestamp', () => {
  it('is pino isoTime text, formatted again only when the millisecond changes', async () => {
    const { isoTimePerMillisecond } = await import('../../src/log.js');
    const { pino } = await import('pino');
    let now = Date.parse('2026-11-23T10:00:00.123Z');
    const time = isoTimePerMillisecond(() => now);
    const first = time();
    expect(first).toBe(',"time":"2026-11-23T10:00:00.123Z"');
    expect(time()).toBe(first);
    now += 1;
    expect(time()).toBe(',"time":"2026-11-23T10:00:00.124Z"');
    // The same shape as pino's own isoTime field.
    expect(pino.stdTimeFunctions.isoTime()).toMatch(/^,"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"$/);
  });
});
