/**
 * Peers (ADR 0012): tenantgate next to Kyverno v1.19.1 and OPA Gatekeeper v3.23.1 enforcing
 * the same namespace-ownership rule (T2 + N2: a tenant's namespace carries tenantgate.io/project=<p>,
 * is named <p>-<suffix>, and the user owns p), on one real control plane, one engine at a time.
 *
 *  0. Builds the peers from Go modules if missing (hack/build-go-tool.sh, nice -n 10; cached in .cache/).
 *  1. Starts its own control plane (etcd, kube-apiserver, kube-controller-manager on 127.0.0.1), the
 *     tenantgate CRD and RBAC, the peers' CRDs (from their module zips), Projects `payments` (owner: the
 *     user alice) and `web` (owner: group acme:web-admins), and BENCH_PEERS_PROJECTS of the P1 fixture's
 *     Projects (p00000…, each with a User and a Group owner), so the P1 review bodies are admitted.
 *  2. Per engine (tenantgate, Kyverno, Gatekeeper), out of cluster, webhooks registered, failurePolicy Fail:
 *     - checks with real dry-run creates through the apiserver that it admits and denies as the rule
 *       says (owner + right name + label: admitted; non-owner, other project, wrong name: denied);
 *     - (a) direct AdmissionReviews (the P1 Namespace CREATE bodies, all admitted) from the P1 client
 *       (bench/lib/measure.ts): throughput at saturation (closed loop) with the engine's CPU per request
 *       from /proc/<pid>/stat, and the apiserver's + etcd's CPU per request (Kyverno reads the Project
 *       through the apiserver on every admission); latency p50/p99 at fixed rates (open loop);
 *     - (b) end to end: dryRun=All Namespace creates by alice at a fixed rate through the apiserver,
 *       p50/p99, also with no webhook at all;
 *     - Kyverno twice: with its default client rate limit (100 QPS, burst 200), which bounds
 *       resource.Get, and with the limit raised, for the engine's own cost.
 *  3. Bonus: Q1 (quota headroom) as a Kyverno ValidatingPolicy, 25 rounds × 40 concurrent quota creates
 *     of 1 CPU each against a 10 CPU budget (as test/e2e/headroom-race.test.ts): overspends counted.
 *  4. (c) RSS: each engine started fresh on the small cluster (step 2) and on a large one (N projects,
 *     5 namespaces and 5 quotas each, created as admin with no webhook registered), VmRSS after it is
 *     ready and has settled; growth per added object (Projects + Namespaces + ResourceQuotas).
 *
 *   npm run bench -- peers
 *   BENCH_PEERS_ENGINES=tenantgate,kyverno,gatekeeper   which engines
 *   BENCH_PEERS_PROJECTS=1000                           fixture Projects (the direct reviews' projects)
 *   BENCH_PEERS_DURATION_S=5 BENCH_PEERS_CONCURRENCY=32 BENCH_PEERS_ROUNDS=2   saturation
 *   BENCH_PEERS_RATES=100,500,2000 BENCH_PEERS_LATENCY_S=10                     direct latency
 *   BENCH_PEERS_API_RATE=50 BENCH_PEERS_API_S=20                                end to end
 *   BENCH_PEERS_RSS_PROJECTS=2000 (0: skip; the issue's full size is 10000)  BENCH_PEERS_Q1=1 (0: skip)
 *
 * Peers have no target of their own: main() returns no missed targets. Results: bench/results/peers.json.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { generateWebhookCerts } from '../src/certs/files.js';
import type { Project } from '../src/validate/types.js';
import { ControlPlane } from '../test/support/devcluster/controlplane.js';
import { applyOwnerBindings, installBase, kubectlAs } from '../test/support/devcluster/tenantgate.js';
import { type LatencyResult, Pool, type Target, type ThroughputResult, HERE, ROOT, closedLoop, compileTenantgate, env, log, nowMs, openLoop, postJson, procStatus, round1, sleep, table } from './lib/measure.js';
import { namespaceCreateBodies } from './lib/reviews.js';
import { apiOpenLoop, type ApiLoopResult, controlPlanePids, countCpu, createNamespace, createQuota, deleteQuotas } from './peers/apiload.js';
import { type Engine, type EngineName, type PeerBinary, buildPeer, eventually, installGatekeeperCrds, installKyvernoCrds, removeKyvernoWebhooks, startGatekeeper, startKyverno, startTenantgate } from './peers/engines.js';
import { Creator, createRange, parallel } from './webhook-p3.js';
import { NAMESPACES_PER_PROJECT } from './webhook-server.js';

const RESULTS = join(HERE, 'results', 'peers.json');
const KYVERNO_POLICY = 'kyverno-namespace-ownership.yaml';
const KYVERNO_Q1_POLICY = 'kyverno-q1-headroom.yaml';
const GATEKEEPER_POLICY = 'gatekeeper-namespace-ownership.yaml';
/** Kyverno with its client rate limit out of the way, to see the engine's own cost. */
const KYVERNO_RAISED = { qps: 100_000, burst: 100_000 };

