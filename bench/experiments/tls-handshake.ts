/**
 * What a new connection costs the webhook, by serving key: RSA-2048 (what tenantgate made before ADR
 * 0034) against ECDSA P-256 (what `tenantgate certs`, the test harness and the chart's cert-manager
 * Certificate make now). The apiserver keeps at
 * most 25 idle connections per webhook host (client-go's transport cache) and speaks HTTP/1.1 to
 * webhooks: above 25 reviews in flight, each further review opens a connection and pays a full TLS
 * handshake (no session resumption), so under load the handshake is part of the cost of a review.
 *
 * A server child process per key type (node:https, the webhook's TLS settings: TLS 1.2 minimum, a client
 * certificate requested and checked against a CA, as `--client-ca` does), a client in this process:
 *   - new connection: one POST per connection (`Connection: close`), 10 at a time;
 *   - reused: the same POSTs over 10 keep-alive connections (the review without the handshake).
 * Server CPU (its own process.cpuUsage) per request, median of BENCH_TLS_ROUNDS (5) interleaved rounds
 * of BENCH_TLS_REQUESTS (2,000) each. The certificates come from the openssl command line (a benchmark
 * tool here, not a product dependency).
 *
 *   npm run bench -- tls-handshake
 */
import { fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { runIfMain } from '../lib/entry.js';
import { HERE, env, log, median, round3, table } from '../lib/measure.js';

const RESULTS = join(HERE, 'results', 'tls-handshake.json');
const ROUNDS = env('BENCH_TLS_ROUNDS', 5);
const REQUESTS = env('BENCH_TLS_REQUESTS', 2000);
const PARALLEL = 10;
const KEYS = {
  'RSA-2048': ['-newkey', 'rsa:2048'],
  'ECDSA P-256': ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'],
} as const;
type KeyKind = keyof typeof KEYS;

interface Pki {
  caCert: string;
  serving: Record<KeyKind, { cert: string; key: string }>;
  client: { cert: string; key: string };
}

async function openssl(args: string[]): Promise<void> {
  await execa('openssl', args);
}

/** A CA (ECDSA) that signs a serving certificate of each key kind and a client certificate. */
async function makePki(dir: string): Promise<Pki> {
  const path = (name: string) => join(dir, name);
  await openssl([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    path('ca.key'),
    '-out',
    path('ca.crt'),
    '-days',
    '2',
    '-subj',
    '/CN=bench-ca',
  ]);
  const signed = async (name: string, newKey: readonly string[], ext: string) => {
    await openssl([
      'req',
      '-new',
      ...newKey,
      '-nodes',
      '-keyout',
      path(`${name}.key`),
      '-out',
      path(`${name}.csr`),
      '-subj',
      `/CN=${name}`,
    ]);
    writeFileSync(path(`${name}.ext`), ext);
    await openssl([
      'x509',
      '-req',
      '-in',
      path(`${name}.csr`),
      '-CA',
      path('ca.crt'),
      '-CAkey',
      path('ca.key'),
      '-CAcreateserial',
      '-out',
      path(`${name}.crt`),
      '-days',
      '2',
      '-extfile',
      path(`${name}.ext`),
    ]);
    return { cert: path(`${name}.crt`), key: path(`${name}.key`) };
  };
  const serverExt = 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n';
  return {
    caCert: path('ca.crt'),
    serving: {
      'RSA-2048': await signed('rsa', KEYS['RSA-2048'], serverExt),
      'ECDSA P-256': await signed('ecdsa', KEYS['ECDSA P-256'], serverExt),
    },
    client: await signed('client', KEYS['ECDSA P-256'], 'extendedKeyUsage=clientAuth\n'),
  };
}

/** The server child: answers every POST with a small JSON body; reports its CPU on request. */
const SERVER = `
const { createServer } = require('node:https');
const { readFileSync } = require('node:fs');
const [cert, key, ca] = process.argv.slice(2);
const s = createServer({ cert: readFileSync(cert), key: readFileSync(key), ca: readFileSync(ca), requestCert: true, rejectUnauthorized: false, minVersion: 'TLSv1.2' }, (req, res) => {
  if (!req.socket.authorized) { res.statusCode = 401; res.end(); return; }
  req.resume();
  req.on('end', () => res.end('{"response":{"allowed":true}}'));
});
s.keepAliveTimeout = 120000;
s.listen(0, '127.0.0.1', () => process.send({ port: s.address().port }));
process.on('message', () => { const u = process.cpuUsage(); process.send({ cpuMs: (u.user + u.system) / 1000 }); });
`;

interface Server {
  port: number;
  cpuMs(): Promise<number>;
  stop(): void;
}

async function startServer(dir: string, serving: { cert: string; key: string }, caCert: string): Promise<Server> {
  const script = join(dir, 'server.cjs');
  writeFileSync(script, SERVER);
  const child = fork(script, [serving.cert, serving.key, caCert], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve) =>
    child.once('message', (m) => resolve((m as { port: number }).port)),
  );
  return {
    port,
    cpuMs: () =>
      new Promise((resolve) => {
        child.once('message', (m) => resolve((m as { cpuMs: number }).cpuMs));
        child.send('cpu');
      }),
    stop: () => void child.kill(),
  };
}

