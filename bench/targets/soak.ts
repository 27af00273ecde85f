/**
 * `npm run bench -- soak [--minutes=30] [--check]`: does memory level off under steady traffic, as
 * shipped? On the kubeadm-style local control plane: two `tenantgate webhook` processes from dist/
 * (the shipped tenantgate.yaml: headroom ledger on; client auth: reviews only from the apiserver's
 * client certificate) behind the round-robin proxy, and `tenantgate controller` (dist/, its
 * ServiceAccount, leader election) — each in a memory cgroup of its own limited like the chart's pod.
 * Traffic, open loop at BENCH_SOAK_RATE (5) requests a second, real requests (no dry runs), over four
 * projects of two tenants (acme: payments by alice, web by carol; globex: ml and data by bob):
 *
 *   30 % namespace creates by an owner (admitted, or [Q1] once the project is full: maxNamespaces 5),
 *   20 % deletes of a namespace the run made (the namespace controller and the cascade finish them),
 *   30 % quota writes by an owner (grow or shrink `requests.cpu` of tenantgate-quota: admitted or [Q1]),
 *   10 % quota growths far beyond the budget (100 CPUs: must be denied [Q1]),
 *   10 % namespace creates by dave, who owns nothing (must be denied [T4]).
 *
 * The set of live objects is stationary (every project stays at ≤ 5 namespaces), so a heap that keeps
 * growing is a leak, not a cache filling. Every minute (and once after the caches synced) each process
 * is sampled: V8 heap used after a full GC (through the inspector, `--inspect=127.0.0.1:0`, a bench-only
 * Node flag: bench/lib/memory.ts), VmRSS, the cgroup's charge and working set. Reported per process:
 * the least-squares slope of heap-after-GC over the last BENCH_SOAK_WINDOW_MINUTES (20; ⅔ of a shorter
 * run), MB per minute and per 1,000 requests, with its standard error; the largest VmRSS and working
 * set of that window against the chart's memory request (charts/tenantgate/values.yaml).
 *
 * `--check` (ADR 0012): per process, |slope| ≤ 0.05 MB/min with a standard error ≤ 0.025 MB/min (else
 * "too noisy to judge" counts as missed), VmRSS and working set < the memory request, no request that
 * failed (a failed webhook call, 5xx, no answer), no request admitted that had to be denied, and the
 * full 30 minutes (a shorter run is a validation, reported but not judged).
 * Results: bench/results/soak.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { generateWebhookCerts } from '../../src/certs/files.js';
import { ControlPlane } from '../../test/support/devcluster/controlplane.js';
import type { Managed } from '../../test/support/devcluster/processes.js';
import { startWebhookReplicas, type WebhookReplicas } from '../../test/support/devcluster/replicas.js';
import { installBase, kubectlAs } from '../../test/support/devcluster/tenantgate.js';
import { seededRandom } from '../../test/support/replica-race/attempts.js';
import { apiAs, countBy, verdictOf, type Api, type Verdict } from '../lib/api.js';
import { startShippedController } from '../lib/controller-process.js';
import { cachesHold } from '../lib/webhook-caches.js';
import { HERE, env, procStatus, round1, round3, sleep, table } from '../lib/measure.js';
import {
  INSPECT_FLAG,
  InspectorHeap,
  chartMemory,
  leastSquares,
  memoryCgroup,
  type MemoryCgroup,
} from '../lib/memory.js';

const RESULTS = join(HERE, 'results', 'soak.json');
const FULL_MINUTES = 30;
/** A heap that grows slower than this is called level (ADR 0012: 320 MB, request to limit, takes > 4 days). */
export const SLOPE_LIMIT_MB_PER_MIN = 0.05;
/** Above this standard error the slope cannot tell 0.05 MB/min from 0: not judged. */
export const SLOPE_MAX_STANDARD_ERROR = SLOPE_LIMIT_MB_PER_MIN / 2;
const SEED = 48;
const MAX_NAMESPACES = 5;

