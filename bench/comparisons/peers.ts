/**
 * Peers (ADR 0012): tenantgate next to Kyverno v1.19.1 and OPA Gatekeeper v3.23.1 enforcing
 * the same namespace-ownership rule (T2 + N2: a tenant's namespace carries tenantgate.io/project=<p>,
 * is named <p>-<suffix>, and the user owns p), on one real control plane, one engine at a time.
 *
 *  0. Builds the peers from Go modules if missing (hack/build-go-tool.sh, nice -n 10; cached in .cache/).
 *  1. Starts its own control plane (etcd, kube-apiserver, kube-controller-manager on 127.0.0.1), the
 *     tenantgate CRD and RBAC, the peers' CRDs (from their module zips), Projects `payments` (owner: the
 *     user alice) and `web` (owner: group acme:web-admins), BENCH_PEERS_PROJECTS (1,000) of the P1
 *     fixture's Projects (p00000…, each with a User and a Group owner), so the P1 review bodies are
 *     admitted, and the race's Project and 40 namespaces. Then the control plane's idle CPU
 *     (apiserver + etcd, BENCH_PEERS_IDLE_S), subtracted from what a row costs it.
 *  2. Per variant, out of cluster, webhooks registered, failurePolicy Fail:
 *       tenantgate (no ledger)             crossReplicaReservation false: one replica, no reservation write
 *       tenantgate (ledger on, shipped)    the default config: a ConfigMap compare-and-swap per admitted growth
 *       kyverno (resource.Get)             its policy reads the Project with an API call per admission
 *       kyverno (resource.Get, QPS raised) the same with Kyverno's client rate limit out of the way
 *       kyverno (GlobalContextEntry)       the policy reads an entry Kyverno keeps by watching Projects
 *       gatekeeper                         Rego over its replicated inventory (Projects synced by Config)
 *     - checks with real dry-run creates through the apiserver that it admits and denies as the rule
 *       says (owner + right name + label: admitted; non-owner, other project, wrong name: denied);
 *     - (a) direct AdmissionReviews (the P1 Namespace CREATE bodies, all admitted, sent as dry runs:
 *       their namespaces never arrive, so a real one would stay a pending reservation in tenantgate for
 *       30 s; tenantgate with the ledger gets real ones, its pending count reported; and one body from
 *       a non-owner that every engine must deny, checked) from the P1 client
 *       (bench/lib/measure.ts): throughput at saturation (closed loop, BENCH_PEERS_ROUNDS rounds) with
 *       the engine's CPU per request from /proc/<pid>/stat and the apiserver's + etcd's CPU per request
 *       above their idle rate (Kyverno's resource.Get and tenantgate's ledger land there); throughput
 *       per core = requests per CPU second of engine + control plane; latency p50/p99 at fixed rates;
 *     - (b) end to end: dryRun=All Namespace creates by alice at a fixed rate through the apiserver,
 *       p50/p99, also with no webhook at all.
 *  3. The headroom race for every engine (bench/comparisons/peers/race.ts): 25 rounds × 40 concurrent quota creates
 *     of 1 CPU each against a 10 CPU budget, overspent rounds counted: tenantgate (ledger on), Kyverno
 *     (kyverno-q1-headroom.yaml), Gatekeeper (gatekeeper-q1-headroom.yaml).
 *  3b. Pods against a project's budget (bench/comparisons/peers/pods.ts, ADR 0012), when `capsule` is among the
 *     engines: tenantgate (webhook with the ledger + controller; the budget split into a quota per
 *     namespace, pods left to Kubernetes' quota admission) next to Capsule v0.14.0's GlobalResourceQuota
 *     (its webhook reserving every pod in a QuantityLedger), the chart's client rate limit and a raised
 *     one: a pod race (40 at once, room for 10, overspend by usage), a burst of 1,000 pods with room for
 *     600, steady pod creates (CPU per admitted pod, p50/p99) and a burst of namespace creates.
 *     Targets: tenantgate 0 overspend; its CPU per admitted pod ≤ ⅓ and its burst wall time ≤ ½ of
 *     Capsule's best counted variant. BENCH_PEERS_ONLY=pods runs this part alone.
 *  4. (c) RSS: each engine started fresh on the small cluster (step 2) and on a large one (N projects,
 *     5 namespaces and 5 quotas each, created as admin with no webhook registered), VmRSS after it is
 *     ready and has settled; growth per added object (Projects + Namespaces + ResourceQuotas).
 *
 * Load rule (bench/comparisons/peers/load.ts): every row records the 1-minute load average at its start and end;
 * before a row the bench waits up to BENCH_PEERS_SETTLE_S for it to be ≤ 3; a row that starts above 3 is
 * printed, marked "not counted (load N)", and stays out of the comparison.
 *
 * Targets (printed, not asserted in tests), on the saturation rounds at 1,000 projects, median of the
 * counted rounds, throughput per core (engine + control plane above idle): tenantgate (no ledger)
 * ≥ 3 × Gatekeeper and ≥ 5 × Kyverno (its best counted variant). main() returns every target missed or
 * not judged (no counted round, another project count), so `npm run bench -- peers --check` fails on it.
 *
 *   npm run bench -- peers [--check]
 *   BENCH_PEERS_ENGINES=tenantgate,kyverno,gatekeeper,capsule   which engines
 *   BENCH_PEERS_ONLY=pods   BENCH_PEERS_PODS_RACE_ROUNDS=10 BENCH_PEERS_PODS_BURST=1000 BENCH_PEERS_PODS_BURST_ROOM=600
 *   BENCH_PEERS_PODS_BURST_CONCURRENCY=50 BENCH_PEERS_PODS_RATE=10 BENCH_PEERS_PODS_S=30 BENCH_PEERS_PODS_NAMESPACES=50
 *   BENCH_PEERS_VARIANTS=…                              only these variants (comma-separated names above)
 *   BENCH_PEERS_PROJECTS=1000                           fixture Projects (the comparison is judged at 1,000 only)
 *   BENCH_PEERS_DURATION_S=5 BENCH_PEERS_CONCURRENCY=32 BENCH_PEERS_ROUNDS=3   saturation
 *   BENCH_PEERS_RATES=100,500,2000 BENCH_PEERS_LATENCY_S=10                     direct latency
 *   BENCH_PEERS_API_RATE=50 BENCH_PEERS_API_S=20                                end to end
 *   BENCH_PEERS_RACE_ROUNDS=25 (BENCH_PEERS_Q1=0: no race rows)                 the race
 *   BENCH_PEERS_RSS_PROJECTS=2000 (0: skip; P3's full size is 10000)
 *   BENCH_PEERS_SETTLE_S=120 (0: never wait)  BENCH_PEERS_IDLE_S=10             load rule, idle baseline
 *
 * Results: bench/results/peers.json.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { generateWebhookCerts } from '../../src/certs/files.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { Project } from '../../src/validate/types.js';
import { LEDGER_PREFIX } from '../../src/validate/types.js';
import { ControlPlane } from '../../test/support/devcluster/controlplane.js';
import { installBase, kubectlAs } from '../../test/support/devcluster/tenantgate.js';
import {
  type LatencyResult,
  Pool,
  type Target,
  type ThroughputResult,
  HERE,
  ROOT,
  closedLoop,
  compileTenantgate,
  env,
  getText,
  log,
  median,
  nowMs,
  openLoop,
  postJson,
  procStatus,
  round1,
  sleep,
  table,
} from '../lib/measure.js';
import { namespaceCreateBodies } from '../lib/reviews.js';
import { apiOpenLoop, type ApiLoopResult, controlPlanePids, countCpu, createNamespace } from './peers/apiload.js';
import {
  type Engine,
  type EngineName,
  type PeerBinary,
  type PeerName,
  buildPeer,
  eventually,
  installGatekeeperCrds,
  installKyvernoCrds,
  removeKyvernoWebhooks,
  startGatekeeper,
  startKyverno,
  startTenantgate,
} from './peers/engines.js';
import { MAX_LOAD, type RowLoad, load1, loadCell, notCounted, row } from './peers/load.js';
import { runPodComparison } from './peers/pod-engines.js';
import { type PodComparison, type PodSettings, type PodTarget, judgePods } from './peers/pods.js';
import { RACE_NAMESPACES, type RaceRow, runRace, setupRace } from './peers/race.js';
import { Creator, createRange, parallel } from '../targets/webhook-p3.js';
import { NAMESPACES_PER_PROJECT } from '../lib/webhook-server.js';

const RESULTS = join(HERE, 'results', 'peers.json');
const POLICIES = join(ROOT, 'bench', 'comparisons', 'peers', 'policies');
const KYVERNO_POLICY = 'kyverno-namespace-ownership.yaml';
const KYVERNO_GCTX_POLICY = 'kyverno-namespace-ownership-globalcontext.yaml';
const KYVERNO_GCTX_ENTRY = 'kyverno-globalcontext-projects.yaml';
const KYVERNO_Q1_POLICY = 'kyverno-q1-headroom.yaml';
const GATEKEEPER_POLICY = 'gatekeeper-namespace-ownership.yaml';
const GATEKEEPER_Q1_POLICY = 'gatekeeper-q1-headroom.yaml';
/** Kyverno with its client rate limit out of the way, to see the engine's own cost. */
const KYVERNO_RAISED = { qps: 100_000, burst: 100_000 };
/** The comparison is judged at this many fixture Projects only. */
const COMPARISON_PROJECTS = 1000;
/** A saturation round with more answers than this share not admitted is printed but not compared. */
const MAX_ERROR_SHARE = 0.01;
/** tenantgate without the ledger, throughput per core, at least `times` × the peer's. */
const TARGETS = [
  { peer: 'gatekeeper', times: 3 },
  { peer: 'kyverno', times: 5 },
] as const;

