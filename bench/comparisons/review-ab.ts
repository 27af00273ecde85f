/**
 * The webhook's review path of two compiled trees (or of one tree with two decision-record modes), in
 * one process, paired rounds, CPU per review: what rules-ab measures plus everything around the rules
 * that `tenantgate webhook` does per request after TLS and HTTP parsing — the lean handler (body chunks,
 * JSON.parse), decode, the guard, the metrics, the answer's JSON, and the decision record written as
 * the webhook writes it (batched JSON records, to /dev/null here). Requests go to each tree's own
 * handler (webhookApp) as an in-memory request/response pair, synchronously.
 *
 *   BENCH_REVIEW_BASE=HEAD npm run bench -- review-ab
 *   BENCH_REVIEW_ROUNDS=12  BENCH_REVIEW_REQUESTS=5000
 *   BENCH_REVIEW_RECORDS_WORK=all|summary|none  BENCH_REVIEW_RECORDS_BASE=all|summary|none   (default all)
 *   BENCH_REVIEW_BASE=WORK  compares the working tree with itself (e.g. two record modes)
 *   BENCH_REVIEW_WORK=<commit>  that commit's tree instead of the working tree (others' uncommitted edits left out)
 *   BENCH_REVIEW_SPACED_MS=1  also: each side's CPU per review when the reviews come that many ms apart
 *                             (timed around each call) against back to back (timed the same way): what
 *                             P1's fixed rate makes every µs of the review path cost
 *
 * Scenarios: /validate Namespace CREATE and ResourceQuota UPDATE (P1's admitted requests), /mutate
 * Namespace CREATE. Before the first round and after the last both sides answer every request, and as
 * a tenant that owns nothing (denials), and the answers must be the same text; the first difference
 * stops the run. No target: it reports. Results: bench/results/review-ab.json.
 */