const log = (m: string) => process.stderr.write(`[bench/soak ${new Date().toISOString().slice(11, 19)}] ${m}\n`);

interface SoakProject {
  name: string;
  tenant: string;
  owners: Array<{ kind: 'Group'; name: string }>;
  /** The user who acts as its owner. */
  user: string;
}

const PROJECTS: SoakProject[] = [
  { name: 'payments', tenant: 'acme', owners: [{ kind: 'Group', name: 'acme:payments-admins' }], user: 'alice' },
  { name: 'web', tenant: 'acme', owners: [{ kind: 'Group', name: 'acme:web-admins' }], user: 'carol' },
  { name: 'ml', tenant: 'globex', owners: [{ kind: 'Group', name: 'globex:admins' }], user: 'bob' },
  { name: 'data', tenant: 'globex', owners: [{ kind: 'Group', name: 'globex:admins' }], user: 'bob' },
];

const projectObject = (p: SoakProject) => ({
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: { name: p.name },
  spec: {
    tenant: p.tenant,
    owners: p.owners,
    quota: { hard: { 'requests.cpu': '6', 'requests.memory': '12Gi' } },
    maxNamespaces: MAX_NAMESPACES,
    namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', 'requests.memory': '2Gi' } } },
  },
});

type Kind = 'namespace create' | 'namespace delete' | 'quota write' | 'quota beyond budget' | 'non-owner create';
/** The requests that must be denied, and with which rule. */
const MUST_DENY: Partial<Record<Kind, string>> = { 'quota beyond budget': 'Q1', 'non-owner create': 'T4' };

interface Watched {
  name: string;
  pid: number;
  component: 'webhook' | 'controller';
  heap: InspectorHeap;
  cgroup?: MemoryCgroup;
}

interface Sample {
  minute: number;
  load1: number;
  requests: number;
  processes: Record<string, { heapMB: number; gcMs: number; rssMB: number; cgroupMB?: number; workingSetMB?: number }>;
  cache?: Record<string, number>;
}

interface Judgement {
  process: string;
  component: 'webhook' | 'controller';
  windowMinutes: number;
  points: number;
  slopeMBPerMin: number;
  standardErrorMBPerMin: number;
  slopeMBPer1000Requests: number;
  maxRssMB: number;
  maxWorkingSetMB: number | null;
  requestMB: number;
  level: 'level' | 'growing' | 'too noisy to judge';
  underRequest: boolean;
}

/** Minutes, from `--minutes` (bench/run.ts puts it in BENCH_SOAK_MINUTES) or the environment. */
function settings() {
  const minutes = env('BENCH_SOAK_MINUTES', FULL_MINUTES);
  if (minutes < 3) throw new Error(`soak: --minutes ${minutes}: at least 3 are needed for a slope`);
  const window = env(
    'BENCH_SOAK_WINDOW_MINUTES',
    minutes >= FULL_MINUTES ? 20 : Math.max(2, Math.round((minutes * 2) / 3)),
  );
  if (window > minutes)
    throw new Error(`soak: BENCH_SOAK_WINDOW_MINUTES ${window} is longer than the run (${minutes} minutes)`);
  const rate = env('BENCH_SOAK_RATE', 5);
  if (rate <= 0) throw new Error('soak: BENCH_SOAK_RATE must be > 0');
  return { minutes, window, rate };
}

/** The traffic: one request chosen by the seeded PRNG; namespaces the run made are tracked per project. */
class Traffic {
  private seq = 0;
  private readonly random = seededRandom(SEED);
  /** Live namespaces the run made, with when they were admitted. */
  readonly live = new Map<string, Array<{ name: string; at: number }>>(PROJECTS.map((p) => [p.name, []]));
  readonly answers: Array<{ kind: Kind; verdict: Verdict; status: number; text: string }> = [];

  constructor(private readonly clients: Record<string, Api>) {}

