/**
 * P1, P3 and Q5 (SPEC §10, §5.4): the admission webhook's throughput, latency, memory and the price
 * of the cross-replica headroom ledger. One run measures:
 *
 *  P1  throughput — one load generator (node:https, keep-alive Agent, N requests in flight, fixed
 *      duration after a warm-up) against (a) a bare node:https server answering a fixed pre-serialised
 *      AdmissionReview and (b) tenantgate's real app, serveHttps(createApp(...)) wired like
 *      `tenantgate webhook` (HeadroomGuard, metrics), over a MemorySnapshot of 1,000 projects,
 *      5,000 namespaces and 5,000 quotas. Requests: a Namespace CREATE of a new project namespace by
 *      its owner (every rule runs, the allocation grows, the guard serialises), and a ResourceQuota
 *      UPDATE raising requests.cpu. Also (c) an "Express floor": Express with createApp's body parser
 *      answering the fixed review, to separate the framework from tenantgate's own work. All servers
 *      run in child processes (bench/webhook-server.ts, which also emulates the informers catching up),
 *      so client and server never share an event loop; the client is pinned to CPU 0 and the servers
 *      to CPU 1 (taskset; BENCH_WEBHOOK_PIN=0 to not). Target: tenantgate ≥ 0.7 × bare. A breakdown
 *      times the handler's pieces alone, in-process, in CPU time, and profiles guard.decide.
 *  P1  latency — open loop at a fixed rate (500/s for 10 s after 1 s of warm-up), unpinned; p50/p99
 *      measured from each request's send. Target p99 < 5 ms.
 *  P3  memory — a real control plane (etcd + kube-apiserver + kube-controller-manager), the CRD,
 *      10,000 Projects, 50,000 Namespaces, 50,000 ResourceQuotas created through the API (admin, no
 *      webhook registered); then `tenantgate webhook` (compiled) as a child process, syncing its
 *      informers; VmRSS from /proc after /readyz is 200 and a settle. Measured at 0, ½ and all of
 *      the objects, so the per-object slope is known; if creation would take longer than the budget
 *      (10 min) the scale is reduced and the full size extrapolated from the slope (said so in the
 *      output). Target < 300 MB.
 *  Q5  latency of an allocation-growing request (ResourceQuota CREATE by the namespace's owner: the
 *      guard reserves in a real ConfigMapLedger, a compare-and-swap write to the apiserver) vs a plain
 *      one (Namespace UPDATE changing nothing tenantgate cares about); sequential, alternating. The
 *      same growing requests against the in-process guard alone attribute the ledger's cost.
 *
 * If tenantgate misses the P1 throughput ratio (or BENCH_WEBHOOK_CPU_PROF=1), the bare server and both
 * tenantgate scenarios run once more under the V8 CPU profiler (started after the warm-up, inside the
 * server process): self and inclusive time by function and by package, in % and in µs per request.
 *
 *   npx tsx bench/webhook.ts            or   npm run bench -- webhook
 *   BENCH_WEBHOOK_P1=0                  skip P1
 *   BENCH_WEBHOOK_RSS=0                 skip P3 (no 110k-object cluster)
 *   BENCH_WEBHOOK_Q5=0                  skip Q5 (with P3 skipped too: no control plane at all)
 *   BENCH_WEBHOOK_DURATION_S=5 BENCH_WEBHOOK_CONCURRENCY=32 BENCH_WEBHOOK_ROUNDS=3
 *   BENCH_WEBHOOK_RATE=500 BENCH_WEBHOOK_LATENCY_S=10
 *   BENCH_WEBHOOK_RSS_PROJECTS=10000 BENCH_WEBHOOK_RSS_BUDGET_S=600 BENCH_WEBHOOK_Q5_REQUESTS=300
 *   BENCH_WEBHOOK_CPU_PROF=auto|1|0
 *
 * The machine may be shared: every P1 measurement first waits (≤ 30 s) for the rest of the machine to
 * use < 30 % of a core, and is repeated (≤ 3 times) when it was disturbed; the tables show the CPU the
 * rest of the machine used meanwhile ("others") and the tries.
 *
 * Results: bench/results/webhook.json.
 */
import * as k8s from '@kubernetes/client-node';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request as httpsRequest } from 'node:https';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Session } from 'node:inspector/promises';
import { generateWebhookCerts, type WebhookCertFiles } from '../src/certs/files.js';
import { DEFAULT_CONFIG } from '../src/config/config.js';
import type { ReviewContext } from '../src/validate/admission.js';
import type { HeadroomGuard } from '../src/webhook/headroom.js';
import { assembleWebhook } from '../src/webhook/main.js';
import { WebhookMetrics } from '../src/webhook/metrics.js';
import { decodeReview, envelope, responseFor, verdictFor, type AdmissionRequest } from '../src/webhook/review.js';
import { ControlPlane } from '../test/support/devcluster/controlplane.js';
import { httpsGet } from '../test/support/devcluster/https-get.js';
import { installBase } from '../test/support/devcluster/tenantgate.js';
import {
  NAMESPACES_PER_PROJECT,
  QUOTA_NAME,
  fixtureNamespace,
  fixtureProject,
  fixtureQuota,
  namespaceName,
  ownerGroup,
  ownerUser,
  emulateWatch,
  StaticSource,
  p1Snapshot,
  projectName,
  projectUid,
  q5NamespaceName,
  q5Owner,
  q5ProjectName,
  tenantName,
} from './webhook-server.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');
const RESULTS = join(HERE, 'results', 'webhook.json');
const SERVER_SCRIPT = join(HERE, 'webhook-server.ts');

const env = (name: string, fallback: number): number => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} is ${JSON.stringify(raw)}; a non-negative number is required`);
  return n;
};

const P1_PROJECTS = 1000;
const TARGET_RATIO = 0.7;
const TARGET_P99_MS = 5;
const TARGET_RSS_MB = 300;
const P3_FULL_PROJECTS = 10_000;
const Q5_PROJECTS = 30;
const Q5_WARMUP_PROJECTS = 2;

const log = (m: string) => process.stderr.write(`[webhook-bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const nowMs = () => performance.now();

// ---------------------------------------------------------------------------------------------
// Statistics and /proc
// ---------------------------------------------------------------------------------------------

function percentile(sorted: Float64Array | number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx] ?? NaN;
}

interface LatencyStats {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

function stats(values: ArrayLike<number>, count = values.length): LatencyStats {
  const a = Float64Array.from({ length: count }, (_, i) => values[i] ?? 0).sort();
  let sum = 0;
  for (const v of a) sum += v;
  return { n: count, p50: round3(percentile(a, 50)), p90: round3(percentile(a, 90)), p99: round3(percentile(a, 99)), max: round3(a[a.length - 1] ?? NaN), mean: round3(count ? sum / count : NaN) };
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;
const round1 = (x: number) => Math.round(x * 10) / 10;

let clockTicks = 100;
try {
  const out = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const n = Number(out.stdout?.trim());
  if (n > 0) clockTicks = n;
} catch {
  // keep 100
}

/** CPU seconds (user + system) of a process, from /proc/<pid>/stat. */
function procCpuSeconds(pid: number): number {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / clockTicks;
  } catch {
    return NaN;
  }
}

/** Machine-wide busy and total CPU seconds, from /proc/stat. */
function machineCpu(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  return { busy: (total - idle) / clockTicks, total: total / clockTicks };
}

function procStatus(pid: number): { rssMB: number; hwmMB: number; anonMB: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
  return { rssMB: round1(kb('VmRSS') / 1024), hwmMB: round1(kb('VmHWM') / 1024), anonMB: round1(kb('RssAnon') / 1024) };
}

// ---------------------------------------------------------------------------------------------
// Child processes (killed when this process exits)
// ---------------------------------------------------------------------------------------------

const children = new Set<ChildProcess>();
let exitHooked = false;
function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  process.on('exit', () => {
    for (const c of children) if (c.pid && c.exitCode === null) c.kill('SIGKILL');
  });
}