const VARIANTS = [
  'tenantgate (no ledger)',
  'tenantgate (ledger on, shipped)',
  'kyverno (resource.Get)',
  'kyverno (resource.Get, QPS raised)',
  'kyverno (GlobalContextEntry)',
  'gatekeeper',
] as const;
type Variant = (typeof VARIANTS)[number];
const engineOf = (v: Variant): EngineName => v.split(' ')[0] as EngineName;
const tagOf = (v: string) => v.replace(/\W+/g, '').toLowerCase();
/**
 * One webhook replica without the cross-replica reservation ledger: the peers keep no reservations
 * either. The shipped default (ledger on: every admitted growth, a Namespace CREATE too, is a
 * compare-and-swap write of a ConfigMap) is measured as its own variant.
 */
const TENANTGATE_NO_LEDGER = { crossReplicaReservation: false };

interface Check {
  case: string;
  user: string;
  name: string;
  project: string | null;
  expect: 'admit' | 'deny';
  status: number;
  message: string;
  ok: boolean;
}

interface DirectThroughput extends ThroughputResult {
  load: RowLoad;
  /** CPU µs per request of the control plane meanwhile, as read (its idle work included). */
  controlPlaneUsPerRequest: Record<string, number>;
  /** apiserver + etcd CPU above their idle rate, µs per request: what the rule made them do. */
  controlPlaneAboveIdleUsPerRequest: number;
  /** Requests per CPU second: of the engine alone, and of the engine + the control plane above idle. */
  perCore: { engine: number; total: number };
  /** In the comparison: started at load ≤ MAX_LOAD and at most MAX_ERROR_SHARE of the answers not admitted. */
  compared: boolean;
  /** tenantgate: reservations still pending after the round (tenantgate_webhook_cache_objects{kind="pending"}). */
  pendingAfter?: number;
}

interface EngineResult {
  variant: Variant;
  checks: Check[];
  rulesHold: boolean;
  /** The direct review every engine must deny (a non-owner's): the engine's message. */
  deniedCheck?: string;
  rssSmall?: { rssMB: number; peakMB: number; load: RowLoad };
  throughput: DirectThroughput[];
  latency: Array<LatencyResult & { load: RowLoad }>;
  /** Open-loop rates not run because they exceed 0.9 × the engine's measured saturation throughput. */
  latencySkipped: number[];
  endToEnd?: ApiLoopResult & { load: RowLoad };
  error?: string;
}

interface RssRow {
  variant: Variant;
  small: { projects: number; namespaces: number; rssMB: number };
  large: {
    projects: number;
    namespaces: number;
    quotas: number;
    rssMB: number;
    peakMB: number;
    readyS: number;
    load: RowLoad;
  };
  /** (large − small) RSS ÷ the objects added (Projects + Namespaces + ResourceQuotas). */
  perObjectKB: number;
}

/** A variant's saturation rounds that entered the comparison, medians. */
interface Summary {
  variant: Variant;
  rounds: number;
  comparedRounds: number;
  rps: number;
  engineUsPerRequest: number;
  controlPlaneUsPerRequest: number;
  perCoreEngine: number;
  perCoreTotal: number;
}

interface TargetResult {
  target: string;
  /** The peer variant compared against (Kyverno: its best counted variant). */
  against: string | null;
  tenantgatePerCore: number | null;
  peerPerCore: number | null;
  ratio: number | null;
  judged: boolean;
  met: boolean;
  note: string;
}

