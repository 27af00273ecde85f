/**
 * `npm run bench -- fleet`: one fleet budget under 10,000 racing writes (test/support/fleet-race/run.ts):
 * a hub and two member clusters, each a fresh local control plane; two `tenantgate webhook` replicas per
 * member (dist/, as shipped: ledger on, client auth on) and the controller; owners racing over both
 * members at concurrency 16; the hub's kube-apiserver restarted a third of the way in, one member's
 * webhook replica SIGKILLed and restarted half-way; a sampler checking every member's Σ held against its
 * share on the hub and the fleet's Σ held against the fleet budget every 200 ms. Target: no violation at
 * any sample. Also reported: hub status writes per admitted write, growths decided within the member's
 * limit vs through the hub. Writes bench/results/fleet.json.
 *   BENCH_FLEET_ATTEMPTS=10000 BENCH_FLEET_CONCURRENCY=16 BENCH_FLEET_SEED=1 TG_KEEP_CLUSTER=1 npm run bench -- fleet
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ControlPlane } from '../../test/support/devcluster/controlplane.js';
import { runFleetRace } from '../../test/support/fleet-race/run.js';
import { HERE, ROOT, env } from '../lib/measure.js';

const RESULTS = join(HERE, 'results', 'fleet.json');
const log = (m: string) => process.stderr.write(`[bench/fleet ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

export async function main(): Promise<string[]> {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js')))
    throw new Error('dist/cli/main.js is missing: build it with `npx tsc -p tsconfig.json` first');
  const attempts = Math.max(6, Math.round(env('BENCH_FLEET_ATTEMPTS', 10_000)));
  const concurrency = Math.max(1, Math.round(env('BENCH_FLEET_CONCURRENCY', 16)));
  const seed = process.env.BENCH_FLEET_SEED ? Math.round(env('BENCH_FLEET_SEED', 1)) : undefined;
  const planes: ControlPlane[] = [];
  try {
    for (const name of ['hub', 'bench-eu', 'bench-us'])
      planes.push(await ControlPlane.start({ log: (m) => log(`${name}: ${m}`) }));
    const [hub, eu, us] = planes as [ControlPlane, ControlPlane, ControlPlane];
    const result = await runFleetRace({
      hub,
      members: [
        { name: 'bench-eu', info: eu.info },
        { name: 'bench-us', info: us.info },
      ],
      project: 'bfleet',
      attempts,
      concurrency,
      measureTransferCosts: true,
      ...(seed !== undefined ? { seed } : {}),
      log,
    });
    mkdirSync(join(HERE, 'results'), { recursive: true });
    writeFileSync(RESULTS, `${JSON.stringify(result, null, 2)}\n`);
    const admitted = sum(Object.values(result.counts).map((c) => c.admitted));
    const c = result.transferCosts;
    log(
      `seed ${result.seed}: ${result.attempts} attempts in ${(result.wallMs / 1000).toFixed(1)} s; admitted ${admitted}; per member ${JSON.stringify(result.counts)}`,
    );
    log(
      `${result.samples} samples (${result.sampleErrors.length} unreadable, ${result.hubUnread} without the hub), ${result.violations.length} violations; peak fleet held ${JSON.stringify(result.peakFleetHeld)} of ${JSON.stringify(result.fleetBudget)}; final shares ${JSON.stringify(result.finalShares)}; hub status writes in the race ${result.hubStatusWrites} (${admitted ? (result.hubStatusWrites / admitted).toFixed(3) : '—'} per admitted write)`,
    );
    if (c)
      log(
        `transfers: latency through the hub ${JSON.stringify(c.latencyMs.throughHub)} ms vs within the limit ${JSON.stringify(c.latencyMs.withinLimit)} ms; steady state ${c.steady.withoutHubPercent} % of ${c.steady.admittedGrowths} admitted growths without a hub call; burst ${JSON.stringify(c.burst)}`,
      );
    log(
      `load ${result.loadAverage.start.map((l) => l.toFixed(2)).join(' ')} → ${result.loadAverage.end.map((l) => l.toFixed(2)).join(' ')}`,
    );
    log(`results in ${RESULTS}`);
    const missed: string[] = [];
    if (result.violations.length > 0)
      missed.push(
        `the fleet budget broke at ${result.violations.length} of ${result.samples} samples (first: ${result.violations[0]!.violations.join('; ')})`,
      );
    if (result.sampleErrors.length >= result.samples)
      missed.push(`no sample could be read: ${result.sampleErrors[0] ?? ''}`);
    if (c && !(c.steady.withoutHubPercent >= 95))
      missed.push(
        `in steady state ${c.steady.withoutHubPercent} % of admitted growths needed no hub call (target ≥ 95 %)`,
      );
    return missed;
  } finally {
    for (const plane of planes.reverse()) await plane.stop({ keepData: process.env.TG_KEEP_CLUSTER === '1' });
  }
}