interface Child {
  pid: number;
  port: number;
  proc: ChildProcess;
  /** Resolves with the first stdout line (parsed JSON) that satisfies `pred`. */
  waitFor(pred: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

/** Spawns `node [nodeArgs] script args` (under `taskset -c cpu` when given), waits for the JSON line {"port": N} on stdout. */
async function startChild(nodeArgs: string[], args: string[], logFile: string, timeoutMs = 120_000, cpu?: string): Promise<Child> {
  hookExit();
  const fd = openSync(logFile, 'a');
  const command = cpu ? ['taskset', '-c', cpu, process.execPath] : [process.execPath];
  const proc = spawn(command[0]!, [...command.slice(1), ...nodeArgs, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', fd] });
  closeSync(fd);
  children.add(proc);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => {
    children.delete(proc);
    resolve();
  }));
  const seen: Array<Record<string, unknown>> = [];
  const waiters = new Set<(line: Record<string, unknown>) => void>();
  let buffer = '';
  proc.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    const lines = buffer.split('\n');
    buffer = lines.pop() ?? '';
    for (const line of lines) {
      try {
        const parsed = JSON.parse(line) as Record<string, unknown>;
        if (typeof parsed !== 'object' || parsed === null) continue;
        seen.push(parsed);
        for (const w of [...waiters]) w(parsed);
      } catch {
        // not a JSON line
      }
    }
  });
  const waitFor = (pred: (line: Record<string, unknown>) => boolean, ms = timeoutMs) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const hit = seen.find(pred);
      if (hit) return resolve(hit);
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`${args.join(' ')}: expected output not seen within ${ms} ms (log: ${logFile})`));
      }, ms);
      const check = (line: Record<string, unknown>) => {
        if (!pred(line)) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve(line);
      };
      waiters.add(check);
      proc.once('exit', (code) => {
        clearTimeout(timer);
        waiters.delete(check);
        reject(new Error(`${args.join(' ')} exited with ${code}; log: ${logFile}\n${tailFile(logFile)}`));
      });
    });
  const port = Number((await waitFor((l) => typeof l.port === 'number')).port);
  return {
    pid: proc.pid!,
    port,
    proc,
    waitFor,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * P1 pins the load generator (this process, all threads) to CPU 0 and the servers to CPU 1, so client
 * and server never preempt each other and each has one core, as far as the machine's other work allows.
 */
function pinning(): { client: string; server: string; restore: () => void; unpin: (pid: number) => void } | undefined {
  if (process.env.BENCH_WEBHOOK_PIN === '0' || cpus().length < 2) return undefined;
  if (spawnSync('taskset', ['-V'], { encoding: 'utf8' }).status !== 0) return undefined;
  const all = `0-${cpus().length - 1}`;
  const set = (list: string) => spawnSync('taskset', ['-a', '-c', '-p', list, String(process.pid)], { encoding: 'utf8' }).status === 0;
  if (!set('0')) return undefined;
  return {
    client: '0',
    server: '1',
    restore: () => void set(all),
    unpin: (pid: number) => void spawnSync('taskset', ['-a', '-c', '-p', all, String(pid)], { encoding: 'utf8' }),
  };
}

function tailFile(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

// ---------------------------------------------------------------------------------------------
// The load generator
// ---------------------------------------------------------------------------------------------

interface Target {
  port: number;
  path: string;
  ca: Buffer;
}

function post(agent: Agent, target: Target, body: Buffer): Promise<{ status: number; text?: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { host: '127.0.0.1', port: target.port, path: target.path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length } },
      (res) => {
        res.on('data', () => {});
        res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** One request whose answer is parsed: to check what a scenario really decides. */
function postJson(target: Target, body: Buffer): Promise<{ status: number; json: { response?: { allowed?: boolean; status?: { message?: string }; warnings?: string[] } } }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { host: '127.0.0.1', port: target.port, path: target.path, method: 'POST', ca: target.ca, agent: false, headers: { 'content-type': 'application/json', 'content-length': body.length } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) });
          } catch (err) {
            reject(new Error(`not JSON (${res.statusCode}): ${text.slice(0, 300)}: ${(err as Error).message}`));
          }
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function getText(port: number, path: string, ca: Buffer, timeoutMs = 5000): Promise<{ status: number; text: string }> {
  const { status, body } = await httpsGet(`https://127.0.0.1:${port}${path}`, { ca, timeoutMs });
  return { status, text: body };
}

/** Bodies are taken round-robin from a pool; the cursor survives runs so distinct objects stay distinct. */
class Pool {
  private next = 0;
  constructor(readonly name: string, readonly bodies: Buffer[]) {}
  take(): Buffer {
    const b = this.bodies[this.next % this.bodies.length]!;
    this.next += 1;
    return b;
  }
  get used(): number {
    return this.next;
  }
}

interface CpuWindow {
  clientCpuPct: number;
  serverCpuPct: number;
  serverCpuUsPerRequest: number;
  /** Busy CPU of everything else on the machine (other users' work), in % of one core. */
  otherCpuPct: number;
}

function cpuWindow(serverPid: number) {
  const c0 = process.cpuUsage();
  const s0 = procCpuSeconds(serverPid);
  const m0 = machineCpu();
  const t0 = nowMs();
  return (requests: number): CpuWindow => {
    const wall = (nowMs() - t0) / 1000;
    const c = process.cpuUsage(c0);
    const client = (c.user + c.system) / 1e6;
    const server = procCpuSeconds(serverPid) - s0;
    const m1 = machineCpu();
    const other = m1.busy - m0.busy - client - server;
    return {
      clientCpuPct: round1((client / wall) * 100),
      serverCpuPct: round1((server / wall) * 100),
      serverCpuUsPerRequest: round1((server / Math.max(1, requests)) * 1e6),
      otherCpuPct: round1(Math.max(0, (other / wall) * 100)),
    };
  };
}

/**
 * This machine is shared: waits (up to `maxWaitMs`) until the rest of the machine uses less than
 * QUIET_PCT of one core, measured over 1 s windows minus our own processes. Returns the last reading.
 */
const QUIET_PCT = 30;
async function quiet(ownPids: number[], maxWaitMs = 30_000): Promise<number> {
  const deadline = nowMs() + maxWaitMs;
  for (;;) {
    const m0 = machineCpu();
    const own0 = ownPids.reduce((a, pid) => a + procCpuSeconds(pid), 0);
    const c0 = process.cpuUsage();
    const t0 = nowMs();
    await sleep(1000);
    const c = process.cpuUsage(c0);
    const own = ownPids.reduce((a, pid) => a + procCpuSeconds(pid), 0) - own0 + (c.user + c.system) / 1e6;
    const others = Math.max(0, ((machineCpu().busy - m0.busy - own) / ((nowMs() - t0) / 1000)) * 100);
    if (others < QUIET_PCT || nowMs() > deadline) return round1(others);
  }
}

/**
 * Runs a measurement until the rest of the machine stayed under QUIET_PCT during it (at most
 * `attempts` times), waiting for a quiet moment before each; keeps the least disturbed one.
 */
async function undisturbed<T extends CpuWindow>(label: string, ownPids: number[], fn: () => Promise<T>, attempts = 3): Promise<T & { attempts: number }> {
  let best: T | undefined;
  let attempt = 0;
  while (attempt < attempts) {
    attempt += 1;
    await quiet(ownPids);
    const r = await fn();
    if (!best || r.otherCpuPct < best.otherCpuPct) best = r;
    if (r.otherCpuPct < QUIET_PCT) break;
    log(`${label}: the rest of the machine used ${r.otherCpuPct} % of a core meanwhile; ${attempt < attempts ? 'measuring again' : 'keeping the least disturbed try'}`);
  }
  return { ...best!, attempts: attempt };
}

export interface ThroughputResult extends CpuWindow {
  server: string;
  scenario: string;
  concurrency: number;
  durationS: number;
  requests: number;
  errors: number;
  rps: number;
  latencyMs: LatencyStats;
}

/** Closed loop: `concurrency` requests always in flight; counts completions inside the window after the warm-up. */
async function closedLoop(server: string, scenario: string, target: Target, serverPid: number, pool: Pool, concurrency: number, warmupMs: number, durationMs: number): Promise<ThroughputResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency, ca: target.ca });
  const latencies = new Float64Array(4_000_000);
  let count = 0;
  let errors = 0;
  let measuring = false;
  let stopped = false;
  let window: ((n: number) => CpuWindow) | undefined;
  const worker = async () => {
    while (!stopped) {
      const body = pool.take();
      const t = nowMs();
      try {
        const { status } = await post(agent, target, body);
        if (status !== 200) throw new Error(`HTTP ${status}`);
        if (measuring && !stopped && count < latencies.length) latencies[count++] = nowMs() - t;
      } catch {
        if (measuring) errors += 1;
      }
    }
  };
  const workers = Array.from({ length: concurrency }, () => worker());
  await sleep(warmupMs);
  measuring = true;
  window = cpuWindow(serverPid);
  const start = nowMs();
  await sleep(durationMs);
  stopped = true;
  const elapsed = (nowMs() - start) / 1000;
  const requests = count;
  const cpu = window(requests);
  await Promise.all(workers);
  agent.destroy();
  return { server, scenario, concurrency, durationS: round3(elapsed), requests, errors, rps: Math.round(requests / elapsed), latencyMs: stats(latencies, requests), ...cpu };
}

export interface LatencyResult extends CpuWindow {
  server: string;
  scenario: string;
  rate: number;
  durationS: number;
  sent: number;
  completed: number;
  errors: number;
  /** From the moment the request was written. */
  latencyMs: LatencyStats;
  /** From the moment it was scheduled (includes the client's timer lateness). */
  scheduledLatencyMs: LatencyStats;
}

/** Open loop: sends on a schedule (rate/s) whatever the answers do; latency per request. */
async function openLoop(server: string, scenario: string, target: Target, serverPid: number, pool: Pool, rate: number, warmupMs: number, durationMs: number): Promise<LatencyResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: 256, ca: target.ca });
  const interval = 1000 / rate;
  const warmupCount = Math.round((warmupMs / 1000) * rate);
  const total = warmupCount + Math.round((durationMs / 1000) * rate);
  const fromSend = new Float64Array(total);
  const fromSchedule = new Float64Array(total);
  let completed = 0;
  let errors = 0;
  let window: ((n: number) => CpuWindow) | undefined;
  let settled = 0;
  const t0 = nowMs() + 5;
  await new Promise<void>((resolve) => {
    let i = 0;
    const send = (index: number, scheduled: number) => {
      const body = pool.take();
      const sent = nowMs();
      post(agent, target, body).then(
        ({ status }) => {
          const end = nowMs();
          if (index >= warmupCount) {
            if (status === 200) {
              fromSend[completed] = end - sent;
              fromSchedule[completed] = end - scheduled;
              completed += 1;
            } else errors += 1;
          }
        },
        () => {
          if (index >= warmupCount) errors += 1;
        },
      ).finally(() => {
        settled += 1;
        if (settled === total) resolve();
      });
    };
    const tick = () => {
      const t = nowMs();
      while (i < total && t0 + i * interval <= t) {
        if (i === warmupCount) window = cpuWindow(serverPid);
        send(i, t0 + i * interval);
        i += 1;
      }
      if (i < total) setTimeout(tick, Math.max(0, Math.min(1, t0 + i * interval - nowMs())));
    };
    setTimeout(tick, 5);
  });
  const cpu = window ? window(total - warmupCount) : { clientCpuPct: NaN, serverCpuPct: NaN, serverCpuUsPerRequest: NaN, otherCpuPct: NaN };
  agent.destroy();
  return {
    server,
    scenario,
    rate,
    durationS: durationMs / 1000,
    sent: total - warmupCount,
    completed,
    errors,
    latencyMs: stats(fromSend, completed),
    scheduledLatencyMs: stats(fromSchedule, completed),
    ...cpu,
  };
}

