/**
 * The configuration that ships, through the real apiserver: two `tenantgate webhook` processes (dist/,
 * the shipped tenantgate.yaml: headroom ledger on) registered as the cluster's webhooks behind one
 * address, on the kubeadm-style local control plane. Tenants' requests are real (not dry runs):
 *
 *   burst:   one owner creates 200 namespaces at once in a project with budget for 150 — how many are
 *            admitted, how many denied with Q1 / Q5, how long, how many ledger writes;
 *   steady:  a fixed rate of namespace creates and quota growths by owners, spread over 20 projects and
 *            concentrated on one, with the ledger on and off — webhook, kube-apiserver and etcd CPU per
 *            admitted growth, ledger writes and conflicts per admitted growth, client-side p50/p99;
 *   baseline: the CPU of one keep-alive node:https PUT of a ConfigMap through the same apiserver, measured
 *            in the same run (what one ledger write costs a lean client).
 *
 * Every verdict is checked: an admitted request must come back 201/200, a denial must name its rule.
 * Writes bench/results/shipped.json; `npm run bench -- shipped --check` exits 1 on a missed target.
 *   BENCH_SHIPPED_RATE=40 BENCH_SHIPPED_SECONDS=15 npm run bench -- shipped
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { generateWebhookCerts } from '../src/certs/files.js';
import type { TenantgateConfig } from '../src/config/config.js';
import { ControlPlane } from '../test/support/devcluster/controlplane.js';
import { startWebhookReplicas, type WebhookReplicas } from '../test/support/devcluster/replicas.js';
import { applyOwnerBindings, installBase, kubectlAs } from '../test/support/devcluster/tenantgate.js';
import type { Project } from '../src/validate/types.js';
import { HERE, env, median, procCpuSeconds, round1, round3, sleep, stats, table } from './lib/measure.js';

const RESULTS = join(HERE, 'results', 'shipped.json');
const RATE = env('BENCH_SHIPPED_RATE', 40);
const SECONDS = env('BENCH_SHIPPED_SECONDS', 15);
const PROJECTS = 20;
const BURST = { creates: 200, room: 150 };
const TARGETS = { burstSeconds: 5, writesPerGrowth: 0.25, cpuVsBarePut: 1.5 };
const OWNERS = [{ kind: 'Group', name: 'acme:payments-admins' }];

const log = (m: string) => process.stderr.write(`[bench/shipped ${new Date().toISOString().slice(11, 19)}] ${m}\n`);

interface Api {
  call(method: string, path: string, body?: unknown, contentType?: string): Promise<{ status: number; text: string; ms: number }>;
}

/** A keep-alive HTTPS client with a bearer token: the lean path (no client-node), also the baseline's. */
function apiAs(server: string, ca: Buffer, token: string): Api {
  const url = new URL(server);
  const agent = new Agent({ keepAlive: true, maxSockets: 256, ca });
  return {
    call: (method, path, body, contentType = 'application/json') =>
      new Promise((resolve, reject) => {
        const started = performance.now();
        const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
        const req = request({ host: url.hostname, port: url.port, method, path, agent, headers: { authorization: `Bearer ${token}`, ...(payload ? { 'content-type': contentType, 'content-length': payload.length } : {}) } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString(), ms: performance.now() - started }));
        });
        req.on('error', reject);
        req.end(payload);
      }),
  };
}

type Verdict = 'admitted' | `denied ${string}` | 'error';

/** An admitted request is 200/201; a denial is a 4xx whose message names a rule id; anything else is an error. */
function verdictOf(r: { status: number; text: string }): Verdict {
  if (r.status === 200 || r.status === 201) return 'admitted';
  const rule = /\[([A-Z][0-9])\]/.exec(r.text)?.[1];
  if (r.status >= 400 && r.status < 500 && rule) return `denied ${rule}`;
  if (r.status === 403 && /exceeded quota/.test(r.text)) return 'denied quota';
  return 'error';
}

const countBy = (verdicts: Verdict[]) => verdicts.reduce<Record<string, number>>((m, v) => ((m[v] = (m[v] ?? 0) + 1), m), {});

async function metricSum(webhooks: WebhookReplicas, metric: RegExp): Promise<number> {
  return (await webhooks.scrape(metric)).reduce((a, b) => a + b, 0);
}
const LEDGER_WRITES = /^tenantgate_webhook_ledger_batch_size_count /;
const CONFLICTS = /^tenantgate_webhook_reservations_total\{outcome="conflict"\}/;

