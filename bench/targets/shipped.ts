/**
 * The configuration that ships, through the real apiserver: two `tenantgate webhook` processes (dist/,
 * the shipped tenantgate.yaml: headroom ledger on, client auth: reviews only from the apiserver's client
 * certificate) registered as the cluster's webhooks behind one address (a round-robin TCP proxy without
 * Nagle delay, as a Service), and `tenantgate controller` (dist/, its ServiceAccount, leader election:
 * it gives the new namespaces their quota and owners' binding), on the kubeadm-style local control
 * plane. Tenants' requests are real (not dry runs):
 *
 *   burst:   one owner creates 200 namespaces at once in a project with budget for 150 — how many are
 *            admitted, how many denied with Q1 / Q5, how long, how many ledger writes; then again in a
 *            project of its own with the other core busy (a second process spinning);
 *   steady:  a fixed rate of namespace creates and quota growths by owners, spread over 20 projects and
 *            concentrated on one, with the ledger on and off — webhook, kube-apiserver and etcd CPU per
 *            admitted growth, ledger writes and conflicts per admitted growth, client-side p50/p99; the
 *            one-project runs as shipped again with the other core busy (BENCH_SHIPPED_CONTENTION=0 leaves
 *            out both contended parts);
 *   in flight: as shipped (settling), one project at 200 changes a second and a 5,000-namespace sync
 *            of one project, with the ledger's largest size (bench/targets/shipped-in-flight.ts;
 *            BENCH_SHIPPED_IN_FLIGHT=0 leaves them out, BENCH_SHIPPED_STEADY=0 runs them without the steady runs),
 *            beside the same with the ledger off and two floors that are not tenantgate: no webhook
 *            registered, and a bare webhook that only parses and answers; each run counts the
 *            connections the apiserver opened to the webhooks and the reviews by kind;
 *   baseline: the CPU of one keep-alive node:https PUT of a ConfigMap through the same apiserver, measured
 *            in the same run at the same rate as the steady runs (open loop, not back to back), this
 *            process's idle CPU over as long a window subtracted (what one ledger write costs a lean
 *            client when every request pays its own wake-up, as the webhook's do).
 *
 * Each steady configuration and the baseline run BENCH_SHIPPED_RUNS (3) times; the tables give medians.
 * CPU per admitted growth is above idle: each run is preceded by an idle window of its processes
 * (webhooks, apiserver, etcd), whose rate is subtracted. The proxy's connections per replica are
 * reported per run (the apiserver keeps the connections it has, so the balance is by connection).
 *
 * Paired A/B (BENCH_SHIPPED_BASE=<commit>): after the burst, instead of the steady configurations, the
 * spread steady run (BENCH_SHIPPED_AB_SPREAD=one: the one-project run) as shipped (ledger on) alternates
 * between that commit's build and dist/ on the same
 * control plane, BENCH_SHIPPED_RUNS rounds, each round in the other order than the one before; writes
 * bench/results/shipped-ab.json (webhook CPU per admitted growth per round, ratio of the medians).
 *
 * Every verdict is checked: an admitted request must come back 201/200, a denial must name its rule.
 * Writes bench/results/shipped.json; `npm run bench -- shipped --check` exits 1 on a missed target.
 *   BENCH_SHIPPED_RATE=40 BENCH_SHIPPED_SECONDS=15 npm run bench -- shipped
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { withOtherCoreBusy } from '../lib/contention.js';
import { join } from 'node:path';
import { generateWebhookCerts, type WebhookCertFiles } from '../../src/certs/files.js';
import type { TenantgateConfig } from '../../src/config/config.js';
import type { ReservationOutcome } from '../../src/webhook/headroom/guard.js';
import type { RoundPhase } from '../../src/webhook/headroom/group-commit.js';
import type { CatchUpOutcome } from '../../src/kube/informers.js';
import { ControlPlane } from '../../test/support/devcluster/controlplane.js';
import { startWebhookReplicas, type WebhookReplicas } from '../../test/support/devcluster/replicas.js';
import {
  installBase,
  kubectlAs,
  registerWebhooks,
  unregisterWebhooks,
} from '../../test/support/devcluster/tenantgate.js';
import { startRoundRobinProxy, type RoundRobinProxy } from '../../test/support/devcluster/proxy.js';
import { ANNOTATION_PROJECT_UID, LABEL_PROJECT, LABEL_TENANT } from '../../src/validate/types.js';
import type { Managed } from '../../test/support/devcluster/processes.js';
import { apiAs, countBy, verdictOf, type Api, type ApiAnswer } from '../lib/api.js';
import { startShippedController } from '../lib/controller-process.js';
import { cachesHold } from '../lib/webhook-caches.js';
import {
  HERE,
  baseTenantgate,
  benchServer,
  env,
  median,
  procCpuSeconds,
  round1,
  round3,
  sleep,
  startChild,
  stats,
  table,
} from '../lib/measure.js';
import {
  HOT_RATES,
  SYNC_NAMESPACES,
  countsSince,
  hotProject,
  judgeInFlight,
  ledgerSize,
  nameOnly,
  namespaceSync,
  type InFlightMode,
  type InFlightRun,
  type LedgerSize,
  type NamespaceMetadata,
} from './shipped-in-flight.js';

const RESULTS = join(HERE, 'results', 'shipped.json');
const RATE = env('BENCH_SHIPPED_RATE', 40);
const SECONDS = env('BENCH_SHIPPED_SECONDS', 15);
const RUNS = Math.max(1, Math.round(env('BENCH_SHIPPED_RUNS', 3)));
/** The idle window before each measured run (its CPU rate is subtracted). */
const IDLE_MS = env('BENCH_SHIPPED_IDLE_S', 5) * 1000;
/** A commit to compare dist/ with, paired on one control plane (see the header). */
const BASE = process.env.BENCH_SHIPPED_BASE;
/** Which steady run the paired rounds make: over 20 projects (default) or one (`one`). */
const PAIRED_SPREAD: 'spread' | 'one project' =
  process.env.BENCH_SHIPPED_AB_SPREAD === 'one' ? 'one project' : 'spread';
