/**
 * A member's give-back loop racing its own webhooks' growth on one project (src/controller/fleet-loop.ts
 * and src/webhook/headroom/fleet-growth.ts, the product's own code for both), over a hub and a headroom ledger in
 * memory whose every call yields a random number of times, so the loop's steps (read the hub, read E,
 * lower E, write the hub, retry on 409) and each replica's (write the hub, raise E) interleave in every
 * order a seed gives. At quiescence the oracle, computed here from the raw stored objects (the
 * FleetBudget's status, the ledger's `fleet` JSON), checks the protocol's invariant: E ≤ share − lendable
 * for the member, and Σ shares ≤ the fleet budget. `TG_MODEL_RUNS` (npm run models) runs deeper.
 *
 * And that the race happened, not only its end: across the runs growths were granted, the loop gave
 * back, both in one run, and the hub refused a write made at a version the other side had moved (a
 * growth that always refuses, or a loop that never writes, fails it).
 */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import { FleetLoop, FleetObservations } from '../../src/controller/fleet-loop.js';
import { raiseEnforced } from '../../src/fleet/enforced-limit.js';
import { fleetBudgetFor, withShareRecordStatus, type FleetBudgetObject } from '../../src/fleet/fleet-budget-object.js';
import { Quantity } from '../../src/quantity/quantity.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { FleetGrowth } from '../../src/webhook/headroom/fleet-growth.js';
import { aNamespace, aProject, aQuota } from '../support/fixtures.js';
import { HubConflict } from '../../src/fleet/hub-client.js';
import { MemoryHub } from '../support/memory-hub.js';
import { MemoryLedger } from '../support/memory-ledger.js';
import { seededRandom } from '../support/replica-race/attempts.js';

const RUNS = Number(process.env.TG_MODEL_RUNS ?? 300);
const CPU = 'requests.cpu';
const cpu = (v: number) => new Map([[CPU, Quantity.parse(String(v))]]);

async function yields(random: () => number): Promise<void> {
  const n = Math.floor(random() * 6);
  for (let i = 0; i < n; i++) await new Promise<void>((r) => setImmediate(r));
}

class ShuffledHub extends MemoryHub {
  /** Writes refused for a stale resourceVersion: the other side wrote in between. */
  conflicts = 0;
  constructor(private readonly random: () => number) {
    super();
  }
  override async read(name: string) {
    await yields(this.random);
    const o = await super.read(name);
    await yields(this.random);
    return o;
  }
  override async writeStatus(object: FleetBudgetObject) {
    await yields(this.random);
    const o = await super.writeStatus(object).catch((err: unknown) => {
      if (err instanceof HubConflict) this.conflicts += 1;
      throw err;
    });
    await yields(this.random);
    return o;
  }
}

class ShuffledLedger extends MemoryLedger {
  constructor(private readonly random: () => number) {
    super();
  }
  override async read(project: string) {
    await yields(this.random);
    return super.read(project);
  }
  override async write(...args: Parameters<MemoryLedger['write']>) {
    await yields(this.random);
    return super.write(...args);
  }
}

/** Σ over a raw resource list, 0 when absent. */
const raw = (list: Record<string, string | number> | undefined): Quantity => Quantity.parse(String(list?.[CPU] ?? 0));

interface Verdict {
  enforced: string;
  recorded: string;
  sum: string;
  violations: string[];
}

/** What happened in a run: the growths the hub granted, what the loop's check ended in, the hub's conflicts. */
interface Race {
  granted: number;
  loop: string;
  conflicts: number;
}

/** The oracle: from the stored FleetBudget's status and the ledger's stored `fleet` text, nothing else. */
function judge(hub: MemoryHub, ledgerText: string | undefined, budget: number): Verdict {
  const status = hub.objects.get('web')!.status ?? {};
  const eu = status.members?.['eu'];
  const recorded = raw(eu?.share).sub(raw(eu?.lendable));
  const enforced = raw((JSON.parse(ledgerText ?? '{"enforced":{}}') as { enforced: Record<string, string> }).enforced);
  let sum = Quantity.zero();
  for (const m of Object.values(status.members ?? {})) sum = sum.add(raw(m.share));
  const violations: string[] = [];
  if (enforced.cmp(recorded) > 0) violations.push(`E ${enforced.toString()} > share − lendable ${recorded.toString()}`);
  if (sum.cmp(Quantity.parse(String(budget))) > 0) violations.push(`Σ shares ${sum.toString()} > budget ${budget}`);
  return { enforced: enforced.toString(), recorded: recorded.toString(), sum: sum.toString(), violations };
}