export async function main(): Promise<string[]> {
  mkdirSync(dirname(RESULTS), { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'tenantgate-bench-peers-'));
  const engines = (process.env.BENCH_PEERS_ENGINES ?? 'tenantgate,kyverno,gatekeeper,capsule')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean) as EngineName[];
  const onlyVariants = process.env.BENCH_PEERS_VARIANTS?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknownVariants = (onlyVariants ?? []).filter((v) => !(VARIANTS as readonly string[]).includes(v));
  if (unknownVariants.length)
    throw new Error(`BENCH_PEERS_VARIANTS: unknown ${unknownVariants.join(', ')}; known: ${VARIANTS.join(', ')}`);
  // BENCH_PEERS_ONLY=pods: only the pod comparison with Capsule (bench/comparisons/peers/pods.ts, ADR 0012).
  const podsOnly = process.env.BENCH_PEERS_ONLY === 'pods';
  const variants = podsOnly
    ? []
    : VARIANTS.filter((v) => engines.includes(engineOf(v)) && (!onlyVariants || onlyVariants.includes(v)));
  const fixtureProjects = Math.max(1, Math.round(env('BENCH_PEERS_PROJECTS', COMPARISON_PROJECTS)));
  const durationMs = env('BENCH_PEERS_DURATION_S', 5) * 1000;
  const concurrency = Math.max(1, Math.round(env('BENCH_PEERS_CONCURRENCY', 32)));
  const rounds = Math.max(1, Math.round(env('BENCH_PEERS_ROUNDS', 3)));
  const rates = (process.env.BENCH_PEERS_RATES ?? '100,500,2000')
    .split(',')
    .map(Number)
    .filter((n) => n > 0);
  const latencyMs = env('BENCH_PEERS_LATENCY_S', 10) * 1000;
  const apiRate = env('BENCH_PEERS_API_RATE', 50);
  const apiMs = env('BENCH_PEERS_API_S', 20) * 1000;
  const rssProjects = podsOnly ? 0 : Math.round(env('BENCH_PEERS_RSS_PROJECTS', 2000));
  const doRace = !podsOnly && env('BENCH_PEERS_Q1', 1) > 0;
  const doPods = podsOnly || engines.includes('capsule');
  const podSettings: PodSettings = {
    raceRounds: Math.max(1, Math.round(env('BENCH_PEERS_PODS_RACE_ROUNDS', 10))),
    raceConcurrent: 40,
    raceBudget: 10,
    burst: Math.round(env('BENCH_PEERS_PODS_BURST', 1000)),
    burstRoom: Math.round(env('BENCH_PEERS_PODS_BURST_ROOM', 600)),
    burstConcurrency: Math.max(1, Math.round(env('BENCH_PEERS_PODS_BURST_CONCURRENCY', 50))),
    rate: env('BENCH_PEERS_PODS_RATE', 10),
    steadyS: env('BENCH_PEERS_PODS_S', 30),
    idleS: env('BENCH_PEERS_PODS_IDLE_S', 10),
    nsBurst: Math.round(env('BENCH_PEERS_PODS_NAMESPACES', 50)),
    settleMs: 0,
  };
  const raceRounds = Math.max(1, Math.round(env('BENCH_PEERS_RACE_ROUNDS', 25)));
  const settleMs = env('BENCH_PEERS_SETTLE_S', 120) * 1000;
  const idleMs = Math.max(1000, env('BENCH_PEERS_IDLE_S', 10) * 1000);
  const git =
    spawnSync('git', ['describe', '--always', '--dirty'], { cwd: ROOT, encoding: 'utf8' }).stdout?.trim() || 'unknown';
  const result: Record<string, unknown> = {
    benchmark: 'peers',
    date: new Date().toISOString(),
    git,
    node: process.version,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    loadavgAtStart: loadavg().map(round1),
    settings: {
      engines,
      variants,
      fixtureProjects,
      durationMs,
      concurrency,
      rounds,
      rates,
      latencyMs,
      apiRate,
      apiMs,
      rssProjects,
      doRace,
      raceRounds,
      settleMs,
      idleMs,
      maxLoad: MAX_LOAD,
    },
  };
  const save = () => writeFileSync(RESULTS, JSON.stringify(result, null, 2));
  log(`peers: work dir ${work}; load average ${loadavg().map(round1).join(' ')}; variants: ${variants.join(', ')}`);

  // 0. The peers' binaries.
  const binaries: Partial<Record<PeerName, PeerBinary>> = {};
  for (const peer of ['kyverno', 'gatekeeper', 'capsule'] as const) {
    if (!engines.includes(peer)) continue;
    binaries[peer] = buildPeer(peer);
    log(
      `peers: ${peer} ${binaries[peer].version}: ${binaries[peer].path} (${binaries[peer].sizeMB} MB${binaries[peer].builtNowS !== null ? `, built in ${binaries[peer].builtNowS} s` : ', cached'})`,
    );
  }
  result.binaries = binaries;

  // 1. The control plane and what every engine needs.
  const cp = await ControlPlane.start({ log });
  // Every child (control plane, engines) is started through test/support/devcluster/processes.ts,
  // which kills them when this process exits or gets SIGINT/SIGTERM/SIGHUP.
  const stopping: Array<() => Promise<void>> = [];
  const missed: string[] = [];
  try {
    const pids = controlPlanePids(cp);
    const cpPids = { apiserver: pids['kube-apiserver']!, etcd: pids.etcd! };
    await installBase(cp.info);
    // A budgeted project declares what its new namespaces get (tenantgate's Q2 denies a namespace the
    // budget's resources would not cover); the peers' rules ignore it.
    const namespaceDefaults = { quota: { hard: { 'requests.cpu': '1' } } };
    const projects: Project[] = [
      {
        apiVersion: 'tenantgate.io/v1alpha1',
        kind: 'Project',
        metadata: { name: 'payments' },
        spec: {
          tenant: 'acme',
          owners: [{ kind: 'User', name: 'alice' }],
          quota: { hard: { 'requests.cpu': '100' } },
          namespaceDefaults,
        },
      } as Project,
      {
        apiVersion: 'tenantgate.io/v1alpha1',
        kind: 'Project',
        metadata: { name: 'web' },
        spec: {
          tenant: 'acme',
          owners: [{ kind: 'Group', name: 'acme:web-admins' }],
          quota: { hard: { 'requests.cpu': '100' } },
          namespaceDefaults,
        },
      } as Project,
    ];
    await kubectlAs(
      cp.info,
      'admin',
      ['apply', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: projects }),
    );
    const creator = new Creator(cp.info.kubeconfigs.admin!);
    const t = nowMs();
    if (!podsOnly) await parallel(fixtureProjects, 50, (i) => creator.project(i));
    if (!podsOnly) log(`peers: ${fixtureProjects} fixture Projects in ${round1((nowMs() - t) / 1000)} s`);
    if (doRace) await setupRace(cp);
    if (binaries.kyverno) await installKyvernoCrds(cp, binaries.kyverno.version);
    if (binaries.gatekeeper) await installGatekeeperCrds(cp, binaries.gatekeeper.version, work);
    const mainJs = compileTenantgate('bench-peers', 'peers');
    const tgCerts = await generateWebhookCerts(join(work, 'tenantgate-certs'));

    // Direct reviews never create their namespaces. A real (not dry-run) admitted create would stay
    // pending in tenantgate for the reservation's 30 s (no watch event ever removes it) and make nearly
    // every decision recompute its project's shares, which no cluster does. So the comparison sends them
    // as dry runs (every engine decides them in full; tenantgate records nothing, as for any dry run).
    // tenantgate with the ledger gets the real ones, its ledger write being the point: its pending count
    // after each round is reported, as a reminder that this variant is pessimistic.
    const nsPool = new Pool(
      'namespace-create',
      namespaceCreateBodies(60_000, fixtureProjects).map((b) => asDryRun(withoutProjectUid(b))),
    );
    let realPool: Pool | undefined;
    const poolFor = (v: Variant): Pool =>
      v === 'tenantgate (ledger on, shipped)'
        ? (realPool ??= new Pool(
            'namespace-create',
            namespaceCreateBodies(60_000, fixtureProjects).map(withoutProjectUid),
          ))
        : nsPool;
    /** One body every engine must deny: the first measured body, sent by a user who owns no project. */
    const deniedBody = asNonOwner(nsPool.bodies[0]!);

    // The control plane's own CPU with no engine and no load (watches, leases, the controller manager's
    // requests): subtracted from what each row costs it.
    const idleCount = countCpu(cpPids);
    await sleep(idleMs);
    const idle = idleCount.stop(1);
    const idleCores = ((idle.seconds.apiserver ?? 0) + (idle.seconds.etcd ?? 0)) / idle.wallS;
    result.controlPlaneIdle = {
      apiserverPctOfCore: round1(((idle.seconds.apiserver ?? 0) / idle.wallS) * 100),
      etcdPctOfCore: round1(((idle.seconds.etcd ?? 0) / idle.wallS) * 100),
      windowS: round1(idle.wallS),
    };
    log(
      `peers: control plane idle: apiserver ${round1(((idle.seconds.apiserver ?? 0) / idle.wallS) * 100)} %, etcd ${round1(((idle.seconds.etcd ?? 0) / idle.wallS) * 100)} % of a core`,
    );

    // (b) without any webhook first.
    log(`peers: end to end without a webhook: ${apiRate}/s dry-run Namespace creates by alice for ${apiMs / 1000} s`);
    const none = await row('end to end, no webhook', settleMs, () =>
      apiOpenLoop(cp, 'alice', 'payments', 'none', apiRate, 2000, apiMs, cpPids),
    );
    logApi('no webhook', none);
    result.endToEndNoWebhook = none;

    const byEngine: EngineResult[] = [];
    result.engines = byEngine;
    const runVariant = async (
      variant: Variant,
      start: () => Promise<Engine>,
      opts: { direct: 'all' | 'saturation' | 'none'; endToEnd: boolean; rss: boolean },
    ) => {
      const r: EngineResult = {
        variant,
        checks: [],
        rulesHold: false,
        throughput: [],
        latency: [],
        latencySkipped: [],
      };
      byEngine.push(r);
      let engine: Engine | undefined;
      try {
        log(`peers: ${variant}: starting`);
        engine = await start();
        stopping.push(engine.stop);
        if (opts.rss) {
          const pid = engine.pid;
          const s = await row(`${variant}: RSS`, settleMs, async () => {
            await sleep(10_000);
            return procStatus(pid);
          });
          r.rssSmall = { rssMB: s.rssMB, peakMB: s.hwmMB, load: s.load };
          log(`peers: ${variant}: VmRSS ${s.rssMB} MB (peak ${s.hwmMB}) on the small cluster`);
        }
        r.checks = await eventually(
          `${variant}: the rule holds`,
          async () => {
            const checks = await checkRule(cp, variant);
            if (!checks.every((c) => c.ok))
              throw new Error(
                checks
                  .filter((c) => !c.ok)
                  .map((c) => `${c.case}: ${c.status} ${c.message}`)
                  .join('; '),
              );
            return checks;
          },
          120_000,
          2000,
        ).catch(async (err: unknown) => {
          r.checks = await checkRule(cp, variant);
          throw err;
        });
        r.rulesHold = true;
        log(`peers: ${variant}: the rule holds: ${r.checks.map((c) => `${c.case} → ${c.status}`).join(', ')}`);
        const target: Target = { port: engine.direct.port, path: engine.direct.path, ca: engine.direct.ca };
        const pool = poolFor(variant);
        if (opts.direct !== 'none') {
          // Every measured body must be admitted, so the whole rule runs; and the same body from a
          // non-owner must be denied, so an engine that admits everything is caught.
          for (const k of [0, 1, 2, 999, 12_345]) {
            const body = pool.bodies[k % pool.bodies.length]!;
            const a = await postJson(target, body);
            if (a.status !== 200 || a.json.response?.allowed !== true)
              throw new Error(
                `${variant}: direct AdmissionReview ${k} not admitted: HTTP ${a.status} ${JSON.stringify(a.json.response)}`,
              );
          }
          const denied = await postJson(target, deniedBody);
          if (denied.status !== 200 || denied.json.response?.allowed !== false)
            throw new Error(
              `${variant}: the non-owner's direct AdmissionReview was not denied: HTTP ${denied.status} ${JSON.stringify(denied.json.response)}`,
            );
          r.deniedCheck = denied.json.response?.status?.message?.slice(0, 200) ?? 'denied';
          const pid = engine.pid;
          for (let round = 1; round <= rounds; round++) {
            const th = await row(`${variant}: saturation round ${round}`, settleMs, async () => {
              const cpCount = countCpu(cpPids);
              const th = await closedLoop(
                variant,
                'Namespace CREATE',
                target,
                pid,
                pool,
                concurrency,
                1000,
                durationMs,
              );
              // The window spans the warm-up second too: its requests, roughly.
              const requests = th.requests + Math.round(th.rps);
              const c = cpCount.stop(requests);
              const aboveIdle = Math.max(0, (c.seconds.apiserver ?? 0) + (c.seconds.etcd ?? 0) - idleCores * c.wallS);
              return {
                ...th,
                controlPlaneUsPerRequest: c.usPerRequest,
                controlPlaneAboveIdleUsPerRequest: round1((aboveIdle / Math.max(1, requests)) * 1e6),
              };
            });
            const total = th.serverCpuUsPerRequest + th.controlPlaneAboveIdleUsPerRequest;
            const pendingAfter = engineOf(variant) === 'tenantgate' ? await pendingOf(target) : undefined;
            const rowResult: DirectThroughput = {
              ...th,
              ...(pendingAfter !== undefined ? { pendingAfter } : {}),
              perCore: {
                engine: Math.round(1e6 / Math.max(1, th.serverCpuUsPerRequest)),
                total: Math.round(1e6 / Math.max(1, total)),
              },
              compared: th.load.counted && th.requests > 0 && th.errors <= MAX_ERROR_SHARE * (th.requests + th.errors),
            };
            r.throughput.push(rowResult);
            log(
              `peers: ${variant}: saturation round ${round}: ${th.rps} req/s, engine ${th.serverCpuUsPerRequest} µs/req, control plane above idle ${th.controlPlaneAboveIdleUsPerRequest} µs/req → ${rowResult.perCore.total} req per CPU second; errors ${th.errors}${pendingAfter !== undefined ? `; pending reservations after the round ${pendingAfter}` : ''}; load ${loadCell(th.load)}`,
            );
          }
          if (opts.direct === 'all') {
            const saturation = Math.max(...r.throughput.map((x) => x.rps));
            for (const rate of rates) {
              if (rate > 0.9 * saturation) {
                r.latencySkipped.push(rate);
                log(
                  `peers: ${variant}: ${rate}/s not run: above 0.9 × its saturation throughput (${saturation} req/s)`,
                );
                continue;
              }
              const l = await row(`${variant}: ${rate}/s`, settleMs, () =>
                openLoop(variant, 'Namespace CREATE', target, pid, pool, rate, 1000, latencyMs),
              );
              r.latency.push(l);
              log(
                `peers: ${variant}: ${rate}/s: p50 ${l.latencyMs.p50} ms, p99 ${l.latencyMs.p99} ms, completed ${l.completed}/${l.sent}, errors ${l.errors}${l.firstError ? ` (first: ${l.firstError})` : ''}, engine ${l.serverCpuUsPerRequest} µs/req; load ${loadCell(l.load)}`,
              );
            }
          }
        }
        if (opts.endToEnd) {
          const enginePids = { ...cpPids, engine: engine.pid };
          const e = await row(`${variant}: end to end`, settleMs, () =>
            apiOpenLoop(cp, 'alice', 'payments', tagOf(variant), apiRate, 2000, apiMs, enginePids),
          );
          r.endToEnd = e;
          logApi(variant, e);
        }
      } catch (err) {
        r.error = err instanceof Error ? err.message : String(err);
        log(`peers: ${variant}: FAILED: ${r.error}${engine ? ` (log: ${engine.logFile})` : ''}`);
      } finally {
        if (engine) {
          await engine.stop().catch((e: unknown) => log(`peers: ${variant}: stop: ${String(e)}`));
          stopping.splice(stopping.indexOf(engine.stop), 1);
        }
        save();
      }
    };

    const starters: Record<
      Variant,
      { start: () => Promise<Engine>; opts: { direct: 'all' | 'saturation' | 'none'; endToEnd: boolean; rss: boolean } }
    > = {
      'tenantgate (no ledger)': {
        start: () => startTenantgate(cp, work, mainJs, tgCerts, true, TENANTGATE_NO_LEDGER),
        opts: { direct: 'all', endToEnd: true, rss: true },
      },
      'tenantgate (ledger on, shipped)': {
        start: () => startTenantgate(cp, work, mainJs, tgCerts, true),
        opts: { direct: 'saturation', endToEnd: true, rss: false },
      },
      'kyverno (resource.Get)': {
        start: () => startKyverno(cp, work, binaries.kyverno!, { policies: [KYVERNO_POLICY] }),
        opts: { direct: 'saturation', endToEnd: true, rss: true },
      },
      'kyverno (resource.Get, QPS raised)': {
        start: () => startKyverno(cp, work, binaries.kyverno!, { policies: [KYVERNO_POLICY], ...KYVERNO_RAISED }),
        opts: { direct: 'all', endToEnd: false, rss: false },
      },
      'kyverno (GlobalContextEntry)': {
        start: () =>
          startKyverno(cp, work, binaries.kyverno!, {
            policies: [KYVERNO_GCTX_POLICY],
            globalContextEntries: [KYVERNO_GCTX_ENTRY],
          }),
        opts: { direct: 'all', endToEnd: true, rss: true },
      },
      gatekeeper: {
        start: () => startGatekeeper(cp, work, binaries.gatekeeper!, [GATEKEEPER_POLICY]),
        opts: { direct: 'all', endToEnd: true, rss: true },
      },
    };
    for (const v of variants) await runVariant(v, starters[v].start, starters[v].opts);

    // The comparison: saturation rounds, at 1,000 projects, counted rows only.
    const summaries = byEngine.map(summarize);
    result.summaries = summaries;
    const targets = podsOnly ? [] : judge(summaries, fixtureProjects);
    result.targets = targets;
    for (const tr of targets)
      if (!tr.met)
        missed.push(
          `${tr.target}: ${tr.judged ? `${tr.ratio}× (${tr.tenantgatePerCore} vs ${tr.peerPerCore} req per CPU second, ${tr.against})` : `not judged: ${tr.note}`}`,
        );
    save();

    // 3. The headroom race, every engine from the same harness.
    if (doRace) {
      const race: RaceRow[] = [];
      result.race = race;
      const raceOne = async (label: string, start: () => Promise<Engine>, cleanup?: () => Promise<void>) => {
        let engine: Engine | undefined;
        try {
          log(`peers: race, ${label}: starting`);
          engine = await start();
          stopping.push(engine.stop);
          race.push(await row(`race, ${label}`, settleMs, () => runRace(cp, label, raceRounds)));
        } catch (err) {
          race.push({ engine: label, error: err instanceof Error ? err.message : String(err) });
          log(`peers: race, ${label}: FAILED: ${String(err)}${engine ? ` (log: ${engine.logFile})` : ''}`);
        } finally {
          await cleanup?.().catch((e: unknown) => log(`peers: race, ${label}: cleanup: ${String(e)}`));
          if (engine) {
            await engine.stop().catch((e: unknown) => log(`peers: race, ${label}: stop: ${String(e)}`));
            stopping.splice(stopping.indexOf(engine.stop), 1);
          }
          save();
        }
      };
      if (engines.includes('tenantgate')) {
        // An empty ledger, as the e2e race starts from: its finalizer first (src/ledger/ledger.ts), then the object.
        await kubectlAs(cp.info, 'admin', [
          '-n',
          DEFAULT_CONFIG.systemNamespace,
          'patch',
          'configmap',
          `${LEDGER_PREFIX}race`,
          '--type=merge',
          '-p',
          '{"metadata":{"finalizers":null}}',
        ]).catch(() => undefined);
        await kubectlAs(cp.info, 'admin', [
          '-n',
          DEFAULT_CONFIG.systemNamespace,
          'delete',
          'configmap',
          `${LEDGER_PREFIX}race`,
          '--ignore-not-found',
        ]);
        await raceOne('tenantgate (ledger on, shipped)', () => startTenantgate(cp, work, mainJs, tgCerts, true));
      }
      if (binaries.kyverno) {
        const kyverno = binaries.kyverno;
        await raceOne('kyverno (resource.Get/List)', () =>
          startKyverno(cp, work, kyverno, { policies: [KYVERNO_POLICY, KYVERNO_Q1_POLICY] }),
        );
      }
      if (binaries.gatekeeper) {
        const gatekeeper = binaries.gatekeeper;
        await raceOne(
          'gatekeeper (inventory)',
          () =>
            startGatekeeper(
              cp,
              work,
              gatekeeper,
              [GATEKEEPER_POLICY, GATEKEEPER_Q1_POLICY],
              ['namespaces', 'resourcequotas'],
            ),
          async () => {
            // The Q1 template and its Config (which also syncs Namespaces and quotas) out again; the
            // ownership policy's Config (Projects only) back, for the RSS runs.
            await kubectlAs(cp.info, 'admin', [
              'delete',
              '-f',
              join(POLICIES, GATEKEEPER_Q1_POLICY),
              '--ignore-not-found',
              '--wait=false',
            ]);
            await kubectlAs(cp.info, 'admin', ['apply', '-f', join(POLICIES, GATEKEEPER_POLICY)]);
          },
        );
      }
    }

    // 3b. A project's budget from a user's side: pods against tenantgate's split and Capsule's GlobalResourceQuota.
    if (doPods) {
      podSettings.settleMs = settleMs;
      const pods = await runPodComparison(
        cp,
        work,
        mainJs,
        tgCerts,
        binaries.capsule,
        engines.includes('tenantgate'),
        podSettings,
        cpPids,
        (c) => {
          result.pods = c;
          save();
        },
      );
      result.pods = pods;
      const podTargets = judgePods(pods);
      result.podTargets = podTargets;
      for (const t of podTargets)
        if (!t.met)
          missed.push(
            `${t.target}: ${t.judged ? t.value : `not judged: ${t.note}${t.value ? `; as measured ${t.value}` : ''}`}`,
          );
      save();
    }

    // 4. RSS on a large cluster.
    if (rssProjects > 0) {
      await removeKyvernoWebhooks(cp);
      const target = Math.max(rssProjects, fixtureProjects);
      log(
        `peers: large cluster: ${target} Projects with ${NAMESPACES_PER_PROJECT} Namespaces and ${NAMESPACES_PER_PROJECT} ResourceQuotas each (as admin, no webhook registered)`,
      );
      const phases: Array<{ what: string; objects: number; seconds: number }> = [];
      const t0 = nowMs();
      await createRange(creator, 0, target, 50, phases);
      result.largeCluster = {
        projects: target,
        namespaces: target * NAMESPACES_PER_PROJECT,
        quotas: target * NAMESPACES_PER_PROJECT,
        creationS: round1((nowMs() - t0) / 1000),
        phases,
      };
      save();
      const rss: RssRow[] = [];
      result.rss = rss;
      const addedObjects = target - fixtureProjects + 2 * target * NAMESPACES_PER_PROJECT;
      const smallProjects = fixtureProjects + 2 + (doRace ? 1 : 0);
      const smallNamespaces = doRace ? RACE_NAMESPACES.length : 0;
      const rssStarters: Array<[Variant, () => Promise<Engine>]> = [];
      if (variants.includes('tenantgate (no ledger)'))
        rssStarters.push([
          'tenantgate (no ledger)',
          () => startTenantgate(cp, work, mainJs, tgCerts, false, TENANTGATE_NO_LEDGER),
        ]);
      if (variants.includes('kyverno (resource.Get)'))
        rssStarters.push([
          'kyverno (resource.Get)',
          () => startKyverno(cp, work, binaries.kyverno!, { policies: [KYVERNO_POLICY] }),
        ]);
      if (variants.includes('kyverno (GlobalContextEntry)'))
        rssStarters.push([
          'kyverno (GlobalContextEntry)',
          () =>
            startKyverno(cp, work, binaries.kyverno!, {
              policies: [KYVERNO_GCTX_POLICY],
              globalContextEntries: [KYVERNO_GCTX_ENTRY],
            }),
        ]);
      if (variants.includes('gatekeeper'))
        rssStarters.push(['gatekeeper', () => startGatekeeper(cp, work, binaries.gatekeeper!, [])]);
      for (const [variant, start] of rssStarters) {
        const small = byEngine.find((e) => e.variant === variant)?.rssSmall;
        let engine: Engine | undefined;
        try {
          const r = await row(`${variant}: RSS, large cluster`, settleMs, async () => {
            const ts = nowMs();
            engine = await start();
            const readyS = round1((nowMs() - ts) / 1000);
            await sleep(10_000);
            return { ...procStatus(engine.pid), readyS };
          });
          const entry: RssRow = {
            variant,
            small: { projects: smallProjects, namespaces: smallNamespaces, rssMB: small?.rssMB ?? NaN },
            large: {
              projects: target + 2 + (doRace ? 1 : 0),
              namespaces: target * NAMESPACES_PER_PROJECT + smallNamespaces,
              quotas: target * NAMESPACES_PER_PROJECT,
              rssMB: r.rssMB,
              peakMB: r.hwmMB,
              readyS: r.readyS,
              load: r.load,
            },
            perObjectKB: small ? round1(((r.rssMB - small.rssMB) * 1024) / addedObjects) : NaN,
          };
          rss.push(entry);
          log(
            `peers: ${variant}: VmRSS ${r.rssMB} MB (peak ${r.hwmMB}) with ${target} projects, ${target * NAMESPACES_PER_PROJECT} namespaces, ${target * NAMESPACES_PER_PROJECT} quotas; ready in ${r.readyS} s; load ${loadCell(r.load)}`,
          );
        } catch (err) {
          log(`peers: RSS ${variant}: FAILED: ${String(err)}`);
          rss.push({
            variant,
            small: { projects: smallProjects, namespaces: smallNamespaces, rssMB: small?.rssMB ?? NaN },
            large: {
              projects: target,
              namespaces: 0,
              quotas: 0,
              rssMB: NaN,
              peakMB: NaN,
              readyS: NaN,
              load: { start: load1(), end: load1(), counted: false },
            },
            perObjectKB: NaN,
          });
        } finally {
          const e = engine as Engine | undefined;
          await e?.stop();
          save();
        }
      }
    }
    result.loadavgAtEnd = loadavg().map(round1);
    save();
    process.stdout.write(`${report(result)}\n`);
    log(`peers: results in ${RESULTS}`);
  } finally {
    for (const s of stopping) await s().catch(() => {});
    await removeKyvernoWebhooks(cp).catch(() => {});
    await cp.stop();
  }
  return missed;
}

