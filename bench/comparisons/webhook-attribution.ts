/**
 * Where tenantgate's server CPU per request goes beyond the bare server's (P1), by leaving parts out:
 * the same tenantgate server (bench/lib/webhook-server.ts) started with the decision records, the emulated
 * watch events or the rules switched off, next to the bare server. That server is NOT the shipped
 * configuration: it is createApp + the guard over an in-memory snapshot of 1,000 projects, without the
 * headroom ledger (crossReplicaReservation: false), without informers (watch events emulated), without
 * client auth, one process. Every variant is named for what it runs; the shipped path (ledger on, two
 * replicas, client auth, the real apiserver) is bench/targets/shipped.ts. All variants are up at once and
 * take turns, round after round, so a disturbance hits them alike; each turn is
 *
 *  - closed loop: one in-process client, N requests in flight (server CPU per request at saturation);
 *  - fixed rate: open loop at R requests/s (server CPU per request at the same offered load for every
 *    server, so no server is judged while batching more requests per wake-up than another).
 *
 *   npm run bench -- webhook-attribution [--check]      (or npx tsx bench/comparisons/webhook-attribution.ts [--check])
 *   BENCH_ATTR_ROUNDS=3 BENCH_ATTR_DURATION_S=3 BENCH_ATTR_RATE=3000 BENCH_ATTR_CONCURRENCY=32
 *   BENCH_ATTR_SCENARIO=namespace-create|quota-update   BENCH_ATTR_SET=parts|heap (V8 semi-space sizes)
 *   BENCH_ATTR_SET=ab BENCH_ATTR_BASE=HEAD: the working tree against a commit (A/B of a change)
 *
 * Results: bench/results/webhook-attribution.json. With --check it exits 1 when the bench server's
 * fixed-rate CPU ratio (bare ÷ tenantgate, median over rounds) is below P1's 0.5.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { generateWebhookCerts } from '../../src/certs/files.js';
import {
  HERE,
  P1_PROJECTS,
  Pool,
  SERVER_SCRIPT,
  baseBenchServer,
  benchServer,
  TARGET_CPU_RATIO,
  closedLoop,
  env,
  log,
  median,
  openLoop,
  pinning,
  round1,
  round3,
  startChild,
  table,
  undisturbed,
  type Child,
  type Target,
} from '../lib/measure.js';
import { namespaceCreateBodies, quotaUpdateBodies } from '../lib/reviews.js';

const RESULTS = join(HERE, 'results', 'webhook-attribution.json');

interface Variant {
  name: string;
  mode: 'bare' | 'tenantgate';
  flags: string[];
  /** Run bench/lib/webhook-server.ts through tsx instead of compiled (what esbuild's keepNames costs). */
  tsx?: boolean;
  /** Extra node options (V8 heap flags). */
  node?: string[];
  /** A compiled bench server other than the working tree's (BENCH_ATTR_SET=ab: another commit's). */
  script?: string;
}

/** The tenantgate bench server as every variant starts from: rules and guard, no ledger, emulated watch, no client auth. */
const NO_LEDGER = 'tenantgate bench server (no ledger, emulated watch)';

const PARTS: Variant[] = [
  { name: 'bare', mode: 'bare', flags: [] },
  { name: NO_LEDGER, mode: 'tenantgate', flags: [] },
  { name: `${NO_LEDGER}, through tsx`, mode: 'tenantgate', flags: [], tsx: true },
  { name: `${NO_LEDGER}, no decision records`, mode: 'tenantgate', flags: ['--decision-log', 'none'] },
  { name: `${NO_LEDGER}, no watch events`, mode: 'tenantgate', flags: ['--watch', 'none'] },
  { name: `${NO_LEDGER}, no rules`, mode: 'tenantgate', flags: ['--rules', 'off'] },
  {
    name: `${NO_LEDGER}, no rules, no records`,
    mode: 'tenantgate',
    flags: ['--rules', 'off', '--decision-log', 'none'],
  },
];

/** BENCH_ATTR_SET=heap: the young generation's size (V8 semi-spaces, MB) against the default. */
const HEAP: Variant[] = [
  { name: 'bare', mode: 'bare', flags: [] },
  { name: NO_LEDGER, mode: 'tenantgate', flags: [] },
  ...[1, 2, 4, 8].map((mb): Variant => ({
    name: `${NO_LEDGER}, --max-semi-space-size=${mb}`,
    mode: 'tenantgate',
    flags: [],
    node: [`--max-semi-space-size=${mb}`],
  })),
];

/** BENCH_ATTR_SET=ab: the working tree against the commit BENCH_ATTR_BASE (default HEAD), taking turns. */
function abVariants(): Variant[] {
  const ref = process.env.BENCH_ATTR_BASE ?? 'HEAD';
  const base = baseBenchServer('attribution', ref);
  return [
    { name: 'bare', mode: 'bare', flags: [] },
    { name: NO_LEDGER, mode: 'tenantgate', flags: [] },
    { name: `${NO_LEDGER} at ${ref} (${base.sha.slice(0, 7)})`, mode: 'tenantgate', flags: [], script: base.script },
  ];
}

const SETS: Record<string, () => Variant[]> = { parts: () => PARTS, heap: () => HEAP, ab: abVariants };

