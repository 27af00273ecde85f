/** bench/targets/webhook-p1.ts: split out of bench/targets/webhook.ts (see its header for what the webhook benchmark measures). */
import { processNow } from '../../src/clock.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Session } from 'node:inspector/promises';
import { type WebhookCertFiles } from '../../src/certs/files.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { ReviewContext } from '../../src/validate/admission.js';
import type { HeadroomGuard } from '../../src/webhook/headroom/guard.js';
import { assembleWebhook } from '../../src/webhook/start.js';
import { WebhookMetrics } from '../../src/webhook/metrics.js';
import { decodeReview, envelope, responseFor, verdictFor, type AdmissionRequest } from '../../src/webhook/review.js';
import { NAMESPACES_PER_PROJECT, emulateWatch, StaticSource, p1Snapshot } from '../lib/webhook-server.js';
import { ClientFleet, type PoolName } from '../lib/webhook-client.js';

import { loadavg } from 'node:os';
import {
  HERE,
  LatencyResult,
  P1_PROJECTS,
  Pool,
  benchServer,
  TARGET_CPU_RATIO,
  TARGET_P99_MS,
  TARGET_RATIO,
  Target,
  ThroughputResult,
  closedLoop,
  env,
  log,
  median,
  openLoop,
  pinning,
  postJson,
  round1,
  round3,
  startChild,
  table,
  undisturbed,
} from '../lib/measure.js';
import { ProfileEntry, ProfileSummary, summariseProfile } from '../lib/profile.js';
import { namespaceCreateBodies, quotaUpdateBodies, ruleScenarios } from '../lib/reviews.js';

export interface BreakdownResult {
  scenario: string;
  requests: number;
  /** CPU µs per request of each piece of createApp's handler, measured alone. */
  cpuUs: {
    jsonParse: number;
    decodeReview: number;
    verdictOnce: number;
    guardDecide: number;
    metrics: number;
    responseStringify: number;
    total: number;
  };
  /** Inside guard.decide (V8 profile of the same loop, scaled to its CPU time). */
  decideProfile: { topInclusive: ProfileEntry[]; topSelf: ProfileEntry[] };
}

export function cpuUsOf(n: number, fn: () => void): number {
  const c0 = process.cpuUsage();
  fn();
  const c = process.cpuUsage(c0);
  return round1((c.user + c.system) / n);
}

export async function cpuUsOfAsync(n: number, fn: () => Promise<void>): Promise<number> {
  const c0 = process.cpuUsage();
  await fn();
  const c = process.cpuUsage(c0);
  return round1((c.user + c.system) / n);
}