/**
 * The P1 bodies carry tenantgate's protected annotation tenantgate.io/project-uid with the synthetic
 * snapshot's uid; against a real cluster the Project's uid differs (T7 would deny), and tenantgate's
 * mutating webhook sets it anyway: drop it, the rest of the review is P1's.
 */
function asDryRun(body: Buffer): Buffer {
  const review = JSON.parse(body.toString('utf8')) as { request: { dryRun?: boolean } };
  review.request.dryRun = true;
  return Buffer.from(JSON.stringify(review));
}

/** The same review from dave, who owns no project (every engine's rule denies it). */
function asNonOwner(body: Buffer): Buffer {
  const review = JSON.parse(body.toString('utf8')) as { request: { uid: string; userInfo: Record<string, unknown> } };
  review.request.uid = '00000000-0000-4000-8000-00000000dead';
  review.request.userInfo = { username: 'dave', uid: 'u-dave', groups: ['tenants', 'system:authenticated'] };
  return Buffer.from(JSON.stringify(review));
}

/** tenantgate's pending reservations, from its /metrics on the direct port. */
async function pendingOf(target: Target): Promise<number | undefined> {
  const r = await getText(target.port, '/metrics', target.ca).catch(() => undefined);
  const m = r ? /^tenantgate_webhook_cache_objects\{kind="pending"\} (\d+)/m.exec(r.text) : null;
  return m ? Number(m[1]) : undefined;
}