async function project(cp: ControlPlane, name: string, budgetCpu: string, defaultCpu: string): Promise<void> {
  const body = { apiVersion: 'tenantgate.io/v1alpha1', kind: 'Project', metadata: { name }, spec: { tenant: 'acme', owners: OWNERS, quota: { hard: { 'requests.cpu': budgetCpu, pods: '100000' } }, namespaceDefaults: { quota: { hard: { 'requests.cpu': defaultCpu, pods: '10' } } } } };
  await kubectlAs(cp.info, 'admin', ['apply', '-f', '-'], JSON.stringify(body));
}

/** Waits until every replica's cache holds `count` objects of a kind. */
async function cachesHold(webhooks: WebhookReplicas, kind: string, count: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  const metric = new RegExp(`^tenantgate_webhook_cache_objects\\{kind="${kind}"\\}`);
  while (!(await webhooks.scrape(metric)).every((n) => n >= count)) {
    if (Date.now() > deadline) throw new Error(`replicas' caches did not reach ${count} ${kind} objects`);
    await sleep(200);
  }
}

// --- burst ----------------------------------------------------------------------------------------

async function burst(cp: ControlPlane, webhooks: WebhookReplicas, alice: Api) {
  await project(cp, 'burst', String(BURST.room), '1');
  await cachesHold(webhooks, 'Project', 1);
  const writesBefore = await metricSum(webhooks, LEDGER_WRITES);
  const started = performance.now();
  const results = await Promise.all(Array.from({ length: BURST.creates }, (_, i) => alice.call('POST', '/api/v1/namespaces', { metadata: { name: `burst-n${i}` } })));
  const seconds = (performance.now() - started) / 1000;
  const verdicts = results.map(verdictOf);
  const writes = (await metricSum(webhooks, LEDGER_WRITES)) - writesBefore;
  const counts = countBy(verdicts);
  const admitted = counts.admitted ?? 0;
  const existing = Number((await kubectlAs(cp.info, 'admin', ['get', 'namespaces', '-l', 'tenantgate.io/project=burst', '-o', 'name'])).stdout.trim().split('\n').filter(Boolean).length);
  return { creates: BURST.creates, room: BURST.room, seconds: round3(seconds), counts, admitted, existing, ledgerWrites: writes, writesPerAdmitted: round3(writes / Math.max(1, admitted)) };
}

// --- steady ---------------------------------------------------------------------------------------

interface SteadyRun {
  mode: string;
  spread: 'spread' | 'one project';
  offered: number;
  counts: Record<string, number>;
  admittedGrowths: number;
  latencyMs: ReturnType<typeof stats>;
  cpuMsPerGrowth: { webhook: number; apiserver: number; etcd: number };
  ledgerWritesPerGrowth: number;
  conflictsPerGrowth: number;
}

let nameSeq = 0;

async function steady(cp: ControlPlane, webhooks: WebhookReplicas, alice: Api, mode: string, spread: SteadyRun['spread'], projects: string[], namespaces: Map<string, string[]>): Promise<SteadyRun> {
  const targets = spread === 'spread' ? projects : projects.slice(0, 1);
  const cpuPids = { webhook: webhooks.replicas.map((r) => r.process.pid), apiserver: [cp.pid('kube-apiserver')], etcd: [cp.pid('etcd')] };
  const cpu = () => Object.fromEntries(Object.entries(cpuPids).map(([k, pids]) => [k, pids.reduce((s, pid) => s + procCpuSeconds(pid), 0)])) as Record<keyof typeof cpuPids, number>;
  const quotaCpu = new Map<string, number>();
  const growth = (i: number): Promise<{ status: number; text: string; ms: number }> => {
    const p = targets[i % targets.length]!;
    if (i % 2 === 0) return alice.call('POST', '/api/v1/namespaces', { metadata: { name: `${p}-s${nameSeq++}` } });
    const list = namespaces.get(p)!;
    const ns = list[Math.floor(i / 2 / targets.length) % list.length]!;
    const next = (quotaCpu.get(ns) ?? 100) + 10;
    quotaCpu.set(ns, next);
    return alice.call('PATCH', `/api/v1/namespaces/${ns}/resourcequotas/tenantgate-quota`, { spec: { hard: { 'requests.cpu': `${next}m` } } }, 'application/merge-patch+json');
  };
  // Warm-up (not counted), then a fixed rate: one request every 1000/RATE ms whatever the answers.
  await Promise.all(Array.from({ length: 10 }, (_, i) => growth(i)));
  const [writes0, conflicts0, cpu0] = [await metricSum(webhooks, LEDGER_WRITES), await metricSum(webhooks, CONFLICTS), cpu()];
  const total = RATE * SECONDS;
  const inflight: Array<Promise<{ status: number; text: string; ms: number }>> = [];
  const t0 = performance.now();
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    inflight.push(growth(10 + i));
  }
  const results = await Promise.all(inflight);
  const cpu1 = cpu();
  const [writes1, conflicts1] = [await metricSum(webhooks, LEDGER_WRITES), await metricSum(webhooks, CONFLICTS)];
  const verdicts = results.map(verdictOf);
  const counts = countBy(verdicts);
  const firstError = results.find((r, i) => verdicts[i] === 'error');
  if (firstError) log(`${mode}, ${spread}: first error ${firstError.status} ${firstError.text.slice(0, 300)}`);
  const admitted = counts.admitted ?? 0;
  const per = (seconds: number) => round3((seconds * 1000) / Math.max(1, admitted));
  return {
    mode,
    spread,
    offered: total,
    counts,
    admittedGrowths: admitted,
    latencyMs: stats(results.map((r) => r.ms)),
    cpuMsPerGrowth: { webhook: per(cpu1.webhook - cpu0.webhook), apiserver: per(cpu1.apiserver - cpu0.apiserver), etcd: per(cpu1.etcd - cpu0.etcd) },
    ledgerWritesPerGrowth: round3((writes1 - writes0) / Math.max(1, admitted)),
    conflictsPerGrowth: round3((conflicts1 - conflicts0) / Math.max(1, admitted)),
  };
}