type Variant = 'tenantgate' | 'tenantgate (ledger on)' | 'kyverno' | 'kyverno (QPS raised)' | 'gatekeeper';
/**
 * One webhook replica without the cross-replica reservation ledger, as P1 measures it: the peers keep no
 * reservations either. The shipped default (ledger on: every admitted growth, a Namespace CREATE too,
 * is a compare-and-swap write of a ConfigMap) is measured as its own variant.
 */
const TENANTGATE_ONE_REPLICA = { crossReplicaReservation: false };

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
  load1: number;
  /** CPU µs per request of the control plane meanwhile (Kyverno's resource.Get lands there). */
  controlPlaneUsPerRequest: Record<string, number>;
}

interface EngineResult {
  variant: Variant;
  checks: Check[];
  rulesHold: boolean;
  rssSmall?: { rssMB: number; peakMB: number; load1: number };
  throughput: DirectThroughput[];
  latency: Array<LatencyResult & { load1: number }>;
  /** Open-loop rates not run because they exceed 0.9 × the engine's measured saturation throughput. */
  latencySkipped: number[];
  endToEnd?: ApiLoopResult & { load1: number };
  error?: string;
}

interface RssRow {
  engine: EngineName;
  small: { projects: number; namespaces: number; rssMB: number };
  large: { projects: number; namespaces: number; quotas: number; rssMB: number; peakMB: number; readyS: number; load1: number };
  /** (large − small) RSS ÷ the objects added (Projects + Namespaces + ResourceQuotas). */
  perObjectKB: number;
}

interface Q1Result {
  rounds: number;
  concurrent: number;
  budgetCpu: number;
  /** The 40 creates one at a time: what the policy admits without a race. */
  sequentialAdmitted: number;
  admittedPerRound: number[];
  overspentRounds: number;
  maxAdmitted: number;
  deniedQ1: number;
  errors: number;
  firstError: string;
}

const load1 = () => round1(loadavg()[0] ?? NaN);

