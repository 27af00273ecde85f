/** bench/lib/measure.ts: split out of bench/targets/webhook.ts (see its header for what the webhook benchmark measures). */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { startProcess } from '../../test/support/devcluster/processes.js';
import { Agent, request as httpsRequest } from 'node:https';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { httpsGet } from '../../test/support/devcluster/https-get.js';

/** bench/ (this library sits in bench/lib). */
export const HERE = join(dirname(fileURLToPath(import.meta.url)), '..');
export const ROOT = join(HERE, '..');
export const RESULTS = join(HERE, 'results', 'webhook.json');
export const SERVER_SCRIPT = join(HERE, 'lib', 'webhook-server.ts');

export const env = (name: string, fallback: number): number => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0)
    throw new Error(`${name} is ${JSON.stringify(raw)}; a non-negative number is required`);
  return n;
};

export const P1_PROJECTS = 1000;
export const TARGET_RATIO = 0.7;
/** P1 judged on server CPU per request (bare ÷ tenantgate), which the load generator cannot inflate. */
export const TARGET_CPU_RATIO = 0.5;
export const TARGET_P99_MS = 2;
export const TARGET_RSS_MB = 300;
export const P3_FULL_PROJECTS = 10_000;
export const Q5_PROJECTS = 30;
export const Q5_WARMUP_PROJECTS = 2;

export const log = (m: string) =>
  process.stderr.write(`[webhook-bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const nowMs = () => performance.now();

// ---------------------------------------------------------------------------------------------
// Statistics and /proc
// ---------------------------------------------------------------------------------------------

function percentile(sorted: Float64Array | number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx] ?? NaN;
}

/** The median (mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export interface LatencyStats {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export function stats(values: ArrayLike<number>, count = values.length): LatencyStats {
  const a = Float64Array.from({ length: count }, (_, i) => values[i] ?? 0).sort();
  let sum = 0;
  for (const v of a) sum += v;
  return {
    n: count,
    p50: round3(percentile(a, 50)),
    p90: round3(percentile(a, 90)),
    p99: round3(percentile(a, 99)),
    max: round3(a[a.length - 1] ?? NaN),
    mean: round3(count ? sum / count : NaN),
  };
}

export const round3 = (x: number) => Math.round(x * 1000) / 1000;
export const round1 = (x: number) => Math.round(x * 10) / 10;

let clockTicks = 100;
try {
  const out = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const n = Number(out.stdout?.trim());
  if (n > 0) clockTicks = n;
} catch {
  // keep 100
}

/** CPU seconds (user + system) of a process, from /proc/<pid>/stat. */
export function procCpuSeconds(pid: number): number {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / clockTicks;
  } catch {
    return NaN;
  }
}

/** Machine-wide busy and total CPU seconds, from /proc/stat. */
export function machineCpu(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  return { busy: (total - idle) / clockTicks, total: total / clockTicks };
}

export function procStatus(pid: number): { rssMB: number; hwmMB: number; anonMB: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
  return { rssMB: round1(kb('VmRSS') / 1024), hwmMB: round1(kb('VmHWM') / 1024), anonMB: round1(kb('RssAnon') / 1024) };
}

// ---------------------------------------------------------------------------------------------
// Child processes (killed when this process exits)
// ---------------------------------------------------------------------------------------------

export interface Child {
  pid: number;
  port: number;
  proc: ChildProcess;
  /** Resolves with the first stdout line (parsed JSON) that satisfies `pred`. */
  waitFor(pred: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

/** Spawns `node [nodeArgs] script args` (under `taskset -c cpu` when given), waits for the JSON line {"port": N} on stdout. */
export async function startChild(
  nodeArgs: string[],
  args: string[],
  logFile: string,
  timeoutMs = 120_000,
  cpu?: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Child> {
  const command = cpu ? ['taskset', '-c', cpu, process.execPath] : [process.execPath];
  const managed = startProcess(
    args[0] ?? 'child',
    command[0]!,
    [...command.slice(1), ...nodeArgs, ...args],
    logFile,
    env,
    { cwd: ROOT, pipeStdout: true },
  );
  const proc = managed.child;
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
      await managed.stop(15_000);
    },
  };
}

/**
 * P1 pins the load generator (this process, all threads) to CPU 0 and the servers to CPU 1, so client
 * and server never preempt each other and each has one core, as far as the machine's other work allows.
 */
export function pinning():
  { client: string; server: string; restore: () => void; unpin: (pid: number) => void } | undefined {
  if (process.env.BENCH_WEBHOOK_PIN === '0' || cpus().length < 2) return undefined;
  if (spawnSync('taskset', ['-V'], { encoding: 'utf8' }).status !== 0) return undefined;
  const all = `0-${cpus().length - 1}`;
  const set = (list: string) =>
    spawnSync('taskset', ['-a', '-c', '-p', list, String(process.pid)], { encoding: 'utf8' }).status === 0;
  if (!set('0')) return undefined;
  return {
    client: '0',
    server: '1',
    restore: () => void set(all),
    unpin: (pid: number) => void spawnSync('taskset', ['-a', '-c', '-p', all, String(pid)], { encoding: 'utf8' }),
  };
}

export function tailFile(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

// ---------------------------------------------------------------------------------------------
// The load generator
// ---------------------------------------------------------------------------------------------

export interface Target {
  port: number;
  path: string;
  ca: Buffer;
}

/** `"allowed":true` in an AdmissionReview answer (every P1 scenario must be admitted). */
const ALLOWED = Buffer.from('"allowed":true');

export function post(agent: Agent, target: Target, body: Buffer): Promise<{ status: number; allowed: boolean }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: target.port,
        path: target.path,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': body.length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, allowed: Buffer.concat(chunks).includes(ALLOWED) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** One request whose answer is parsed: to check what a scenario really decides. */
export function postJson(
  target: Target,
  body: Buffer,
): Promise<{
  status: number;
  json: { response?: { allowed?: boolean; status?: { message?: string }; warnings?: string[] } };
}> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: target.port,
        path: target.path,
        method: 'POST',
        ca: target.ca,
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': body.length },
      },
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

export async function getText(
  port: number,
  path: string,
  ca: Buffer,
  timeoutMs = 5000,
): Promise<{ status: number; text: string }> {
  const { status, body } = await httpsGet(`https://127.0.0.1:${port}${path}`, { ca, timeoutMs });
  return { status, text: body };
}