/** CPU of this process per keep-alive PUT of a ConfigMap through the apiserver (median of 3 rounds of 200). */
async function barePut(admin: Api): Promise<{ cpuMsPerPut: number; latencyMs: number }> {
  const path = '/api/v1/namespaces/tenantgate-system/configmaps/bench-bare-put';
  await admin.call('POST', '/api/v1/namespaces/tenantgate-system/configmaps', { metadata: { name: 'bench-bare-put' }, data: { n: '0' } });
  const rounds: Array<{ cpu: number; ms: number }> = [];
  let n = 0;
  for (let round = 0; round < 3; round++) {
    const before = process.cpuUsage();
    const times: number[] = [];
    for (let i = 0; i < 200; i++) {
      const r = await admin.call('PUT', path, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bench-bare-put', namespace: 'tenantgate-system' }, data: { n: String(++n) } });
      if (r.status !== 200) throw new Error(`bare PUT answered ${r.status}: ${r.text.slice(0, 200)}`);
      times.push(r.ms);
    }
    const used = process.cpuUsage(before);
    rounds.push({ cpu: (used.user + used.system) / 1000 / 200, ms: median(times) });
  }
  return { cpuMsPerPut: round3(median(rounds.map((r) => r.cpu))), latencyMs: round3(median(rounds.map((r) => r.ms))) };
}

export async function main(): Promise<string[]> {
  const loadAtStart = loadavg()[0]!;
  log(`load average at start ${loadAtStart.toFixed(2)}`);
  const cp = await ControlPlane.start({ log });
  let webhooks: WebhookReplicas | undefined;
  try {
    await installBase(cp.info);
    const ca = await readFile(cp.info.caFile);
    const alice = apiAs(cp.info.server, ca, cp.info.tokens.alice!);
    const admin = apiAs(cp.info.server, ca, cp.info.tokens.admin!);
    const certs = await generateWebhookCerts(join(cp.info.dir, 'shipped-certs'));
    const start = async (config: Partial<TenantgateConfig>, name: string) => {
      await webhooks?.stop();
      webhooks = await startWebhookReplicas(cp.info, certs, config, { name });
      return webhooks;
    };

    const bare = await barePut(admin);
    log(`bare keep-alive PUT: ${bare.cpuMsPerPut} ms client CPU, ${bare.latencyMs} ms`);

    let hooks = await start({}, 'shipped');
    const burstResult = await burst(cp, hooks, alice);
    log(`burst: ${JSON.stringify(burstResult)}`);

    // Projects for the steady runs, each with 5 namespaces made by its owner.
    const projects = Array.from({ length: PROJECTS }, (_, i) => `sp${i}`);
    for (const p of projects) await project(cp, p, '100000', '100m');
    await cachesHold(hooks, 'Project', PROJECTS + 1);
    const namespaces = new Map<string, string[]>();
    for (const p of projects) {
      const names = Array.from({ length: 5 }, (_, i) => `${p}-base${i}`);
      for (const name of names) {
        const r = await alice.call('POST', '/api/v1/namespaces', { metadata: { name } });
        if (r.status !== 201) throw new Error(`creating ${name}: ${r.status} ${r.text.slice(0, 300)}`);
        await kubectlAs(cp.info, 'admin', ['-n', name, 'create', 'quota', 'tenantgate-quota', '--hard=requests.cpu=100m,pods=10']);
      }
      // What the controller gives every project namespace (it does not run here): the owners' RoleBinding.
      await applyOwnerBindings(cp.info, { apiVersion: 'tenantgate.io/v1alpha1', kind: 'Project', metadata: { name: p }, spec: { tenant: 'acme', owners: OWNERS } } as unknown as Project, names);
      namespaces.set(p, names);
    }
    await cachesHold(hooks, 'ResourceQuota', PROJECTS * 5);

    const runs: SteadyRun[] = [];
    for (const [mode, config] of [['shipped (ledger on)', {}], ['ledger off', { crossReplicaReservation: false }]] as const) {
      hooks = await start(config, mode === 'ledger off' ? 'no-ledger' : 'shipped-steady');
      for (const spread of ['spread', 'one project'] as const) {
        const run = await steady(cp, hooks, alice, mode, spread, projects, namespaces);
        log(`${mode}, ${spread}: ${JSON.stringify(run)}`);
        runs.push(run);
      }
    }

    const missed: string[] = [];
    if (burstResult.admitted !== BURST.room) missed.push(`burst: ${burstResult.admitted} of ${BURST.creates} admitted, want exactly ${BURST.room}`);
    if ((burstResult.counts['denied Q5'] ?? 0) > 0) missed.push(`burst: ${burstResult.counts['denied Q5']} denied with Q5, want 0`);
    if (burstResult.seconds >= TARGETS.burstSeconds) missed.push(`burst: ${burstResult.seconds} s, want < ${TARGETS.burstSeconds} s`);
    if (burstResult.writesPerAdmitted > TARGETS.writesPerGrowth) missed.push(`burst: ${burstResult.writesPerAdmitted} ledger writes per admitted growth, want ≤ ${TARGETS.writesPerGrowth}`);
    if (burstResult.existing !== burstResult.admitted) missed.push(`burst: ${burstResult.existing} namespaces exist but ${burstResult.admitted} were admitted`);
    for (const run of runs) {
      const errors = run.counts.error ?? 0;
      if (errors > 0) missed.push(`${run.mode}, ${run.spread}: ${errors} requests neither admitted nor denied with a rule`);
      if (run.mode.startsWith('shipped') && run.cpuMsPerGrowth.webhook > TARGETS.cpuVsBarePut * bare.cpuMsPerPut) {
        missed.push(`${run.mode}, ${run.spread}: webhook CPU ${run.cpuMsPerGrowth.webhook} ms per admitted growth, want ≤ ${TARGETS.cpuVsBarePut} × a bare PUT's ${bare.cpuMsPerPut} ms`);
      }
    }

    process.stderr.write(`\nburst (${BURST.creates} parallel creates, room for ${BURST.room}, 2 replicas, ledger on)\n`);
    process.stderr.write(table(['admitted', 'denied', 'Q5', 'seconds', 'ledger writes', 'writes/admitted'], [[burstResult.admitted, Object.entries(burstResult.counts).filter(([k]) => k !== 'admitted').map(([k, v]) => `${k.replace('denied ', '')} ${v}`).join(', ') || '0', burstResult.counts['denied Q5'] ?? 0, burstResult.seconds, burstResult.ledgerWrites, burstResult.writesPerAdmitted]]));
    process.stderr.write(`\nsteady, ${RATE} req/s for ${SECONDS} s (half namespace creates, half quota growths); bare PUT ${bare.cpuMsPerPut} ms CPU\n`);
    process.stderr.write(table(['mode', 'load', 'admitted', 'other', 'p50 ms', 'p99 ms', 'webhook ms/growth', 'apiserver ms/growth', 'etcd ms/growth', 'writes/growth', 'conflicts/growth'], runs.map((r) => [r.mode, r.spread, r.admittedGrowths, Object.entries(r.counts).filter(([k]) => k !== 'admitted').map(([k, v]) => `${k} ${v}`).join(', ') || '-', r.latencyMs.p50, r.latencyMs.p99, r.cpuMsPerGrowth.webhook, r.cpuMsPerGrowth.apiserver, r.cpuMsPerGrowth.etcd, r.ledgerWritesPerGrowth, r.conflictsPerGrowth])));
    const loadAtEnd = loadavg()[0]!;
    mkdirSync(join(HERE, 'results'), { recursive: true });
    writeFileSync(RESULTS, JSON.stringify({ date: new Date().toISOString(), loadAverage: { start: round1(loadAtStart), end: round1(loadAtEnd) }, rate: RATE, seconds: SECONDS, bare, burst: burstResult, steady: runs, missed }, null, 2));
    log(`load average at end ${loadAtEnd.toFixed(2)}; wrote ${RESULTS}`);
    return missed;
  } finally {
    await webhooks?.stop();
    await cp.stop();
  }
}
