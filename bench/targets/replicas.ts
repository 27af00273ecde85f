/**
 * `npm run bench -- replicas`: the budget promise under 10,000 racing writes, with real processes
 * (test/support/replica-race/run.ts): three `tenantgate webhook` replicas from dist/ (build it first:
 * `npx tsc -p tsconfig.json`; the shipped configuration, ledger on) behind a round-robin proxy
 * registered with a fresh local control plane, the controller under its ServiceAccount, two owners of
 * one project (8 CPUs, 16Gi, 6 namespaces, real pods using part of it) racing at concurrency 16; one
 * replica SIGKILLed and restarted a third of the way in, the ledger ConfigMap deleted half-way, and a
 * sampler checking Σ held ≤ budget and live namespaces ≤ maxNamespaces on a consistent LIST every 200 ms.
 * Target: no violation at any sample. Writes bench/results/replicas.json.
 *   BENCH_REPLICAS_ATTEMPTS=10000 BENCH_REPLICAS_CONCURRENCY=16 BENCH_REPLICAS_SEED=1 BENCH_REPLICAS_LEDGER=off TG_KEEP_CLUSTER=1 npm run bench -- replicas
 * TG_WEBHOOK_DIST=/path/to/dist runs the replicas from another build (test/support/devcluster/replicas.ts).
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ControlPlane } from '../../test/support/devcluster/controlplane.js';
import { runReplicaRace } from '../../test/support/replica-race/run.js';
import { HERE, ROOT, env } from '../lib/measure.js';

const RESULTS = join(HERE, 'results', 'replicas.json');
const log = (m: string) => process.stderr.write(`[bench/replicas ${new Date().toISOString().slice(11, 19)}] ${m}\n`);

export async function main(): Promise<string[]> {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js')))
    throw new Error('dist/cli/main.js is missing: build it with `npx tsc -p tsconfig.json` first');
  const attempts = Math.max(3, Math.round(env('BENCH_REPLICAS_ATTEMPTS', 10_000)));
  const concurrency = Math.max(1, Math.round(env('BENCH_REPLICAS_CONCURRENCY', 16)));
  const seed = process.env.BENCH_REPLICAS_SEED ? Math.round(env('BENCH_REPLICAS_SEED', 1)) : undefined;
  // BENCH_REPLICAS_LEDGER=off: the cross-replica ledger turned off, to see what the check catches without it.
  const ledger = process.env.BENCH_REPLICAS_LEDGER ?? 'on';
  if (ledger !== 'on' && ledger !== 'off')
    throw new Error(`BENCH_REPLICAS_LEDGER is ${JSON.stringify(ledger)}; allowed: on, off`);
  const cp = await ControlPlane.start({ log });
  try {
    const result = await runReplicaRace({
      info: cp.info,
      project: 'brep',
      attempts,
      concurrency,
      ...(seed !== undefined ? { seed } : {}),
      ...(ledger === 'off' ? { config: { crossReplicaReservation: false } } : {}),
      log,
    });
    mkdirSync(join(HERE, 'results'), { recursive: true });
    writeFileSync(RESULTS, `${JSON.stringify({ ledger, ...result }, null, 2)}\n`);
    const c = result.counts;
    log(
      `seed ${result.seed}: ${attempts} attempts, ${c.writes} writes in ${(result.wallMs / 1000).toFixed(1)} s; admitted ${c.admitted}; refused ${JSON.stringify(c.refused)}; fail-closed ${JSON.stringify(c.failClosed)}; other ${JSON.stringify(c.other)}`,
    );
    log(
      `${result.samples} samples (${result.sampleErrors.length} unreadable), ${result.violations.length} violations; peak ${JSON.stringify(result.peak)}; replica ${result.kill.replica} killed after ${result.kill.afterCompleted}, ready again after ${result.kill.restarted?.afterCompleted ?? '—'}; ledger deleted after ${result.ledgerDeletion.afterCompleted} (HTTP ${result.ledgerDeletion.status}); validate requests per replica ${result.requestsPerReplica.join('/')}; load ${result.loadAverage.start.map((l) => l.toFixed(2)).join(' ')} → ${result.loadAverage.end.map((l) => l.toFixed(2)).join(' ')}`,
    );
    log(`results in ${RESULTS}`);
    const missed: string[] = [];
    if (result.violations.length > 0)
      missed.push(
        `the budget promise broke at ${result.violations.length} of ${result.samples} samples (first: ${result.violations[0]!.sample.violations.join('; ')})`,
      );
    if (result.sampleErrors.length >= result.samples)
      missed.push(`no sample could be read: ${result.sampleErrors[0] ?? ''}`);
    return missed;
  } finally {
    // TG_KEEP_CLUSTER=1 keeps the control plane's directory: the replicas' decision logs, etcd's data.
    await cp.stop({ keepData: process.env.TG_KEEP_CLUSTER === '1' });
  }
}