  private pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.random() * items.length)]!;
  }

  /** A namespace this run made that the controller has had 3 s to give its quota and owners' binding. */
  private settled(project: string): string | undefined {
    const ready = this.live.get(project)!.filter((n) => Date.now() - n.at > 3000);
    return ready.length ? this.pick(ready).name : undefined;
  }

  async one(): Promise<void> {
    const p = this.pick(PROJECTS);
    const roll = this.random();
    const owner = this.clients[p.user]!;
    const quotaPath = (ns: string) => `/api/v1/namespaces/${ns}/resourcequotas/tenantgate-quota`;
    let kind: Kind;
    let answer: { status: number; text: string };
    const existing = this.settled(p.name);
    if (roll < 0.3 || (!existing && roll < 0.8)) {
      kind = 'namespace create';
      const name = `${p.name}-k${this.seq++}`;
      answer = await owner.call('POST', '/api/v1/namespaces', { metadata: { name } });
      if (verdictOf(answer) === 'admitted') this.live.get(p.name)!.push({ name, at: Date.now() });
    } else if (roll < 0.5) {
      kind = 'namespace delete';
      answer = await owner.call('DELETE', `/api/v1/namespaces/${existing}`);
      const v = verdictOf(answer);
      if (v === 'admitted' || v === 'refused not found')
        this.live.set(
          p.name,
          this.live.get(p.name)!.filter((n) => n.name !== existing),
        );
    } else if (roll < 0.8) {
      kind = 'quota write';
      const cpu = this.pick(['500m', '1', '1500m', '2', '3']);
      answer = await owner.call(
        'PATCH',
        quotaPath(existing!),
        { spec: { hard: { 'requests.cpu': cpu } } },
        'application/merge-patch+json',
      );
    } else if (roll < 0.9 && existing) {
      kind = 'quota beyond budget';
      answer = await owner.call(
        'PATCH',
        quotaPath(existing),
        { spec: { hard: { 'requests.cpu': '100' } } },
        'application/merge-patch+json',
      );
    } else {
      kind = 'non-owner create';
      answer = await this.clients.dave!.call('POST', '/api/v1/namespaces', {
        metadata: { name: `${p.name}-x${this.seq++}` },
      });
    }
    const verdict = verdictOf(answer);
    this.answers.push({
      kind,
      verdict,
      status: answer.status,
      text: verdict === 'error' || (MUST_DENY[kind] && verdict === 'admitted') ? answer.text.slice(0, 400) : '',
    });
  }
}

/** Judges one process over the window: slope of heap-after-GC, largest RSS and working set against the request. */
export function judge(
  name: string,
  component: 'webhook' | 'controller',
  samples: Sample[],
  fromMinute: number,
  requestMB: number,
  ratePerS: number,
): Judgement {
  const inWindow = samples.filter((s) => s.minute >= fromMinute && s.processes[name]);
  const fit = leastSquares(inWindow.map((s) => ({ x: s.minute, y: s.processes[name]!.heapMB })));
  const maxRssMB = Math.max(...inWindow.map((s) => s.processes[name]!.rssMB));
  const ws = inWindow.map((s) => s.processes[name]!.workingSetMB).filter((v): v is number => v !== undefined);
  const maxWorkingSetMB = ws.length ? Math.max(...ws) : null;
  const level = !(fit.standardError <= SLOPE_MAX_STANDARD_ERROR)
    ? 'too noisy to judge'
    : Math.abs(fit.slope) <= SLOPE_LIMIT_MB_PER_MIN
      ? 'level'
      : 'growing';
  return {
    process: name,
    component,
    windowMinutes: round1(samples[samples.length - 1]!.minute - fromMinute),
    points: inWindow.length,
    slopeMBPerMin: round3(fit.slope),
    standardErrorMBPerMin: round3(fit.standardError),
    slopeMBPer1000Requests: round3((fit.slope / (ratePerS * 60)) * 1000),
    maxRssMB: round1(maxRssMB),
    maxWorkingSetMB: maxWorkingSetMB === null ? null : round1(maxWorkingSetMB),
    requestMB: requestMB,
    level,
    underRequest: maxRssMB < requestMB && (maxWorkingSetMB === null || maxWorkingSetMB < requestMB),
  };
}