function withoutProjectUid(body: Buffer): Buffer {
  const review = JSON.parse(body.toString('utf8')) as {
    request: { object: { metadata: { annotations?: Record<string, string> } } };
  };
  delete review.request.object.metadata.annotations?.['tenantgate.io/project-uid'];
  return Buffer.from(JSON.stringify(review));
}

function logApi(what: string, r: ApiLoopResult & { load: RowLoad }): void {
  log(
    `peers: end to end, ${what}: p50 ${r.latencyMs.p50} ms, p99 ${r.latencyMs.p99} ms; ${r.admitted} admitted, ${r.denied} denied, ${r.errors} errors of ${r.sent}${r.firstDenial ? ` (first: ${r.firstDenial.slice(0, 200)})` : ''}; load ${loadCell(r.load)}`,
  );
}

/** The rule, checked with real dry-run creates through the apiserver. */
async function checkRule(cp: ControlPlane, variant: string): Promise<Check[]> {
  const tag = tagOf(variant).slice(0, 10);
  const cases: Array<Omit<Check, 'status' | 'message' | 'ok'>> = [
    {
      case: 'owner, right name and label',
      user: 'alice',
      name: `payments-${tag}`,
      project: 'payments',
      expect: 'admit',
    },
    { case: 'group owner', user: 'carol', name: `web-${tag}`, project: 'web', expect: 'admit' },
    {
      case: 'non-owner (same group of tenants)',
      user: 'dave',
      name: `payments-${tag}-d`,
      project: 'payments',
      expect: 'deny',
    },
    { case: 'owner of another project', user: 'alice', name: `web-${tag}-a`, project: 'web', expect: 'deny' },
    { case: 'wrong name', user: 'alice', name: `billing-${tag}`, project: 'payments', expect: 'deny' },
    { case: 'project that does not exist', user: 'alice', name: `nope-${tag}`, project: 'nope', expect: 'deny' },
  ];
  const out: Check[] = [];
  for (const c of cases) {
    const a = await createNamespace(cp, c.user, c.name, c.project);
    const admitted = a.status === 201;
    out.push({
      ...c,
      status: a.status,
      message: a.message.slice(0, 300),
      ok: (c.expect === 'admit') === admitted && (admitted || a.status === 403 || a.status === 400),
    });
  }
  return out;
}