import { EventEmitter } from 'node:events';
import { mkdirSync, openSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
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

const RESULTS = join(HERE, 'results', 'review-ab.json');
type RecordMode = 'all' | 'summary' | 'none';
type Path = 'validate' | 'mutate';

/** An incoming request as the lean handler reads it: method, url, headers, data and end events. */
class Req extends EventEmitter {
  readonly method = 'POST';
  readonly headers: Record<string, string>;
  readonly socket = { remoteAddress: '127.0.0.1' };
  constructor(
    readonly url: string,
    length: number,
  ) {
    super();
    this.headers = { 'content-type': 'application/json', 'content-length': String(length) };
  }
}

/** The response as the handler writes it: one writeHead, one end. */
class Res extends EventEmitter {
  statusCode = 0;
  text = '';
  headersSent = false;
  writableFinished = false;
  shouldKeepAlive = true;
  writeHead(code: number): this {
    this.statusCode = code;
    this.headersSent = true;
    return this;
  }
  end(text?: string): this {
    this.text = text ?? '';
    this.writableFinished = true;
    return this;
  }
  destroy(): void {}
}

interface Side {
  name: string;
  /** Answers one body on `path` (its decision record gathered, not flushed). */
  answerOne(path: Path, body: Buffer): void;
  /** Answers every body on `path`; returns how many were admitted. */
  answerAll(path: Path, bodies: Buffer[]): number;
  answers(path: Path, bodies: Buffer[]): string[];
}

const STRANGER = { username: 'review-ab-stranger', groups: ['tenants', 'system:authenticated'] };

async function loadSide(name: string, serverScript: string, records: RecordMode): Promise<Side> {
  const dist = compiledTree(serverScript);
  const load = (path: string) => import(pathToFileURL(join(dist, path)).href);
  const { DEFAULT_CONFIG } = await load('src/config/config.js');
  const start = await load('src/webhook/start.js');
  const { WebhookMetrics } = await load('src/webhook/metrics.js');
  const { jsonLogger, ASYNC_LOG_BATCH_CHARS, ASYNC_LOG_FLUSH_MS } = await load('src/log.js');
  const { RecordBatch } = await load('src/log-batch.js');
  const server = await import(pathToFileURL(serverScript).href);
  const snapshot = server.p1Snapshot(P1_PROJECTS);
  const config = { ...DEFAULT_CONFIG, crossReplicaReservation: false };
  const source = new server.StaticSource(snapshot);
  // As `tenantgate webhook` writes its records (createLogger with sync: false), to /dev/null.
  const batch = new RecordBatch(
    pino.destination({ dest: openSync('/dev/null', 'w'), sync: false }),
    ASYNC_LOG_BATCH_CHARS,
    ASYNC_LOG_FLUSH_MS,
  );
  const logger = jsonLogger('webhook', 'info', batch);
  let onDecision: ((d: unknown) => void) | undefined;
  if (records === 'all') onDecision = start.decisionLog(logger);
  else if (records === 'summary') {
    if (typeof start.webhookDecisionRecords !== 'function')
      throw new Error(`${name}: this tree has no webhookDecisionRecords (allowed decisions summarised)`);
    onDecision = start.webhookDecisionRecords(logger, { allowed: 'summary' }).record;
  }
  const metrics = new WebhookMetrics();
  const guard = start.wireGuard({ config, source, metrics });
  // The emulated informer, synchronously: an admitted growth is in the cache before the next request.
  const decide = (ctx: unknown, request: { dryRun?: boolean }, signal?: AbortSignal) => {
    const verdict = guard.decide(ctx, request, signal);
    if (verdict instanceof Promise)
      throw new Error(`${name}: the guard answered asynchronously (no ledger is configured)`);
    if (verdict.violations.length === 0 && verdict.allocation?.grows && !request.dryRun)
      server.emulateWatch(source, request);
    return verdict;
  };
  const app = start.webhookApp({ config, source, metrics, guard, decide, ...(onDecision ? { onDecision } : {}) });
  const answer = (path: Path, body: Buffer): Res => {
    const req = new Req(`/${path}?timeout=5s`, body.length);
    const res = new Res();
    app(req, res);
    req.emit('data', body);
    req.emit('end');
    if (!res.writableFinished) throw new Error(`${name}: /${path} did not answer synchronously`);
    return res;
  };
  return {
    name,
    answerOne(path, body) {
      answer(path, body);
    },
    answerAll(path, bodies) {
      let admitted = 0;
      for (const body of bodies) if (answer(path, body).text.includes('"allowed":true')) admitted++;
      batch.flushSync();
      return admitted;
    },
    answers(path, bodies) {
      const out = bodies.map((b) => {
        const res = answer(path, b);
        return `${res.statusCode} ${res.text}`;
      });
      batch.flushSync();
      return out;
    },
  };
}

/**
 * CPU µs per review timed around each call, `count` reviews `gapMs` apart (0: back to back, yielding to
 * the event loop every 100 reviews so the record batch drains as in the webhook).
 */
async function cpuPerSpacedReview(
  side: Side,
  path: Path,
  bodies: Buffer[],
  count: number,
  gapMs: number,
): Promise<number> {
  let total = 0;
  for (let i = 0; i < count; i++) {
    if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
    else if (i % 100 === 0) await new Promise((r) => setImmediate(r));
    const c0 = process.cpuUsage();
    side.answerOne(path, bodies[i % bodies.length]!);
    const c = process.cpuUsage(c0);
    total += c.user + c.system;
  }
  return total / count;
}

/** The same bodies sent by a tenant that owns nothing (denials on /validate, no patch on /mutate). */
const asStranger = (bodies: Buffer[]) =>
  bodies.map((b) => {
    const review = JSON.parse(b.toString('utf8')) as { request: { userInfo: unknown } };
    review.request.userInfo = STRANGER;
    return Buffer.from(JSON.stringify(review));
  });

function expectSameAnswers(
  what: string,
  path: Path,
  bodies: Buffer[],
  sides: Side[],
): { compared: number; denied: number } {
  const [a, b] = sides.map((s) => s.answers(path, bodies)) as [string[], string[]];
  const i = a.findIndex((x, k) => x !== b[k]);
  if (i >= 0)
    throw new Error(
      `review-ab ${what}: the two sides answer request #${i} differently:\n  ${sides[0]!.name}: ${a[i]!.slice(0, 600)}\n  ${sides[1]!.name}: ${b[i]!.slice(0, 600)}`,
    );
  return { compared: a.length, denied: a.filter((x) => x.includes('"allowed":false')).length };
}

function cpuPerReview(side: Side, path: Path, bodies: Buffer[], admittedWanted: number): number {
  const c0 = process.cpuUsage();
  const admitted = side.answerAll(path, bodies);
  const c = process.cpuUsage(c0);
  if (admitted !== admittedWanted)
    throw new Error(`${side.name}: ${admitted} of ${bodies.length} admitted on /${path}, ${admittedWanted} wanted`);
  return (c.user + c.system) / bodies.length;
}

export async function main(): Promise<string[]> {
  const ref = process.env.BENCH_REVIEW_BASE ?? 'HEAD';
  const rounds = Math.max(3, env('BENCH_REVIEW_ROUNDS', 12));
  const requests = env('BENCH_REVIEW_REQUESTS', 5000);
  const mode = (v: string | undefined): RecordMode => {
    const m = v ?? 'all';
    if (m !== 'all' && m !== 'summary' && m !== 'none')
      throw new Error(`decision records ${JSON.stringify(m)}; allowed: all, summary, none`);
    return m;
  };
  const workRecords = mode(process.env.BENCH_REVIEW_RECORDS_WORK);
  const baseRecords = mode(process.env.BENCH_REVIEW_RECORDS_BASE);
  // BENCH_REVIEW_WORK=<commit>: that commit instead of the working tree (others' uncommitted edits left out).
  const workRef = process.env.BENCH_REVIEW_WORK;
  const work = workRef ? baseBenchServer('review-ab', workRef) : { ...benchServer('review-ab'), sha: 'working tree' };
  const base = ref === 'WORK' ? work : baseBenchServer('review-ab', ref);
  const label = (r: string | undefined, sha: string) =>
    r && r !== 'WORK' ? `${r} (${sha.slice(0, 7)})` : 'working tree';
  const names = [
    `${label(workRef, work.sha)} (records ${workRecords})`,
    `${label(ref, base.sha)} (records ${baseRecords})`,
  ];
  const load = await import('node:os').then((os) => os.loadavg()[0]!.toFixed(2));
  log(`review-ab: load ${load} at start; ${names[0]} vs ${names[1]}`);
  const rows = [];
  const spacedMs = env('BENCH_REVIEW_SPACED_MS', 0);
  const spaced: Array<{ scenario: string; side: string; backToBackUs: number; spacedUs: number; factor: number }> = [];
  const scenarios = ruleScenarios(P1_PROJECTS).flatMap(({ scenario, bodies }) => {
    const some = bodies.slice(0, requests);
    const list: Array<{ scenario: string; path: Path; bodies: Buffer[] }> = [
      { scenario: `/validate ${scenario}`, path: 'validate', bodies: some },
    ];
    if (scenario === 'Namespace CREATE') list.push({ scenario: `/mutate ${scenario}`, path: 'mutate', bodies: some });
    return list;
  });
  for (const { scenario, path, bodies } of scenarios) {
    const sides = [
      await loadSide(names[0]!, work.script, workRecords),
      await loadSide(names[1]!, base.script, baseRecords),
    ];
    const strangers = asStranger(bodies);
    const checks = [
      expectSameAnswers(`${scenario} (before)`, path, bodies, sides),
      expectSameAnswers(`${scenario} as a stranger (before)`, path, strangers, sides),
    ];
    const admitted = checks[0]!.compared - checks[0]!.denied;
    for (let i = 0; i < 2; i++) for (const s of sides) s.answerAll(path, bodies);
    const us: number[][] = sides.map(() => []);
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const k of order) us[k]!.push(cpuPerReview(sides[k]!, path, bodies, admitted));
    }
    checks.push(expectSameAnswers(`${scenario} (after)`, path, bodies, sides));
    const compared = checks.reduce((n, c) => n + c.compared, 0);
    const denied = checks.reduce((n, c) => n + c.denied, 0);
    log(`review-ab ${scenario}: both sides gave the same ${compared} answers, ${denied} of them denials`);
    const paired = us[0]!.map((t, i) => t / us[1]![i]!);
    const row = {
      scenario,
      requests: bodies.length,
      rounds,
      workUs: round3(median(us[0]!)),
      baseUs: round3(median(us[1]!)),
      pairedRatioMedian: round3(median(paired)),
      pairedRatioMin: round3(Math.min(...paired)),
      pairedRatioMax: round3(Math.max(...paired)),
    };
    log(
      `review-ab ${scenario}: ${row.workUs} vs ${row.baseUs} µs per review; paired ratio median ${row.pairedRatioMedian} (${row.pairedRatioMin}–${row.pairedRatioMax})`,
    );
    rows.push(row);
    if (spacedMs > 0) {
      for (const side of sides) {
        const backToBackUs = round3(await cpuPerSpacedReview(side, path, bodies, 3000, 0));
        const spacedUs = round3(await cpuPerSpacedReview(side, path, bodies, 3000, spacedMs));
        const factor = round3(spacedUs / backToBackUs);
        spaced.push({ scenario, side: side.name, backToBackUs, spacedUs, factor });
        log(
          `review-ab ${scenario}, ${side.name}: ${backToBackUs} µs per review back to back, ${spacedUs} µs ${spacedMs} ms apart (× ${factor})`,
        );
      }
    }
  }
  const loadEnd = await import('node:os').then((os) => os.loadavg()[0]!.toFixed(2));
  const out = [
    `Review A/B in one process (load ${load} → ${loadEnd}): CPU µs per review, median of ${rounds} rounds of ${requests} requests; ${names[0]} ÷ ${names[1]} per round`,
    table(
      ['scenario', names[0]!, names[1]!, 'paired ratio (median)', 'range'],
      rows.map((r) => [
        r.scenario,
        String(r.workUs),
        String(r.baseUs),
        String(r.pairedRatioMedian),
        `${r.pairedRatioMin}–${r.pairedRatioMax}`,
      ]),
    ),
  ];
  if (spaced.length > 0) {
    out.push(
      `\nThe same reviews timed one by one, back to back and ${spacedMs} ms apart (3,000 each): CPU µs per review`,
    );
    out.push(
      table(
        ['scenario', 'side', 'back to back', `${spacedMs} ms apart`, 'factor'],
        spaced.map((r) => [r.scenario, r.side, String(r.backToBackUs), String(r.spacedUs), String(r.factor)]),
      ),
    );
  }
  process.stdout.write(`${out.join('\n')}\n`);
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(
    RESULTS,
    `${JSON.stringify({ benchmark: 'review-ab', sides: names, base: { ref, sha: base.sha }, load: { start: load, end: loadEnd }, date: new Date().toISOString(), rows, ...(spaced.length > 0 ? { spacedMs, spaced } : {}) }, null, 2)}\n`,
  );
  log(`results: ${RESULTS}`);
  return [];
}

runIfMain(import.meta.url, main);
