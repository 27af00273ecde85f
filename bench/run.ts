/**
 * `npm run bench [-- NAME…]`: runs the named benchmarks, or without a name the targets that need no
 * build of a peer and finish in minutes (render, webhook, controller, shipped). bench/ is split by purpose:
 *  - bench/targets/: what tenantgate promises, each judged against its target (docs/benchmarks.md):
 *    render (P2), webhook (P1, P3, Q5), controller (P4), shipped (the webhook as it ships: two processes,
 *    ledger on, real requests through the apiserver), replicas (10,000 racing writes against three webhook
 *    processes, the budget checked from outside), soak (30 minutes of traffic as shipped, heap after a GC
 *    every minute; `--minutes=N`), p3-traffic (P3 under 5 minutes of traffic, inside the chart's memory
 *    limit) and fleet (10,000 racing writes over two member clusters sharing one fleet budget through a hub);
 *  - bench/comparisons/: tenantgate against something else: peers (Kyverno, Gatekeeper and Capsule, built
 *    from Go modules first), rules-ab and review-ab (the working tree against a commit's), and
 *    webhook-attribution (the webhook against itself with one part switched off at a time);
 *  - bench/experiments/: measurements behind a decision, kept to be run again: review-count (reviews
 *    per pod under a quota), ledger-client (the cost of one ledger write by client), batch-decisions
 *    (a headroom decision's CPU as the project and its ledger grow, against a commit), tls-handshake
 *    (what a new connection costs the webhook, by serving key) and policy-cost (what the allow-list policy
 *    on pods costs the API server per request, in the API server's own code, by parameter object);
 *  - bench/lib/: what they share (the measured bench server, the load generator, the judge).
 * Everything but the default four runs only when named: `npm run bench -- peers`. Results are written
 * under bench/results/ by each module. Each `main()` returns the targets it missed or could not judge;
 * with `--check` the run exits 1 when there is any, so a regression fails loudly (`npm run bench --
 * webhook --check`), and so does a scaled-down run unless it names the targets it is not meant to judge:
 * `--skip P3` (BENCH_SKIP; bench/lib/judge.ts).
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
/** Every benchmark by name, with the folder of bench/ it lives in. */
const BENCHMARKS = {
  render: 'targets',
  webhook: 'targets',
  controller: 'targets',
  shipped: 'targets',
  replicas: 'targets',
  soak: 'targets',
  fleet: 'targets',
  'p3-traffic': 'targets',
  peers: 'comparisons',
  'rules-ab': 'comparisons',
  'review-ab': 'comparisons',
  'webhook-attribution': 'comparisons',
  'review-count': 'experiments',
  'ledger-client': 'experiments',
  'batch-decisions': 'experiments',
  'tls-handshake': 'experiments',
  'allow-lists': 'comparisons',
  'namespace-labelling': 'comparisons',
  'policy-cost': 'experiments',
} as const satisfies Record<string, 'targets' | 'comparisons' | 'experiments'>;
type BenchName = keyof typeof BENCHMARKS;
const KNOWN = Object.keys(BENCHMARKS) as BenchName[];
/** Run without a name: the targets that finish in minutes and build no peer. */
const BY_DEFAULT: readonly BenchName[] = ['render', 'webhook', 'controller', 'shipped'];
const pathOf = (name: BenchName) => `${BENCHMARKS[name]}/${name}.ts`;

interface BenchModule {
  /** Resolves to the targets missed or not judged and not skipped (empty when all were met or the bench has no target). */
  main(): Promise<string[]>;
}

async function run(args: string[]): Promise<number> {
  let argv = args;
  // --minutes N (or --minutes=N): the soak's length, handed over as BENCH_SOAK_MINUTES.
  const minutesAt = argv.findIndex((a) => a === '--minutes');
  if (minutesAt >= 0)
    argv = [...argv.slice(0, minutesAt), `--minutes=${argv[minutesAt + 1] ?? ''}`, ...argv.slice(minutesAt + 2)];
  // --skip P3 (or --skip=P1,P3, repeatable): targets this run is not meant to judge, handed over as BENCH_SKIP.
  for (let at = argv.indexOf('--skip'); at >= 0; at = argv.indexOf('--skip'))
    argv = [...argv.slice(0, at), `--skip=${argv[at + 1] ?? ''}`, ...argv.slice(at + 2)];
  const wanted = argv.filter((a) => !a.startsWith('-'));
  const options = argv.filter((a) => a.startsWith('-'));
  const badOption = options.find((o) => o !== '--check' && !o.startsWith('--minutes=') && !o.startsWith('--skip='));
  if (badOption) {
    process.stderr.write(
      `bench: unknown option ${badOption}; allowed: --check (exit 1 when a target is missed or not judged), --skip ID[,ID] (targets not to judge, e.g. P3), --minutes=N (soak)\n`,
    );
    return 2;
  }
  const skip = options
    .filter((o) => o.startsWith('--skip='))
    .flatMap((o) => o.slice('--skip='.length).split(','))
    .map((id) => id.trim());
  if (skip.some((id) => !/^[A-Za-z][A-Za-z0-9-]*$/.test(id))) {
    process.stderr.write(
      `bench: --skip ${JSON.stringify(skip.join(','))}: target ids (P1, P2, …) separated by commas are required\n`,
    );
    return 2;
  }
  if (skip.length) process.env.BENCH_SKIP = [process.env.BENCH_SKIP, ...skip].filter(Boolean).join(',');
  const minutes = options.find((o) => o.startsWith('--minutes='))?.slice('--minutes='.length);
  if (minutes !== undefined) {
    if (!/^\d+(\.\d+)?$/.test(minutes) || Number(minutes) < 3) {
      process.stderr.write(`bench: --minutes ${JSON.stringify(minutes)}: a number of minutes ≥ 3 is required\n`);
      return 2;
    }
    process.env.BENCH_SOAK_MINUTES = minutes;
  }
  const unknown = wanted.filter((w) => !(KNOWN as readonly string[]).includes(w));
  if (unknown.length) {
    process.stderr.write(`bench: unknown benchmark ${unknown.join(', ')}; known: ${KNOWN.join(', ')}\n`);
    return 2;
  }
  const available = KNOWN.filter((name) => existsSync(join(HERE, pathOf(name))));
  const selected = wanted.length
    ? available.filter((name) => wanted.includes(name))
    : available.filter((name) => BY_DEFAULT.includes(name));
  const missing = wanted.filter((w) => !(available as readonly string[]).includes(w)) as BenchName[];
  if (missing.length) {
    process.stderr.write(`bench: ${missing.map((m) => `bench/${pathOf(m)}`).join(', ')} not written yet\n`);
    return 2;
  }
  if (selected.length === 0) {
    process.stderr.write('bench: no benchmark modules found\n');
    return 2;
  }
  const missed: string[] = [];
  for (const name of selected) {
    process.stderr.write(`\n=== bench/${pathOf(name)}\n`);
    const mod = (await import(pathToFileURL(join(HERE, pathOf(name))).href)) as Partial<BenchModule>;
    if (typeof mod.main !== 'function') throw new Error(`bench/${pathOf(name)} does not export main()`);
    for (const target of await mod.main()) missed.push(`${name}: ${target}`);
  }
  if (missed.length)
    process.stderr.write(`\nbench: targets missed or not judged:\n${missed.map((m) => `  - ${m}`).join('\n')}\n`);
  return options.includes('--check') && missed.length ? 1 : 0;
}

run(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