const PROJECTS = 20;
const BURST = { creates: 200, room: 150 };
const TARGETS = { burstSeconds: 5, writesPerGrowth: 0.25, cpuVsBarePut: 1.5 };
const IN_FLIGHT = env('BENCH_SHIPPED_IN_FLIGHT', 1) !== 0;
/** BENCH_SHIPPED_STEADY=0 leaves the steady runs out (and with them the CPU target): the in-flight scenarios alone. */
const STEADY = env('BENCH_SHIPPED_STEADY', 1) !== 0;
/** BENCH_SHIPPED_SETTLEMENT=0: the steady runs' "ledger on" side runs with ledgerSettlement off (entries leave by expiry, as 0.2.0 shipped); by default it runs as shipped, settling. */
const STEADY_SETTLEMENT = env('BENCH_SHIPPED_SETTLEMENT', 1) !== 0;
/** BENCH_SHIPPED_EXPIRY=1 adds a third in-flight side: the ledger on with ledgerSettlement off (reported, not judged). */
const IN_FLIGHT_EXPIRY = env('BENCH_SHIPPED_EXPIRY', 0) !== 0;
/** BENCH_SHIPPED_FLOOR=0 leaves out the in-flight floors: no webhook registered (the apiserver, etcd and the controller alone), and the bare webhook. */
const IN_FLIGHT_FLOOR = env('BENCH_SHIPPED_FLOOR', 1) !== 0;
/** BENCH_SHIPPED_SIDES="ledger off,webhook off": only these in-flight sides (default: all); BENCH_SHIPPED_SYNC=0: the hot project only. */
const SIDES = process.env.BENCH_SHIPPED_SIDES?.split(',').map((side) => side.trim());
const SYNC = env('BENCH_SHIPPED_SYNC', 1) !== 0;
/** BENCH_SHIPPED_BARE_DIRECT=1: the apiserver calls the first bare server itself, no proxy between (what the proxy costs). */
const BARE_DIRECT = env('BENCH_SHIPPED_BARE_DIRECT', 0) !== 0;
/** BENCH_SHIPPED_CONTENTION=0 leaves out the burst and the one-project steady runs with the other core busy. */
const CONTENTION = env('BENCH_SHIPPED_CONTENTION', 1) !== 0;
/** The steady mode as shipped, run again with a second process spinning on the other core. */
const CONTENDED = 'shipped (ledger on), other core busy';
/** BENCH_SHIPPED_PROFILE=1: the replicas run with --cpu-prof (a profile each; bench/lib/profile.ts reads them). */
const PROFILE = env('BENCH_SHIPPED_PROFILE', 0) !== 0;
const OWNERS = [{ kind: 'Group', name: 'acme:payments-admins' }];

const log = (m: string) => process.stderr.write(`[bench/shipped ${new Date().toISOString().slice(11, 19)}] ${m}\n`);