/** Bodies are taken round-robin from a pool; the cursor survives runs so distinct objects stay distinct. */
export class Pool {
  private next = 0;
  constructor(
    readonly name: string,
    readonly bodies: Buffer[],
  ) {}
  take(): Buffer {
    const b = this.bodies[this.next % this.bodies.length]!;
    this.next += 1;
    return b;
  }
  get used(): number {
    return this.next;
  }
}

export interface CpuWindow {
  clientCpuPct: number;
  serverCpuPct: number;
  serverCpuUsPerRequest: number;
  /** Busy CPU of everything else on the machine (other users' work), in % of one core. */
  otherCpuPct: number;
}

/**
 * CPU over a window opened now: call the result to close it (the readings are taken then), and that
 * result with the number of requests served. The client is this process, or the `clientPids` (client
 * processes; this process's own CPU then counts as neither client nor other).
 */
export function cpuWindow(serverPid: number, clientPids?: readonly number[]) {
  const childSeconds = () => (clientPids ?? []).reduce((a, pid) => a + procCpuSeconds(pid), 0);
  const c0 = process.cpuUsage();
  const ch0 = childSeconds();
  const s0 = procCpuSeconds(serverPid);
  const m0 = machineCpu();
  const t0 = nowMs();
  return () => {
    const wall = (nowMs() - t0) / 1000;
    const c = process.cpuUsage(c0);
    const self = (c.user + c.system) / 1e6;
    const children = childSeconds() - ch0;
    const client = clientPids ? children : self;
    const server = procCpuSeconds(serverPid) - s0;
    const m1 = machineCpu();
    const other = m1.busy - m0.busy - server - children - self;
    return (requests: number): CpuWindow => ({
      clientCpuPct: round1((client / wall) * 100),
      serverCpuPct: round1((server / wall) * 100),
      serverCpuUsPerRequest: round1((server / Math.max(1, requests)) * 1e6),
      otherCpuPct: round1(Math.max(0, (other / wall) * 100)),
    });
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
export async function undisturbed<T extends CpuWindow>(
  label: string,
  ownPids: number[],
  fn: () => Promise<T>,
  attempts = 3,
): Promise<T & { attempts: number }> {
  let best: T | undefined;
  let attempt = 0;
  while (attempt < attempts) {
    attempt += 1;
    await quiet(ownPids);
    const r = await fn();
    if (!best || r.otherCpuPct < best.otherCpuPct) best = r;
    if (r.otherCpuPct < QUIET_PCT) break;
    log(
      `${label}: the rest of the machine used ${r.otherCpuPct} % of a core meanwhile; ${attempt < attempts ? 'measuring again' : 'keeping the least disturbed try'}`,
    );
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
export async function closedLoop(
  server: string,
  scenario: string,
  target: Target,
  serverPid: number,
  pool: Pool,
  concurrency: number,
  warmupMs: number,
  durationMs: number,
): Promise<ThroughputResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency, ca: target.ca });
  const latencies = new Float64Array(4_000_000);
  let count = 0;
  let errors = 0;
  let measuring = false;
  let stopped = false;
  let window: ReturnType<typeof cpuWindow> | undefined;
  const worker = async () => {
    while (!stopped) {
      const body = pool.take();
      const t = nowMs();
      try {
        const { status, allowed } = await post(agent, target, body);
        // A denial is HTTP 200 too: an answer that is not the scenario's verdict counts as an error.
        if (status !== 200 || !allowed) throw new Error(`HTTP ${status}, allowed ${allowed}`);
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
  const cpu = window()(requests);
  await Promise.all(workers);
  agent.destroy();
  return {
    server,
    scenario,
    concurrency,
    durationS: round3(elapsed),
    requests,
    errors,
    rps: Math.round(requests / elapsed),
    latencyMs: stats(latencies, requests),
    ...cpu,
  };
}

export interface LatencyResult extends CpuWindow {
  server: string;
  scenario: string;
  rate: number;
  durationS: number;
  sent: number;
  completed: number;
  errors: number;
  /** What the first failed request got (a status, a refusal, or a transport error), when one failed. */
  firstError?: string;
  /** From the moment the request was written. */
  latencyMs: LatencyStats;
  /** From the moment it was scheduled (includes the client's timer lateness). */
  scheduledLatencyMs: LatencyStats;
}

/**
 * An open-loop schedule: `rate` requests per second, the first `warmupCount` (`warmupMs`) unmeasured.
 * `run` calls `fire(index, scheduledAt)` on time whatever the answers do, `onMeasureStart()` just before
 * the first measured request, and resolves once every request's promise has settled.
 */
export function openLoopSchedule(rate: number, warmupMs: number, durationMs: number) {
  const interval = 1000 / rate;
  const warmupCount = Math.round((warmupMs / 1000) * rate);
  const total = warmupCount + Math.round((durationMs / 1000) * rate);
  const run = (fire: (index: number, scheduled: number) => Promise<unknown>, onMeasureStart: () => void) =>
    new Promise<void>((resolve) => {
      let settled = 0;
      let i = 0;
      const t0 = nowMs() + 5;
      const tick = () => {
        const t = nowMs();
        while (i < total && t0 + i * interval <= t) {
          if (i === warmupCount) onMeasureStart();
          fire(i, t0 + i * interval)
            .then(
              () => {},
              () => {},
            )
            .finally(() => {
              settled += 1;
              if (settled === total) resolve();
            });
          i += 1;
        }
        if (i < total) setTimeout(tick, Math.max(0, Math.min(1, t0 + i * interval - nowMs())));
      };
      setTimeout(tick, 5);
    });
  return { warmupCount, total, run };
}

/** Open loop: sends on a schedule (rate/s) whatever the answers do; latency per request. */
export async function openLoop(
  server: string,
  scenario: string,
  target: Target,
  serverPid: number,
  pool: Pool,
  rate: number,
  warmupMs: number,
  durationMs: number,
): Promise<LatencyResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: 256, ca: target.ca });
  const schedule = openLoopSchedule(rate, warmupMs, durationMs);
  const { warmupCount, total } = schedule;
  const fromSend = new Float64Array(total);
  const fromSchedule = new Float64Array(total);
  let completed = 0;
  let errors = 0;
  let firstError: string | undefined;
  let window: ReturnType<typeof cpuWindow> | undefined;
  await schedule.run(
    (index, scheduled) => {
      const body = pool.take();
      const sent = nowMs();
      return post(agent, target, body).then(
        ({ status, allowed }) => {
          const end = nowMs();
          if (index >= warmupCount) {
            if (status === 200 && allowed) {
              fromSend[completed] = end - sent;
              fromSchedule[completed] = end - scheduled;
              completed += 1;
            } else {
              errors += 1;
              firstError ??= `HTTP ${status}${allowed ? '' : ', not allowed'}`;
            }
          }
        },
        (err: unknown) => {
          if (index >= warmupCount) {
            errors += 1;
            firstError ??= err instanceof Error ? `${err.name}: ${err.message}` : String(err);
          }
        },
      );
    },
    () => (window = cpuWindow(serverPid)),
  );
  const cpu = window
    ? window()(total - warmupCount)
    : { clientCpuPct: NaN, serverCpuPct: NaN, serverCpuUsPerRequest: NaN, otherCpuPct: NaN };
  agent.destroy();
  return {
    server,
    scenario,
    rate,
    durationS: durationMs / 1000,
    sent: total - warmupCount,
    completed,
    errors,
    ...(firstError !== undefined ? { firstError } : {}),
    latencyMs: stats(fromSend, completed),
    scheduledLatencyMs: stats(fromSchedule, completed),
    ...cpu,
  };
}

/** Sequential requests (one in flight), latency per request. */
export async function sequential(target: Target, bodies: Buffer[]): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: target.ca });
  const out: number[] = [];
  for (const body of bodies) {
    const t = nowMs();
    const { status, allowed } = await post(agent, target, body);
    if (status !== 200 || !allowed) throw new Error(`HTTP ${status}, allowed ${allowed}`);
    out.push(nowMs() - t);
  }
  agent.destroy();
  return out;
}