/** Sequential requests (one in flight), latency per request. */
async function sequential(target: Target, bodies: Buffer[]): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: target.ca });
  const out: number[] = [];
  for (const body of bodies) {
    const t = nowMs();
    const { status } = await post(agent, target, body);
    if (status !== 200) throw new Error(`HTTP ${status}`);
    out.push(nowMs() - t);
  }
  agent.destroy();
  return out;
}

// ---------------------------------------------------------------------------------------------
// AdmissionReviews as the apiserver sends them
// ---------------------------------------------------------------------------------------------

let uidCounter = 0;
function uid(): string {
  uidCounter += 1;
  return `5b0d8a3e-0000-4000-8000-${uidCounter.toString(16).padStart(12, '0')}`;
}

function managedFields(manager: string, operation: string, fields: unknown): unknown[] {
  return [{ manager, operation, apiVersion: 'v1', time: '2026-01-01T00:00:00Z', fieldsType: 'FieldsV1', fieldsV1: fields }];
}

interface ReviewInput {
  kind: 'Namespace' | 'ResourceQuota';
  operation: 'CREATE' | 'UPDATE';
  name: string;
  namespace?: string;
  user: { username: string; groups: string[] };
  object: unknown;
  oldObject?: unknown;
}

function review(r: ReviewInput): Buffer {
  const resource = r.kind === 'Namespace' ? 'namespaces' : 'resourcequotas';
  const gvk = { group: '', version: 'v1', kind: r.kind };
  const gvr = { group: '', version: 'v1', resource };
  return Buffer.from(JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: uid(),
      kind: gvk,
      resource: gvr,
      requestKind: gvk,
      requestResource: gvr,
      name: r.name,
      ...(r.namespace ? { namespace: r.namespace } : {}),
      operation: r.operation,
      userInfo: { username: r.user.username, uid: `u-${r.user.username}`, groups: [...r.user.groups, 'system:authenticated'], extra: { 'authentication.kubernetes.io/credential-id': ['JTI=7c3a1e2f-0000-4000-8000-000000000000'] } },
      object: r.object,
      oldObject: r.oldObject ?? null,
      dryRun: false,
      options: { apiVersion: 'meta.k8s.io/v1', kind: r.operation === 'CREATE' ? 'CreateOptions' : 'UpdateOptions', fieldManager: 'kubectl-client-side-apply', fieldValidation: 'Strict' },
    },
  }));
}

/** P1: a new self-service namespace of project i (labels already set by the mutating webhook), by its owner. */
function namespaceCreateBodies(count: number, projects: number): Buffer[] {
  const out: Buffer[] = [];
  for (let k = 0; k < count; k++) {
    const i = k % projects;
    const name = `${projectName(i)}-self${k}`;
    out.push(review({
      kind: 'Namespace',
      operation: 'CREATE',
      name,
      user: { username: ownerUser(i), groups: [ownerGroup(i)] },
      object: {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {
          name,
          creationTimestamp: '2026-01-01T00:00:00Z',
          labels: { 'kubernetes.io/metadata.name': name, 'tenantgate.io/project': projectName(i), 'tenantgate.io/tenant': tenantName(i), team: 'payments' },
          annotations: { 'tenantgate.io/project-uid': projectUid(i), 'kubectl.kubernetes.io/last-applied-configuration': `{"apiVersion":"v1","kind":"Namespace","metadata":{"annotations":{},"labels":{"team":"payments"},"name":"${name}"}}\n` },
          managedFields: managedFields('kubectl-client-side-apply', 'Update', { 'f:metadata': { 'f:annotations': { '.': {}, 'f:kubectl.kubernetes.io/last-applied-configuration': {} }, 'f:labels': { '.': {}, 'f:kubernetes.io/metadata.name': {}, 'f:team': {} } } }),
        },
        spec: { finalizers: ['kubernetes'] },
        status: { phase: 'Active' },
      },
    }));
  }
  return out;
}

/** P1: the owner raises requests.cpu of a namespace's quota; pass v asks 5+v CPU so every request grows past what was admitted before. */
function quotaUpdateBodies(projects: number, passes: number): Buffer[] {
  const out: Buffer[] = [];
  for (let v = 0; v < passes; v++) {
    for (let n = 0; n < NAMESPACES_PER_PROJECT; n++) {
      for (let i = 0; i < projects; i++) {
        const old = fixtureQuota(i, n);
        old.metadata.uid = `q-${i}-${n}`;
        old.metadata.resourceVersion = String(200000 + i * 10 + n);
        (old.metadata as Record<string, unknown>).managedFields = managedFields('argocd-controller', 'Apply', { 'f:metadata': { 'f:labels': { 'f:tenantgate.io/project': {} } }, 'f:spec': { 'f:hard': { 'f:requests.cpu': {}, 'f:requests.memory': {}, 'f:limits.cpu': {}, 'f:pods': {} } } });
        old.status = { hard: { ...old.spec!.hard! }, used: { 'requests.cpu': '1200m', 'requests.memory': '3Gi', 'limits.cpu': '2', pods: '7' } };
        const object = structuredClone(old);
        object.spec!.hard!['requests.cpu'] = String(5 + v);
        out.push(review({ kind: 'ResourceQuota', operation: 'UPDATE', name: QUOTA_NAME, namespace: namespaceName(i, n), user: { username: ownerUser(i), groups: [ownerGroup(i)] }, object, oldObject: old }));
      }
    }
  }
  return out;
}

/** Q5 growing: a first quota in namespace n of project i, by its owner (1 CPU of a 10,000 CPU budget). */
function q5GrowingBody(i: number, n: number): Buffer {
  const namespace = q5NamespaceName(i, n);
  return review({
    kind: 'ResourceQuota',
    operation: 'CREATE',
    name: 'compute',
    namespace,
    user: { username: q5Owner(i), groups: [] },
    object: { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'compute', namespace, labels: { 'tenantgate.io/project': q5ProjectName(i) } }, spec: { hard: { 'requests.cpu': '1', pods: '10' } } },
  });
}

/** Q5 plain: the owner adds a label to one of its namespaces (project and tenant labels unchanged). */
function q5PlainBody(i: number, n: number): Buffer {
  const name = q5NamespaceName(i, n);
  const labels = { 'kubernetes.io/metadata.name': name, 'tenantgate.io/project': q5ProjectName(i), 'tenantgate.io/tenant': `q5t${i}` };
  const old = { apiVersion: 'v1', kind: 'Namespace', metadata: { name, uid: `q5-${i}-${n}`, labels }, spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } };
  const object = structuredClone(old);
  (object.metadata.labels as Record<string, string>).team = 'x';
  return review({ kind: 'Namespace', operation: 'UPDATE', name, user: { username: q5Owner(i), groups: [] }, object, oldObject: old });
}

// ---------------------------------------------------------------------------------------------
// CPU profile summary
// ---------------------------------------------------------------------------------------------

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface ProfileEntry {
  name: string;
  /** Share of the server's busy (non-idle) CPU time. */
  pct: number;
  /** Server CPU microseconds per request. */
  usPerRequest: number;
}

export interface ProfileSummary {
  server: string;
  scenario: string;
  file: string;
  requests: number;
  rps: number;
  busyUsPerRequest: number;
  /** Time spent in the function itself. */
  topSelf: ProfileEntry[];
  /** Time with the function on the stack. */
  topInclusive: ProfileEntry[];
  /** Self time by package / node core module / source file. */
  byOrigin: ProfileEntry[];
  /** Inclusive time by package / node core module / source file. */
  byOriginInclusive: ProfileEntry[];
}

