/**
 * A member's give-back loop racing its own webhooks' growth on one project (src/controller/fleet-loop.ts
 * and src/webhook/headroom/fleet-growth.ts, the product's own code for both), over a hub and a headroom ledger in
 * memory whose every call yields a random number of times, so the loop's steps (read the hub, read E,
 * lower E, write the hub, retry on 409) and each replica's (write the hub, raise E) interleave in every
 * order a seed gives. At quiescence the oracle, computed here from the raw stored objects (the
 * FleetBudget's status, the ledger's `fleet` JSON), checks the protocol's invariant: E ≤ share − lendable
 * for the member, and Σ shares ≤ the fleet budget. `TG_MODEL_RUNS` (npm run models) runs deeper.
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
    const o = await super.writeStatus(object);
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

async function oneRun(seed: number): Promise<Verdict & { seed: number }> {
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
  const loop = new FleetLoop({
    cluster: 'eu',
    hub,
    ledger,
    snapshot: () => snapshot,
    policy: { keep: cpu(0), above: cpu(0), offerAfterMs: random() < 0.5 ? 0 : 60_000, giveBackAfterMs: 0 },
    checkEveryMs: 60_000,
    observations: new FleetObservations(),
    log: () => {},
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
  await Promise.all([loop.check('web'), ...growths.map((g) => g())]);
  return { seed, ...judge(hub, (await ledger.read('web')).fleet, budget) };
}

describe("the give-back loop racing its own webhooks' growth (the product's code for both)", () => {
  it(`keeps E ≤ share − lendable and Σ shares ≤ budget in ${RUNS} random interleavings`, async () => {
    const bad: Array<Verdict & { seed: number }> = [];
    for (let seed = 1; seed <= RUNS; seed++) {
      const v = await oneRun(seed);
      if (v.violations.length > 0) bad.push(v);
    }
    expect(bad.slice(0, 5), `${bad.length} of ${RUNS} runs broke the invariant`).toEqual([]);
  }, 120_000);
});