export async function main(): Promise<string[]> {
  const rounds = Math.max(1, env('BENCH_ATTR_ROUNDS', 3));
  const durationMs = env('BENCH_ATTR_DURATION_S', 3) * 1000;
  const rate = env('BENCH_ATTR_RATE', 3000);
  const concurrency = env('BENCH_ATTR_CONCURRENCY', 32);
  const set = process.env.BENCH_ATTR_SET ?? 'parts';
  if (!SETS[set]) throw new Error(`BENCH_ATTR_SET is ${JSON.stringify(set)}; allowed: ${Object.keys(SETS).join(', ')}`);
  const variants = SETS[set]!();
  const scenario = process.env.BENCH_ATTR_SCENARIO ?? 'namespace-create';
  if (scenario !== 'namespace-create' && scenario !== 'quota-update')
    throw new Error(`BENCH_ATTR_SCENARIO is ${JSON.stringify(scenario)}; allowed: namespace-create, quota-update`);
  const work = mkdtempSync(join(tmpdir(), 'tenantgate-bench-attr-'));
  const certs = await generateWebhookCerts(join(work, 'certs'));
  const ca = readFileSync(certs.caCert);
  const pool = new Pool(
    scenario,
    scenario === 'namespace-create' ? namespaceCreateBodies(120_000, P1_PROJECTS) : quotaUpdateBodies(P1_PROJECTS, 20),
  );
  const srv = benchServer('attribution');
  const pin = pinning();
  const children: Array<{ variant: Variant; child: Child; target: Target }> = [];
  const samples = new Map<string, { closed: number[]; fixed: number[]; rps: number[] }>();
  try {
    for (const variant of variants) {
      const child = await startChild(
        [...(variant.node ?? []), ...(variant.tsx ? ['--import', 'tsx'] : srv.nodeArgs)],
        [
          variant.tsx ? SERVER_SCRIPT : (variant.script ?? srv.script),
          variant.mode,
          '--cert',
          certs.cert,
          '--key',
          certs.key,
          '--projects',
          String(P1_PROJECTS),
          ...variant.flags,
        ],
        join(work, `${children.length}.log`),
        undefined,
        pin?.server,
      );
      children.push({ variant, child, target: { port: child.port, path: '/validate', ca } });
      samples.set(variant.name, { closed: [], fixed: [], rps: [] });
    }
    const pids = children.map((c) => c.child.pid);
    log(
      `attribution: ${scenario}, ${variants.length} servers, ${rounds} rounds of ${durationMs / 1000} s closed loop (${concurrency} in flight) + ${durationMs / 1000} s at ${rate}/s; load average ${loadavg().map(round1).join(' ')}`,
    );
    for (let round = 1; round <= rounds; round++) {
      for (const { variant, child, target } of children) {
        const s = samples.get(variant.name)!;
        const closed = await undisturbed(`attr ${variant.name}`, pids, () =>
          closedLoop(variant.mode, scenario, target, child.pid, pool, concurrency, 1000, durationMs),
        );
        const fixed = await undisturbed(`attr ${variant.name} @${rate}`, pids, () =>
          openLoop(variant.mode, scenario, target, child.pid, pool, rate, 500, durationMs),
        );
        s.closed.push(closed.serverCpuUsPerRequest);
        s.rps.push(closed.rps);
        s.fixed.push(fixed.serverCpuUsPerRequest);
        log(
          `round ${round}: ${variant.name}: ${closed.rps} req/s, ${closed.serverCpuUsPerRequest} µs/req (closed); ${fixed.serverCpuUsPerRequest} µs/req at ${rate}/s (errors ${fixed.errors}, others ${fixed.otherCpuPct} %)`,
        );
      }
    }
  } finally {
    for (const c of children) await c.child.stop();
    pin?.restore();
  }
  const bare = samples.get('bare')!;
  const rows = variants.map((v) => {
    const s = samples.get(v.name)!;
    return {
      variant: v.name,
      rpsBest: Math.max(...s.rps),
      closedUsMedian: round1(median(s.closed)),
      fixedUsMedian: round1(median(s.fixed)),
      fixedUsMin: round1(Math.min(...s.fixed)),
      cpuRatioFixed: round3(median(bare.fixed) / median(s.fixed)),
      cpuRatioClosed: round3(median(bare.closed) / median(s.closed)),
    };
  });
  const full = rows.find((r) => r.variant === NO_LEDGER)!;
  const met = full.cpuRatioFixed >= TARGET_CPU_RATIO;
  const out = [
    `P1 attribution, ${scenario}: server CPU µs per request (median of ${rounds} rounds), bare ÷ variant`,
    table(
      ['variant', 'best req/s', 'closed µs/req', 'ratio', `at ${rate}/s µs/req`, 'min', 'ratio'],
      rows.map((r) => [
        r.variant,
        String(r.rpsBest),
        String(r.closedUsMedian),
        String(r.cpuRatioClosed),
        String(r.fixedUsMedian),
        String(r.fixedUsMin),
        String(r.cpuRatioFixed),
      ]),
    ),
    `CPU ratio at ${rate}/s, ${NO_LEDGER}: ${full.cpuRatioFixed} (target ≥ ${TARGET_CPU_RATIO}): ${met ? 'MET' : 'MISSED'}`,
  ];
  process.stdout.write(`${out.join('\n')}\n`);
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(
    RESULTS,
    `${JSON.stringify({ benchmark: 'webhook-attribution', scenario, rate, rounds, durationMs, concurrency, loadavgAtEnd: loadavg().map(round1), date: new Date().toISOString(), rows, met }, null, 2)}\n`,
  );
  log(`results: ${RESULTS}`);
  return met
    ? []
    : [`P1 CPU per request at ${rate}/s: bare ÷ ${NO_LEDGER} ${full.cpuRatioFixed} < ${TARGET_CPU_RATIO}`];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().then(
    (missed) => process.exit(process.argv.includes('--check') && missed.length ? 1 : 0),
    (err: unknown) => {
      process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
      process.exit(2);
    },
  );
}