function origin(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  if (url.startsWith('node:')) {
    const m = /^node:(?:internal\/)?([^/]+)/.exec(url);
    return `node:${m?.[1] ?? url}`;
  }
  const src = /\/(src\/.*|bench\/.*)$/.exec(url);
  if (src) return src[1]!;
  return url.replace(/^file:\/\//, '');
}

function frameKey(n: ProfileNode): string {
  const { functionName, url, lineNumber } = n.callFrame;
  if (!url) return functionName || '(anonymous)';
  return `${functionName || '(anonymous)'} ${origin(url, functionName)}${lineNumber > 0 ? `:${lineNumber + 1}` : ''}`;
}

/**
 * Self and inclusive time from a V8 CPU profile. Samples are counted (not weighted by their wall-clock
 * deltas: a sample taken after the process was descheduled would charge the whole gap to one frame)
 * and scaled to `cpuUsPerRequest`, the server's CPU time per request measured from /proc meanwhile.
 */
function summariseProfile(server: string, scenario: string, file: string, requests: number, rps: number, cpuUsPerRequest: number): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[] };
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of profile.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  const originSelf = new Map<string, number>();
  const originIncl = new Map<string, number>();
  let busy = 0;
  const add = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  for (const id of profile.samples) {
    const leaf = byId.get(id);
    if (!leaf || leaf.callFrame.functionName === '(idle)') continue;
    busy += 1;
    add(self, frameKey(leaf));
    add(originSelf, origin(leaf.callFrame.url, leaf.callFrame.functionName));
    const seenFn = new Set<string>();
    const seenOrigin = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const node = byId.get(cur)!;
      if (node.callFrame.functionName === '(root)') continue;
      seenFn.add(frameKey(node));
      seenOrigin.add(origin(node.callFrame.url, node.callFrame.functionName));
    }
    for (const k of seenFn) add(incl, k);
    for (const k of seenOrigin) add(originIncl, k);
  }
  const top = (m: Map<string, number>, n: number): ProfileEntry[] =>
    [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([name, count]) => {
      const share = count / Math.max(1, busy);
      return { name, pct: round1(share * 100), usPerRequest: round1(share * cpuUsPerRequest) };
    });
  return {
    server,
    scenario,
    file,
    requests,
    rps,
    busyUsPerRequest: cpuUsPerRequest,
    topSelf: top(self, 30),
    topInclusive: top(incl, 80).filter((e) => e.pct < 97).slice(0, 45),
    byOrigin: top(originSelf, 20),
    byOriginInclusive: top(originIncl, 30),
  };
}

// ---------------------------------------------------------------------------------------------
// P1 breakdown: the request path's pieces, in-process, in CPU time (no network, no other process)
// ---------------------------------------------------------------------------------------------

export interface BreakdownResult {
  scenario: string;
  requests: number;
  /** CPU µs per request of each piece of createApp's handler, measured alone. */
  cpuUs: { jsonParse: number; decodeReview: number; verdictOnce: number; guardDecide: number; metrics: number; responseStringify: number; total: number };
  /** Inside guard.decide (V8 profile of the same loop, scaled to its CPU time). */
  decideProfile: { topInclusive: ProfileEntry[]; topSelf: ProfileEntry[] };
}

function cpuUsOf(n: number, fn: () => void): number {
  const c0 = process.cpuUsage();
  fn();
  const c = process.cpuUsage(c0);
  return round1((c.user + c.system) / n);
}

async function cpuUsOfAsync(n: number, fn: () => Promise<void>): Promise<number> {
  const c0 = process.cpuUsage();
  await fn();
  const c = process.cpuUsage(c0);
  return round1((c.user + c.system) / n);
}