export async function breakdown(work: string): Promise<BreakdownResult[]> {
  const snapshot = p1Snapshot(P1_PROJECTS);
  const config = { ...DEFAULT_CONFIG, crossReplicaReservation: false };
  const metrics = new WebhookMetrics();
  const out: BreakdownResult[] = [];
  for (const { scenario, bodies } of ruleScenarios(P1_PROJECTS)) {
    const n = bodies.length;
    const parsed = bodies.map((b) => JSON.parse(b.toString('utf8')) as unknown);
    const requests: AdmissionRequest[] = parsed.map((p) => {
      const d = decodeReview(p);
      if (!d.ok) throw new Error(d.error);
      return d.request;
    });
    const ctxOf = (r: AdmissionRequest, pending?: ReviewContext['pending']): ReviewContext => ({
      at: processNow(),
      config,
      snapshot,
      user: r.userInfo,
      pending,
    });
    // As in the tenantgate server: the cache catches up after each admitted growth (see emulateWatch).
    // A fresh guard each time, wired to its own source as src/webhook/start.ts wires it.
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
    const labels = {
      path: 'validate',
      operation: requests[0]!.operation,
      kind: requests[0]!.kind.kind,
      verdict: 'allowed',
    };
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
    cpuUs.total = round1(
      cpuUs.jsonParse + cpuUs.decodeReview + cpuUs.guardDecide + cpuUs.metrics + cpuUs.responseStringify,
    );

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
    const inside = (e: ProfileEntry) =>
      !/^(?:\(|main |runMicrotasks|processTicksAndRejections|decideAll|breakdown)/.test(e.name) &&
      !/ (?:bench\/|node:)/.test(e.name);
    out.push({
      scenario,
      requests: n,
      cpuUs,
      decideProfile: {
        topInclusive: summary.topInclusive.filter(inside).slice(0, 20),
        topSelf: summary.topSelf.slice(0, 15),
      },
    });
    log(`P1 breakdown ${scenario}: ${JSON.stringify(cpuUs)}`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Tables
// ---------------------------------------------------------------------------------------------

/** A closed-loop round whose load generator used this much of a core measured the client, not the server. */
export const CLIENT_BOUND_PCT = 90;
/** Rounds started above this 1-minute load average are reported but not counted. */
export const MAX_LOAD_AVERAGE = 3;

export interface P1Result {
  fixture: { projects: number; namespaces: number; quotas: number };
  /** Client processes of the throughput runs (bench/lib/webhook-client.ts); 1: the in-process client. */
  clients: number;
  concurrency: number;
  warmupS: number;
  durationS: number;
  rounds: number;
  throughput: Array<ThroughputResult & { attempts: number }>;
  /** Median req/s over the rounds whose client was not saturated, every server alike (NaN: none). */
  best: Record<string, number>;
  /** Namespace CREATE ÷ bare, ResourceQuota UPDATE ÷ bare fed the quota bodies, Express ÷ bare. */
  ratio: { namespaceCreate: number; quotaUpdate: number; expressFloor: number };
  /** Per server and scenario, rounds whose client was the bottleneck (client CPU ≥ CLIENT_BOUND_PCT): not counted for the throughput ratio. */
  clientBoundRounds: Record<string, number>;
  /** Server CPU µs per request at the fixed rate (open loop), median over the rounds: the judge of the CPU ratio. */
  serverCpuUsPerRequest: {
    bare: number;
    bareQuotaBodies: number;
    expressFloor: number;
    namespaceCreate: number;
    quotaUpdate: number;
  };
  /** bare µs/req ÷ tenantgate µs/req at the same fixed rate: the throughput ratio if each server had a core of its own and the client were free. */
  /** The median of `cpuRatioRounds`: what P1 judges. */
  cpuRatio: { namespaceCreate: number; quotaUpdate: number; expressFloor: number };
  /** Each round's own ratio (bare ÷ the server, CPU per request at the fixed rate), in round order. */
  cpuRatioRounds: { namespaceCreate: number[]; quotaUpdate: number[]; expressFloor: number[] };
  latency: Array<LatencyResult & { attempts: number; round: number }>;
  /** Median p99 (ms) over the latency rounds, by server and scenario. */
  p99Ms: Record<string, number>;
  /** Requests answered with something else than the scenario's verdict (every P1 scenario must be admitted) or not 200. */
  verdictErrors: number;
  loadAverage: { start: number; end: number };
  checks: Record<string, string>;
  met: { throughput: boolean; cpuPerRequest: boolean; latency: boolean; verdicts: boolean; quietMachine: boolean };
  profiles?: ProfileSummary[];
  breakdown?: BreakdownResult[];
  pinned: { client: string; server: string } | null;
}

export async function runP1(work: string, certs: WebhookCertFiles): Promise<P1Result> {
  const concurrency = env('BENCH_WEBHOOK_CONCURRENCY', 32);
  const durationMs = env('BENCH_WEBHOOK_DURATION_S', 5) * 1000;
  const warmupMs = 1000;
  const rounds = Math.max(1, env('BENCH_WEBHOOK_ROUNDS', 5));
  const loadAtStart = loadavg()[0]!;
  const clients = Math.max(1, Math.round(env('BENCH_WEBHOOK_CLIENTS', 4)));
  const rate = env('BENCH_WEBHOOK_RATE', 1000);
  const latencyMs = env('BENCH_WEBHOOK_LATENCY_S', 5) * 1000;
  const ca = readFileSync(certs.caCert);
  const srv = benchServer('P1');
  const certArgs = ['--cert', certs.cert, '--key', certs.key];

  log(
    `P1: building request pools (${P1_PROJECTS} projects, ${P1_PROJECTS * NAMESPACES_PER_PROJECT} namespaces, ${P1_PROJECTS * NAMESPACES_PER_PROJECT} quotas in the server's snapshot)`,
  );
  const nsPool = new Pool('namespace-create', namespaceCreateBodies(60_000, P1_PROJECTS));
  const quotaPool = new Pool('quota-update', quotaUpdateBodies(P1_PROJECTS, 10));
  const barePool = new Pool('bare', nsPool.bodies);
  // The bare server fed the quota bodies (larger: object and oldObject): the quota scenario's own baseline.
  const bareQuotaPool = new Pool('bare-quota', quotaPool.bodies);
  const avgBytes = (p: Pool) => Math.round(p.bodies.reduce((a, b) => a + b.length, 0) / p.bodies.length);
  log(`P1: request bodies: namespace CREATE ≈ ${avgBytes(nsPool)} B, quota UPDATE ≈ ${avgBytes(quotaPool)} B`);

  const pin = pinning();
  log(
    pin
      ? `P1: load generator pinned to CPU ${pin.client}, servers to CPU ${pin.server}`
      : 'P1: no CPU pinning (taskset missing, one CPU, or BENCH_WEBHOOK_PIN=0)',
  );
  const bare = await startChild(
    srv.nodeArgs,
    [srv.script, 'bare', ...certArgs],
    join(work, 'bare.log'),
    undefined,
    pin?.server,
  );
  const floor = await startChild(
    srv.nodeArgs,
    [srv.script, 'express', ...certArgs],
    join(work, 'express.log'),
    undefined,
    pin?.server,
  );
  const tg = await startChild(
    srv.nodeArgs,
    [srv.script, 'tenantgate', ...certArgs, '--projects', String(P1_PROJECTS)],
    join(work, 'tenantgate.log'),
    undefined,
    pin?.server,
  );
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
    checks[name] =
      `HTTP ${r.status}, allowed=${a?.allowed}${a?.status?.message ? `, ${a.status.message}` : ''}${a?.warnings?.length ? `, warnings: ${a.warnings.join('; ')}` : ''}`;
    if (r.status !== 200 || a?.allowed !== true)
      throw new Error(`P1 scenario ${name} is not admitted: ${checks[name]}`);
  }
  log(`P1: checks: ${JSON.stringify(checks)}`);

  const scenarios = [
    ['bare', 'parse and answer', bareTarget, bare.pid, barePool, 'namespace-create'],
    ['bare', 'parse and answer, quota bodies', bareTarget, bare.pid, bareQuotaPool, 'quota-update'],
    ['express', 'fixed answer', floorTarget, floor.pid, barePool, 'namespace-create'],
    ['tenantgate', 'Namespace CREATE', tgTarget, tg.pid, nsPool, 'namespace-create'],
    ['tenantgate', 'ResourceQuota UPDATE', tgTarget, tg.pid, quotaPool, 'quota-update'],
  ] as const;
  const throughput: Array<ThroughputResult & { attempts: number }> = [];
  // Several client processes (pinned with this one to the client CPU), or the in-process client.
  const fleet = clients > 1 ? await ClientFleet.start(clients, certs.caCert) : undefined;
  log(
    fleet ? `P1: ${clients} client processes, ${concurrency} requests in flight in total` : 'P1: one in-process client',
  );
  try {
    for (let round = 1; round <= rounds; round++) {
      for (const [server, scenario, target, pid, pool, poolName] of scenarios) {
        const loop = () =>
          fleet
            ? fleet.closedLoop(server, scenario, target, pid, poolName as PoolName, concurrency, warmupMs, durationMs)
            : closedLoop(server, scenario, target, pid, pool, concurrency, warmupMs, durationMs);
        const r = await undisturbed(
          `P1 ${server} ${scenario}`,
          [bare.pid, floor.pid, tg.pid, ...(fleet?.pids ?? [])],
          loop,
        );
        log(
          `P1 round ${round}: ${server} ${scenario}: ${r.rps} req/s (server CPU ${r.serverCpuPct} %, ${r.serverCpuUsPerRequest} µs/req; clients ${r.clientCpuPct} %, others ${r.otherCpuPct} %)`,
        );
        throughput.push(r);
      }
    }
    await fleet?.stop();
    // Medians over the rounds, never the best one. A round whose client used a whole core measured the
    // client, not the server: it does not count for the throughput ratio, whichever server it was
    // (the same filter for all, so no server is judged on rounds another would have lost).
    const roundsOf = (server: string, scenario: string) =>
      throughput.filter((t) => t.server === server && t.scenario === scenario);
    // A round that answered nothing (rps 0: its client never got going) measured nothing either.
    const unsaturatedOf = (server: string, scenario: string) =>
      roundsOf(server, scenario).filter((t) => t.clientCpuPct < CLIENT_BOUND_PCT && t.rps > 0);
    const clientBoundRounds: Record<string, number> = {};
    for (const [server, scenario] of scenarios) {
      const bound = roundsOf(server, scenario).length - unsaturatedOf(server, scenario).length;
      clientBoundRounds[`${server} ${scenario}`] = bound;
      if (bound > 0)
        log(
          `P1: ${bound} of ${roundsOf(server, scenario).length} ${server} ${scenario} rounds were client-bound (client CPU ≥ ${CLIENT_BOUND_PCT} %) or answered nothing: not counted`,
        );
    }
    const medianRps = (rs: ThroughputResult[]) => (rs.length ? median(rs.map((t) => t.rps)) : NaN);
    const bestOf = {
      bare: medianRps(unsaturatedOf('bare', 'parse and answer')),
      bareQuotaBodies: medianRps(unsaturatedOf('bare', 'parse and answer, quota bodies')),
      expressFloor: medianRps(unsaturatedOf('express', 'fixed answer')),
      namespaceCreate: medianRps(unsaturatedOf('tenantgate', 'Namespace CREATE')),
      quotaUpdate: medianRps(unsaturatedOf('tenantgate', 'ResourceQuota UPDATE')),
    };
    const ratio = {
      namespaceCreate: round3(bestOf.namespaceCreate / bestOf.bare),
      quotaUpdate: round3(bestOf.quotaUpdate / bestOf.bareQuotaBodies),
      expressFloor: round3(bestOf.expressFloor / bestOf.bare),
    };

    // The judge: server CPU per request at one fixed rate (open loop, the same rate for every server),
    // median over the rounds; and the p99 there. Unpinned: a neighbour on one core cannot stall the server.
    pin?.restore();
    for (const c of [bare, floor, tg]) pin?.unpin(c.pid);
    const latency: Array<LatencyResult & { attempts: number; round: number }> = [];
    for (let round = 1; round <= rounds; round++) {
      for (const [server, scenario, target, pid, pool] of scenarios) {
        const r = await undisturbed(`P1 latency ${server} ${scenario}`, [bare.pid, floor.pid, tg.pid], () =>
          openLoop(server, scenario, target, pid, pool, rate, 1000, latencyMs),
        );
        log(
          `P1 round ${round} @${rate}/s: ${server} ${scenario}: p50 ${r.latencyMs.p50} ms, p99 ${r.latencyMs.p99} ms, server ${r.serverCpuUsPerRequest} µs/req (errors ${r.errors})`,
        );
        latency.push({ ...r, round });
      }
    }
    const fixedRate = (server: string, scenario: string) =>
      latency.filter((l) => l.server === server && l.scenario === scenario);
    const cpuUs = (server: string, scenario: string) =>
      round1(median(fixedRate(server, scenario).map((l) => l.serverCpuUsPerRequest)));
    const serverCpuUsPerRequest = {
      bare: cpuUs('bare', 'parse and answer'),
      bareQuotaBodies: cpuUs('bare', 'parse and answer, quota bodies'),
      expressFloor: cpuUs('express', 'fixed answer'),
      namespaceCreate: cpuUs('tenantgate', 'Namespace CREATE'),
      quotaUpdate: cpuUs('tenantgate', 'ResourceQuota UPDATE'),
    };
    // Each round's servers ran one after the other under the same conditions: the judge is the median
    // over the rounds of each round's own ratio, so a slow round slows both sides of its ratio instead of
    // one side of a ratio of medians; every round's ratio is kept to show the judge's spread.
    const roundRatios = (base: string, judged: [string, string]) =>
      latency
        .filter((l) => l.server === judged[0] && l.scenario === judged[1])
        .map((l) => {
          const baseRound = latency.find((b) => b.server === 'bare' && b.scenario === base && b.round === l.round);
          return baseRound ? round3(baseRound.serverCpuUsPerRequest / l.serverCpuUsPerRequest) : NaN;
        });
    const cpuRatioRounds = {
      namespaceCreate: roundRatios('parse and answer', ['tenantgate', 'Namespace CREATE']),
      quotaUpdate: roundRatios('parse and answer, quota bodies', ['tenantgate', 'ResourceQuota UPDATE']),
      expressFloor: roundRatios('parse and answer', ['express', 'fixed answer']),
    };
    const cpuRatio = {
      namespaceCreate: round3(median(cpuRatioRounds.namespaceCreate)),
      quotaUpdate: round3(median(cpuRatioRounds.quotaUpdate)),
      expressFloor: round3(median(cpuRatioRounds.expressFloor)),
    };
    log(
      `P1: bare ÷ tenantgate CPU per request, each round: Namespace CREATE ${cpuRatioRounds.namespaceCreate.join(', ')}; ResourceQuota UPDATE ${cpuRatioRounds.quotaUpdate.join(', ')}`,
    );
    const p99Ms: Record<string, number> = {};
    for (const [server, scenario] of scenarios)
      p99Ms[`${server} ${scenario}`] = round3(median(fixedRate(server, scenario).map((l) => l.latencyMs.p99)));
    const verdictErrors = [...throughput, ...latency].reduce((a, r) => a + r.errors, 0);
    const loadAtEnd = loadavg()[0]!;
    const met = {
      // NaN (a server with no unsaturated round) is not met, nor a ratio to nothing (Infinity).
      throughput:
        Number.isFinite(Math.min(ratio.namespaceCreate, ratio.quotaUpdate)) &&
        Math.max(ratio.namespaceCreate, ratio.quotaUpdate) < Infinity &&
        Math.min(ratio.namespaceCreate, ratio.quotaUpdate) >= TARGET_RATIO,
      cpuPerRequest: Math.min(cpuRatio.namespaceCreate, cpuRatio.quotaUpdate) >= TARGET_CPU_RATIO,
      latency: [p99Ms['tenantgate Namespace CREATE']!, p99Ms['tenantgate ResourceQuota UPDATE']!].every(
        (p) => p < TARGET_P99_MS,
      ),
      verdicts: verdictErrors === 0,
      quietMachine: loadAtStart <= MAX_LOAD_AVERAGE,
    };
    const result: P1Result = {
      fixture: {
        projects: P1_PROJECTS,
        namespaces: P1_PROJECTS * NAMESPACES_PER_PROJECT,
        quotas: P1_PROJECTS * NAMESPACES_PER_PROJECT,
      },
      clients,
      concurrency,
      warmupS: warmupMs / 1000,
      durationS: durationMs / 1000,
      rounds,
      throughput,
      best: bestOf,
      ratio,
      clientBoundRounds,
      serverCpuUsPerRequest,
      cpuRatio,
      cpuRatioRounds,
      latency,
      p99Ms,
      verdictErrors,
      loadAverage: { start: round3(loadAtStart), end: round3(loadAtEnd) },
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
        await profileServer(
          work,
          certs,
          srv,
          'bare',
          'parse and answer',
          barePool,
          concurrency,
          durationMs,
          pin?.server,
        ),
        await profileServer(
          work,
          certs,
          srv,
          'tenantgate',
          'Namespace CREATE',
          nsPool,
          concurrency,
          durationMs,
          pin?.server,
        ),
        await profileServer(
          work,
          certs,
          srv,
          'tenantgate',
          'ResourceQuota UPDATE',
          quotaPool,
          concurrency,
          durationMs,
          pin?.server,
        ),
      ];
    }
    return result;
  } finally {
    await fleet?.stop();
    await bare.stop();
    await floor.stop();
    await tg.stop();
    pin?.restore();
  }
}

/** Profiles a server with the in-process V8 profiler, started after a warm-up, over one closed-loop window. */
export async function profileServer(
  work: string,
  certs: WebhookCertFiles,
  srv: { nodeArgs: string[]; script: string },
  mode: 'bare' | 'tenantgate',
  scenario: string,
  pool: Pool,
  concurrency: number,
  durationMs: number,
  cpu?: string,
): Promise<ProfileSummary> {
  const file = join(HERE, 'results', `webhook-${mode}-${scenario.replace(/\W+/g, '-').toLowerCase()}.cpuprofile`);
  log(
    `P1: profiling ${mode} ${scenario} (V8 CPU profiler, 100 µs sampling, ${durationMs / 1000} s after a 2 s warm-up)`,
  );
  const child = await startChild(
    srv.nodeArgs,
    [srv.script, mode, '--cert', certs.cert, '--key', certs.key, '--projects', String(P1_PROJECTS), '--profile', file],
    join(work, `${mode}-prof.log`),
    undefined,
    cpu,
  );
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

export function printP1(out: string[], p1: P1Result): void {
  out.push(
    `\nP1 throughput: ${p1.clients > 1 ? `${p1.clients} client processes, ` : ''}${p1.concurrency} in flight, ${p1.warmupS} s warm-up + ${p1.durationS} s, ${p1.rounds} rounds; snapshot ${p1.fixture.projects} projects / ${p1.fixture.namespaces} namespaces / ${p1.fixture.quotas} quotas; server and client in separate processes${p1.pinned ? ` (client on CPU ${p1.pinned.client}, server on CPU ${p1.pinned.server})` : ''}`,
  );
  out.push(
    table(
      [
        'server / request',
        'round',
        'req/s',
        'p50 ms',
        'p99 ms',
        'server CPU %',
        'server µs/req',
        'clients CPU %',
        'others CPU %',
        'tries',
        'errors',
      ],
      p1.throughput.map((t, k) => [
        `${t.server} ${t.scenario}`,
        Math.floor(k / 5) + 1,
        t.rps,
        t.latencyMs.p50,
        t.latencyMs.p99,
        t.serverCpuPct,
        t.serverCpuUsPerRequest,
        t.clientCpuPct,
        t.otherCpuPct,
        t.attempts,
        t.errors,
      ]),
    ),
  );
  out.push(
    `load average ${p1.loadAverage.start} at start, ${p1.loadAverage.end} at the end${p1.met.quietMachine ? '' : ` — NOT COUNTED: started above ${MAX_LOAD_AVERAGE}`}; answers other than the scenario's verdict (or not 200): ${p1.verdictErrors}`,
  );
  const bound = Object.entries(p1.clientBoundRounds)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  out.push(
    `median of the rounds with an unsaturated client (client CPU < ${CLIENT_BOUND_PCT} %, every server alike${bound ? `; client-bound rounds not counted: ${bound}` : ''}): bare ${p1.best.bare} req/s, bare fed the quota bodies ${p1.best.bareQuotaBodies} req/s; tenantgate Namespace CREATE ${p1.best.namespaceCreate} req/s (ratio ${p1.ratio.namespaceCreate} to bare), ResourceQuota UPDATE ${p1.best.quotaUpdate} req/s (ratio ${p1.ratio.quotaUpdate} to bare fed the quota bodies); target ≥ ${TARGET_RATIO}: ${p1.met.throughput ? 'MET' : 'MISSED'}`,
  );
  out.push(
    `Express floor (express.json + res.json, no rules): ${p1.best.expressFloor} req/s (ratio ${p1.ratio.expressFloor}), ${p1.serverCpuUsPerRequest.expressFloor} µs server CPU per request (bare/express ${p1.cpuRatio.expressFloor})`,
  );
  out.push(
    `server CPU per request at ${p1.latency[0]?.rate ?? '-'} req/s (fixed rate, median of the rounds; ratios: median of each round's own): bare ${p1.serverCpuUsPerRequest.bare} µs (fed the quota bodies ${p1.serverCpuUsPerRequest.bareQuotaBodies} µs), Namespace CREATE ${p1.serverCpuUsPerRequest.namespaceCreate} µs (bare/tenantgate ${p1.cpuRatio.namespaceCreate}), ResourceQuota UPDATE ${p1.serverCpuUsPerRequest.quotaUpdate} µs (bare with the quota bodies/tenantgate ${p1.cpuRatio.quotaUpdate}); target ≥ ${TARGET_CPU_RATIO}: ${p1.met.cpuPerRequest ? 'MET' : 'MISSED'}`,
  );
  out.push(
    `\nP1 fixed rate: open loop at ${p1.latency[0]?.rate ?? '-'} req/s for ${p1.latency[0]?.durationS ?? '-'} s (after 1 s warm-up), unpinned, ${p1.rounds} rounds; from send (and from schedule)`,
  );
  out.push(
    table(
      [
        'server / request',
        'round',
        'sent',
        'p50 ms',
        'p90 ms',
        'p99 ms',
        'max ms',
        'p99 sched ms',
        'server µs/req',
        'server CPU %',
        'others CPU %',
        'tries',
        'errors',
      ],
      p1.latency.map((l) => [
        `${l.server} ${l.scenario}`,
        l.round,
        l.sent,
        l.latencyMs.p50,
        l.latencyMs.p90,
        l.latencyMs.p99,
        l.latencyMs.max,
        l.scheduledLatencyMs.p99,
        l.serverCpuUsPerRequest,
        l.serverCpuPct,
        l.otherCpuPct,
        l.attempts,
        l.errors,
      ]),
    ),
  );
  out.push(
    `median p99: ${Object.entries(p1.p99Ms)
      .map(([k, v]) => `${k} ${v} ms`)
      .join(
        ', ',
      )}; target p99 < ${TARGET_P99_MS} ms at ${p1.latency[0]?.rate ?? '-'} req/s: ${p1.met.latency ? 'MET' : 'MISSED'}`,
  );
  for (const b of p1.breakdown ?? []) {
    const measured = p1.throughput.filter((t) => t.server === 'tenantgate' && t.scenario === b.scenario);
    const serverUs = median(measured.map((t) => t.serverCpuUsPerRequest));
    // The bare server's cost with this scenario's bodies (the quota bodies are larger).
    const bareUs =
      b.scenario === 'ResourceQuota UPDATE' ? p1.serverCpuUsPerRequest.bareQuotaBodies : p1.serverCpuUsPerRequest.bare;
    const rest = round1(serverUs - bareUs - b.cpuUs.total);
    out.push(
      `\nP1 breakdown, ${b.scenario}: CPU µs per request of the handler's pieces, measured alone in-process over ${b.requests} requests`,
    );
    out.push(
      table(
        ['piece', 'µs/req'],
        [
          ['JSON.parse of the body', b.cpuUs.jsonParse],
          ['decodeReview', b.cpuUs.decodeReview],
          ['guard.decide + emulated cache event (verdictFor once: ' + b.cpuUs.verdictOnce + ')', b.cpuUs.guardDecide],
          ['metrics (counter + histogram)', b.cpuUs.metrics],
          ['JSON.stringify of the response', b.cpuUs.responseStringify],
          ['sum', b.cpuUs.total],
          ['server total in the P1 run (µs/req, /proc)', serverUs],
          ["  of which the bare server's TLS + HTTP (same bodies)", bareUs],
          ['  rest: HTTP handler, decision record, watch event, promises, GC', rest],
          [
            '  (Express floor − bare, measured: ' +
              round1(p1.serverCpuUsPerRequest.expressFloor - p1.serverCpuUsPerRequest.bare) +
              ')',
            '',
          ],
        ],
      ),
    );
    out.push(
      table(
        ['inside guard.decide (inclusive)', '%', 'µs/req'],
        b.decideProfile.topInclusive.slice(0, 16).map((e) => [e.name, e.pct, e.usPerRequest]),
      ),
    );
  }
  for (const pr of p1.profiles ?? []) {
    out.push(
      `\nCPU profile: ${pr.server} ${pr.scenario} — ${pr.rps} req/s under the profiler, ${pr.busyUsPerRequest} µs of server CPU per request (/proc), shared out by sample counts (${pr.file})`,
    );
    out.push(
      table(
        ['self time by origin', '%', 'µs/req'],
        pr.byOrigin.slice(0, 12).map((o) => [o.name, o.pct, o.usPerRequest]),
      ),
    );
    if (pr.server === 'tenantgate') {
      out.push(
        table(
          ['inclusive time by origin', '%', 'µs/req'],
          pr.byOriginInclusive.slice(0, 16).map((o) => [o.name, o.pct, o.usPerRequest]),
        ),
      );
      out.push(
        table(
          ['self time by function', '%', 'µs/req'],
          pr.topSelf.slice(0, 16).map((o) => [o.name, o.pct, o.usPerRequest]),
        ),
      );
      out.push(
        table(
          ['inclusive time by function', '%', 'µs/req'],
          pr.topInclusive.slice(0, 36).map((o) => [o.name, o.pct, o.usPerRequest]),
        ),
      );
    }
  }
}

/** The webhook's cache gauge, whichever label spelling it uses ("Namespace" or "namespaces"). */