async function oneRun(seed: number): Promise<Verdict & Race & { seed: number }> {
  const random = seededRandom(seed);
  const budget = 20;
  const hub = new ShuffledHub(random);
  const ledger = new ShuffledLedger(random);
  const project = aProject('web', {
    fleet: { quota: { hard: { [CPU]: String(budget) } }, clusters: ['eu', 'us'] },
    quota: { hard: { [CPU]: '20' } },
    namespaces: [{ name: 'web-a', cluster: 'eu' }],
  });
  // eu holds 8 and enforces 8; web-a holds 1 + a random part: the loop gives back the idle rest at once.
  const held = 1 + Math.floor(random() * 4);
  hub.put(
    withShareRecordStatus(fleetBudgetFor(project, TEST_NOW)!, {
      budget: cpu(budget),
      members: ['eu', 'us'],
      bounds: new Map(),
      shares: new Map([
        ['eu', { share: cpu(8), lendable: new Map() }],
        ['us', { share: cpu(2), lendable: new Map() }],
      ]),
      released: new Set(),
    }),
  );
  await raiseEnforced(ledger, 'web', 'seed', cpu(8));
  const snapshot = MemorySnapshot.of({
    projects: [project],
    namespaces: [aNamespace('web-a', { project: 'web' })],
    quotas: [aQuota('web-a', { [CPU]: String(held) })],
  });
  let keys = 0;
  let loopResult = 'none';
  const loop = new FleetLoop({
    cluster: 'eu',
    hub,
    ledger,
    snapshot: () => snapshot,
    policy: { keep: cpu(0), above: cpu(0), offerAfterMs: random() < 0.5 ? 0 : 60_000, giveBackAfterMs: 0 },
    checkEveryMs: 60_000,
    observations: new FleetObservations(),
    log: (message, fields) => {
      if (message === 'fleet checked') loopResult = String(fields?.fleet);
    },
    now: () => 1_000_000,
    newKey: () => `loop-${seed}-${keys++}`,
  });
  // Two webhook replicas of eu, each growing once by 1–3 CPUs (need), asking keep 0–1 more.
  const replica = (n: number) =>
    new FleetGrowth(
      {
        cluster: 'eu',
        hub,
        policy: { keep: cpu(Math.floor(random() * 2)), above: cpu(2) },
        newKey: () => `r${n}-${seed}-${keys++}`,
        maxAttempts: 20,
      },
      ledger,
    );
  const growths = [1, 2].map((n) => {
    const need = 1 + Math.floor(random() * 3);
    return async () => {
      await yields(random);
      return replica(n).request('web', cpu(need), cpu(8), 60_000, false);
    };
  });
  const [, ...transfers] = await Promise.all([loop.check('web'), ...growths.map((g) => g())]);
  return {
    seed,
    granted: transfers.filter((t) => t?.ok).length,
    loop: loopResult,
    conflicts: hub.conflicts,
    ...judge(hub, (await ledger.read('web')).fleet, budget),
  };
}

describe("the give-back loop racing its own webhooks' growth (the product's code for both)", () => {
  it(`keeps E ≤ share − lendable and Σ shares ≤ budget in ${RUNS} random interleavings`, async () => {
    const bad: Array<Verdict & { seed: number }> = [];
    const races: Race[] = [];
    for (let seed = 1; seed <= RUNS; seed++) {
      const v = await oneRun(seed);
      races.push(v);
      if (v.violations.length > 0) bad.push(v);
    }
    expect(bad.slice(0, 5), `${bad.length} of ${RUNS} runs broke the invariant`).toEqual([]);
    // The race happened: growths granted, the loop gave back, both in one run, and writes that collided.
    const tally = {
      granted: races.filter((r) => r.granted > 0).length,
      returned: races.filter((r) => r.loop === 'returned').length,
      both: races.filter((r) => r.granted > 0 && r.loop === 'returned').length,
      collided: races.filter((r) => r.conflicts > 0).length,
    };
    const loops = [...new Set(races.map((r) => r.loop))].join(', ');
    expect(
      Math.min(...Object.values(tally)),
      `${JSON.stringify(tally)} of ${RUNS} runs; loop results: ${loops}`,
    ).toBeGreaterThan(0);
  }, 120_000);
});