function summarize(e: EngineResult): Summary {
  const compared = e.throughput.filter((t) => t.compared);
  const med = (f: (t: DirectThroughput) => number) => (compared.length ? round1(median(compared.map(f))) : NaN);
  return {
    variant: e.variant,
    rounds: e.throughput.length,
    comparedRounds: compared.length,
    rps: med((t) => t.rps),
    engineUsPerRequest: med((t) => t.serverCpuUsPerRequest),
    controlPlaneUsPerRequest: med((t) => t.controlPlaneAboveIdleUsPerRequest),
    perCoreEngine: Math.round(med((t) => t.perCore.engine)),
    perCoreTotal: Math.round(med((t) => t.perCore.total)),
  };
}

/** The targets: tenantgate without the ledger against Gatekeeper and against Kyverno's best counted variant. */
function judge(summaries: Summary[], fixtureProjects: number): TargetResult[] {
  const tg = summaries.find((s) => s.variant === 'tenantgate (no ledger)');
  return TARGETS.map(({ peer, times }) => {
    const name = `tenantgate (no ledger) ≥ ${times} × ${peer === 'kyverno' ? 'Kyverno' : 'Gatekeeper'} throughput per core`;
    const candidates = summaries
      .filter((s) => engineOf(s.variant) === peer && s.comparedRounds > 0)
      .sort((a, b) => b.perCoreTotal - a.perCoreTotal);
    const best = candidates[0];
    const notes: string[] = [];
    if (fixtureProjects !== COMPARISON_PROJECTS)
      notes.push(`${fixtureProjects} fixture projects, the comparison needs ${COMPARISON_PROJECTS}`);
    if (!tg) notes.push('tenantgate (no ledger) not run');
    else if (tg.comparedRounds === 0) notes.push('no counted saturation round of tenantgate (no ledger)');
    if (!best) notes.push(`no counted saturation round of ${peer}`);
    const tgPerCore = tg && tg.comparedRounds > 0 ? tg.perCoreTotal : null;
    const peerPerCore = best ? best.perCoreTotal : null;
    const ratio = tgPerCore !== null && peerPerCore ? Math.round((tgPerCore / peerPerCore) * 100) / 100 : null;
    const judged = notes.length === 0 && ratio !== null;
    return {
      target: name,
      against: best?.variant ?? null,
      tenantgatePerCore: tgPerCore,
      peerPerCore,
      ratio,
      judged,
      met: judged && ratio >= times,
      note: notes.join('; '),
    };
  });
}

