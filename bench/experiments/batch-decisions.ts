/**
 * `npm run bench -- batch-decisions`: what a headroom decision costs the webhook's process as its
 * project and its ledger grow, the working tree against a commit (BENCH_BATCH_BASE, default HEAD), in
 * one process, taking turns. No cluster: each tree's own HeadroomGuard (compiled), on an in-memory
 * compare-and-swap ledger (test/support/memory-ledger.ts) and a snapshot of one project with N
 * namespaces, each with a quota.
 *
 * A round: batches of BENCH_BATCH_SIZE (8) concurrent quota raises in distinct namespaces, each batch
 * one ledger write; after each batch the snapshot shows what was admitted (as the watch would bring it)
 * and the guard is told, so this replica's assumed state stays what is in flight while the ledger
 * keeps the E entries it started with (live for an hour, shown by the cache) and the batch's own
 * (expired at once: the guard's TTL is 1 ms, so they leave with the next write). The figure is the
 * process's CPU per decision, the ledger's structuredClone included (the same for both trees); the
 * result is the median over rounds of the per-round ratio (working tree ÷ base).
 *
 *   BENCH_BATCH_BASE=<commit>  BENCH_BATCH_ROUNDS=7  BENCH_BATCH_SIZES=400/400,1200/1200 (E/N)
 *
 * No target: it reports. Results: bench/results/batch-decisions.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MemoryLedger } from '../../test/support/memory-ledger.js';
import { HERE, baseTenantgate, compileTenantgate, env, log, median, round3, table } from '../lib/measure.js';

const WHO = 'batch-decisions';
const RESULTS = join(HERE, 'results', 'batch-decisions.json');
const PROJECT = 'busy';
const QUOTA = 'tenantgate-quota';

/** What the bench needs of a compiled tree: its guard, snapshot, config and clock. */
interface TreeModules {
  HeadroomGuard: new (options: { ttlMs: number; ledger: MemoryLedger; deadlineMs: number }) => Guard;
  MemorySnapshot: { of(objects: { projects: unknown[]; namespaces: unknown[]; quotas: unknown[] }): Snapshot };
  DEFAULT_CONFIG: unknown;
  processNow(): number;
}
interface Guard {
  decide(ctx: unknown, request: unknown): Promise<Verdict> | Verdict;
  observe(ctx: unknown, namespace: string): void;
}
interface Verdict {
  violations: Array<{ rule: string; message: string }>;
  allocation?: { namespace: string; resources: ReadonlyMap<string, { toString(): string }> };
}
interface Snapshot {
  upsertQuota(quota: unknown): void;
}

async function loadTree(cli: string): Promise<TreeModules> {
  const dist = dirname(dirname(cli));
  const load = (path: string) => import(pathToFileURL(join(dist, path)).href) as Promise<Record<string, unknown>>;
  const [headroom, snapshot, config, clock] = await Promise.all([
    load('webhook/headroom/guard.js'),
    load('validate/snapshot.js'),
    load('config/config.js'),
    load('clock.js'),
  ]);
  return {
    HeadroomGuard: headroom.HeadroomGuard,
    MemorySnapshot: snapshot.MemorySnapshot,
    DEFAULT_CONFIG: config.DEFAULT_CONFIG,
    processNow: clock.processNow,
  } as TreeModules;
}

const quota = (namespace: string, cpu: string) => ({
  apiVersion: 'v1',
  kind: 'ResourceQuota',
  metadata: { name: QUOTA, namespace, resourceVersion: '5' },
  spec: { hard: { 'requests.cpu': cpu } },
});

