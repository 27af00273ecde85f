/**
 * The admission rules of the working tree against those of a commit, in one process (P1's rule part,
 * without TLS, HTTP or JSON.parse): the same P1 requests are decided by both compiled trees, each
 * with its own snapshot, headroom guard and emulated watch events (bench/lib/webhook-server.ts), taking
 * turns round after round. Each round gives a ratio (working tree ÷ base, CPU per request), and the
 * median of those paired ratios resolves a few per cent where the server benchmarks cannot: a
 * disturbance of the machine hits both sides of a round alike.
 *
 *   npm run bench -- rules-ab            (or npx tsx bench/comparisons/rules-ab.ts)
 *   BENCH_RULES_BASE=HEAD  BENCH_RULES_ROUNDS=12
 *
 * Before the first round and after the last, both trees decide every request once more, as its owner and
 * as a tenant that owns nothing, and must give the same verdicts (allowed, each violation's rule, message
 * and path, the warnings, the allocation): any difference throws, naming the first request that differs.
 *
 * No target: it reports. Results: bench/results/rules-ab.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  HERE,
  P1_PROJECTS,
  baseBenchServer,
  benchServer,
  compiledTree,
  env,
  log,
  median,
  round3,
  table,
} from '../lib/measure.js';
import { ruleScenarios } from '../lib/reviews.js';
import { runIfMain } from '../lib/entry.js';

const RESULTS = join(HERE, 'results', 'rules-ab.json');

/** What a compiled tree offers for deciding: its own modules, loaded from its dist/. */
interface Tree {
  name: string;
  decideAll(): number;
  /**
   * The same pass as decideAll (same state changes), each verdict written down as comparable JSON;
   * `asStranger` decides the requests as a tenant that owns nothing instead (denials, no state change).
   */
  verdicts(asStranger?: boolean): string[];
}

/** A tenant that owns no project: every request of the scenarios is denied to it, with messages to compare. */
const STRANGER = { username: 'rules-ab-stranger', groups: ['tenants', 'system:authenticated'] };

/** A verdict as comparable text: allowed, every violation (rule, message, path), the warnings, the allocation. */
function verdictText(verdict: {
  violations: Array<{ rule: string; message: string; path?: unknown }>;
  warnings: string[];
  allocation?: {
    project: string;
    namespace: string;
    resources: Map<string, { toString(): string }>;
    grows: boolean;
    quotaWrite?: { name: string; quota: unknown; removesCoverage: boolean };
  };
}): string {
  const a = verdict.allocation;
  return JSON.stringify({
    allowed: verdict.violations.length === 0,
    violations: verdict.violations.map((v) => ({ rule: v.rule, message: v.message, path: v.path ?? null })),
    warnings: verdict.warnings,
    allocation: a
      ? {
          project: a.project,
          namespace: a.namespace,
          resources: [...a.resources]
            .map(([r, q]) => [r, q.toString()])
            .sort(([x], [y]) => (x! < y! ? -1 : x! > y! ? 1 : 0)),
          grows: a.grows,
          quotaWrite: a.quotaWrite ?? null,
        }
      : null,
  });
}

/** `text` around its first difference from `other` (verdicts with whole quotas are long). */
function around(text: string, other: string): string {
  let k = 0;
  while (k < text.length && text[k] === other[k]) k++;
  const from = Math.max(0, k - 160);
  return `${from > 0 ? `…(${from} equal characters) ` : ''}${text.slice(from, k + 160)}${k + 160 < text.length ? ' …' : ''}`;
}

/**
 * Fails loudly unless both trees decided every request alike: the benchmark compares the CPU of two
 * trees that must agree, so a difference is a behaviour change, not a speed-up.
 */
function expectSameVerdicts(
  scenario: string,
  when: string,
  bodies: Buffer[],
  trees: Tree[],
  asStranger = false,
): { compared: number; denied: number } {
  const [a, b] = trees.map((t) => t.verdicts(asStranger)) as [string[], string[]];
  if (a.length !== b.length || a.length !== bodies.length)
    throw new Error(
      `rules-ab ${scenario} (${when}): ${a.length} and ${b.length} verdicts for ${bodies.length} requests`,
    );
  const differ = a.flatMap((v, i) => (v === b[i] ? [] : [i]));
  if (differ.length > 0) {
    const i = differ[0]!;
    const { request } = JSON.parse(bodies[i]!.toString('utf8')) as {
      request: { kind: { kind: string }; operation: string; namespace?: string; name?: string };
    };
    throw new Error(
      `rules-ab ${scenario} (${when}${asStranger ? `, as ${STRANGER.username}` : ''}): the trees decide ${differ.length} of ${a.length} requests differently; ` +
        `the first, #${i} (${request.operation} ${request.kind.kind} ${request.namespace ? `${request.namespace}/` : ''}${request.name ?? ''}):\n` +
        `  ${trees[0]!.name}: ${around(a[i]!, b[i]!)}\n  ${trees[1]!.name}: ${around(b[i]!, a[i]!)}`,
    );
  }
  return { compared: a.length, denied: a.filter((v) => v.startsWith('{"allowed":false')).length };
}