async function breakdown(work: string): Promise<BreakdownResult[]> {
  const snapshot = p1Snapshot(P1_PROJECTS);
  const config = { ...DEFAULT_CONFIG, crossReplicaReservation: false };
  const metrics = new WebhookMetrics();
  const out: BreakdownResult[] = [];
  for (const [scenario, bodies] of [
    ['Namespace CREATE', namespaceCreateBodies(20_000, P1_PROJECTS)],
    ['ResourceQuota UPDATE', quotaUpdateBodies(P1_PROJECTS, 4)],
  ] as const) {
    const n = bodies.length;
    const parsed = bodies.map((b) => JSON.parse(b.toString('utf8')) as unknown);
    const requests: AdmissionRequest[] = parsed.map((p) => {
      const d = decodeReview(p);
      if (!d.ok) throw new Error(d.error);
      return d.request;
    });
    const ctxOf = (r: AdmissionRequest, pending?: ReviewContext['pending']): ReviewContext => ({ config, snapshot, user: r.userInfo, pending });
    // As in the tenantgate server: the cache catches up after each admitted growth (see emulateWatch).
    // A fresh guard each time, wired to its own source as src/webhook/main.ts wires it.
    const freshGuard = () => {
      const source = new StaticSource(snapshot);
      return { source, guard: assembleWebhook({ config, source }).guard };
    };
    const decideAll = async ({ source, guard }: { source: StaticSource; guard: HeadroomGuard }) => {
      for (const r of requests) {
        const v = await guard.decide(ctxOf(r, guard.pending), r);
        if (v.violations.length === 0 && v.allocation?.grows) emulateWatch(source, r);
      }
    };
    const labels = { path: 'validate', operation: requests[0]!.operation, kind: requests[0]!.kind.kind, verdict: 'allowed' };
    const verdicts = requests.map((r) => verdictFor(ctxOf(r), r));
    // Warm-up of every piece, then the measured loops.
    for (let rep = 0; rep < 2; rep++) {
      for (const b of bodies.slice(0, 2000)) JSON.parse(b.toString('utf8'));
      for (const r of requests.slice(0, 2000)) verdictFor(ctxOf(r), r);
      await decideAll(freshGuard());
    }
    const cpuUs = {
      jsonParse: cpuUsOf(n, () => {
        for (const b of bodies) JSON.parse(b.toString('utf8'));
      }),
      decodeReview: cpuUsOf(n, () => {
        for (const p of parsed) decodeReview(p);
      }),
      verdictOnce: cpuUsOf(n, () => {
        for (const r of requests) verdictFor(ctxOf(r), r);
      }),
      guardDecide: await cpuUsOfAsync(n, () => decideAll(freshGuard())), // includes the emulated cache event
      metrics: cpuUsOf(n, () => {
        for (let i = 0; i < n; i++) {
          metrics.requests.inc(labels);
          metrics.latency.observe(labels, 0.0004);
        }
      }),
      responseStringify: cpuUsOf(n, () => {
        for (let i = 0; i < n; i++) JSON.stringify(envelope(responseFor(requests[i]!.uid, verdicts[i]!)));
      }),
      total: 0,
    };
    cpuUs.total = round1(cpuUs.jsonParse + cpuUs.decodeReview + cpuUs.guardDecide + cpuUs.metrics + cpuUs.responseStringify);

    // Where guard.decide spends it.
    const session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 50 });
    await session.post('Profiler.start');
    await decideAll(freshGuard());
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    const file = join(work, `decide-${scenario.replace(/\W+/g, '-')}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    const summary = summariseProfile('in-process', scenario, file, n, 0, cpuUs.guardDecide);
    const inside = (e: ProfileEntry) => !/^(?:\(|main |runMicrotasks|processTicksAndRejections|decideAll|breakdown)/.test(e.name) && !/ (?:bench\/|node:)/.test(e.name);
    out.push({
      scenario,
      requests: n,
      cpuUs,
      decideProfile: { topInclusive: summary.topInclusive.filter(inside).slice(0, 20), topSelf: summary.topSelf.slice(0, 15) },
    });
    log(`P1 breakdown ${scenario}: ${JSON.stringify(cpuUs)}`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Tables
// ---------------------------------------------------------------------------------------------

function table(headers: string[], rows: Array<Array<string | number>>): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (typeof c === 'number' ? (Number.isFinite(c) ? String(c) : '-') : c)))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(cells[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

// ---------------------------------------------------------------------------------------------
// P1
// ---------------------------------------------------------------------------------------------

interface P1Result {
  fixture: { projects: number; namespaces: number; quotas: number };
  concurrency: number;
  warmupS: number;
  durationS: number;
  rounds: number;
  throughput: Array<ThroughputResult & { attempts: number }>;
  best: Record<string, number>;
  ratio: { namespaceCreate: number; quotaUpdate: number; expressFloor: number };
  /** Server CPU µs per request, lowest over the rounds. */
  serverCpuUsPerRequest: { bare: number; expressFloor: number; namespaceCreate: number; quotaUpdate: number };
  /** bare µs/req ÷ tenantgate µs/req: the throughput ratio if each server had a core of its own and the client were free. */
  cpuRatio: { namespaceCreate: number; quotaUpdate: number; expressFloor: number };
  latency: Array<LatencyResult & { attempts: number }>;
  checks: Record<string, string>;
  met: { throughput: boolean; latency: boolean };
  profiles?: ProfileSummary[];
  breakdown?: BreakdownResult[];
  pinned: { client: string; server: string } | null;
}

async function runP1(work: string, certs: WebhookCertFiles): Promise<P1Result> {
  const concurrency = env('BENCH_WEBHOOK_CONCURRENCY', 32);
  const durationMs = env('BENCH_WEBHOOK_DURATION_S', 5) * 1000;
  const warmupMs = 1000;
  const rounds = Math.max(1, env('BENCH_WEBHOOK_ROUNDS', 3));
  const rate = env('BENCH_WEBHOOK_RATE', 500);
  const latencyMs = env('BENCH_WEBHOOK_LATENCY_S', 10) * 1000;
  const ca = readFileSync(certs.caCert);
  const tsx = ['--import', 'tsx'];
  const certArgs = ['--cert', certs.cert, '--key', certs.key];

  log(`P1: building request pools (${P1_PROJECTS} projects, ${P1_PROJECTS * NAMESPACES_PER_PROJECT} namespaces, ${P1_PROJECTS * NAMESPACES_PER_PROJECT} quotas in the server's snapshot)`);
  const nsPool = new Pool('namespace-create', namespaceCreateBodies(60_000, P1_PROJECTS));
  const quotaPool = new Pool('quota-update', quotaUpdateBodies(P1_PROJECTS, 10));
  const barePool = new Pool('bare', nsPool.bodies);
  const avgBytes = (p: Pool) => Math.round(p.bodies.reduce((a, b) => a + b.length, 0) / p.bodies.length);
  log(`P1: request bodies: namespace CREATE ≈ ${avgBytes(nsPool)} B, quota UPDATE ≈ ${avgBytes(quotaPool)} B`);

  const pin = pinning();
  log(pin ? `P1: load generator pinned to CPU ${pin.client}, servers to CPU ${pin.server}` : 'P1: no CPU pinning (taskset missing, one CPU, or BENCH_WEBHOOK_PIN=0)');
  const bare = await startChild(tsx, [SERVER_SCRIPT, 'bare', ...certArgs], join(work, 'bare.log'), undefined, pin?.server);
  const floor = await startChild(tsx, [SERVER_SCRIPT, 'express', ...certArgs], join(work, 'express.log'), undefined, pin?.server);
  const tg = await startChild(tsx, [SERVER_SCRIPT, 'tenantgate', ...certArgs, '--projects', String(P1_PROJECTS)], join(work, 'tenantgate.log'), undefined, pin?.server);
  const bareTarget: Target = { port: bare.port, path: '/validate', ca };
  const floorTarget: Target = { port: floor.port, path: '/validate', ca };
  const tgTarget: Target = { port: tg.port, path: '/validate', ca };

  // What do the scenarios decide? (They must be admitted, so every rule ran to the end.)
  const checks: Record<string, string> = {};
  for (const [name, target, body] of [
    ['bare', bareTarget, nsPool.bodies[0]!],
    ['express floor', floorTarget, nsPool.bodies[0]!],
    ['tenantgate namespace CREATE', tgTarget, namespaceCreateBodies(1, P1_PROJECTS)[0]!],
    ['tenantgate quota UPDATE', tgTarget, quotaUpdateBodies(1, 1)[0]!],
  ] as const) {
    const r = await postJson(target, body);
    const a = r.json.response;
    checks[name] = `HTTP ${r.status}, allowed=${a?.allowed}${a?.status?.message ? `, ${a.status.message}` : ''}${a?.warnings?.length ? `, warnings: ${a.warnings.join('; ')}` : ''}`;
    if (r.status !== 200 || a?.allowed !== true) throw new Error(`P1 scenario ${name} is not admitted: ${checks[name]}`);
  }
  log(`P1: checks: ${JSON.stringify(checks)}`);

  const scenarios = [
    ['bare', 'fixed answer', bareTarget, bare.pid, barePool],
    ['express', 'fixed answer', floorTarget, floor.pid, barePool],
    ['tenantgate', 'Namespace CREATE', tgTarget, tg.pid, nsPool],
    ['tenantgate', 'ResourceQuota UPDATE', tgTarget, tg.pid, quotaPool],
  ] as const;
  const throughput: Array<ThroughputResult & { attempts: number }> = [];
  try {
    for (let round = 1; round <= rounds; round++) {
      for (const [server, scenario, target, pid, pool] of scenarios) {
        const r = await undisturbed(`P1 ${server} ${scenario}`, [bare.pid, floor.pid, tg.pid], () => closedLoop(server, scenario, target, pid, pool, concurrency, warmupMs, durationMs));
        log(`P1 round ${round}: ${server} ${scenario}: ${r.rps} req/s (server CPU ${r.serverCpuPct} %, client ${r.clientCpuPct} %, others ${r.otherCpuPct} %)`);
        throughput.push(r);
      }
    }
    const best = (server: string, scenario: string) => Math.max(...throughput.filter((t) => t.server === server && t.scenario === scenario).map((t) => t.rps));
    const bestOf = { bare: best('bare', 'fixed answer'), expressFloor: best('express', 'fixed answer'), namespaceCreate: best('tenantgate', 'Namespace CREATE'), quotaUpdate: best('tenantgate', 'ResourceQuota UPDATE') };
    const ratio = { namespaceCreate: round3(bestOf.namespaceCreate / bestOf.bare), quotaUpdate: round3(bestOf.quotaUpdate / bestOf.bare), expressFloor: round3(bestOf.expressFloor / bestOf.bare) };
    // Client-independent view: server CPU per request (least disturbed round), bare / tenantgate.
    const cpuUs = (server: string, scenario: string) => Math.min(...throughput.filter((t) => t.server === server && t.scenario === scenario).map((t) => t.serverCpuUsPerRequest));
    const serverCpuUsPerRequest = { bare: cpuUs('bare', 'fixed answer'), expressFloor: cpuUs('express', 'fixed answer'), namespaceCreate: cpuUs('tenantgate', 'Namespace CREATE'), quotaUpdate: cpuUs('tenantgate', 'ResourceQuota UPDATE') };
    const cpuRatio = {
      namespaceCreate: round3(serverCpuUsPerRequest.bare / serverCpuUsPerRequest.namespaceCreate),
      quotaUpdate: round3(serverCpuUsPerRequest.bare / serverCpuUsPerRequest.quotaUpdate),
      expressFloor: round3(serverCpuUsPerRequest.bare / serverCpuUsPerRequest.expressFloor),
    };

    // Latency at a modest rate needs no dedicated cores; unpinned, a neighbour on one core cannot stall the server.
    pin?.restore();
    for (const c of [bare, floor, tg]) pin?.unpin(c.pid);
    const latency: Array<LatencyResult & { attempts: number }> = [];
    for (const [server, scenario, target, pid, pool] of scenarios) {
      const r = await undisturbed(`P1 latency ${server} ${scenario}`, [bare.pid, floor.pid, tg.pid], () => openLoop(server, scenario, target, pid, pool, rate, 1000, latencyMs));
      log(`P1 latency @${rate}/s: ${server} ${scenario}: p50 ${r.latencyMs.p50} ms, p99 ${r.latencyMs.p99} ms (errors ${r.errors})`);
      latency.push(r);
    }
    const met = {
      throughput: Math.min(ratio.namespaceCreate, ratio.quotaUpdate) >= TARGET_RATIO,
      latency: latency.filter((l) => l.server === 'tenantgate').every((l) => l.latencyMs.p99 < TARGET_P99_MS && l.errors === 0),
    };
    const result: P1Result = {
      fixture: { projects: P1_PROJECTS, namespaces: P1_PROJECTS * NAMESPACES_PER_PROJECT, quotas: P1_PROJECTS * NAMESPACES_PER_PROJECT },
      concurrency,
      warmupS: warmupMs / 1000,
      durationS: durationMs / 1000,
      rounds,
      throughput,
      best: bestOf,
      ratio,
      serverCpuUsPerRequest,
      cpuRatio,
      latency,
      checks,
      met,
      pinned: pin ? { client: pin.client, server: pin.server } : null,
    };

    result.breakdown = await breakdown(work);
    const profWanted = process.env.BENCH_WEBHOOK_CPU_PROF ?? 'auto';
    if (profWanted === '1' || (profWanted === 'auto' && !met.throughput)) {
      await bare.stop();
      await floor.stop();
      await tg.stop();
      result.profiles = [
        await profileServer(work, certs, 'bare', 'fixed answer', barePool, concurrency, durationMs, pin?.server),
        await profileServer(work, certs, 'tenantgate', 'Namespace CREATE', nsPool, concurrency, durationMs, pin?.server),
        await profileServer(work, certs, 'tenantgate', 'ResourceQuota UPDATE', quotaPool, concurrency, durationMs, pin?.server),
      ];
    }
    return result;
  } finally {
    await bare.stop();
    await floor.stop();
    await tg.stop();
    pin?.restore();
  }
}

/** Profiles a server with the in-process V8 profiler, started after a warm-up, over one closed-loop window. */
async function profileServer(work: string, certs: WebhookCertFiles, mode: 'bare' | 'tenantgate', scenario: string, pool: Pool, concurrency: number, durationMs: number, cpu?: string): Promise<ProfileSummary> {
  const file = join(HERE, 'results', `webhook-${mode}-${scenario.replace(/\W+/g, '-').toLowerCase()}.cpuprofile`);
  log(`P1: profiling ${mode} ${scenario} (V8 CPU profiler, 100 µs sampling, ${durationMs / 1000} s after a 2 s warm-up)`);
  const child = await startChild(['--import', 'tsx'], [SERVER_SCRIPT, mode, '--cert', certs.cert, '--key', certs.key, '--projects', String(P1_PROJECTS), '--profile', file], join(work, `${mode}-prof.log`), undefined, cpu);
  try {
    const target: Target = { port: child.port, path: '/validate', ca: readFileSync(certs.caCert) };
    await closedLoop(mode, 'warm-up', target, child.pid, pool, concurrency, 0, 2000);
    child.proc.kill('SIGUSR2');
    await child.waitFor((l) => l.profiling === true, 10_000);
    const r = await closedLoop(mode, `${scenario} (profiled)`, target, child.pid, pool, concurrency, 0, durationMs);
    await child.stop();
    return summariseProfile(mode, scenario, file, r.requests, r.rps, r.serverCpuUsPerRequest);
  } finally {
    await child.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Q5
// ---------------------------------------------------------------------------------------------

interface Q5Result {
  requests: number;
  projects: number;
  growing: { ledger: LatencyStats; guardOnly: LatencyStats; admitted: number };
  plain: { ledger: LatencyStats; guardOnly: LatencyStats };
  ledgerOverheadP50Ms: number;
  ledgerConfigMaps: number;
  ledgerEntries: number;
  reservations: string;
}

async function runQ5(work: string, certs: WebhookCertFiles, cp: ControlPlane): Promise<Q5Result> {
  const n = Math.max(Q5_PROJECTS, Math.round(env('BENCH_WEBHOOK_Q5_REQUESTS', 300)));
  const perProject = Math.ceil(n / Q5_PROJECTS);
  const ca = readFileSync(certs.caCert);
  const totalProjects = Q5_PROJECTS + Q5_WARMUP_PROJECTS;
  const fixtureArgs = ['--cert', certs.cert, '--key', certs.key, '--projects', String(totalProjects), '--namespaces', String(perProject)];
  // Namespace-major: consecutive requests go to different projects, as independent tenants would.
  const order: Array<[number, number]> = [];
  for (let ns = 0; ns < perProject; ns++) for (let i = 0; i < Q5_PROJECTS && order.length < n; i++) order.push([i, ns]);
  const warmup: Array<[number, number]> = [];
  for (let ns = 0; ns < Math.min(perProject, 10); ns++) for (let i = Q5_PROJECTS; i < totalProjects; i++) warmup.push([i, ns]);

  const measure = async (mode: 'ledger' | 'guard') => {
    const child = await startChild(['--import', 'tsx'], [SERVER_SCRIPT, mode, ...fixtureArgs, ...(mode === 'ledger' ? ['--kubeconfig', cp.info.kubeconfigs.admin!] : [])], join(work, `q5-${mode}.log`));
    const target: Target = { port: child.port, path: '/validate', ca };
    try {
      // Warm-up on projects of their own (their ledgers are not part of the measurement).
      await sequential(target, [...warmup.map(([i, ns]) => q5GrowingBody(i, ns)), ...warmup.map(([i, ns]) => q5PlainBody(i, ns))]);
      const first = await postJson(target, q5GrowingBody(order[0]![0], order[0]![1]));
      if (first.json.response?.allowed !== true) throw new Error(`Q5 growing request not admitted: ${JSON.stringify(first.json.response)}`);
      const growing: number[] = [];
      const plain: number[] = [];
      let admitted = 1;
      const agent = new Agent({ keepAlive: true, maxSockets: 1, ca });
      // Alternate growing and plain so both see the same conditions; the first growing one was sent above.
      for (let k = 0; k < order.length; k++) {
        const [i, ns] = order[k]!;
        if (k > 0) {
          const t = nowMs();
          const r = await postJsonAgent(agent, target, q5GrowingBody(i, ns));
          growing.push(nowMs() - t);
          if (r.allowed) admitted += 1;
        }
        const t = nowMs();
        await post(agent, target, q5PlainBody(i, ns));
        plain.push(nowMs() - t);
      }
      agent.destroy();
      const metrics = await getText(child.port, '/metrics', ca);
      const reservations = metrics.text.split('\n').filter((l) => l.startsWith('tenantgate_webhook_reservations_total')).join(', ');
      return { growing, plain, admitted, reservations };
    } finally {
      await child.stop();
    }
  };

  log(`Q5: ${order.length} growing (ResourceQuota CREATE) + ${order.length} plain (Namespace UPDATE) requests, sequential, against a ConfigMapLedger on the control plane`);
  const withLedger = await measure('ledger');
  log(`Q5: the same against the in-process guard alone (no ledger)`);
  const guardOnly = await measure('guard');

  const core = (() => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(cp.info.kubeconfigs.admin!);
    return kc.makeApiClient(k8s.CoreV1Api);
  })();
  const cms = await core.listNamespacedConfigMap({ namespace: 'tenantgate-system', labelSelector: 'app.kubernetes.io/managed-by=tenantgate' });
  let entries = 0;
  let measuredMaps = 0;
  for (const cm of cms.items) {
    const project = cm.metadata?.labels?.['tenantgate.io/project'] ?? '';
    if (!/^q5p0(?:[0-2]\d)$/.test(project) || Number(project.slice(3)) >= Q5_PROJECTS) continue;
    measuredMaps += 1;
    entries += (JSON.parse(cm.data?.reservations ?? '[]') as unknown[]).length;
  }
  const g = stats(withLedger.growing);
  const go = stats(guardOnly.growing);
  return {
    requests: order.length,
    projects: Q5_PROJECTS,
    growing: { ledger: g, guardOnly: go, admitted: withLedger.admitted },
    plain: { ledger: stats(withLedger.plain), guardOnly: stats(guardOnly.plain) },
    ledgerOverheadP50Ms: round3(g.p50 - go.p50),
    ledgerConfigMaps: measuredMaps,
    ledgerEntries: entries,
    reservations: withLedger.reservations,
  };
}

function postJsonAgent(agent: Agent, target: Target, body: Buffer): Promise<{ allowed: boolean }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port: target.port, path: target.path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        try {
          resolve({ allowed: (JSON.parse(text) as { response?: { allowed?: boolean } }).response?.allowed === true });
        } catch (err) {
          reject(err);
        }
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

// ---------------------------------------------------------------------------------------------
// P3
// ---------------------------------------------------------------------------------------------

interface RssPoint {
  projects: number;
  namespaces: number;
  quotas: number;
  /** What the webhook's caches held (from /metrics). */
  cached: Record<string, number>;
  readyS: number;
  rssMB: number;
  peakRssMB: number;
  anonMB: number;
}

interface P3Result {
  targetProjects: number;
  scale: number;
  scaledDown: boolean;
  creation: { objects: number; seconds: number; perSecond: number; retries: number; phases: Array<{ what: string; objects: number; seconds: number }> };
  points: RssPoint[];
  perProjectKB: number;
  baseMB: number;
  /** RSS at 10,000 projects / 50,000 namespaces / 50,000 quotas: measured, or extrapolated from the slope. */
  fullScaleMB: number;
  fullScaleMeasured: boolean;
  met: boolean;
  /** Average JSON size of the objects as the apiserver serves them (a sample), and the share of managedFields. */
  objectJson: Record<string, { sampled: number; bytes: number; managedFieldsBytes: number }>;
}

class Creator {
  private readonly core: k8s.CoreV1Api;
  private readonly custom: k8s.CustomObjectsApi;
  retries = 0;
  objects = 0;
  constructor(kubeconfig: string) {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(kubeconfig);
    this.core = kc.makeApiClient(k8s.CoreV1Api);
    this.custom = kc.makeApiClient(k8s.CustomObjectsApi);
  }

  private async withRetry(fn: () => Promise<unknown>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await fn();
        this.objects += 1;
        return;
      } catch (err) {
        const code = (err as { code?: number }).code;
        if (code === 409) {
          this.objects += 1;
          return;
        }
        if (attempt >= 8) throw err;
        this.retries += 1;
        await sleep(Math.min(5000, 100 * 2 ** attempt));
      }
    }
  }

  project(i: number): Promise<void> {
    const body = fixtureProject(i);
    delete body.metadata.finalizers;
    return this.withRetry(() => this.custom.createClusterCustomObject({ group: 'tenantgate.io', version: 'v1alpha1', plural: 'projects', body }));
  }
  namespace(i: number, n: number): Promise<void> {
    const ns = fixtureNamespace(i, n);
    return this.withRetry(() => this.core.createNamespace({ body: ns as k8s.V1Namespace }));
  }
  quota(i: number, n: number): Promise<void> {
    const q = fixtureQuota(i, n);
    return this.withRetry(() => this.core.createNamespacedResourceQuota({ namespace: q.metadata.namespace!, body: q as k8s.V1ResourceQuota }));
  }
}