export async function main(): Promise<string[]> {
  const { minutes, window, rate } = settings();
  const memory = { webhook: chartMemory('webhook'), controller: chartMemory('controller') };
  const loadAtStart = loadavg()[0]!;
  log(
    `load average at start ${loadAtStart.toFixed(2)} (a shared machine); ${minutes} minutes at ${rate} requests/s, slope over the last ${window}; chart memory: webhook ${memory.webhook.request} request / ${memory.webhook.limit} limit, controller ${memory.controller.request} / ${memory.controller.limit}`,
  );
  const cp = await ControlPlane.start({ log });
  let webhooks: WebhookReplicas | undefined;
  let controller: Managed | undefined;
  const watched: Watched[] = [];
  const cgroups: Record<string, MemoryCgroup> = {};
  const clients: Record<string, Api> = {};
  try {
    await installBase(cp.info);
    const ca = await readFile(cp.info.caFile);
    for (const user of ['alice', 'bob', 'carol', 'dave'])
      clients[user] = apiAs(cp.info.server, ca, cp.info.tokens[user]!);
    await kubectlAs(
      cp.info,
      'admin',
      ['apply', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: PROJECTS.map(projectObject) }),
    );

    // One memory cgroup per process, limited like the chart's pod (none where this machine has no v1 memory controller).
    const cgroupNote: string[] = [];
    const cgroupFor = (name: string, component: 'webhook' | 'controller'): MemoryCgroup | undefined => {
      const group = memoryCgroup(`soak-${name}`, memory[component].limitBytes);
      if (!('unavailable' in group)) return (cgroups[name] = group);
      cgroupNote.push(`${name}: ${group.unavailable}`);
      return undefined;
    };
    const controllerGroup = cgroupFor('controller', 'controller');
    controller = (
      await startShippedController(cp, {
        name: 'soak-controller',
        nodeArgs: [INSPECT_FLAG],
        ...(controllerGroup ? { launch: controllerGroup.launch } : {}),
      })
    ).process;
    const certs = await generateWebhookCerts(join(cp.info.dir, 'soak-certs'));
    const webhookGroups = [cgroupFor('webhook-0', 'webhook'), cgroupFor('webhook-1', 'webhook')];
    webhooks = await startWebhookReplicas(
      cp.info,
      certs,
      {},
      { name: 'soak', nodeArgs: [INSPECT_FLAG], cgroupOf: (i) => webhookGroups[i]?.dir },
    );
    await cachesHold(webhooks, 'Project', PROJECTS.length);
    if (cgroupNote.length) log(`no cgroup charge: ${cgroupNote.join('; ')}`);
    const attach = async (name: string, component: 'webhook' | 'controller', proc: Managed) => {
      watched.push({
        name,
        pid: proc.pid,
        component,
        heap: await InspectorHeap.attach(proc.logFile),
        cgroup: cgroups[name],
      });
    };
    for (const [i, r] of webhooks.replicas.entries()) await attach(`webhook-${i}`, 'webhook', r.process);
    await attach('controller', 'controller', controller);

    const traffic = new Traffic(clients);
    const samples: Sample[] = [];
    const t0 = performance.now();
    const minuteNow = () => (performance.now() - t0) / 60_000;
    const sample = async () => {
      const s: Sample = {
        minute: round3(minuteNow()),
        load1: round1(loadavg()[0]!),
        requests: traffic.answers.length,
        processes: {},
      };
      for (const w of watched) {
        const heap = await w.heap.afterGc();
        const cg = w.cgroup?.read();
        s.processes[w.name] = {
          heapMB: round3(heap.usedMB),
          gcMs: round1(heap.gcMs),
          rssMB: procStatus(w.pid).rssMB,
          ...(cg ? { cgroupMB: round1(cg.usageMB), workingSetMB: round1(cg.workingSetMB) } : {}),
        };
      }
      const caches = await Promise.all(
        ['Project', 'Namespace', 'ResourceQuota'].map(
          async (k) =>
            [
              k,
              (await webhooks!.scrape(new RegExp(`^tenantgate_webhook_cache_objects\\{kind="${k}"\\}`)))[0] ?? NaN,
            ] as const,
        ),
      );
      s.cache = Object.fromEntries(caches);
      samples.push(s);
      log(
        `minute ${s.minute.toFixed(1)}: load ${s.load1}; ${s.requests} requests; ${Object.entries(s.processes)
          .map(
            ([n, p]) =>
              `${n} heap ${p.heapMB.toFixed(1)} MB, RSS ${p.rssMB} MB${p.workingSetMB !== undefined ? `, ws ${p.workingSetMB} MB` : ''}`,
          )
          .join('; ')}; caches ${JSON.stringify(s.cache)}`,
      );
    };
    await sample();

    // Open loop: one request every 1000/rate ms whatever the answers; a sample every minute.
    const inflight = new Set<Promise<void>>();
    const total = Math.round(minutes * 60 * rate);
    let nextSample = 1;
    for (let i = 0; i < total; i++) {
      const due = t0 + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const p = traffic.one().catch(
        (err: unknown) =>
          void traffic.answers.push({
            kind: 'namespace create',
            verdict: 'error',
            status: 0,
            text: String(err).slice(0, 400),
          }),
      );
      inflight.add(p);
      void p.finally(() => inflight.delete(p));
      if (minuteNow() >= nextSample) {
        nextSample += 1;
        void sample();
      }
    }
    await Promise.all(inflight);
    while (nextSample <= minutes) {
      await sleep(Math.max(0, t0 + nextSample * 60_000 - performance.now()));
      nextSample += 1;
    }
    await sample();

    const byKind: Record<string, Record<string, number>> = {};
    for (const a of traffic.answers) (byKind[a.kind] ??= {})[a.verdict] = (byKind[a.kind]?.[a.verdict] ?? 0) + 1;
    const errors = traffic.answers.filter((a) => a.verdict === 'error');
    const wronglyAdmitted = traffic.answers.filter(
      (a) => MUST_DENY[a.kind] && a.verdict !== `denied ${MUST_DENY[a.kind]}` && a.verdict.startsWith('admitted'),
    );
    const wrongRule = traffic.answers.filter(
      (a) => MUST_DENY[a.kind] && a.verdict.startsWith('denied') && a.verdict !== `denied ${MUST_DENY[a.kind]}`,
    );
    const fromMinute = minutes - window;
    const judgements = watched.map((w) =>
      judge(w.name, w.component, samples, fromMinute, memory[w.component].requestBytes / 1024 ** 2, rate),
    );
    const cgroupEnd = Object.fromEntries(watched.filter((w) => w.cgroup).map((w) => [w.name, w.cgroup!.read()]));
    const loadAtEnd = loadavg()[0]!;

    const missed: string[] = [];
    for (const j of judgements) {
      if (j.level !== 'level')
        missed.push(
          `${j.process}: heap after GC ${j.level}: ${j.slopeMBPerMin} ± ${j.standardErrorMBPerMin} MB/min over ${j.windowMinutes} min (want |slope| ≤ ${SLOPE_LIMIT_MB_PER_MIN}, standard error ≤ ${SLOPE_MAX_STANDARD_ERROR})`,
        );
      if (!j.underRequest)
        missed.push(
          `${j.process}: VmRSS ${j.maxRssMB} MB / working set ${j.maxWorkingSetMB ?? '-'} MB, want both < the chart's request ${j.requestMB} MB`,
        );
    }
    for (const [name, cg] of Object.entries(cgroupEnd))
      if (cg.oomKills > 0) missed.push(`${name}: ${cg.oomKills} OOM kills in the chart's limit`);
    if (errors.length)
      missed.push(`${errors.length} requests failed (first: ${errors[0]!.status} ${errors[0]!.text.slice(0, 200)})`);
    if (wronglyAdmitted.length)
      missed.push(
        `${wronglyAdmitted.length} requests admitted that had to be denied (first: ${wronglyAdmitted[0]!.kind})`,
      );
    if (wrongRule.length)
      missed.push(
        `${wrongRule.length} denials with another rule than expected (first: ${wrongRule[0]!.kind}: ${wrongRule[0]!.verdict})`,
      );
    if (minutes < FULL_MINUTES)
      missed.push(`a ${minutes}-minute run: a validation, the soak is judged on ${FULL_MINUTES} minutes`);

    const names = watched.map((w) => w.name);
    process.stderr.write(
      `\nsoak, ${minutes} min at ${rate} req/s (${traffic.answers.length} requests), load average ${loadAtStart.toFixed(2)} → ${loadAtEnd.toFixed(2)} (shared machine)\n`,
    );
    process.stderr.write(
      table(
        [
          'minute',
          'load',
          'requests',
          ...names.flatMap((n) => [`${n} heap MB`, `${n} RSS MB`, `${n} ws MB`]),
          'cached ns',
          'cached quotas',
        ],
        samples.map((s) => [
          s.minute.toFixed(1),
          s.load1,
          s.requests,
          ...names.flatMap((n) => [
            s.processes[n]?.heapMB.toFixed(2) ?? '-',
            s.processes[n]?.rssMB ?? '-',
            s.processes[n]?.workingSetMB ?? '-',
          ]),
          s.cache?.Namespace ?? '-',
          s.cache?.ResourceQuota ?? '-',
        ]),
      ),
    );
    process.stderr.write(
      `\nover the last ${window} minutes (slope level when |slope| ≤ ${SLOPE_LIMIT_MB_PER_MIN} MB/min with standard error ≤ ${SLOPE_MAX_STANDARD_ERROR})\n`,
    );
    process.stderr.write(
      table(
        [
          'process',
          'points',
          'heap slope MB/min',
          '± SE',
          'MB per 1,000 requests',
          'judged',
          'max RSS MB',
          'max ws MB',
          'request MB',
          'under request',
        ],
        judgements.map((j) => [
          j.process,
          j.points,
          j.slopeMBPerMin,
          j.standardErrorMBPerMin,
          j.slopeMBPer1000Requests,
          j.level,
          j.maxRssMB,
          j.maxWorkingSetMB ?? '-',
          j.requestMB,
          j.underRequest ? 'yes' : 'NO',
        ]),
      ),
    );
    process.stderr.write(
      `\nverdicts by kind: ${JSON.stringify(byKind)}\nproxy connections per replica: ${webhooks.proxy.connections.join(', ')}\n`,
    );
    mkdirSync(join(HERE, 'results'), { recursive: true });
    writeFileSync(
      RESULTS,
      JSON.stringify(
        {
          date: new Date().toISOString(),
          minutes,
          windowMinutes: window,
          rate,
          seed: SEED,
          loadAverage: { start: round1(loadAtStart), end: round1(loadAtEnd) },
          chartMemory: memory,
          requests: traffic.answers.length,
          verdicts: countBy(traffic.answers.map((a) => a.verdict)),
          byKind,
          errors: errors.slice(0, 20),
          wronglyAdmitted: wronglyAdmitted.length,
          proxyConnections: webhooks.proxy.connections,
          samples,
          judgements,
          cgroupEnd,
          cgroup: cgroupNote.length ? cgroupNote : 'one v1 memory cgroup per process, limited as the chart',
          missed,
        },
        null,
        2,
      ) + '\n',
    );
    log(`wrote ${RESULTS}`);
    return missed;
  } finally {
    for (const w of watched) {
      w.heap.close();
    }
    for (const c of Object.values(clients)) c.close();
    await webhooks?.stop();
    await controller?.stop();
    await cp.stop();
    for (const c of Object.values(cgroups)) c.remove();
  }
}