async function metricSum(webhooks: WebhookReplicas, metric: RegExp): Promise<number> {
  return (await webhooks.scrape(metric)).reduce((a, b) => a + b, 0);
}
const LEDGER_WRITES = /^tenantgate_webhook_ledger_batch_size_count /;
const REVIEWS = /^tenantgate_webhook_requests_total\{/;
/** The reviews by path, operation and kind (the label order of tenantgate_webhook_requests_total), and all of them. */
const ALL_REVIEWS = 'all';
const REVIEW_KINDS: Readonly<Record<string, RegExp>> = Object.fromEntries([
  [ALL_REVIEWS, REVIEWS],
  ...['validate', 'mutate'].flatMap((path) =>
    ['CREATE', 'UPDATE', 'DELETE'].flatMap((operation) =>
      ['Namespace', 'ResourceQuota', 'Project', 'RoleBinding', 'LimitRange', 'NetworkPolicy'].map(
        (kind) =>
          [
            `${path} ${operation} ${kind}`,
            new RegExp(`^tenantgate_webhook_requests_total\\{path="${path}",operation="${operation}",kind="${kind}",`),
          ] as const,
      ),
    ),
  ),
]);
/** Every outcome the guard counts in tenantgate_webhook_reservations_total. */
const OUTCOMES = [
  'reserved',
  'conflict',
  'announced',
  'exhausted',
  'error',
  'timeout',
  'behind',
] as const satisfies readonly ReservationOutcome[];
const outcomeMetric = (outcome: ReservationOutcome) =>
  new RegExp(`^tenantgate_webhook_reservations_total\\{outcome="${outcome}"\\}`);
/** Every phase of a ledger round (tenantgate_webhook_ledger_round_phase_seconds) and every catch-up outcome. */
const PHASES = ['queued', 'turn', 'read', 'ready', 'decide', 'write', 'lost'] as const satisfies readonly RoundPhase[];
const CATCH_UPS = ['streamed', 'probed', 'behind'] as const satisfies readonly CatchUpOutcome[];
/**
 * The guard's reservation outcomes, and where its batches' time went, summed over the replicas:
 * `<phase> ms` (total milliseconds in the phase) and `<phase> rounds`, `catch-up <outcome>`.
 */
const OUTCOME_METRICS: Readonly<Record<string, RegExp>> = Object.fromEntries([
  ...OUTCOMES.map((o) => [o, outcomeMetric(o)]),
  ...PHASES.flatMap((p) => [
    [`${p} s`, new RegExp(`^tenantgate_webhook_ledger_round_phase_seconds_sum\\{phase="${p}"\\}`)],
    [`${p} rounds`, new RegExp(`^tenantgate_webhook_ledger_round_phase_seconds_count\\{phase="${p}"\\}`)],
  ]),
  ...CATCH_UPS.map((c) => [`catch-up ${c}`, new RegExp(`^tenantgate_webhook_catch_ups_total\\{outcome="${c}"\\}`)]),
]);
async function outcomeCounts(webhooks: WebhookReplicas): Promise<Record<string, number>> {
  const sums = await webhooks.scrapeSums(OUTCOME_METRICS);
  // Seconds become whole milliseconds, the unit the runs report.
  return Object.fromEntries(
    Object.entries(sums).map(([key, v]) =>
      key.endsWith(' s') ? [`${key.slice(0, -2)} ms`, Math.round(1000 * v)] : [key, v],
    ),
  );
}

async function project(cp: ControlPlane, name: string, budgetCpu: string, defaultCpu: string): Promise<void> {
  const body = {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name },
    spec: {
      tenant: 'acme',
      owners: OWNERS,
      quota: { hard: { 'requests.cpu': budgetCpu, pods: '100000' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': defaultCpu, pods: '10' } } },
    },
  };
  await kubectlAs(cp.info, 'admin', ['apply', '-f', '-'], JSON.stringify(body));
}

// --- burst ----------------------------------------------------------------------------------------

interface BurstOptions {
  name: string;
  /** The Projects the run made before this one. */
  projectsBefore: number;
  withLoad: <T>(work: () => Promise<T>) => Promise<T>;
}

const unloaded = <T>(work: () => Promise<T>): Promise<T> => work();

/**
 * The burst in a project of its own, `name`, the `projectsBefore`-th the run makes (the replicas' caches must
 * hold it first); `withLoad` runs around the creates only, as the contended burst spins a core.
 */
async function burst(
  cp: ControlPlane,
  webhooks: WebhookReplicas,
  alice: Api,
  { name, projectsBefore, withLoad }: BurstOptions,
) {
  await project(cp, name, String(BURST.room), '1');
  await cachesHold(webhooks, 'Project', projectsBefore + 1);
  const writesBefore = await metricSum(webhooks, LEDGER_WRITES);
  const started = performance.now();
  const results = await withLoad(() =>
    Promise.all(
      Array.from({ length: BURST.creates }, (_, i) =>
        alice.call('POST', '/api/v1/namespaces', { metadata: { name: `${name}-n${i}` } }),
      ),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  const verdicts = results.map(verdictOf);
  const writes = (await metricSum(webhooks, LEDGER_WRITES)) - writesBefore;
  const counts = countBy(verdicts);
  const admitted = counts.admitted ?? 0;
  const existing = Number(
    (
      await kubectlAs(cp.info, 'admin', ['get', 'namespaces', '-l', `tenantgate.io/project=${name}`, '-o', 'name'])
    ).stdout
      .trim()
      .split('\n')
      .filter(Boolean).length,
  );
  return {
    creates: BURST.creates,
    room: BURST.room,
    seconds: round3(seconds),
    counts,
    admitted,
    existing,
    ledgerWrites: writes,
    writesPerAdmitted: round3(writes / Math.max(1, admitted)),
  };
}

// --- steady ---------------------------------------------------------------------------------------

interface SteadyRun {
  mode: string;
  spread: 'spread' | 'one project';
  run: number;
  offered: number;
  counts: Record<string, number>;
  admittedGrowths: number;
  latencyMs: ReturnType<typeof stats>;
  /** CPU above each process's idle rate (measured just before), ms per admitted growth. */
  cpuMsPerGrowth: { webhook: number; apiserver: number; etcd: number; controller: number };
  /** The idle rates subtracted, ms of CPU per second. */
  idleCpuMsPerS: { webhook: number; apiserver: number; etcd: number; controller: number };
  ledgerWritesPerGrowth: number;
  conflictsPerGrowth: number;
  /**
   * Admission reviews the replicas answered per admitted growth (the growth's own, and those of the
   * objects the controller makes for a new namespace), and the webhook's CPU per review: what one
   * review costs against one bare PUT.
   */
  reviewsPerGrowth: number;
  webhookCpuMsPerReview: number;
  /** New connections the proxy gave each replica during the run. */
  proxyConnections: number[];
  /** The guard's reservation outcomes during the run, summed over the replicas (what a [Q5] came from: timeout, exhausted, error). */
  reservationOutcomes: Record<string, number>;
  /** The first target project's ledger ConfigMap as the last request was sent (undefined: none, the ledger off). */
  ledger?: LedgerSize;
}

let nameSeq = 0;

type CpuGroups = Record<'webhook' | 'apiserver' | 'etcd' | 'controller', number[]>;
const cpuOf = (groups: CpuGroups) =>
  Object.fromEntries(
    Object.entries(groups).map(([k, pids]) => [k, pids.reduce((s, pid) => s + procCpuSeconds(pid), 0)]),
  ) as Record<keyof CpuGroups, number>;

/** CPU seconds per second of each group over `ms`. */
async function rates(groups: CpuGroups, ms: number): Promise<Record<keyof CpuGroups, number>> {
  const c0 = cpuOf(groups);
  const t0 = performance.now();
  await sleep(ms);
  const c1 = cpuOf(groups);
  const s = (performance.now() - t0) / 1000;
  return Object.fromEntries(
    Object.keys(groups).map((k) => [k, (c1[k as keyof CpuGroups] - c0[k as keyof CpuGroups]) / s]),
  ) as Record<keyof CpuGroups, number>;
}

const coresOf = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
/** Below this (cores, all groups together) the processes count as idle: watches, leases, timers. */
const QUIET_CORES = 0.1;

/**
 * The idle rate of each group: first the work the last run left behind (the controller's quotas and
 * bindings for its namespaces, the namespace controller, the quota controller) must end — 1 s windows
 * until the groups together use < QUIET_CORES, at most 60 s — then one window of IDLE_MS. Without the
 * wait, a run's tail counted as "idle" and was subtracted from the next run.
 */
async function idleRates(groups: CpuGroups): Promise<Record<keyof CpuGroups, number>> {
  const deadline = Date.now() + 60_000;
  let last = await rates(groups, 1000);
  while (coresOf(last) >= QUIET_CORES && Date.now() < deadline) last = await rates(groups, 1000);
  if (coresOf(last) >= QUIET_CORES) log(`not quiet after 60 s: ${JSON.stringify(last)} cores; measuring idle anyway`);
  return rates(groups, IDLE_MS);
}

async function steady(
  cp: ControlPlane,
  webhooks: WebhookReplicas,
  controllerPid: number,
  alice: Api,
  admin: Api,
  mode: string,
  spread: SteadyRun['spread'],
  run: number,
  projects: string[],
  namespaces: Map<string, string[]>,
  quotaCpu: Map<string, number>,
): Promise<SteadyRun> {
  const targets = spread === 'spread' ? projects : projects.slice(0, 1);
  const groups: CpuGroups = {
    webhook: webhooks.replicas.map((r) => r.process.pid),
    apiserver: [cp.pid('kube-apiserver')],
    etcd: [cp.pid('etcd')],
    controller: [controllerPid],
  };
  const growth = (i: number): Promise<ApiAnswer> => {
    const p = targets[i % targets.length]!;
    if (i % 2 === 0) return alice.call('POST', '/api/v1/namespaces', { metadata: { name: `${p}-s${nameSeq++}` } });
    const list = namespaces.get(p)!;
    const ns = list[Math.floor(i / 2 / targets.length) % list.length]!;
    const next = (quotaCpu.get(ns) ?? 100) + 10;
    quotaCpu.set(ns, next);
    return alice.call(
      'PATCH',
      `/api/v1/namespaces/${ns}/resourcequotas/tenantgate-quota`,
      { spec: { hard: { 'requests.cpu': `${next}m` } } },
      'application/merge-patch+json',
    );
  };
  // Warm-up (not counted), quiet, the idle window, then a fixed rate: one request every 1000/RATE ms whatever the answers.
  await Promise.all(Array.from({ length: 10 }, (_, i) => growth(i)));
  const idle = await idleRates(groups);
  const outcomes0 = await outcomeCounts(webhooks);
  const [writes0, reviews0, cpu0] = [
    await metricSum(webhooks, LEDGER_WRITES),
    await metricSum(webhooks, REVIEWS),
    cpuOf(groups),
  ];
  const connections0 = [...webhooks.proxy.connections];
  const total = RATE * SECONDS;
  const inflight: Array<Promise<ApiAnswer>> = [];
  const t0 = performance.now();
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    inflight.push(growth(10 + i));
  }
  // With the ledger off the ConfigMap an earlier configuration left is not written: nothing to read.
  const ledger = mode === 'ledger off' ? undefined : await ledgerSize(admin, targets[0]!);
  const results = await Promise.all(inflight);
  const cpu1 = cpuOf(groups);
  const elapsedS = (performance.now() - t0) / 1000;
  const writes1 = await metricSum(webhooks, LEDGER_WRITES);
  const reviews = (await metricSum(webhooks, REVIEWS)) - reviews0;
  const outcomes1 = await outcomeCounts(webhooks);
  const reservationOutcomes = Object.fromEntries(OUTCOMES.map((o) => [o, (outcomes1[o] ?? 0) - (outcomes0[o] ?? 0)]));
  const verdicts = results.map(verdictOf);
  const counts = countBy(verdicts);
  const firstError = results.find((r, i) => verdicts[i] === 'error');
  if (firstError) log(`${mode}, ${spread}: first error ${firstError.status} ${firstError.text.slice(0, 300)}`);
  const admitted = counts.admitted ?? 0;
  const per = (k: keyof CpuGroups) =>
    round3((Math.max(0, cpu1[k] - cpu0[k] - idle[k] * elapsedS) * 1000) / Math.max(1, admitted));
  return {
    mode,
    spread,
    run,
    offered: total,
    counts,
    admittedGrowths: admitted,
    latencyMs: stats(results.map((r) => r.ms)),
    cpuMsPerGrowth: {
      webhook: per('webhook'),
      apiserver: per('apiserver'),
      etcd: per('etcd'),
      controller: per('controller'),
    },
    idleCpuMsPerS: {
      webhook: round3(idle.webhook * 1000),
      apiserver: round3(idle.apiserver * 1000),
      etcd: round3(idle.etcd * 1000),
      controller: round3(idle.controller * 1000),
    },
    ledgerWritesPerGrowth: round3((writes1 - writes0) / Math.max(1, admitted)),
    conflictsPerGrowth: round3((reservationOutcomes.conflict ?? 0) / Math.max(1, admitted)),
    reviewsPerGrowth: round3(reviews / Math.max(1, admitted)),
    webhookCpuMsPerReview: round3(
      (Math.max(0, cpu1.webhook - cpu0.webhook - idle.webhook * elapsedS) * 1000) / Math.max(1, reviews),
    ),
    proxyConnections: webhooks.proxy.connections.map((n, i) => n - (connections0[i] ?? 0)),
    reservationOutcomes,
    ...(ledger ? { ledger } : {}),
  };
}

interface BareRun {
  cpuMsPerPut: number;
  idleCpuMsPerS: number;
  latencyMs: number;
}

/**
 * CPU of this process per keep-alive PUT of a ConfigMap through the apiserver, at the steady runs'
 * rate (open loop: one PUT every 1000/RATE ms for SECONDS), this process's idle CPU rate (measured over
 * IDLE_MS just before) subtracted. One run; main() takes the median of RUNS.
 */
async function barePut(admin: Api, run: number): Promise<BareRun> {
  const path = '/api/v1/namespaces/tenantgate-system/configmaps/bench-bare-put';
  if (run === 1)
    await admin.call('POST', '/api/v1/namespaces/tenantgate-system/configmaps', {
      metadata: { name: 'bench-bare-put' },
      data: { n: '0' },
    });
  const put = (n: number) =>
    admin.call('PUT', path, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'bench-bare-put', namespace: 'tenantgate-system' },
      data: { n: String(n) },
    });
  for (let i = 0; i < 10; i++) await put(-i); // warm-up: the connection and the code paths
  const idle0 = process.cpuUsage();
  const tIdle = performance.now();
  await sleep(IDLE_MS);
  const idleUsed = process.cpuUsage(idle0);
  const idleRate = (idleUsed.user + idleUsed.system) / 1000 / (performance.now() - tIdle); // ms per ms
  const before = process.cpuUsage();
  const t0 = performance.now();
  const total = RATE * SECONDS;
  const inflight: Array<Promise<ApiAnswer>> = [];
  for (let i = 0; i < total; i++) {
    const wait = t0 + (i * 1000) / RATE - performance.now();
    if (wait > 0) await sleep(wait);
    inflight.push(put(i));
  }
  const answers = await Promise.all(inflight);
  const used = process.cpuUsage(before);
  const elapsedMs = performance.now() - t0;
  const bad = answers.find((r) => r.status !== 200);
  if (bad) throw new Error(`bare PUT answered ${bad.status}: ${bad.text.slice(0, 200)}`);
  const cpuMs = Math.max(0, (used.user + used.system) / 1000 - idleRate * elapsedMs);
  return {
    cpuMsPerPut: round3(cpuMs / total),
    idleCpuMsPerS: round3(idleRate * 1000),
    latencyMs: round3(median(answers.map((r) => r.ms))),
  };
}

/** Median of each numeric field over the runs of one configuration. */
function medianRun(runs: SteadyRun[]): SteadyRun & { runs: number } {
  const m = (f: (r: SteadyRun) => number) => round3(median(runs.map(f)));
  const first = runs[0]!;
  return {
    ...first,
    run: 0,
    runs: runs.length,
    counts: Object.fromEntries(
      [...new Set(runs.flatMap((r) => Object.keys(r.counts)))].map((k) => [
        k,
        runs.reduce((a, r) => a + (r.counts[k] ?? 0), 0),
      ]),
    ),
    admittedGrowths: runs.reduce((a, r) => a + r.admittedGrowths, 0),
    offered: runs.reduce((a, r) => a + r.offered, 0),
    latencyMs: { ...first.latencyMs, p50: m((r) => r.latencyMs.p50), p99: m((r) => r.latencyMs.p99) },
    cpuMsPerGrowth: {
      webhook: m((r) => r.cpuMsPerGrowth.webhook),
      apiserver: m((r) => r.cpuMsPerGrowth.apiserver),
      etcd: m((r) => r.cpuMsPerGrowth.etcd),
      controller: m((r) => r.cpuMsPerGrowth.controller),
    },
    idleCpuMsPerS: {
      webhook: m((r) => r.idleCpuMsPerS.webhook),
      apiserver: m((r) => r.idleCpuMsPerS.apiserver),
      etcd: m((r) => r.idleCpuMsPerS.etcd),
      controller: m((r) => r.idleCpuMsPerS.controller),
    },
    ledgerWritesPerGrowth: m((r) => r.ledgerWritesPerGrowth),
    conflictsPerGrowth: m((r) => r.conflictsPerGrowth),
    reviewsPerGrowth: m((r) => r.reviewsPerGrowth),
    webhookCpuMsPerReview: m((r) => r.webhookCpuMsPerReview),
    proxyConnections: runs[0]!.proxyConnections.map((_, i) =>
      runs.reduce((a, r) => a + (r.proxyConnections[i] ?? 0), 0),
    ),
    reservationOutcomes: Object.fromEntries(
      OUTCOMES.map((o) => [o, runs.reduce((a, r) => a + (r.reservationOutcomes[o] ?? 0), 0)]),
    ),
    // The largest ledger any of the runs left.
    ledger: runs
      .map((r) => r.ledger)
      .filter((l) => l !== undefined)
      .sort((a, b) => b.bytes - a.bytes)[0],
  };
}

/** The proxy's cut connections since `before`, only the kinds that happened. */
const failuresSince = (before: Record<string, number>, after: Record<string, number>) =>
  Object.fromEntries(Object.entries(countsSince(before, after)).filter(([, n]) => n > 0));
const sum = (ns: readonly number[]) => ns.reduce((a, b) => a + b, 0);

/**
 * A run through webhook servers behind `proxy`, with what the proxy saw meanwhile: connections the
 * apiserver opened (each a TLS handshake at a server), connections the proxy cut, and the reviews the
 * servers answered when they count them.
 */
async function throughProxy(
  proxy: RoundRobinProxy,
  run: () => Promise<InFlightRun>,
  reviews?: () => Promise<Record<string, number>>,
): Promise<InFlightRun> {
  const failures0 = { ...proxy.failures };
  const connections0 = sum(proxy.connections);
  const reviews0 = await reviews?.();
  const result = await run();
  const byKind =
    reviews && reviews0
      ? Object.fromEntries(Object.entries(countsSince(reviews0, await reviews())).filter(([, n]) => n > 0))
      : undefined;
  const answered = byKind
    ? {
        reviews: byKind[ALL_REVIEWS] ?? 0,
        reviewsByKind: Object.fromEntries(Object.entries(byKind).filter(([key]) => key !== ALL_REVIEWS)),
      }
    : {};
  return {
    ...result,
    proxyFailures: failuresSince(failures0, proxy.failures),
    connectionsOpened: sum(proxy.connections) - connections0,
    ...answered,
  };
}

interface BareWebhooks {
  proxy: RoundRobinProxy;
  stop(): Promise<void>;
}

/** Two bare servers (bench/lib/webhook-server.ts `bare`: parse each review, answer allowed) behind a proxy, registered as tenantgate is. */
async function startBareWebhooks(cp: ControlPlane, certs: WebhookCertFiles): Promise<BareWebhooks> {
  const srv = benchServer('shipped');
  const servers = await Promise.all(
    [0, 1].map((i) =>
      startChild(
        srv.nodeArgs,
        [srv.script, 'bare', '--cert', certs.cert, '--key', certs.key],
        join(cp.info.dir, `bare-webhook-${i}.log`),
      ),
    ),
  );
  const proxy = await startRoundRobinProxy(servers.map((s) => s.port));
  await registerWebhooks(cp.info, `https://127.0.0.1:${BARE_DIRECT ? servers[0]!.port : proxy.port}`, certs.caBundle);
  return {
    proxy,
    async stop() {
      await unregisterWebhooks(cp.info);
      await proxy.close();
      for (const s of servers) await s.stop();
    },
  };
}

/** Creates a namespace as `api`, retrying a refusal for up to 60 s (setup on a machine that may still be busy). */
async function createNamespaceRetrying(api: Api, metadata: ReturnType<NamespaceMetadata>): Promise<void> {
  const { name } = metadata;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const r = await api.call('POST', '/api/v1/namespaces', { metadata });
    if (r.status === 201 || (r.status === 409 && /already exists/.test(r.text))) return;
    if (Date.now() > deadline) throw new Error(`creating ${name}: ${r.status} ${r.text.slice(0, 300)}`);
    await sleep(1000);
  }
}