async function parallel(count: number, concurrency: number, fn: (k: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const k = next++;
      await fn(k);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, () => worker()));
}

/** Creates projects [from, to) with their namespaces, then their quotas. */
async function createRange(creator: Creator, from: number, to: number, concurrency: number, phases: P3Result['creation']['phases']): Promise<void> {
  const span = to - from;
  if (span <= 0) return;
  const timed = async (what: string, objects: number, fn: (k: number) => Promise<void>) => {
    const t = nowMs();
    await parallel(objects, concurrency, fn);
    const seconds = (nowMs() - t) / 1000;
    phases.push({ what, objects, seconds: round1(seconds) });
    log(`P3: ${what}: ${objects} in ${round1(seconds)} s (${Math.round(objects / seconds)}/s)`);
  };
  await timed(`projects ${from}–${to - 1}`, span, (k) => creator.project(from + k));
  await timed(`namespaces of projects ${from}–${to - 1}`, span * NAMESPACES_PER_PROJECT, (k) => creator.namespace(from + Math.floor(k / NAMESPACES_PER_PROJECT), k % NAMESPACES_PER_PROJECT));
  await timed(`quotas of projects ${from}–${to - 1}`, span * NAMESPACES_PER_PROJECT, (k) => creator.quota(from + Math.floor(k / NAMESPACES_PER_PROJECT), k % NAMESPACES_PER_PROJECT));
}

function compileWebhook(): string {
  const outDir = join(ROOT, '.cache', 'bench-webhook', 'dist');
  log(`P3: compiling tenantgate (tsc -p tsconfig.json --outDir ${outDir})`);
  rmSync(outDir, { recursive: true, force: true });
  const r = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.json'), '--outDir', outDir, '--sourceMap', 'false'], { cwd: ROOT, encoding: 'utf8' });
  const main = join(outDir, 'cli', 'main.js');
  if (!existsSync(main)) throw new Error(`tsc emitted no ${main}:\n${r.stdout}\n${r.stderr}`);
  if (r.status !== 0) log(`P3: tsc reported type errors (JavaScript emitted anyway; another change in progress?):\n${(r.stdout ?? '').split('\n').slice(0, 10).join('\n')}`);
  return main;
}