/** The pod comparison with Capsule (bench/comparisons/peers/pods.ts). */
function podReport(c: PodComparison, targets: PodTarget[]): string {
  const s = c.settings;
  const out: string[] = [];
  out.push(
    `\npods: a project's budget (requests.cpu) over ${5} namespaces; tenantgate: one quota per namespace (budget ÷ 5) and Kubernetes' quota admission; Capsule: one GlobalResourceQuota, its webhook reserving each pod in its QuantityLedger`,
  );
  out.push(
    `\nrace: ${s.raceConcurrent} concurrent 1-CPU pod creates over the namespaces, room for ${s.raceBudget}; in use counted by listing the pods`,
  );
  out.push(
    table(
      [
        'engine',
        'admitted per round',
        'in use per round (CPU)',
        'rounds overspent',
        'max overspend',
        'refused',
        'errors',
        `skewed: all in one namespace (admitted/refused/errors)`,
        'load start→end',
      ],
      c.race.map((r) => [
        r.engine,
        r.admittedPerRound.join(','),
        r.usedPerRound.join(','),
        `${r.overspentRounds}/${r.rounds}`,
        r.maxOverspendCpu,
        r.refused,
        `${r.errors}${r.firstError ? ` (${r.firstError.slice(0, 60)})` : ''}`,
        `${r.skewed.admitted}/${r.skewed.refused}/${r.skewed.errors}`,
        loadCell(r.load),
      ]),
    ),
  );
  out.push(
    `\nburst: ${s.burst} 1-CPU pod creates over the namespaces, ${s.burstConcurrency} in flight, room for ${s.burstRoom}`,
  );
  out.push(
    table(
      ['engine', 'admitted', 'refused', 'errors', 'wall s', 'in use (CPU)', 'overspend', 'load start→end'],
      c.burst.map((r) => [
        r.engine,
        r.admitted,
        r.refused,
        `${r.errors}${r.firstError ? ` (${r.firstError.slice(0, 60)})` : ''}`,
        r.wallS,
        r.usedCpu,
        r.overspendCpu,
        loadCell(r.load),
      ]),
    ),
  );
  out.push(
    `\nsteady: ${s.rate} pod creates/s for ${s.steadyS} s (open loop); CPU of the engine + apiserver + etcd above their idle rate with the engine running`,
  );
  out.push(
    table(
      [
        'engine',
        'admitted',
        'refused',
        'errors',
        'p50 ms',
        'p99 ms',
        'CPU ms per admitted pod',
        'CPU s (window)',
        'load start→end',
      ],
      c.steady.map((r) => [
        r.engine,
        `${r.admitted}/${r.sent}`,
        r.refused,
        r.errors,
        r.latencyMs.p50,
        r.latencyMs.p99,
        r.cpuMsPerAdmittedPod,
        Object.entries(r.cpuSeconds)
          .map(([k, v]) => `${k} ${v}`)
          .join(', '),
        loadCell(r.load),
      ]),
    ),
  );
  out.push(
    `\nnamespaces: ${s.nsBurst} Namespace creates by the owner at once; until each takes a pod within the budget`,
  );
  out.push(
    table(
      ['engine', 'admitted', 'refused', 'errors', 'creates s', 'all take a pod s', 'load start→end'],
      c.namespaces.map((r) => [
        r.engine,
        r.admitted,
        r.refused,
        r.errors,
        r.createWallS,
        r.readyWallS,
        loadCell(r.load),
      ]),
    ),
  );
  for (const e of c.errors) out.push(`FAILED ${e.engine}, ${e.scenario}: ${e.error.slice(0, 300)}`);
  for (const t of targets)
    out.push(
      `target ${t.target}: ${t.judged ? `${t.value} — ${t.met ? 'MET' : 'MISSED'}` : `NOT JUDGED (${t.note})${t.value ? `; as measured ${t.value}` : ''}`}`,
    );
  return out.join('\n');
}