/**
 * With no webhook registered, a namespace's metadata as the webhook's mutation would have made it
 * (src/mutate/mutate.ts: the project and tenant labels, the project-uid annotation), so the controller
 * adopts it and does the same work as with the webhook on.
 */
async function asTheWebhookWouldLabel(cp: ControlPlane, project: string): Promise<NamespaceMetadata> {
  const uid = (
    await kubectlAs(cp.info, 'admin', ['get', 'project', project, '-o', 'jsonpath={.metadata.uid}'])
  ).stdout.trim();
  if (!uid) throw new Error(`project ${project} has no uid`);
  return (name) => ({
    name,
    labels: { [LABEL_PROJECT]: project, [LABEL_TENANT]: 'acme' },
    annotations: { [ANNOTATION_PROJECT_UID]: uid },
  });
}

/** Waits until the controller gave every namespace its quota `tenantgate-quota`. */
async function quotasMade(cp: ControlPlane, names: string[]): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (const ns of names) {
    while (
      (await kubectlAs(cp.info, 'admin', ['-n', ns, 'get', 'resourcequota', 'tenantgate-quota', '-o', 'name']).then(
        (r) => r.stdout.trim(),
        () => '',
      )) === ''
    ) {
      if (Date.now() > deadline) throw new Error(`the controller made no tenantgate-quota in ${ns} within 120 s`);
      await sleep(250);
    }
  }
}