export async function main(): Promise<string[]> {
  mkdirSync(dirname(RESULTS), { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'tenantgate-bench-peers-'));
  const engines = (process.env.BENCH_PEERS_ENGINES ?? 'tenantgate,kyverno,gatekeeper').split(',').map((s) => s.trim()).filter(Boolean) as EngineName[];
  const fixtureProjects = Math.max(1, Math.round(env('BENCH_PEERS_PROJECTS', 1000)));
  const durationMs = env('BENCH_PEERS_DURATION_S', 5) * 1000;
  const concurrency = Math.max(1, Math.round(env('BENCH_PEERS_CONCURRENCY', 32)));
  const rounds = Math.max(1, Math.round(env('BENCH_PEERS_ROUNDS', 2)));
  const rates = (process.env.BENCH_PEERS_RATES ?? '100,500,2000').split(',').map(Number).filter((n) => n > 0);
  const latencyMs = env('BENCH_PEERS_LATENCY_S', 10) * 1000;
  const apiRate = env('BENCH_PEERS_API_RATE', 50);
  const apiMs = env('BENCH_PEERS_API_S', 20) * 1000;
  const rssProjects = Math.round(env('BENCH_PEERS_RSS_PROJECTS', 2000));
  const doQ1 = env('BENCH_PEERS_Q1', 1) > 0;
  const git = spawnSync('git', ['describe', '--always', '--dirty'], { cwd: ROOT, encoding: 'utf8' }).stdout?.trim() || 'unknown';
  const result: Record<string, unknown> = {
    benchmark: 'peers',
    date: new Date().toISOString(),
    git,
    node: process.version,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    loadavgAtStart: loadavg().map(round1),
    settings: { engines, fixtureProjects, durationMs, concurrency, rounds, rates, latencyMs, apiRate, apiMs, rssProjects, doQ1 },
  };
  const save = () => writeFileSync(RESULTS, JSON.stringify(result, null, 2));
  log(`peers: work dir ${work}; load average ${loadavg().map(round1).join(' ')}`);

  // 0. The peers' binaries.
  const binaries: Partial<Record<'kyverno' | 'gatekeeper', PeerBinary>> = {};
  for (const peer of ['kyverno', 'gatekeeper'] as const) {
    if (!engines.includes(peer)) continue;
    binaries[peer] = buildPeer(peer);
    log(`peers: ${peer} ${binaries[peer].version}: ${binaries[peer].path} (${binaries[peer].sizeMB} MB${binaries[peer].builtNowS !== null ? `, built in ${binaries[peer].builtNowS} s` : ', cached'})`);
  }
  result.binaries = binaries;

  // 1. The control plane and what every engine needs.
  const cp = await ControlPlane.start({ log });
  // Every child (control plane, engines) is started through test/support/devcluster/processes.ts,
  // which kills them when this process exits or gets SIGINT/SIGTERM/SIGHUP.
  const stopping: Array<() => Promise<void>> = [];
  try {
    const pids = controlPlanePids(cp);
    const cpPids = { apiserver: pids['kube-apiserver']!, etcd: pids.etcd! };
    await installBase(cp.info);
    const projects: Project[] = [
      { apiVersion: 'tenantgate.io/v1alpha1', kind: 'Project', metadata: { name: 'payments' }, spec: { tenant: 'acme', owners: [{ kind: 'User', name: 'alice' }], quota: { hard: { 'requests.cpu': '100' } } } } as Project,
      { apiVersion: 'tenantgate.io/v1alpha1', kind: 'Project', metadata: { name: 'web' }, spec: { tenant: 'acme', owners: [{ kind: 'Group', name: 'acme:web-admins' }], quota: { hard: { 'requests.cpu': '100' } } } } as Project,
    ];
    await kubectlAs(cp.info, 'admin', ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: projects }));
    const creator = new Creator(cp.info.kubeconfigs.admin!);
    const t = nowMs();
    await parallel(fixtureProjects, 50, (i) => creator.project(i));
    log(`peers: ${fixtureProjects} fixture Projects in ${round1((nowMs() - t) / 1000)} s`);
    if (binaries.kyverno) await installKyvernoCrds(cp, binaries.kyverno.version);
    if (binaries.gatekeeper) await installGatekeeperCrds(cp, binaries.gatekeeper.version, work);
    const mainJs = compileTenantgate('bench-peers', 'peers');
    const tgCerts = await generateWebhookCerts(join(work, 'tenantgate-certs'));

    const nsPool = new Pool('namespace-create', namespaceCreateBodies(60_000, fixtureProjects).map(withoutProjectUid));

    // (b) without any webhook first.
    log(`peers: end to end without a webhook: ${apiRate}/s dry-run Namespace creates by alice for ${apiMs / 1000} s`);
    const none = { ...(await apiOpenLoop(cp, 'alice', 'payments', 'none', apiRate, 2000, apiMs, cpPids)), load1: load1() };
    logApi('no webhook', none);
    result.endToEndNoWebhook = none;

    const byEngine: EngineResult[] = [];
    result.engines = byEngine;
    const runVariant = async (variant: Variant, start: () => Promise<Engine>, opts: { direct: 'all' | 'saturation' | 'none'; endToEnd: boolean; rss: boolean }) => {
      const r: EngineResult = { variant, checks: [], rulesHold: false, throughput: [], latency: [], latencySkipped: [] };
      byEngine.push(r);
      let engine: Engine | undefined;
      try {
        log(`peers: ${variant}: starting`);
        engine = await start();
        stopping.push(engine.stop);
        if (opts.rss) {
          await sleep(10_000);
          const s = procStatus(engine.pid);
          r.rssSmall = { rssMB: s.rssMB, peakMB: s.hwmMB, load1: load1() };
          log(`peers: ${variant}: VmRSS ${s.rssMB} MB (peak ${s.hwmMB}) on the small cluster`);
        }
        r.checks = await eventually(`${variant}: the rule holds`, async () => {
          const checks = await checkRule(cp, variant);
          if (!checks.every((c) => c.ok)) throw new Error(checks.filter((c) => !c.ok).map((c) => `${c.case}: ${c.status} ${c.message}`).join('; '));
          return checks;
        }, 120_000, 2000).catch(async (err: unknown) => {
          r.checks = await checkRule(cp, variant);
          throw err;
        });
        r.rulesHold = true;
        log(`peers: ${variant}: the rule holds: ${r.checks.map((c) => `${c.case} → ${c.status}`).join(', ')}`);
        const target: Target = { port: engine.direct.port, path: engine.direct.path, ca: engine.direct.ca };
        if (opts.direct !== 'none') {
          // Every measured body must be admitted, so the whole rule runs.
          for (const k of [0, 1, 2, 999, 12_345]) {
            const body = nsPool.bodies[k % nsPool.bodies.length]!;
            const a = await postJson(target, body);
            if (a.status !== 200 || a.json.response?.allowed !== true) throw new Error(`${variant}: direct AdmissionReview ${k} not admitted: HTTP ${a.status} ${JSON.stringify(a.json.response)}`);
          }
          for (let round = 1; round <= rounds; round++) {
            const cpCount = countCpu(cpPids);
            const th = await closedLoop(variant, 'Namespace CREATE', target, engine.pid, nsPool, concurrency, 1000, durationMs);
            const controlPlane = cpCount.stop(th.requests + Math.round(th.rps)).usPerRequest; // + the warm-up second, roughly
            const row = { ...th, load1: load1(), controlPlaneUsPerRequest: controlPlane };
            r.throughput.push(row);
            log(`peers: ${variant}: saturation round ${round}: ${th.rps} req/s, ${th.serverCpuUsPerRequest} µs engine CPU/req, apiserver ${controlPlane.apiserver} µs/req, errors ${th.errors}, load ${row.load1}`);
          }
          if (opts.direct === 'all') {
            const saturation = Math.max(...r.throughput.map((x) => x.rps));
            for (const rate of rates) {
              if (rate > 0.9 * saturation) {
                r.latencySkipped.push(rate);
                log(`peers: ${variant}: ${rate}/s not run: above 0.9 × its saturation throughput (${saturation} req/s)`);
                continue;
              }
              const l = await openLoop(variant, 'Namespace CREATE', target, engine.pid, nsPool, rate, 1000, latencyMs);
              r.latency.push({ ...l, load1: load1() });
              log(`peers: ${variant}: ${rate}/s: p50 ${l.latencyMs.p50} ms, p99 ${l.latencyMs.p99} ms, completed ${l.completed}/${l.sent}, errors ${l.errors}, engine ${l.serverCpuUsPerRequest} µs/req`);
            }
          }
        }
        if (opts.endToEnd) {
          const e = { ...(await apiOpenLoop(cp, 'alice', 'payments', variant.replace(/\W+/g, '').toLowerCase(), apiRate, 2000, apiMs, { ...cpPids, engine: engine.pid })), load1: load1() };
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

    if (engines.includes('tenantgate')) {
      await runVariant('tenantgate', () => startTenantgate(cp, work, mainJs, tgCerts, true, TENANTGATE_ONE_REPLICA), { direct: 'all', endToEnd: true, rss: true });
      await runVariant('tenantgate (ledger on)', () => startTenantgate(cp, work, mainJs, tgCerts, true), { direct: 'saturation', endToEnd: true, rss: false });
    }
    if (binaries.kyverno) {
      const kyverno = binaries.kyverno;
      await runVariant('kyverno', () => startKyverno(cp, work, kyverno, { policies: [KYVERNO_POLICY] }), { direct: 'saturation', endToEnd: true, rss: true });
      await runVariant('kyverno (QPS raised)', () => startKyverno(cp, work, kyverno, { policies: [KYVERNO_POLICY], ...KYVERNO_RAISED }), { direct: 'all', endToEnd: false, rss: false });
    }
    if (binaries.gatekeeper) {
      const gatekeeper = binaries.gatekeeper;
      await runVariant('gatekeeper', () => startGatekeeper(cp, work, gatekeeper, GATEKEEPER_POLICY), { direct: 'all', endToEnd: true, rss: true });
    }

    // 3. Q1 as a Kyverno policy, under the race of test/e2e/headroom-race.test.ts.
    if (doQ1 && binaries.kyverno) {
      const kyverno = binaries.kyverno;
      let engine: Engine | undefined;
      try {
        engine = await startKyverno(cp, work, kyverno, { policies: [KYVERNO_POLICY, KYVERNO_Q1_POLICY] });
        result.q1 = await runQ1(cp);
      } catch (err) {
        result.q1 = { error: err instanceof Error ? err.message : String(err) };
        log(`peers: Q1: FAILED: ${String(err)}`);
      } finally {
        await engine?.stop();
        // The Q1 policy would otherwise match every quota the large cluster creates.
        await kubectlAs(cp.info, 'admin', ['delete', '-f', join(ROOT, 'bench', 'peers', 'policies', KYVERNO_Q1_POLICY), '--ignore-not-found']).catch(() => {});
        save();
      }
    }

    // 4. RSS on a large cluster.
    if (rssProjects > 0) {
      await removeKyvernoWebhooks(cp);
      const target = Math.max(rssProjects, fixtureProjects);
      log(`peers: large cluster: ${target} Projects with ${NAMESPACES_PER_PROJECT} Namespaces and ${NAMESPACES_PER_PROJECT} ResourceQuotas each (as admin, no webhook registered)`);
      const phases: Array<{ what: string; objects: number; seconds: number }> = [];
      const t0 = nowMs();
      await createRange(creator, 0, target, 50, phases);
      result.largeCluster = { projects: target, namespaces: target * NAMESPACES_PER_PROJECT, quotas: target * NAMESPACES_PER_PROJECT, creationS: round1((nowMs() - t0) / 1000), phases };
      save();
      const rss: RssRow[] = [];
      result.rss = rss;
      const addedObjects = target - fixtureProjects + 2 * target * NAMESPACES_PER_PROJECT;
      const starters: Array<[EngineName, () => Promise<Engine>]> = [];
      if (engines.includes('tenantgate')) starters.push(['tenantgate', () => startTenantgate(cp, work, mainJs, tgCerts, false, TENANTGATE_ONE_REPLICA)]);
      if (binaries.kyverno) starters.push(['kyverno', () => startKyverno(cp, work, binaries.kyverno!, { policies: [KYVERNO_POLICY] })]);
      if (binaries.gatekeeper) starters.push(['gatekeeper', () => startGatekeeper(cp, work, binaries.gatekeeper!, null)]);
      for (const [name, start] of starters) {
        const small = byEngine.find((e) => e.variant === name)?.rssSmall;
        let engine: Engine | undefined;
        try {
          const ts = nowMs();
          engine = await start();
          const readyS = round1((nowMs() - ts) / 1000);
          await sleep(10_000);
          const s = procStatus(engine.pid);
          const row: RssRow = {
            engine: name,
            small: { projects: fixtureProjects + 2, namespaces: 0, rssMB: small?.rssMB ?? NaN },
            large: { projects: target + 2, namespaces: target * NAMESPACES_PER_PROJECT, quotas: target * NAMESPACES_PER_PROJECT, rssMB: s.rssMB, peakMB: s.hwmMB, readyS, load1: load1() },
            perObjectKB: small ? round1(((s.rssMB - small.rssMB) * 1024) / addedObjects) : NaN,
          };
          rss.push(row);
          log(`peers: ${name}: VmRSS ${s.rssMB} MB (peak ${s.hwmMB}) with ${target} projects, ${target * NAMESPACES_PER_PROJECT} namespaces, ${target * NAMESPACES_PER_PROJECT} quotas; ready in ${readyS} s`);
        } catch (err) {
          log(`peers: RSS ${name}: FAILED: ${String(err)}`);
          rss.push({ engine: name, small: { projects: fixtureProjects + 2, namespaces: 0, rssMB: small?.rssMB ?? NaN }, large: { projects: target, namespaces: 0, quotas: 0, rssMB: NaN, peakMB: NaN, readyS: NaN, load1: load1() }, perObjectKB: NaN });
        } finally {
          await engine?.stop();
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
  // The peers have no target of their own (docs/benchmarks.md); nothing to miss.
  return [];
}

/**
 * The P1 bodies carry tenantgate's protected annotation tenantgate.io/project-uid with the synthetic
 * snapshot's uid; against a real cluster the Project's uid differs (T7 would deny), and tenantgate's
 * mutating webhook sets it anyway: drop it, the rest of the review is P1's.
 */
function withoutProjectUid(body: Buffer): Buffer {
  const review = JSON.parse(body.toString('utf8')) as { request: { object: { metadata: { annotations?: Record<string, string> } } } };
  delete review.request.object.metadata.annotations?.['tenantgate.io/project-uid'];
  return Buffer.from(JSON.stringify(review));
}

function logApi(what: string, r: ApiLoopResult & { load1: number }): void {
  log(`peers: end to end, ${what}: p50 ${r.latencyMs.p50} ms, p99 ${r.latencyMs.p99} ms; ${r.admitted} admitted, ${r.denied} denied, ${r.errors} errors of ${r.sent}${r.firstDenial ? ` (first: ${r.firstDenial.slice(0, 200)})` : ''}; load ${r.load1}`);
}

/** The rule, checked with real dry-run creates through the apiserver. */
async function checkRule(cp: ControlPlane, variant: string): Promise<Check[]> {
  const tag = variant.replace(/\W+/g, '').toLowerCase().slice(0, 10);
  const cases: Array<Omit<Check, 'status' | 'message' | 'ok'>> = [
    { case: 'owner, right name and label', user: 'alice', name: `payments-${tag}`, project: 'payments', expect: 'admit' },
    { case: 'group owner', user: 'carol', name: `web-${tag}`, project: 'web', expect: 'admit' },
    { case: 'non-owner (same group of tenants)', user: 'dave', name: `payments-${tag}-d`, project: 'payments', expect: 'deny' },
    { case: 'owner of another project', user: 'alice', name: `web-${tag}-a`, project: 'web', expect: 'deny' },
    { case: 'wrong name', user: 'alice', name: `billing-${tag}`, project: 'payments', expect: 'deny' },
    { case: 'project that does not exist', user: 'alice', name: `nope-${tag}`, project: 'nope', expect: 'deny' },
  ];
  const out: Check[] = [];
  for (const c of cases) {
    const a = await createNamespace(cp, c.user, c.name, c.project);
    const admitted = a.status === 201;
    out.push({ ...c, status: a.status, message: a.message.slice(0, 300), ok: (c.expect === 'admit') === admitted && (admitted || a.status === 403 || a.status === 400) });
  }
  return out;
}

async function runQ1(cp: ControlPlane): Promise<Q1Result> {
  const project = 'race';
  const namespaces = Array.from({ length: 40 }, (_, i) => `race-n${i}`);
  const budget = 10;
  const body = { apiVersion: 'tenantgate.io/v1alpha1', kind: 'Project', metadata: { name: project }, spec: { tenant: 'acme', owners: [{ kind: 'User', name: 'alice' }], quota: { hard: { 'requests.cpu': String(budget) } } } };
  await kubectlAs(cp.info, 'admin', ['apply', '-f', '-'], JSON.stringify(body));
  await kubectlAs(cp.info, 'admin', ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: namespaces.map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'tenantgate.io/project': project, 'tenantgate.io/tenant': 'acme' } } })) }));
  await applyOwnerBindings(cp.info, body as unknown as Project, namespaces);
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const clear = async () => {
    await Promise.all(namespaces.map((ns) => deleteQuotas(cp, agent, ns)));
    // resource.List reads the quotas back: wait until none is left.
    await eventually('quotas cleared', async () => {
      const left = (await kubectlAs(cp.info, 'admin', ['get', 'resourcequota', '-A', '--no-headers'])).stdout.split('\n').filter((l) => l.startsWith('race-n')).length;
      if (left) throw new Error(`${left} quotas left`);
    }, 60_000, 250);
  };
  // The policy must be in force first: one quota over the budget is denied.
  await eventually('Kyverno Q1 policy in force', async () => {
    const a = await createQuota(cp, agent, 'alice', namespaces[0]!, 'probe', String(budget + 1));
    if (a.status === 201) {
      await clear();
      throw new Error('an over-budget quota was admitted: policy not active yet');
    }
    if (!/Q1/.test(a.message)) throw new Error(`denied, but not by Q1: ${a.status} ${a.message}`);
  }, 180_000, 2000);
  // Control: the same 40 creates one after another; the policy must admit exactly the budget.
  let sequentialAdmitted = 0;
  for (const ns of namespaces) if ((await createQuota(cp, agent, 'alice', ns, 'seq', '1')).status === 201) sequentialAdmitted += 1;
  log(`peers: Q1 sequential control: ${sequentialAdmitted} of 40 admitted (budget ${budget} × 1 CPU)`);
  await clear();
  const admittedPerRound: number[] = [];
  let deniedQ1 = 0;
  let errors = 0;
  let firstError = '';
  const ROUNDS = 25;
  for (let i = 0; i < ROUNDS; i++) {
    const answers = await Promise.all(namespaces.map((ns) => createQuota(cp, agent, 'alice', ns, `r${i}`, '1')));
    admittedPerRound.push(answers.filter((a) => a.status === 201).length);
    for (const a of answers) {
      if (a.status === 201) continue;
      if (/Q1/.test(a.message)) deniedQ1 += 1;
      else {
        errors += 1;
        firstError ||= `${a.status} ${a.message}`.slice(0, 300);
      }
    }
    log(`peers: Q1 round ${i + 1}: ${admittedPerRound[i]} of 40 admitted (budget ${budget} × 1 CPU)`);
    await clear();
  }
  agent.destroy();
  return {
    rounds: ROUNDS,
    concurrent: namespaces.length,
    budgetCpu: budget,
    sequentialAdmitted,
    admittedPerRound,
    overspentRounds: admittedPerRound.filter((n) => n > budget).length,
    maxAdmitted: Math.max(...admittedPerRound),
    deniedQ1,
    errors,
    firstError,
  };
}