// ---------------------------------------------------------------------------------------------
// AdmissionReviews as the apiserver sends them
// ---------------------------------------------------------------------------------------------

export function table(headers: string[], rows: Array<Array<string | number>>): string {
  const cells = [
    headers,
    ...rows.map((r) => r.map((c) => (typeof c === 'number' ? (Number.isFinite(c) ? String(c) : '-') : c))),
  ];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(cells[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

// ---------------------------------------------------------------------------------------------
// P1
// ---------------------------------------------------------------------------------------------

/**
 * Runs tsc with `args` (cwd: the repository) and returns the path of `emitted`, which it must have
 * written. Type errors are reported, and the emitted JavaScript is used anyway (another change may be
 * in progress in the working tree).
 */
function tsc(who: string, args: string[], emitted: string): string {
  const r = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (!existsSync(emitted)) throw new Error(`tsc emitted no ${emitted}:\n${r.stdout}\n${r.stderr}`);
  if (r.status !== 0)
    log(
      `${who}: tsc reported type errors (JavaScript emitted anyway; another change in progress?):\n${(r.stdout ?? '').split('\n').slice(0, 10).join('\n')}`,
    );
  return emitted;
}

/**
 * bench/lib/webhook-server.ts and src compiled with tsc (bench/tsconfig.server.json), so the measured
 * servers run the JavaScript production runs: under tsx every closure the rule engine creates per
 * request also gets a `__name` call (esbuild's keepNames). Returns the compiled server script.
 * BENCH_WEBHOOK_SERVER=tsx runs the TypeScript through tsx instead.
 */
export function benchServer(who: string): { nodeArgs: string[]; script: string } {
  if (process.env.BENCH_WEBHOOK_SERVER === 'tsx') return { nodeArgs: ['--import', 'tsx'], script: SERVER_SCRIPT };
  const outDir = join(ROOT, '.cache', 'bench-server', 'dist');
  log(`${who}: compiling the bench servers (tsc -p bench/tsconfig.server.json)`);
  rmSync(outDir, { recursive: true, force: true });
  return {
    nodeArgs: [],
    script: tsc(who, ['-p', join(HERE, 'tsconfig.server.json')], join(outDir, 'bench', 'lib', 'webhook-server.js')),
  };
}

/**
 * Another commit (`ref`) built for A/B runs against the working tree: `paths` exported with `git
 * archive` into .cache/bench-base/<sha><suffix>/ (node_modules linked) and `build` run there, unless
 * `output` (a file in that directory) is there from an earlier run. Returns `output` and the commit.
 */
function builtCommit(
  who: string,
  ref: string,
  suffix: string,
  paths: string[],
  output: (dir: string) => string,
  build: (dir: string) => string,
): { output: string; sha: string } {
  const git = (args: string[]) => spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' });
  const sha = git(['rev-parse', '--verify', `${ref}^{commit}`]).stdout.trim();
  if (!/^[0-9a-f]{40}$/.test(sha)) throw new Error(`${who}: ${JSON.stringify(ref)} is not a commit`);
  const dir = join(ROOT, '.cache', 'bench-base', `${sha}${suffix}`);
  if (existsSync(output(dir))) return { output: output(dir), sha };
  log(`${who}: exporting and compiling ${paths.join(', ')} of ${ref} (${sha.slice(0, 12)})`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const archive = spawnSync('sh', ['-c', `git archive ${sha} ${paths.join(' ')} | tar -x -C '${dir}'`], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (archive.status !== 0) throw new Error(`git archive ${sha}: ${archive.stderr}`);
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return { output: build(dir), sha };
}

/**
 * The bench server of another commit (`ref`, e.g. HEAD), for A/B runs against the working tree: the
 * commit's src/ and bench/ compiled in .cache/bench-base/<sha>/ as benchServer compiles the working
 * tree. Returns the compiled script.
 */
export function baseBenchServer(who: string, ref: string): { script: string; sha: string } {
  // Commits before bench/ was split by purpose kept the server at bench/lib/webhook-server.ts.
  const script = (dir: string) =>
    join(
      dir,
      '.cache',
      'bench-server',
      'dist',
      'bench',
      ...(existsSync(join(dir, 'bench', 'lib', 'webhook-server.ts')) ||
      !existsSync(join(dir, 'bench', 'webhook-server.ts'))
        ? ['lib']
        : []),
      'webhook-server.js',
    );
  const { output, sha } = builtCommit(who, ref, '', ['src', 'bench', 'tsconfig.json', 'package.json'], script, (dir) =>
    tsc(who, ['-p', join(dir, 'bench', 'tsconfig.server.json')], script(dir)),
  );
  return { script: output, sha };
}

/**
 * tenantgate as another commit (`ref`) builds it, for paired A/B runs of the shipped path: the commit's
 * src/, tsconfig.json and package.json compiled in .cache/bench-base/<sha>-dist/. Returns its
 * cli/main.js and the commit.
 */
export function baseTenantgate(who: string, ref: string): { cli: string; sha: string } {
  const cli = (dir: string) => join(dir, 'dist', 'cli', 'main.js');
  const { output, sha } = builtCommit(who, ref, '-dist', ['src', 'tsconfig.json', 'package.json'], cli, (dir) =>
    tsc(who, ['-p', join(dir, 'tsconfig.json'), '--outDir', join(dir, 'dist'), '--sourceMap', 'false'], cli(dir)),
  );
  return { cli: output, sha };
}

/**
 * Compiles tenantgate into .cache/<cacheName>/dist for a bench's child processes (the working tree's
 * dist/ may be rebuilt by others meanwhile) and returns its cli/main.js.
 */
export function compileTenantgate(cacheName: string, who: string): string {
  const outDir = join(ROOT, '.cache', cacheName, 'dist');
  log(`${who}: compiling tenantgate (tsc -p tsconfig.json --outDir ${outDir})`);
  rmSync(outDir, { recursive: true, force: true });
  const main = tsc(
    who,
    ['-p', join(ROOT, 'tsconfig.json'), '--outDir', outDir, '--sourceMap', 'false'],
    join(outDir, 'cli', 'main.js'),
  );
  // The CLI reads its version from the package.json next to its dist/, as in the package and the image.
  copyFileSync(join(ROOT, 'package.json'), join(outDir, '..', 'package.json'));
  return main;
}

/**
 * The compiled tree (the directory holding src/ and bench/) of a compiled bench server script, wherever
 * in bench/ that script sits (bench/lib/ now, bench/ in commits before bench/ was split by purpose).
 */
export function compiledTree(serverScript: string): string {
  for (let dir = dirname(serverScript); dir !== dirname(dir); dir = dirname(dir))
    if (existsSync(join(dir, 'src'))) return dir;
  throw new Error(`no compiled src/ above ${serverScript}`);
}