async function measureRss(work: string, cp: ControlPlane, certs: WebhookCertFiles, mainJs: string, expect: { projects: number; namespaces: number; quotas: number }, settleMs: number): Promise<RssPoint> {
  const ca = readFileSync(certs.caCert);
  const t = nowMs();
  const child = await startChild([], [mainJs, 'webhook', '--kubeconfig', cp.info.kubeconfigs.admin!, '--cert', certs.cert, '--key', certs.key, '--port', '0', '--host', '127.0.0.1'], join(work, `webhook-rss-${expect.projects}.log`));
  try {
    const deadline = t + 15 * 60_000;
    for (;;) {
      if (nowMs() > deadline) throw new Error(`webhook not ready after 15 min:\n${tailFile(join(work, `webhook-rss-${expect.projects}.log`))}`);
      try {
        if ((await getText(child.port, '/readyz', ca)).status === 200) break;
      } catch {
        // starting
      }
      await sleep(200);
    }
    const readyS = round1((nowMs() - t) / 1000);
    // Settle: let the last watch events, timers and a few GCs pass; keep the last reading.
    let status = procStatus(child.pid);
    for (let waited = 0; waited < settleMs; waited += 1000) {
      await sleep(1000);
      status = procStatus(child.pid);
    }
    const metrics = await getText(child.port, '/metrics', ca);
    status = procStatus(child.pid);
    const cached: Record<string, number> = {};
    for (const m of metrics.text.matchAll(/^tenantgate_webhook_cache_objects\{kind="([^"]+)"\} (\d+)/gm)) cached[m[1]!] = Number(m[2]);
    log(`P3: webhook with ${JSON.stringify(cached)} cached: ready in ${readyS} s, VmRSS ${status.rssMB} MB (peak ${status.hwmMB} MB)`);
    return { ...expect, cached, readyS, rssMB: status.rssMB, peakRssMB: status.hwmMB, anonMB: status.anonMB };
  } finally {
    await child.stop();
  }
}

async function runP3(work: string, cp: ControlPlane, certs: WebhookCertFiles): Promise<P3Result> {
  const targetProjects = Math.round(env('BENCH_WEBHOOK_RSS_PROJECTS', P3_FULL_PROJECTS));
  const budgetS = env('BENCH_WEBHOOK_RSS_BUDGET_S', 600);
  const concurrency = Math.max(1, Math.round(env('BENCH_WEBHOOK_RSS_CONCURRENCY', 50)));
  const settleMs = env('BENCH_WEBHOOK_RSS_SETTLE_S', 10) * 1000;
  const mainJs = compileWebhook();
  const creator = new Creator(cp.info.kubeconfigs.admin!);
  const phases: P3Result['creation']['phases'] = [];
  const points: RssPoint[] = [];
  const objectsOf = (projects: number) => ({ projects, namespaces: projects * NAMESPACES_PER_PROJECT, quotas: projects * NAMESPACES_PER_PROJECT });

  points.push(await measureRss(work, cp, certs, mainJs, objectsOf(0), settleMs));

  // Calibrate the creation rate on the first 2 % of the projects (at least 100), then size the run to the budget.
  const started = nowMs();
  const calibration = Math.min(targetProjects, Math.max(100, Math.round(targetProjects * 0.02)));
  await createRange(creator, 0, calibration, concurrency, phases);
  const perProjectS = (nowMs() - started) / 1000 / calibration;
  const projectedS = perProjectS * targetProjects * 1.15; // rates drop as etcd and the caches grow
  let total = targetProjects;
  if (projectedS > budgetS) {
    total = Math.max(calibration * 2, Math.floor((budgetS / (perProjectS * 1.15)) / 100) * 100);
    log(`P3: creating ${targetProjects} projects would take ≈ ${Math.round(projectedS)} s (> ${budgetS} s budget); scaling down to ${total} projects and extrapolating`);
  } else {
    log(`P3: projected creation time ≈ ${Math.round(projectedS)} s for ${targetProjects} projects: full scale`);
  }
  const half = Math.max(calibration, Math.round(total / 2));
  await createRange(creator, calibration, half, concurrency, phases);
  const halfS = (nowMs() - started) / 1000;
  points.push(await measureRss(work, cp, certs, mainJs, objectsOf(half), settleMs));
  const resumed = nowMs();
  await createRange(creator, half, total, concurrency, phases);
  const creationS = halfS + (nowMs() - resumed) / 1000;
  points.push(await measureRss(work, cp, certs, mainJs, objectsOf(total), settleMs));

  const objectJson = await sampleObjectSizes(cp.info.kubeconfigs.admin!);
  // Linear model over the two loaded points (½ and all): RSS = base + slope × projects (each with 5 namespaces, 5 quotas).
  const a = points[1]!;
  const b = points[2]!;
  const slope = b.projects > a.projects ? (b.rssMB - a.rssMB) / (b.projects - a.projects) : 0;
  const base = b.rssMB - slope * b.projects;
  const fullScaleMeasured = total >= P3_FULL_PROJECTS;
  const fullScaleMB = fullScaleMeasured ? b.rssMB : round1(base + slope * P3_FULL_PROJECTS);
  return {
    targetProjects,
    scale: round3(total / P3_FULL_PROJECTS),
    scaledDown: total < targetProjects,
    creation: { objects: creator.objects, seconds: round1(creationS), perSecond: Math.round(creator.objects / creationS), retries: creator.retries, phases },
    points,
    perProjectKB: round1(slope * 1024),
    baseMB: round1(base),
    fullScaleMB,
    fullScaleMeasured,
    met: fullScaleMB < TARGET_RSS_MB,
    objectJson,
  };
}

async function sampleObjectSizes(kubeconfig: string): Promise<P3Result['objectJson']> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const measure = (items: Array<{ metadata?: { managedFields?: unknown } }>) => {
    let bytes = 0;
    let mf = 0;
    for (const item of items) {
      bytes += Buffer.byteLength(JSON.stringify(item));
      mf += Buffer.byteLength(JSON.stringify(item.metadata?.managedFields ?? []));
    }
    return { sampled: items.length, bytes: Math.round(bytes / Math.max(1, items.length)), managedFieldsBytes: Math.round(mf / Math.max(1, items.length)) };
  };
  const namespaces = await core.listNamespace({ limit: 500, labelSelector: 'app.kubernetes.io/managed-by=tenantgate' });
  const quotas = await core.listResourceQuotaForAllNamespaces({ limit: 500 });
  const projects = (await custom.listClusterCustomObject({ group: 'tenantgate.io', version: 'v1alpha1', plural: 'projects', limit: 500 })) as { items: Array<{ metadata?: { managedFields?: unknown } }> };
  return { project: measure(projects.items), namespace: measure(namespaces.items), resourceQuota: measure(quotas.items) };
}

// ---------------------------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------------------------