/** `count` POSTs, PARALLEL at a time; `agent` false: a new connection (and handshake) for each. */
async function posts(server: Server, pki: Pki, count: number, agent: Agent | false): Promise<void> {
  const ca = readFileSync(pki.caCert);
  const [cert, key] = [readFileSync(pki.client.cert), readFileSync(pki.client.key)];
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const headers = agent ? {} : { connection: 'close' };
      const req = request(
        { host: '127.0.0.1', port: server.port, method: 'POST', path: '/validate', ca, cert, key, agent, headers },
        (res) => {
          if (res.statusCode !== 200)
            reject(new Error(`the server answered ${res.statusCode}: the client certificate was not accepted`));
          res.resume();
          res.on('end', () => resolve());
        },
      );
      req.on('error', reject);
      req.end('{"request":{"uid":"x"}}');
    });
  for (let i = 0; i < count; i += PARALLEL)
    await Promise.all(Array.from({ length: Math.min(PARALLEL, count - i) }, one));
}

/** Server CPU milliseconds per request: new connections, then reused ones. */
async function round(server: Server, pki: Pki): Promise<{ fresh: number; reused: number }> {
  const c0 = await server.cpuMs();
  await posts(server, pki, REQUESTS, false);
  const c1 = await server.cpuMs();
  const agent = new Agent({ keepAlive: true, maxSockets: PARALLEL, ca: readFileSync(pki.caCert) });
  await posts(server, pki, REQUESTS, agent);
  const c2 = await server.cpuMs();
  agent.destroy();
  return { fresh: (c1 - c0) / REQUESTS, reused: (c2 - c1) / REQUESTS };
}

export async function main(): Promise<string[]> {
  const load0 = loadavg()[0]!;
  const dir = mkdtempSync(join(tmpdir(), 'tg-tls-'));
  const pki = await makePki(dir);
  const kinds = Object.keys(KEYS) as KeyKind[];
  const servers = Object.fromEntries(
    await Promise.all(kinds.map(async (k) => [k, await startServer(dir, pki.serving[k], pki.caCert)] as const)),
  ) as Record<KeyKind, Server>;
  const perRound: Record<KeyKind, Array<{ fresh: number; reused: number }>> = { 'RSA-2048': [], 'ECDSA P-256': [] };
  try {
    for (const k of kinds) await posts(servers[k], pki, 200, false); // warm-up
    for (let r = 1; r <= ROUNDS; r++) {
      for (const k of r % 2 ? kinds : [...kinds].reverse()) perRound[k].push(await round(servers[k], pki));
      log(
        `tls-handshake round ${r}: ${kinds.map((k) => `${k} ${round3(perRound[k].at(-1)!.fresh)} / ${round3(perRound[k].at(-1)!.reused)} ms`).join(', ')}`,
      );
    }
  } finally {
    for (const k of kinds) servers[k].stop();
  }
  const rows = kinds.map((k) => ({
    key: k,
    freshMs: round3(median(perRound[k].map((r) => r.fresh))),
    reusedMs: round3(median(perRound[k].map((r) => r.reused))),
  }));
  const ecdsaOverRsa = round3(rows[1]!.freshMs / rows[0]!.freshMs);
  process.stdout.write(
    `\nServer CPU per request (median of ${ROUNDS} rounds of ${REQUESTS}; load ${load0.toFixed(2)} at start)\n`,
  );
  process.stdout.write(
    `${table(
      ['serving key', 'new connection ms', 'reused connection ms', 'handshake ms (difference)'],
      rows.map((r) => [r.key, r.freshMs, r.reusedMs, round3(r.freshMs - r.reusedMs)]),
    )}\n`,
  );
  process.stdout.write(`ECDSA ÷ RSA, new connection: ${ecdsaOverRsa}\n`);
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(
    RESULTS,
    `${JSON.stringify({ benchmark: 'tls-handshake', date: new Date().toISOString(), loadAverage: { start: round3(load0), end: round3(loadavg()[0]!) }, rounds: ROUNDS, requests: REQUESTS, rows, ecdsaOverRsa, perRound }, null, 2)}\n`,
  );
  return [];
}

runIfMain(import.meta.url, main);