function report(result: Record<string, unknown>): string {
  const out: string[] = [];
  const engines = (result.engines as EngineResult[] | undefined) ?? [];
  out.push('\nPeers: the rule (real dry-run creates through the apiserver)');
  out.push(table(['engine', 'holds', ...((engines[0]?.checks ?? []).map((c) => c.case))], engines.map((e) => [e.variant, e.rulesHold ? 'yes' : `NO${e.error ? `: ${e.error.slice(0, 80)}` : ''}`, ...e.checks.map((c) => `${c.status}${c.ok ? '' : '!'}`)])));
  out.push('\n(a) direct AdmissionReviews, Namespace CREATE, closed loop (best round by req/s)');
  out.push(table(['engine', 'req/s', 'engine µs/req', 'apiserver µs/req', 'etcd µs/req', 'p50 ms', 'p99 ms', 'errors', 'load1'], engines.filter((e) => e.throughput.length).map((e) => {
    const best = [...e.throughput].sort((a, b) => b.rps - a.rps)[0]!;
    const minCpu = Math.min(...e.throughput.map((t) => t.serverCpuUsPerRequest));
    return [e.variant, best.rps, minCpu, best.controlPlaneUsPerRequest.apiserver ?? NaN, best.controlPlaneUsPerRequest.etcd ?? NaN, best.latencyMs.p50, best.latencyMs.p99, best.errors, best.load1];
  })));
  out.push('\n(a) direct AdmissionReviews, open loop');
  out.push(table(['engine', 'rate', 'completed', 'p50 ms', 'p99 ms', 'errors', 'engine µs/req', 'load1'], engines.flatMap((e) => [
    ...e.latency.map((l) => [e.variant, l.rate, `${l.completed}/${l.sent}`, l.latencyMs.p50, l.latencyMs.p99, l.errors, l.serverCpuUsPerRequest, l.load1]),
    ...e.latencySkipped.map((rate) => [e.variant, rate, 'not run: > 0.9 × saturation', '', '', '', '', '']),
  ])));
  const none = result.endToEndNoWebhook as (ApiLoopResult & { load1: number }) | undefined;
  const e2e = [...(none ? [['no webhook', none] as const] : []), ...engines.filter((e) => e.endToEnd).map((e) => [e.variant, e.endToEnd!] as const)];
  out.push('\n(b) end to end: dryRun=All Namespace creates by alice through the apiserver');
  out.push(table(['webhook', 'rate', 'admitted', 'p50 ms', 'p99 ms', 'errors', 'apiserver µs/req', 'load1'], e2e.map(([name, r]) => [name, r.rate, `${r.admitted}/${r.sent}`, r.latencyMs.p50, r.latencyMs.p99, r.errors, r.cpu.usPerRequest.apiserver ?? NaN, r.load1])));
  const rss = (result.rss as RssRow[] | undefined) ?? [];
  if (rss.length) {
    out.push('\n(c) VmRSS after ready + 10 s');
    const first = rss[0]!;
    out.push(`small: ${first.small.projects} Projects, ${first.small.namespaces} of their Namespaces; large: ${first.large.projects} Projects, ${first.large.namespaces} Namespaces, ${first.large.quotas} ResourceQuotas`);
    out.push(table(['engine', 'small MB', 'large MB', 'peak MB', 'KB per added object', 'ready s', 'load1'], rss.map((r) => [r.engine, r.small.rssMB, r.large.rssMB, r.large.peakMB, r.perObjectKB, r.large.readyS, r.large.load1])));
  }
  const q1 = result.q1 as Partial<Q1Result> & { error?: string } | undefined;
  if (q1) out.push(`\nQ1 as a Kyverno policy: ${q1.error ? `FAILED: ${q1.error}` : `sequentially ${q1.sequentialAdmitted} of ${q1.concurrent} admitted; concurrently ${q1.overspentRounds} of ${q1.rounds} rounds overspent (max ${q1.maxAdmitted} of ${q1.concurrent} admitted against a budget of ${q1.budgetCpu}); per round ${q1.admittedPerRound?.join(',')}; errors ${q1.errors}`}`);
  return out.join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().then(
    () => {},
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}