function report(result: Record<string, unknown>): string {
  const out: string[] = [];
  const engines = (result.engines as EngineResult[] | undefined) ?? [];
  const idle = result.controlPlaneIdle as { apiserverPctOfCore: number; etcdPctOfCore: number } | undefined;
  out.push(
    `\nPeers — ${String(result.cpus)} CPUs (${String(result.cpuModel)}), load average at start ${(result.loadavgAtStart as number[]).join(' ')}; a row started above load ${MAX_LOAD} is not counted`,
  );
  out.push('\nthe rule (real dry-run creates through the apiserver)');
  out.push(
    table(
      ['variant', 'holds', ...(engines[0]?.checks ?? []).map((c) => c.case)],
      engines.map((e) => [
        e.variant,
        e.rulesHold ? 'yes' : `NO${e.error ? `: ${e.error.slice(0, 80)}` : ''}`,
        ...e.checks.map((c) => `${c.status}${c.ok ? '' : '!'}`),
      ]),
    ),
  );
  out.push(
    `\n(a) direct AdmissionReviews, Namespace CREATE, closed loop, every round (control plane: apiserver + etcd above idle${idle ? `, idle ${idle.apiserverPctOfCore} % + ${idle.etcdPctOfCore} % of a core` : ''}; per core: requests per CPU second)`,
  );
  out.push(
    table(
      [
        'variant',
        'round',
        'req/s',
        'engine µs/req',
        'control plane µs/req',
        'per core (engine)',
        'per core (engine + cp)',
        'p50 ms',
        'p99 ms',
        'errors',
        'pending after',
        'load start→end',
      ],
      engines.flatMap((e) =>
        e.throughput.map((t, k) => [
          e.variant,
          k + 1,
          t.rps,
          t.serverCpuUsPerRequest,
          t.controlPlaneAboveIdleUsPerRequest,
          t.perCore.engine,
          t.perCore.total,
          t.latencyMs.p50,
          t.latencyMs.p99,
          t.errors,
          t.pendingAfter ?? '-',
          `${loadCell(t.load)}${t.load.counted && !t.compared ? ' not compared (errors)' : ''}`,
        ]),
      ),
    ),
  );
  const summaries = (result.summaries as Summary[] | undefined) ?? [];
  out.push('\n(a) the comparison: median of the counted rounds');
  out.push(
    table(
      [
        'variant',
        'counted rounds',
        'req/s',
        'engine µs/req',
        'control plane µs/req',
        'per core (engine)',
        'per core (engine + cp)',
      ],
      summaries.map((s) => [
        s.variant,
        `${s.comparedRounds}/${s.rounds}`,
        s.rps,
        s.engineUsPerRequest,
        s.controlPlaneUsPerRequest,
        s.perCoreEngine,
        s.perCoreTotal,
      ]),
    ),
  );
  for (const tr of (result.targets as TargetResult[] | undefined) ?? []) {
    out.push(
      `target ${tr.target}: ${tr.judged ? `${tr.ratio}× (${tr.tenantgatePerCore} vs ${tr.peerPerCore} req per CPU second, against ${tr.against}) — ${tr.met ? 'MET' : 'MISSED'}` : `NOT JUDGED (${tr.note})${tr.ratio !== null ? `; as measured ${tr.ratio}× against ${tr.against}` : ''}`}`,
    );
  }
  out.push('\n(a) direct AdmissionReviews, open loop');
  out.push(
    table(
      ['variant', 'rate', 'completed', 'p50 ms', 'p99 ms', 'errors', 'engine µs/req', 'load start→end'],
      engines.flatMap((e) => [
        ...e.latency.map((l) => [
          e.variant,
          l.rate,
          `${l.completed}/${l.sent}`,
          l.latencyMs.p50,
          l.latencyMs.p99,
          l.errors,
          l.serverCpuUsPerRequest,
          loadCell(l.load),
        ]),
        ...e.latencySkipped.map((rate) => [e.variant, rate, 'not run: > 0.9 × saturation', '', '', '', '', '']),
      ]),
    ),
  );
  const none = result.endToEndNoWebhook as (ApiLoopResult & { load: RowLoad }) | undefined;
  const e2e = [
    ...(none ? [['no webhook', none] as const] : []),
    ...engines.filter((e) => e.endToEnd).map((e) => [e.variant, e.endToEnd!] as const),
  ];
  out.push('\n(b) end to end: dryRun=All Namespace creates by alice through the apiserver');
  out.push(
    table(
      ['webhook', 'rate', 'admitted', 'p50 ms', 'p99 ms', 'errors', 'apiserver µs/req', 'load start→end'],
      e2e.map(([name, r]) => [
        name,
        r.rate,
        `${r.admitted}/${r.sent}`,
        r.latencyMs.p50,
        r.latencyMs.p99,
        r.errors,
        r.cpu.usPerRequest.apiserver ?? NaN,
        loadCell(r.load),
      ]),
    ),
  );
  const race = (result.race as RaceRow[] | undefined) ?? [];
  if (race.length) {
    out.push('\nthe headroom race: 40 concurrent creates of a 1-CPU quota against a 10 CPU budget, per round');
    out.push(
      table(
        [
          'engine',
          'sequential admitted',
          'rounds overspent',
          'max admitted',
          'admitted per round',
          'headroom denials',
          'errors',
          'load start→end',
        ],
        race.map((r) =>
          'error' in r
            ? [r.engine, `FAILED: ${r.error.slice(0, 100)}`, '', '', '', '', '', loadCell(r.load)]
            : [
                r.engine,
                `${r.sequentialAdmitted}/${r.concurrent}`,
                `${r.overspentRounds}/${r.rounds}`,
                r.maxAdmitted,
                r.admittedPerRound.join(','),
                r.deniedHeadroom,
                `${r.errors}${r.firstError ? ` (${r.firstError.slice(0, 60)})` : ''}`,
                loadCell(r.load),
              ],
        ),
      ),
    );
  }
  const pods = result.pods as PodComparison | undefined;
  if (pods) out.push(podReport(pods, (result.podTargets as PodTarget[] | undefined) ?? []));
  const rss = (result.rss as RssRow[] | undefined) ?? [];
  if (rss.length) {
    out.push('\n(c) VmRSS after ready + 10 s');
    const first = rss[0]!;
    out.push(
      `small: ${first.small.projects} Projects, ${first.small.namespaces} of their Namespaces; large: ${first.large.projects} Projects, ${first.large.namespaces} Namespaces, ${first.large.quotas} ResourceQuotas`,
    );
    out.push(
      table(
        ['variant', 'small MB', 'large MB', 'peak MB', 'KB per added object', 'ready s', 'load start→end (large)'],
        rss.map((r) => {
          const smallLoad = engines.find((e) => e.variant === r.variant)?.rssSmall?.load;
          return [
            r.variant,
            `${r.small.rssMB}${smallLoad && !smallLoad.counted ? ` ${notCounted(smallLoad)}` : ''}`,
            r.large.rssMB,
            r.large.peakMB,
            r.perObjectKB,
            r.large.readyS,
            loadCell(r.large.load),
          ];
        }),
      ),
    );
  }
  return out.join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().then(
    (missed) => {
      if (missed.length) process.stderr.write(`peers: targets missed:\n${missed.map((m) => `  - ${m}`).join('\n')}\n`);
    },
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