/** One tree set up with `entries` live ledger entries over `namespaces` observed namespaces. */
async function setUp(tree: TreeModules, entries: number, namespaces: number): Promise<() => Promise<number>> {
  const names = Array.from({ length: namespaces }, (_, i) => `${PROJECT}-n${i}`);
  const snapshot = tree.MemorySnapshot.of({
    projects: [
      {
        apiVersion: 'tenantgate.io/v1alpha1',
        kind: 'Project',
        metadata: { name: PROJECT, uid: 'u' },
        spec: {
          tenant: 'acme',
          owners: [{ kind: 'User', name: 'alice' }],
          quota: { hard: { 'requests.cpu': '100000' } },
        },
      },
    ],
    namespaces: names.map((name) => ({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, labels: { 'tenantgate.io/project': PROJECT, 'tenantgate.io/tenant': 'acme' } },
    })),
    quotas: names.map((n) => quota(n, '1')),
  });
  const ledger = new MemoryLedger();
  const now = Date.now();
  await ledger.write(
    PROJECT,
    { entries: [] },
    names.slice(0, entries).map((namespace) => ({
      namespace,
      quota: QUOTA,
      allocation: { 'requests.cpu': '1' },
      created: now,
      expires: now + 3_600_000,
    })),
  );
  // The batches' own entries expire at once (a 1 ms TTL) and leave with the next write, so the ledger
  // keeps its E entries (and this batch's) whatever the round's length.
  const guard = new tree.HeadroomGuard({ ttlMs: 1, ledger, deadlineMs: 60_000 });
  const user = { username: 'alice', groups: [] };
  const ctx = () => ({ at: tree.processNow(), config: tree.DEFAULT_CONFIG, snapshot, user });
  const size = env('BENCH_BATCH_SIZE', 8);
  let next = 0;
  const raise = (i: number) => {
    const namespace = names[i % namespaces]!;
    const object = quota(namespace, String(2 + (i % 3)));
    return {
      uid: `r${i}`,
      kind: { group: '', version: 'v1', kind: 'ResourceQuota' },
      operation: 'UPDATE',
      namespace,
      name: QUOTA,
      userInfo: user,
      object,
      oldObject: quota(namespace, '1'),
    };
  };
  const batch = async () => {
    const verdicts = await Promise.all(Array.from({ length: size }, () => guard.decide(ctx(), raise(next++))));
    for (const v of verdicts) {
      if (v.violations.length > 0 || !v.allocation)
        throw new Error(
          `${WHO}: a raise was refused: ${v.violations.map((x) => `[${x.rule}] ${x.message}`).join('; ')}`,
        );
      snapshot.upsertQuota(quota(v.allocation.namespace, v.allocation.resources.get('requests.cpu')!.toString()));
      guard.observe(ctx(), v.allocation.namespace);
    }
  };
  for (let i = 0; i < 20; i++) await batch(); // warm up
  /** CPU ms per decision over `batches` batches. */
  return async () => {
    const batches = env('BENCH_BATCH_BATCHES', 100);
    const before = process.cpuUsage();
    for (let i = 0; i < batches; i++) await batch();
    const used = process.cpuUsage(before);
    return (used.user + used.system) / 1000 / (batches * size);
  };
}

export async function main(): Promise<string[]> {
  const rounds = env('BENCH_BATCH_ROUNDS', 7);
  const sizes = (process.env.BENCH_BATCH_SIZES ?? '0/400,400/400,0/1200,1200/1200')
    .split(',')
    .map((s) => s.split('/').map(Number) as [number, number]);
  const load = [loadavg()[0]!];
  const base = baseTenantgate(WHO, process.env.BENCH_BATCH_BASE ?? 'HEAD');
  const trees = { tree: await loadTree(compileTenantgate('batch-decisions', WHO)), base: await loadTree(base.cli) };
  log(
    `${WHO}: load average at start ${load[0]!.toFixed(2)}; working tree against ${base.sha.slice(0, 12)}, ${rounds} rounds`,
  );
  const rows: Array<{
    entries: number;
    namespaces: number;
    treeMs: number;
    baseMs: number;
    ratio: number;
    ratios: number[];
  }> = [];
  for (const [entries, namespaces] of sizes) {
    const measure = {
      tree: await setUp(trees.tree, entries, namespaces),
      base: await setUp(trees.base, entries, namespaces),
    };
    const got = { tree: [] as number[], base: [] as number[] };
    for (let r = 0; r < rounds; r++) {
      for (const side of r % 2 === 0 ? (['tree', 'base'] as const) : (['base', 'tree'] as const))
        got[side].push(await measure[side]());
    }
    const ratios = got.tree.map((t, i) => t / got.base[i]!);
    rows.push({
      entries,
      namespaces,
      treeMs: round3(median(got.tree)),
      baseMs: round3(median(got.base)),
      ratio: round3(median(ratios)),
      ratios: ratios.map(round3),
    });
    log(
      `${WHO}: E=${entries} N=${namespaces}: ${round3(median(got.tree))} ms per decision against ${round3(median(got.base))} (ratio ${round3(median(ratios))})`,
    );
  }
  load.push(loadavg()[0]!);
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(
    RESULTS,
    `${JSON.stringify({ date: new Date().toISOString(), base: base.sha, loadAverage: { start: load[0], end: load[1] }, rounds, rows }, null, 2)}\n`,
  );
  console.log(
    table(
      [
        'ledger entries',
        'namespaces',
        'tree ms/decision',
        'base ms/decision',
        'tree ÷ base (median of rounds)',
        'range',
      ],
      rows.map((r) => [
        r.entries,
        r.namespaces,
        r.treeMs,
        r.baseMs,
        r.ratio,
        `${Math.min(...r.ratios)}–${Math.max(...r.ratios)}`,
      ]),
    ),
  );
  return [];
}