/** Loads a compiled tree (dist/ holding src/ and the bench server script) and readies it for `bodies`. */
async function loadTree(name: string, serverScript: string, bodies: Buffer[]): Promise<Tree> {
  const dist = compiledTree(serverScript);
  const load = (path: string) => import(pathToFileURL(join(dist, path)).href);
  const { DEFAULT_CONFIG } = await load('src/config/config.js');
  const { assembleWebhook } = await load('src/webhook/start.js');
  const { decodeReview } = await load('src/webhook/review.js');
  const server = await import(pathToFileURL(serverScript).href);
  const snapshot = server.p1Snapshot(P1_PROJECTS);
  const config = { ...DEFAULT_CONFIG, crossReplicaReservation: false };
  const requests = bodies.map((b) => {
    const decoded = decodeReview(JSON.parse(b.toString('utf8')));
    if (!decoded.ok) throw new Error(`${name}: ${decoded.error}`);
    return decoded.request;
  });
  const source = new server.StaticSource(snapshot);
  const { guard } = assembleWebhook({ config, source });
  return {
    name,
    // As the bench server does: decide, and let an admitted growth be "seen" by the emulated watch.
    decideAll() {
      let admitted = 0;
      for (const request of requests) {
        // The instant of the review, as the webhook server reads it per request (trees before it was an argument ignore it).
        const verdict = guard.decide(
          { config, snapshot, user: request.userInfo, at: Date.now(), pending: guard.pending },
          request,
        );
        if (verdict instanceof Promise)
          throw new Error(`${name}: the guard answered asynchronously (no ledger is configured)`);
        if (verdict.violations.length > 0) continue;
        admitted += 1;
        if (verdict.allocation?.grows) server.emulateWatch(source, request);
      }
      return admitted;
    },
    verdicts(asStranger = false) {
      const out: string[] = [];
      for (const request of requests) {
        const verdict = guard.decide(
          { config, snapshot, user: asStranger ? STRANGER : request.userInfo, at: Date.now(), pending: guard.pending },
          request,
        );
        if (verdict instanceof Promise)
          throw new Error(`${name}: the guard answered asynchronously (no ledger is configured)`);
        out.push(verdictText(verdict));
        if (verdict.violations.length === 0 && verdict.allocation?.grows) server.emulateWatch(source, request);
      }
      return out;
    },
  };
}

function cpuPerCall(tree: Tree, count: number): number {
  const c0 = process.cpuUsage();
  const admitted = tree.decideAll();
  const c = process.cpuUsage(c0);
  if (admitted !== count)
    throw new Error(`${tree.name}: ${count - admitted} of ${count} requests denied; the bench measures admissions`);
  return (c.user + c.system) / count;
}

export async function main(): Promise<string[]> {
  const ref = process.env.BENCH_RULES_BASE ?? 'HEAD';
  const rounds = Math.max(3, env('BENCH_RULES_ROUNDS', 12));
  const base = baseBenchServer('rules-ab', ref);
  const work = benchServer('rules-ab');
  const rows = [];
  for (const { scenario, bodies } of ruleScenarios(P1_PROJECTS)) {
    const trees = [
      await loadTree('working tree', work.script, bodies),
      await loadTree(`${ref} (${base.sha.slice(0, 7)})`, base.script, bodies),
    ];
    // Both trees must agree before the clock counts (owners' and a stranger's verdicts) and still after it.
    const checks = [
      expectSameVerdicts(scenario, 'before the rounds', bodies, trees),
      expectSameVerdicts(scenario, 'before the rounds', bodies, trees, true),
    ];
    for (let i = 0; i < 3; i++) for (const t of trees) t.decideAll();
    const us: number[][] = trees.map(() => []);
    for (let round = 0; round < rounds; round++) {
      // Alternate who goes first, so neither side always runs right after the other's garbage.
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const k of order) us[k]!.push(cpuPerCall(trees[k]!, bodies.length));
    }
    checks.push(expectSameVerdicts(scenario, 'after the rounds', bodies, trees));
    const compared = checks.reduce((n, c) => n + c.compared, 0);
    const denied = checks.reduce((n, c) => n + c.denied, 0);
    log(
      `rules-ab ${scenario}: both trees gave the same ${compared} verdicts, ${denied} of them denials (allowed, violations with rule and message, warnings, allocation)`,
    );
    const paired = us[0]!.map((t, i) => t / us[1]![i]!);
    const row = {
      scenario,
      requests: bodies.length,
      rounds,
      workingTreeUs: round3(median(us[0]!)),
      baseUs: round3(median(us[1]!)),
      pairedRatioMedian: round3(median(paired)),
      pairedRatioMin: round3(Math.min(...paired)),
      pairedRatioMax: round3(Math.max(...paired)),
    };
    log(
      `rules-ab ${scenario}: working tree ${row.workingTreeUs} µs, ${ref} ${row.baseUs} µs per decision; paired ratio median ${row.pairedRatioMedian} (${row.pairedRatioMin}–${row.pairedRatioMax})`,
    );
    rows.push(row);
  }
  const out = [
    `Rules A/B in one process: CPU µs per decision (rules, guard, emulated watch event), median of ${rounds} rounds; working tree ÷ ${ref} (${base.sha.slice(0, 12)}) per round`,
    table(
      ['scenario', 'working tree µs', `${ref} µs`, 'paired ratio (median)', 'range'],
      rows.map((r) => [
        r.scenario,
        String(r.workingTreeUs),
        String(r.baseUs),
        String(r.pairedRatioMedian),
        `${r.pairedRatioMin}–${r.pairedRatioMax}`,
      ]),
    ),
  ];
  process.stdout.write(`${out.join('\n')}\n`);
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(
    RESULTS,
    `${JSON.stringify({ benchmark: 'rules-ab', base: { ref, sha: base.sha }, date: new Date().toISOString(), rows }, null, 2)}\n`,
  );
  log(`results: ${RESULTS}`);
  return [];
}

runIfMain(import.meta.url, main);