export async function main(): Promise<void> {
  mkdirSync(dirname(RESULTS), { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'tenantgate-bench-webhook-'));
  const certs = await generateWebhookCerts(join(work, 'certs'));
  const machine = { node: process.version, cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', loadavgAtStart: loadavg().map(round1) };
  const git = spawnSync('git', ['describe', '--always', '--dirty'], { cwd: ROOT, encoding: 'utf8' }).stdout?.trim() || 'unknown';
  log(`work dir ${work}; ${machine.cpus} CPUs (${machine.cpuModel}), load average ${machine.loadavgAtStart.join(' ')}`);
  const result: Record<string, unknown> = {
    benchmark: 'webhook',
    targets: { throughputRatio: TARGET_RATIO, p99Ms: TARGET_P99_MS, rateRps: env('BENCH_WEBHOOK_RATE', 500), rssMB: TARGET_RSS_MB },
    ...machine,
    git,
    date: new Date().toISOString(),
  };

  let p1: P1Result | undefined;
  if (process.env.BENCH_WEBHOOK_P1 !== '0') {
    p1 = await runP1(work, certs);
    result.p1 = p1;
    writeFileSync(RESULTS, JSON.stringify(result, null, 2) + '\n');
  }

  const wantRss = process.env.BENCH_WEBHOOK_RSS !== '0';
  const wantQ5 = process.env.BENCH_WEBHOOK_Q5 !== '0';
  let p3: P3Result | undefined;
  let q5: Q5Result | undefined;
  if (wantRss || wantQ5) {
    log('starting a local control plane (etcd, kube-apiserver, kube-controller-manager)');
    const cp = await ControlPlane.start({ log });
    try {
      await installBase(cp.info);
      // Q5 first, on an idle control plane; then P3 fills it.
      if (wantQ5) {
        q5 = await runQ5(work, certs, cp);
        result.q5 = q5;
        writeFileSync(RESULTS, JSON.stringify(result, null, 2) + '\n');
      }
      if (wantRss) {
        p3 = await runP3(work, cp, certs);
        result.p3 = p3;
      }
    } finally {
      await cp.stop();
    }
  }
  result.loadavgAtEnd = loadavg().map(round1);
  writeFileSync(RESULTS, JSON.stringify(result, null, 2) + '\n');
  rmSync(work, { recursive: true, force: true });
  printReport(machine, p1, q5, p3);
  process.stdout.write(`\nresults: ${RESULTS}\n`);
}

function printP1(out: string[], p1: P1Result): void {
  out.push(`\nP1 throughput: ${p1.concurrency} in flight, ${p1.warmupS} s warm-up + ${p1.durationS} s, ${p1.rounds} rounds; snapshot ${p1.fixture.projects} projects / ${p1.fixture.namespaces} namespaces / ${p1.fixture.quotas} quotas; server and client in separate processes${p1.pinned ? ` (client on CPU ${p1.pinned.client}, server on CPU ${p1.pinned.server})` : ''}`);
  out.push(table(
    ['server / request', 'round', 'req/s', 'p50 ms', 'p99 ms', 'server CPU %', 'server µs/req', 'client CPU %', 'others CPU %', 'tries', 'errors'],
    p1.throughput.map((t, k) => [`${t.server} ${t.scenario}`, Math.floor(k / 4) + 1, t.rps, t.latencyMs.p50, t.latencyMs.p99, t.serverCpuPct, t.serverCpuUsPerRequest, t.clientCpuPct, t.otherCpuPct, t.attempts, t.errors]),
  ));
  out.push(`best: bare ${p1.best.bare} req/s; tenantgate Namespace CREATE ${p1.best.namespaceCreate} req/s (ratio ${p1.ratio.namespaceCreate}), ResourceQuota UPDATE ${p1.best.quotaUpdate} req/s (ratio ${p1.ratio.quotaUpdate}); target ≥ ${TARGET_RATIO}: ${p1.met.throughput ? 'MET' : 'MISSED'}`);
  out.push(`Express floor (express.json + res.json, no rules): ${p1.best.expressFloor} req/s (ratio ${p1.ratio.expressFloor}), ${p1.serverCpuUsPerRequest.expressFloor} µs server CPU per request (bare/express ${p1.cpuRatio.expressFloor})`);
  out.push(`server CPU per request: bare ${p1.serverCpuUsPerRequest.bare} µs, Namespace CREATE ${p1.serverCpuUsPerRequest.namespaceCreate} µs (bare/tenantgate ${p1.cpuRatio.namespaceCreate}), ResourceQuota UPDATE ${p1.serverCpuUsPerRequest.quotaUpdate} µs (${p1.cpuRatio.quotaUpdate})`);
  out.push(`\nP1 latency: open loop at ${p1.latency[0]?.rate ?? '-'} req/s for ${p1.latency[0]?.durationS ?? '-'} s (after 1 s warm-up), unpinned; from send (and from schedule)`);
  out.push(table(
    ['server / request', 'sent', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'p99 sched ms', 'server CPU %', 'others CPU %', 'tries', 'errors'],
    p1.latency.map((l) => [`${l.server} ${l.scenario}`, l.sent, l.latencyMs.p50, l.latencyMs.p90, l.latencyMs.p99, l.latencyMs.max, l.scheduledLatencyMs.p99, l.serverCpuPct, l.otherCpuPct, l.attempts, l.errors]),
  ));
  out.push(`target p99 < ${TARGET_P99_MS} ms: ${p1.met.latency ? 'MET' : 'MISSED'}`);
  for (const b of p1.breakdown ?? []) {
    const measured = p1.throughput.filter((t) => t.server === 'tenantgate' && t.scenario === b.scenario);
    const serverUs = Math.min(...measured.map((t) => t.serverCpuUsPerRequest));
    const rest = round1(serverUs - p1.serverCpuUsPerRequest.bare - b.cpuUs.total);
    out.push(`\nP1 breakdown, ${b.scenario}: CPU µs per request of the handler's pieces, measured alone in-process over ${b.requests} requests`);
    out.push(table(['piece', 'µs/req'], [
      ['JSON.parse of the body', b.cpuUs.jsonParse],
      ['decodeReview', b.cpuUs.decodeReview],
      ['guard.decide + emulated cache event (verdictFor once: ' + b.cpuUs.verdictOnce + ')', b.cpuUs.guardDecide],
      ['metrics (counter + histogram)', b.cpuUs.metrics],
      ['JSON.stringify of the response', b.cpuUs.responseStringify],
      ['sum', b.cpuUs.total],
      ['server total in the P1 run (µs/req, /proc)', serverUs],
      ['  of which the bare server\'s TLS + HTTP', p1.serverCpuUsPerRequest.bare],
      ['  rest: Express, router, body-parser/raw-body, GC', rest],
      ['  (Express floor − bare, measured: ' + round1(p1.serverCpuUsPerRequest.expressFloor - p1.serverCpuUsPerRequest.bare) + ')', ''],
    ]));
    out.push(table(['inside guard.decide (inclusive)', '%', 'µs/req'], b.decideProfile.topInclusive.slice(0, 16).map((e) => [e.name, e.pct, e.usPerRequest])));
  }
  for (const pr of p1.profiles ?? []) {
    out.push(`\nCPU profile: ${pr.server} ${pr.scenario} — ${pr.rps} req/s under the profiler, ${pr.busyUsPerRequest} µs of server CPU per request (/proc), shared out by sample counts (${pr.file})`);
    out.push(table(['self time by origin', '%', 'µs/req'], pr.byOrigin.slice(0, 12).map((o) => [o.name, o.pct, o.usPerRequest])));
    if (pr.server === 'tenantgate') {
      out.push(table(['inclusive time by origin', '%', 'µs/req'], pr.byOriginInclusive.slice(0, 16).map((o) => [o.name, o.pct, o.usPerRequest])));
      out.push(table(['self time by function', '%', 'µs/req'], pr.topSelf.slice(0, 16).map((o) => [o.name, o.pct, o.usPerRequest])));
      out.push(table(['inclusive time by function', '%', 'µs/req'], pr.topInclusive.slice(0, 36).map((o) => [o.name, o.pct, o.usPerRequest])));
    }
  }
}

/** The webhook's cache gauge, whichever label spelling it uses ("Namespace" or "namespaces"). */
function cachedCount(p: RssPoint, kind: 'Project' | 'Namespace' | 'ResourceQuota'): string {
  const alias = { Project: 'projects', Namespace: 'namespaces', ResourceQuota: 'quotas' }[kind];
  return String(p.cached[kind] ?? p.cached[alias] ?? '-');
}

function printReport(machine: { node: string; cpus: number; cpuModel: string; loadavgAtStart: number[] }, p1: P1Result | undefined, q5: Q5Result | undefined, p3: P3Result | undefined): void {
  const out: string[] = [];
  out.push(`\nWebhook benchmarks — Node ${machine.node}, ${machine.cpus} CPUs (${machine.cpuModel}), load average at start ${machine.loadavgAtStart.join(' ')}`);
  if (p1) printP1(out, p1);
  if (q5) {
    out.push(`\nQ5: ${q5.requests} growing requests (ResourceQuota CREATE by the owner, ${q5.projects} projects) and ${q5.requests} plain ones (Namespace UPDATE), sequential, alternating`);
    out.push(table(
      ['request', 'server', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms'],
      [
        ['growing', 'ConfigMapLedger', q5.growing.ledger.p50, q5.growing.ledger.p90, q5.growing.ledger.p99, q5.growing.ledger.max],
        ['plain', 'ConfigMapLedger', q5.plain.ledger.p50, q5.plain.ledger.p90, q5.plain.ledger.p99, q5.plain.ledger.max],
        ['growing', 'guard only', q5.growing.guardOnly.p50, q5.growing.guardOnly.p90, q5.growing.guardOnly.p99, q5.growing.guardOnly.max],
        ['plain', 'guard only', q5.plain.guardOnly.p50, q5.plain.guardOnly.p90, q5.plain.guardOnly.p99, q5.plain.guardOnly.max],
      ],
    ));
    out.push(`admitted ${q5.growing.admitted}/${q5.requests} growing; ledger: ${q5.ledgerConfigMaps} ConfigMaps holding ${q5.ledgerEntries} reservations; ${q5.reservations}; ledger adds ${q5.ledgerOverheadP50Ms} ms at p50`);
  }
  if (p3) {
    out.push(`\nP3: webhook RSS with its caches synced (real control plane; objects created through the API in ${p3.creation.seconds} s, ${p3.creation.perSecond} objects/s, ${p3.creation.retries} retries)`);
    out.push(table(
      ['projects', 'namespaces', 'quotas', 'cached (p/ns/q)', 'ready s', 'VmRSS MB', 'VmHWM MB', 'RssAnon MB'],
      p3.points.map((p) => [p.projects, p.namespaces, p.quotas, `${cachedCount(p, 'Project')}/${cachedCount(p, 'Namespace')}/${cachedCount(p, 'ResourceQuota')}`, p.readyS, p.rssMB, p.peakRssMB, p.anonMB]),
    ));
    out.push(`objects as served (JSON, average of a sample): ${Object.entries(p3.objectJson).map(([k, v]) => `${k} ${v.bytes} B (managedFields ${v.managedFieldsBytes} B)`).join(', ')}`);
    out.push(`slope ${p3.perProjectKB} KB per project (+5 namespaces, +5 quotas), base ${p3.baseMB} MB; at 10,000 projects / 50,000 namespaces / 50,000 quotas: ${p3.fullScaleMB} MB (${p3.fullScaleMeasured ? 'measured' : `EXTRAPOLATED from a run at scale ${p3.scale}`}); target < ${TARGET_RSS_MB} MB: ${p3.met ? 'MET' : 'MISSED'}`);
  }
  process.stdout.write(out.join('\n') + '\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`bench/webhook: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}