export async function main(): Promise<string[]> {
  const loadAtStart = loadavg()[0]!;
  log(
    `load average at start ${loadAtStart.toFixed(2)} (a shared machine); ${RATE} req/s for ${SECONDS} s, ${RUNS} runs of each configuration`,
  );
  const cp = await ControlPlane.start({ log });
  let webhooks: WebhookReplicas | undefined;
  let controller: Managed | undefined;
  try {
    await installBase(cp.info);
    const ca = await readFile(cp.info.caFile);
    const alice = apiAs(cp.info.server, ca, cp.info.tokens.alice!);
    const admin = apiAs(cp.info.server, ca, cp.info.tokens.admin!);
    controller = (await startShippedController(cp, { name: 'shipped-controller' })).process;
    const certs = await generateWebhookCerts(join(cp.info.dir, 'shipped-certs'));
    const start = async (config: Partial<TenantgateConfig>, name: string) => {
      await webhooks?.stop();
      // BENCH_SHIPPED_PROFILE=1: each replica writes a V8 CPU profile into bench/results/profiles/shipped/<name>/ when it stops.
      const nodeArgs = PROFILE
        ? ['--cpu-prof', `--cpu-prof-dir=${join(HERE, 'results', 'profiles', 'shipped', name)}`]
        : [];
      webhooks = await startWebhookReplicas(cp.info, certs, config, { name, nodeArgs });
      return webhooks;
    };

    const bareRuns: BareRun[] = [];
    for (let run = 1; run <= RUNS; run++) {
      bareRuns.push(await barePut(admin, run));
      log(`bare keep-alive PUT at ${RATE}/s, run ${run}: ${JSON.stringify(bareRuns[bareRuns.length - 1])}`);
    }
    const bare = {
      cpuMsPerPut: round3(median(bareRuns.map((r) => r.cpuMsPerPut))),
      idleCpuMsPerS: round3(median(bareRuns.map((r) => r.idleCpuMsPerS))),
      latencyMs: round3(median(bareRuns.map((r) => r.latencyMs))),
      runs: bareRuns,
    };
    log(
      `bare keep-alive PUT at ${RATE}/s (median of ${RUNS}): ${bare.cpuMsPerPut} ms client CPU above idle, ${bare.latencyMs} ms`,
    );

    let hooks = await start({}, 'shipped');
    const burstResult = await burst(cp, hooks, alice, { name: 'burst', projectsBefore: 0, withLoad: unloaded });
    log(`burst: ${JSON.stringify(burstResult)}; proxy connections per replica ${hooks.proxy.connections.join(', ')}`);
    const busyBurst = CONTENTION
      ? await burst(cp, hooks, alice, { name: 'burstbusy', projectsBefore: 1, withLoad: withOtherCoreBusy })
      : undefined;
    if (busyBurst) log(`burst, other core busy: ${JSON.stringify(busyBurst)}`);
    const burstProjects = busyBurst ? 2 : 1;

    // Projects for the steady runs, each with 5 namespaces made by its owner; the controller gives
    // each its quota (namespaceDefaults: 100m, 10 pods) and the owners' RoleBinding.
    const projects = Array.from({ length: PROJECTS }, (_, i) => `sp${i}`);
    for (const p of projects) await project(cp, p, '100000', '100m');
    await cachesHold(hooks, 'Project', PROJECTS + burstProjects);
    const namespaces = new Map<string, string[]>();
    for (const p of projects) {
      const names = Array.from({ length: 5 }, (_, i) => `${p}-base${i}`);
      for (const name of names) {
        const r = await alice.call('POST', '/api/v1/namespaces', { metadata: { name } });
        if (r.status !== 201) throw new Error(`creating ${name}: ${r.status} ${r.text.slice(0, 300)}`);
      }
      namespaces.set(p, names);
    }
    await quotasMade(cp, [...namespaces.values()].flat());
    await cachesHold(hooks, 'ResourceQuota', PROJECTS * 5);

    const quotaCpu = new Map<string, number>();
    if (BASE) {
      const base = baseTenantgate('shipped', BASE);
      const sides = [
        { label: `base ${base.sha.slice(0, 12)}`, cli: base.cli },
        { label: 'dist/', cli: undefined },
      ];
      const paired: SteadyRun[] = [];
      for (let round = 1; round <= RUNS; round++) {
        for (const side of round % 2 === 1 ? sides : [...sides].reverse()) {
          await webhooks?.stop();
          webhooks = await startWebhookReplicas(
            cp.info,
            certs,
            {},
            { name: `ab-${round}-${side.cli ? 'base' : 'dist'}`, ...(side.cli ? { cli: side.cli } : {}) },
          );
          await cachesHold(webhooks, 'ResourceQuota', PROJECTS * 5);
          const r = await steady(
            cp,
            webhooks,
            controller.pid,
            alice,
            admin,
            side.label,
            PAIRED_SPREAD,
            round,
            projects,
            namespaces,
            quotaCpu,
          );
          log(`paired round ${round}, ${side.label}: ${JSON.stringify(r)}`);
          paired.push(r);
        }
      }
      const cpuOfSide = (label: string) => paired.filter((r) => r.mode === label).map((r) => r.cpuMsPerGrowth.webhook);
      const [baseCpu, distCpu] = [cpuOfSide(sides[0]!.label), cpuOfSide(sides[1]!.label)];
      const ratio = round3(median(distCpu) / median(baseCpu));
      const lower = distCpu.filter((c, i) => c < baseCpu[i]!).length;
      process.stderr.write(
        `\npaired, ${PAIRED_SPREAD}, ledger on, ${RATE} req/s for ${SECONDS} s per round: webhook CPU ms per admitted growth above idle\n`,
      );
      process.stderr.write(
        table(
          [
            'build',
            ...paired.filter((r) => r.mode === sides[0]!.label).map((r) => `round ${r.run}`),
            'median',
            'p50 ms (median)',
          ],
          sides.map((side, i) => [
            side.label,
            ...(i === 0 ? baseCpu : distCpu),
            round3(median(i === 0 ? baseCpu : distCpu)),
            round3(median(paired.filter((r) => r.mode === side.label).map((r) => r.latencyMs.p50))),
          ]),
        ),
      );
      process.stderr.write(`\ndist/ ÷ base: ${ratio} (medians); dist/ lower in ${lower} of ${RUNS} rounds\n`);
      const refused = (label: string) => paired.filter((r) => r.mode === label).map((r) => r.counts['denied Q5'] ?? 0);
      process.stderr.write(
        `[Q5] refusals per round: ${sides.map((side) => `${side.label} ${refused(side.label).join(' / ')}`).join('; ')}\n`,
      );
      const errors = paired.reduce((a, r) => a + (r.counts.error ?? 0), 0);
      mkdirSync(join(HERE, 'results'), { recursive: true });
      writeFileSync(
        join(HERE, 'results', 'shipped-ab.json'),
        JSON.stringify(
          {
            date: new Date().toISOString(),
            loadAverage: { start: round1(loadAtStart), end: round1(loadavg()[0]!) },
            base: base.sha,
            spread: PAIRED_SPREAD,
            rate: RATE,
            seconds: SECONDS,
            rounds: RUNS,
            ratio,
            lowerRounds: lower,
            paired,
          },
          null,
          2,
        ),
      );
      alice.close();
      admin.close();
      return errors > 0 ? [`paired: ${errors} requests neither admitted nor denied with a rule`] : [];
    }
    const runs: SteadyRun[] = [];
    for (const [mode, config] of STEADY
      ? ([
          ['shipped (ledger on)', STEADY_SETTLEMENT ? {} : { ledgerSettlement: false }],
          ['ledger off', { crossReplicaReservation: false }],
        ] as const)
      : []) {
      hooks = await start(config, mode === 'ledger off' ? 'no-ledger' : 'shipped-steady');
      for (const spread of ['spread', 'one project'] as const) {
        for (let run = 1; run <= RUNS; run++) {
          const r = await steady(
            cp,
            hooks,
            controller.pid,
            alice,
            admin,
            mode,
            spread,
            run,
            projects,
            namespaces,
            quotaCpu,
          );
          log(`${mode}, ${spread}, run ${run}: ${JSON.stringify(r)}`);
          runs.push(r);
        }
      }
    }
    if (STEADY && CONTENTION) {
      const busyHooks = (hooks = await start({}, 'shipped-busy'));
      const controllerPid = controller.pid;
      for (let run = 1; run <= RUNS; run++) {
        const r = await withOtherCoreBusy(() =>
          steady(
            cp,
            busyHooks,
            controllerPid,
            alice,
            admin,
            CONTENDED,
            'one project',
            run,
            projects,
            namespaces,
            quotaCpu,
          ),
        );
        log(`${CONTENDED}, one project, run ${run}: ${JSON.stringify(r)}`);
        runs.push(r);
      }
    }
    // The ledger bounded by what is in flight (ADR 0003): as shipped (settlement on, ADR 0003), beside
    // the same scenarios with the ledger off (the baseline: what the machine carries without it). Each
    // side has projects of its own, so a ledger an earlier run left is not measured.
    const inFlight: InFlightRun[] = [];
    if (IN_FLIGHT) {
      const sides: [InFlightMode, Partial<TenantgateConfig>, string, string][] = [
        ['ledger off', { crossReplicaReservation: false }, 'offhot', 'offsync'],
        ['settlement on', {}, 'hot', 'sync'],
      ];
      // The floors first, on the emptiest cluster: no webhook registered at all, then a webhook that answers allowed.
      if (IN_FLIGHT_FLOOR)
        sides.unshift(['webhook off', {}, 'nonehot', 'nonesync'], ['bare webhook', {}, 'barehot', 'baresync']);
      if (IN_FLIGHT_EXPIRY) sides.push(['settlement off', { ledgerSettlement: false }, 'exphot', 'expsync']);
      let made = PROJECTS + burstProjects;
      for (const [mode, config, hotName, syncName] of sides.filter(
        ([mode]) => SIDES === undefined || SIDES.includes(mode),
      )) {
        // Not tenantgate: no webhook, or the bare one; the requests then carry what tenantgate's mutation adds.
        const floor = mode === 'webhook off' || mode === 'bare webhook';
        let bare: BareWebhooks | undefined;
        if (floor) {
          await webhooks?.stop();
          webhooks = undefined;
          await unregisterWebhooks(cp.info);
          if (mode === 'bare webhook') bare = await startBareWebhooks(cp, certs);
        } else
          hooks = await start(
            config,
            { 'ledger off': 'in-flight-off', 'settlement on': 'in-flight', 'settlement off': 'in-flight-expiry' }[mode],
          );
        // A hot project of its own per rate, so that no rate starts from the ledger another left.
        const hotNames = HOT_RATES.map((rate) => `${hotName}${rate}`);
        for (const name of [...hotNames, syncName]) await project(cp, name, '100000', '100m');
        made += hotNames.length + 1;
        if (!floor) await cachesHold(hooks, 'Project', made);
        const syncMetadata = floor ? await asTheWebhookWouldLabel(cp, syncName) : nameOnly;
        const outcomes = floor ? async () => ({}) : () => outcomeCounts(hooks);
        const replicas = hooks;
        const measured = (run: () => Promise<InFlightRun>) =>
          bare
            ? throughProxy(bare.proxy, run)
            : floor
              ? run()
              : throughProxy(replicas.proxy, run, () => replicas.scrapeSums(REVIEW_KINDS));
        for (const [i, rate] of HOT_RATES.entries()) {
          const name = hotNames[i]!;
          const hotMetadata = floor ? await asTheWebhookWouldLabel(cp, name) : nameOnly;
          const hotNamespaces = Array.from({ length: 5 }, (_, n) => `${name}-base${n}`);
          // Setup, not measurement: the machine may still be busy with the side before, so a refusal is retried.
          for (const ns of hotNamespaces) await createNamespaceRetrying(alice, hotMetadata(ns));
          await quotasMade(cp, hotNamespaces);
          if (!floor)
            await cachesHold(
              hooks,
              'ResourceQuota',
              PROJECTS * 5 + 5 * inFlight.filter((r) => r.scenario === 'hot project').length + 5,
            );
          inFlight.push(
            await measured(() =>
              hotProject(rate, mode, alice, admin, name, hotNamespaces, SECONDS, quotaCpu, outcomes, hotMetadata),
            ),
          );
          log(`in flight, ${mode}, hot project at ${rate}/s: ${JSON.stringify(inFlight.at(-1))}`);
        }
        if (SYNC) {
          inFlight.push(await measured(() => namespaceSync(mode, alice, admin, syncName, outcomes, syncMetadata)));
          log(`in flight, ${mode}, sync: ${JSON.stringify(inFlight.at(-1))}`);
        }
        await bare?.stop();
      }
    }
    const medians = (STEADY ? ['shipped (ledger on)', 'ledger off', CONTENDED] : []).flatMap((mode) =>
      (['spread', 'one project'] as const)
        .map((spread) => runs.filter((r) => r.mode === mode && r.spread === spread))
        .filter((group) => group.length > 0)
        .map(medianRun),
    );

    const missed: string[] = [];
    if (burstResult.admitted !== BURST.room)
      missed.push(`burst: ${burstResult.admitted} of ${BURST.creates} admitted, want exactly ${BURST.room}`);
    if ((burstResult.counts['denied Q5'] ?? 0) > 0)
      missed.push(`burst: ${burstResult.counts['denied Q5']} denied with Q5, want 0`);
    if (burstResult.seconds >= TARGETS.burstSeconds)
      missed.push(`burst: ${burstResult.seconds} s, want < ${TARGETS.burstSeconds} s`);
    if (burstResult.writesPerAdmitted > TARGETS.writesPerGrowth)
      missed.push(
        `burst: ${burstResult.writesPerAdmitted} ledger writes per admitted growth, want ≤ ${TARGETS.writesPerGrowth}`,
      );
    if (burstResult.existing !== burstResult.admitted)
      missed.push(`burst: ${burstResult.existing} namespaces exist but ${burstResult.admitted} were admitted`);
    if (busyBurst && (busyBurst.admitted !== BURST.room || (busyBurst.counts['denied Q5'] ?? 0) > 0))
      missed.push(
        `burst, other core busy: ${busyBurst.admitted} of ${BURST.creates} admitted, ${busyBurst.counts['denied Q5'] ?? 0} with Q5; want exactly ${BURST.room} and 0`,
      );
    missed.push(...judgeInFlight(inFlight));
    for (const run of medians) {
      const errors = run.counts.error ?? 0;
      if (errors > 0)
        missed.push(`${run.mode}, ${run.spread}: ${errors} requests neither admitted nor denied with a rule`);
      const refused = run.counts['denied Q5'] ?? 0;
      if (run.mode.startsWith('shipped') && run.spread === 'one project' && refused > 0)
        missed.push(`${run.mode}, ${run.spread}: ${refused} of ${run.offered} refused with Q5, want 0`);
      if (run.mode.startsWith('shipped') && run.cpuMsPerGrowth.webhook > TARGETS.cpuVsBarePut * bare.cpuMsPerPut) {
        missed.push(
          `${run.mode}, ${run.spread}: webhook CPU ${run.cpuMsPerGrowth.webhook} ms per admitted growth (median of ${run.runs}), want ≤ ${TARGETS.cpuVsBarePut} × a bare PUT's ${bare.cpuMsPerPut} ms at the same rate (a growth is ${run.reviewsPerGrowth} reviews, ${run.webhookCpuMsPerReview} ms each)`,
        );
      }
    }

    process.stderr.write(
      `\nburst (${BURST.creates} parallel creates, room for ${BURST.room}, 2 replicas, ledger on, controller running)\n`,
    );
    process.stderr.write(
      table(
        ['machine', 'admitted', 'denied', 'Q5', 'seconds', 'ledger writes', 'writes/admitted'],
        [['quiet', burstResult] as const, ...(busyBurst ? [['other core busy', busyBurst] as const] : [])].map(
          ([machine, r]) => [
            machine,
            r.admitted,
            Object.entries(r.counts)
              .filter(([k]) => k !== 'admitted')
              .map(([k, v]) => `${k.replace('denied ', '')} ${v}`)
              .join(', ') || '0',
            r.counts['denied Q5'] ?? 0,
            r.seconds,
            r.ledgerWrites,
            r.writesPerAdmitted,
          ],
        ),
      ),
    );
    process.stderr.write(
      `\nsteady, ${RATE} req/s for ${SECONDS} s (half namespace creates, half quota growths), medians of ${RUNS} runs, CPU above idle; bare PUT at ${RATE}/s ${bare.cpuMsPerPut} ms CPU above idle${STEADY_SETTLEMENT ? '' : '; "ledger on" with ledgerSettlement off'}\n`,
    );
    process.stderr.write(
      table(
        [
          'mode',
          'load',
          'admitted',
          'other',
          'p50 ms',
          'p99 ms',
          'webhook ms/growth',
          'reviews/growth',
          'webhook ms/review',
          'apiserver',
          'etcd',
          'controller',
          'writes/growth',
          'conflicts/growth',
          'proxy connections',
          'reservations timeout / exhausted / error',
          'largest ledger: entries (live), KiB',
        ],
        medians.map((r) => [
          r.mode,
          r.spread,
          `${r.admittedGrowths}/${r.offered}`,
          Object.entries(r.counts)
            .filter(([k]) => k !== 'admitted')
            .map(([k, v]) => `${k} ${v}`)
            .join(', ') || '-',
          r.latencyMs.p50,
          r.latencyMs.p99,
          r.cpuMsPerGrowth.webhook,
          r.reviewsPerGrowth,
          r.webhookCpuMsPerReview,
          r.cpuMsPerGrowth.apiserver,
          r.cpuMsPerGrowth.etcd,
          r.cpuMsPerGrowth.controller,
          r.ledgerWritesPerGrowth,
          r.conflictsPerGrowth,
          r.proxyConnections.join(' / '),
          ['timeout', 'exhausted', 'error'].map((o) => r.reservationOutcomes[o] ?? 0).join(' / '),
          r.ledger ? `${r.ledger.entries} (${r.ledger.live}), ${round1(r.ledger.bytes / 1024)}` : '-',
        ]),
      ),
    );
    if (inFlight.length > 0) {
      process.stderr.write(
        `\nin flight (2 replicas as shipped, settling, beside the ledger off, a bare webhook and no webhook at all): one project at ${HOT_RATES.join(' and at ')} changes/s for ${SECONDS} s; a sync of ${SYNC_NAMESPACES} namespaces of one project\n`,
      );
      process.stderr.write(
        table(
          [
            'scenario',
            'mode',
            'admitted',
            'other',
            'seconds',
            'p50 ms',
            'p99 ms',
            'ledger max entries',
            'ledger max KiB',
            'samples',
            'reservations timeout / exhausted / error / behind',
            'reviews',
            'connections opened',
            'proxy cut (EMFILE)',
          ],
          inFlight.map((r) => [
            r.rate === undefined ? r.scenario : `${r.scenario} ${r.rate}/s`,
            r.mode,
            `${r.counts.admitted ?? 0}/${r.offered}`,
            Object.entries(r.counts)
              .filter(([k]) => k !== 'admitted')
              .map(([k, v]) => `${k} ${v}`)
              .join(', ') || '-',
            r.seconds,
            r.latencyMs.p50,
            r.latencyMs.p99,
            r.ledger.maxEntries,
            round1(r.ledger.maxBytes / 1024),
            r.ledger.samples,
            ['timeout', 'exhausted', 'error', 'behind'].map((o) => r.reservationOutcomes[o] ?? 0).join(' / '),
            r.reviews ?? '-',
            r.connectionsOpened ?? '-',
            `${Object.values(r.proxyFailures ?? {}).reduce((a, b) => a + b, 0)} (${r.proxyFailures?.['upstream EMFILE'] ?? 0})`,
          ]),
        ),
      );
      process.stderr.write(
        `a connection the proxy cut (standing in for the Service) is the benchmark's, not the webhook's: EMFILE is the bench process out of file descriptors\n`,
      );
    }
    const loadAtEnd = loadavg()[0]!;
    mkdirSync(join(HERE, 'results'), { recursive: true });
    writeFileSync(
      RESULTS,
      JSON.stringify(
        {
          date: new Date().toISOString(),
          loadAverage: { start: round1(loadAtStart), end: round1(loadAtEnd) },
          rate: RATE,
          seconds: SECONDS,
          runs: RUNS,
          steadySettlement: STEADY_SETTLEMENT,
          bare,
          burst: burstResult,
          ...(busyBurst ? { busyBurst } : {}),
          steady: medians,
          steadyRuns: runs,
          inFlight,
          missed,
        },
        null,
        2,
      ),
    );
    log(`load average at end ${loadAtEnd.toFixed(2)}; wrote ${RESULTS}`);
    alice.close();
    admin.close();
    return missed;
  } catch (err) {
    // The cluster's directory goes with it: say what the processes logged last (decisions left out).
    for (const p of [...(webhooks?.replicas.map((r) => r.process) ?? []), ...(controller ? [controller] : [])]) {
      const lines = (await readFile(p.logFile, 'utf8').catch(() => ''))
        .split('\n')
        .filter((l) => l && !l.includes('"admission decision"'));
      log(
        `${p.name} (${p.child.exitCode !== null || p.child.signalCode ? `exited ${p.child.exitCode ?? p.child.signalCode}` : 'running'}), last lines:\n${lines.slice(-8).join('\n')}`,
      );
    }
    throw err;
  } finally {
    await webhooks?.stop();
    await controller?.stop();
    await cp.stop();
  }
}
