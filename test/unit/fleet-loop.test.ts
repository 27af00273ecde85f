/**
 * The member controller's give-back and offer loop (src/controller/fleet-loop.ts) against a hub and a
 * headroom ledger in memory (test/support/memory-hub.ts, memory-ledger.ts) and the cache as a
 * MemorySnapshot, with a clock the test moves: offer after offerAfter, give back after giveBackAfter,
 * E lowered before the hub write, never below what is allocated and reserved, everything above the
 * floor at once after the fleet budget was lowered, nothing while the hub is down; and the metrics'
 * series (src/controller/fleet-metrics.ts) from what the loop saw.
 */
import { TEST_NOW } from '../support/instant.js';
import { beforeEach, describe, expect, it } from 'vitest';
import { FleetLoop, FleetObservations } from '../../src/controller/fleet-loop.js';
import { fleetSeries } from '../../src/controller/fleet-metrics.js';
import { lowerEnforced, raiseEnforced } from '../../src/fleet/enforced-limit.js';
import { decodeRecord } from '../../src/fleet/enforced-record.js';
import { fleetBudgetFor, withShareRecordStatus } from '../../src/fleet/fleet-budget-object.js';
import { memberShare, type MemberShare } from '../../src/fleet/shares.js';
import { Quantity } from '../../src/quantity/quantity.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Project } from '../../src/validate/types.js';
import { aNamespace, aProject, aQuota } from '../support/fixtures.js';
import { MemoryHub } from '../support/memory-hub.js';
import { MemoryLedger } from '../support/memory-ledger.js';

const cpu = (v: string | number) => new Map([['requests.cpu', Quantity.parse(String(v))]]);
const MIN = 60_000;

function web(fleet = '10', clusters = ['eu', 'us']): Project {
  return aProject('web', {
    fleet: { quota: { hard: { 'requests.cpu': fleet } }, clusters },
    quota: { hard: { 'requests.cpu': '8' } },
    namespaces: [{ name: 'web-a', cluster: 'eu' }],
  });
}

let hub: MemoryHub;
let ledger: MemoryLedger;
let now: number;
let lines: Array<Record<string, unknown>>;
let seen: FleetObservations;
let snapshot: MemorySnapshot;

function setHub(project: Project, shares: Record<string, [number, number?]>): void {
  const object = fleetBudgetFor(web(), TEST_NOW)!;
  const entries = new Map<string, MemberShare>(
    Object.entries(shares).map(([m, [s, l]]) => [m, { share: cpu(s), lendable: l ? cpu(l) : new Map() }]),
  );
  hub.put(
    withShareRecordStatus(object, {
      budget: cpu(project.spec.fleet!.quota!.hard!['requests.cpu']!),
      members: ['eu', 'us'],
      bounds: new Map(),
      shares: entries,
      released: new Set(),
    }),
  );
}

function loop(acts = true): FleetLoop {
  return new FleetLoop({
    acts: () => acts,
    cluster: 'eu',
    hub,
    ledger,
    snapshot: () => snapshot,
    policy: { keep: cpu(1), above: cpu(2), offerAfterMs: MIN, giveBackAfterMs: 5 * MIN },
    checkEveryMs: MIN,
    observations: seen,
    log: (message, fields) => lines.push({ message, ...fields }),
    now: () => now,
    newKey: () => `k${now}`,
  });
}

const eu = () => ({
  share: memberShare(hub.ledger(), 'eu').share.get('requests.cpu')?.toString() ?? '0',
  lendable: memberShare(hub.ledger(), 'eu').lendable.get('requests.cpu')?.toString() ?? '0',
});
const enforced = async () => {
  const d = decodeRecord((await ledger.read('web')).fleet, 'web');
  return d.ok ? (d.record.enforced.get('requests.cpu')?.toString() ?? '0') : 'unreadable';
};

beforeEach(async () => {
  hub = new MemoryHub();
  ledger = new MemoryLedger();
  now = 1_000_000;
  lines = [];
  seen = new FleetObservations();
  // web-a on eu holds 2 CPUs (its quota).
  snapshot = MemorySnapshot.of({
    projects: [web()],
    namespaces: [aNamespace('web-a', { project: 'web' })],
    quotas: [aQuota('web-a', { 'requests.cpu': '2' }, { used: { 'requests.cpu': '1' } })],
  });
  setHub(web(), { eu: [8], us: [2] });
  await raiseEnforced(ledger, 'web', 'seed', cpu(8));
});

describe('the give-back loop', () => {
  it('keeps idle room until offerAfter, then lowers E to floor + keep and offers the rest; after giveBackAfter gives it back', async () => {
    const l = loop();
    await l.check('web');
    expect(lines.at(-1)).toMatchObject({
      message: 'fleet checked',
      project: 'web',
      fleet: 'kept',
      enforced: { 'requests.cpu': '8' },
      floor: { 'requests.cpu': '2' },
    });
    expect(eu()).toEqual({ share: '8', lendable: '0' });

    now += MIN;
    await l.check('web');
    expect(await enforced()).toBe('3');
    expect(eu()).toEqual({ share: '8', lendable: '5' });
    expect(lines.at(-1)).toMatchObject({
      fleet: 'returned',
      reason: 'idle',
      modes: { 'requests.cpu': 'offer' },
      lendable: { 'requests.cpu': '5' },
    });

    now += 4 * MIN;
    await l.check('web');
    expect(eu()).toEqual({ share: '3', lendable: '0' });
    expect(await enforced()).toBe('3');
    expect(lines.at(-1)).toMatchObject({
      fleet: 'returned',
      modes: { 'requests.cpu': 'give-back' },
      share: { 'requests.cpu': '-5' },
    });

    // Within the band now: nothing more, ever, until use changes.
    now += 10 * MIN;
    const writes = hub.writes;
    await l.check('web');
    expect(hub.writes).toBe(writes);
    expect(lines.at(-1)).toMatchObject({ fleet: 'kept' });
  });

  it('lowers E before the hub write, and never below what a live reservation holds', async () => {
    // A reservation of the webhook: web-b will hold 3 (not in the cache yet).
    const state = await ledger.read('web');
    await ledger.write('web', state, [
      { namespace: 'web-b', allocation: { 'requests.cpu': '3' }, created: now, expires: now + 10 * MIN },
    ]);
    const atWrite: string[] = [];
    hub.beforeWrite = () => void enforced().then((e) => atWrite.push(e));
    const l = loop();
    await l.check('web');
    now += 5 * MIN;
    await l.check('web');
    await new Promise((r) => setImmediate(r));
    expect(atWrite).toEqual(['6']);
    expect(await enforced()).toBe('6'); // floor 2 + 3 reserved, + keep 1
    expect(eu()).toEqual({ share: '6', lendable: '0' });
  });

  it("counts the allocation of a fleet-budgeted resource the cluster's own budget does not name (never gives it back)", async () => {
    // spec.quota budgets pods only: the rules alone would not count web-a's 2 CPUs.
    snapshot.upsertProject(
      aProject('web', {
        fleet: { quota: { hard: { 'requests.cpu': '10' } }, clusters: ['eu', 'us'] },
        quota: { hard: { pods: '10' } },
        namespaces: [{ name: 'web-a', cluster: 'eu' }],
      }),
    );
    const l = loop();
    await l.check('web');
    now += 5 * MIN;
    await l.check('web');
    expect(eu()).toEqual({ share: '3', lendable: '0' });
    expect(await enforced()).toBe('3');
  });

  it('a fleet budget declared below the shares held: everything above the floor goes back at once', async () => {
    snapshot.upsertProject(web('9'));
    await loop().check('web');
    expect(await enforced()).toBe('2');
    expect(eu()).toEqual({ share: '2', lendable: '0' });
    expect(lines.at(-1)).toMatchObject({ fleet: 'returned', reason: 'budget-lowered' });
  });

  it('a cluster removed from spec.fleet.clusters gives back all above its floor at once', async () => {
    snapshot.upsertProject(web('10', ['us']));
    await loop().check('web');
    expect(eu()).toEqual({ share: '2', lendable: '0' });
    expect(lines.at(-1)).toMatchObject({ reason: 'left-the-fleet' });
  });

  it('with the hub down nothing changes: E stays, the check says so, and the metrics show the hub unreachable', async () => {
    hub.down = true;
    const l = loop();
    l.start();
    await l.stop();
    seen.startedAt = now;
    await l.check('web');
    now += 10 * MIN;
    await l.check('web');
    expect(await enforced()).toBe('8');
    expect(lines.at(-1)).toMatchObject({ fleet: 'hub-unreachable' });
    const series = fleetSeries(snapshot, 'eu', seen, now);
    expect(series.hubReachable).toEqual([{ labels: { cluster: 'eu' }, value: 0 }]);
    expect(series.sinceContact).toEqual([{ labels: { cluster: 'eu' }, value: 600 }]);
  });

  it('the metrics: every member share and what it lends, the fleet budget, E and the allocation, the hub reachable', async () => {
    seen.startedAt = now;
    await loop().check('web');
    now += 30_000;
    const s = fleetSeries(snapshot, 'eu', seen, now);
    expect(s.share).toEqual([
      { labels: { project: 'web', cluster: 'eu', member: 'eu', resource: 'requests.cpu' }, value: 8 },
      { labels: { project: 'web', cluster: 'eu', member: 'us', resource: 'requests.cpu' }, value: 2 },
    ]);
    expect(s.budget).toEqual([{ labels: { project: 'web', cluster: 'eu', resource: 'requests.cpu' }, value: 10 }]);
    expect(s.enforced).toEqual([{ labels: { project: 'web', cluster: 'eu', resource: 'requests.cpu' }, value: 8 }]);
    expect(s.allocated).toEqual([{ labels: { project: 'web', cluster: 'eu', resource: 'requests.cpu' }, value: 2 }]);
    expect(s.hubReachable).toEqual([{ labels: { cluster: 'eu' }, value: 1 }]);
    expect(s.sinceContact).toEqual([{ labels: { cluster: 'eu' }, value: 30 }]);
    expect(s.observedAge).toEqual([{ labels: { project: 'web', cluster: 'eu' }, value: 30 }]);
  });

  it('a standby checks and keeps its clock but writes nothing: the leader acts on the clock it inherits', async () => {
    const standby = loop(false);
    await standby.check('web');
    now += 10 * MIN;
    await standby.check('web');
    expect(lines.at(-1)).toMatchObject({ fleet: 'observed', wouldReturn: { 'requests.cpu': 'give-back' } });
    expect(hub.writes).toBe(0);
    expect(await enforced()).toBe('8');
    expect(seen.projects.get('web')?.enforced?.get('requests.cpu')?.toString()).toBe('8');
  });

  it('a Project that lost spec.fleet: E goes to 0 and its whole share, offered part included, goes back', async () => {
    setHub(web(), { eu: [8, 2], us: [2] });
    await lowerEnforced(ledger, 'web', () => cpu(6)); // E ≤ share − lendable, as the offer left it
    const l = loop();
    await l.check('web');
    snapshot.upsertProject(aProject('web', { quota: { hard: { 'requests.cpu': '8' } } }));
    l.enqueueAll();
    await l.check('web');
    expect(eu()).toEqual({ share: '0', lendable: '0' });
    expect(await enforced()).toBe('0');
    expect(lines.at(-1)).toMatchObject({
      fleet: 'returned',
      reason: 'not-fleet-budgeted',
      share: { 'requests.cpu': '-8' },
    });
    expect(seen.projects.has('web')).toBe(false);
  });

  it('a Project without spec.fleet is not looked at: no hub read, no series', async () => {
    snapshot.upsertProject(aProject('web', { quota: { hard: { 'requests.cpu': '8' } } }));
    await loop().check('web');
    expect(hub.reads).toBe(0);
    expect(fleetSeries(snapshot, 'eu', seen, now).share).toEqual([]);
  });
});

describe("the hub's record below E (a hub restored from an older backup, a share given back by a stolen credential, a release)", () => {
  const aboveRecord = () => fleetSeries(snapshot, 'eu', seen, now).aboveRecord.map((s) => s.value);

  it('re-asserts the gap from the pool: the hub records E again, E stays, the check says so', async () => {
    setHub(web(), { eu: [5], us: [2] }); // restored: eu held 5 then; E is 8; the pool has 3
    await loop().check('web');
    expect(eu()).toEqual({ share: '8', lendable: '0' });
    expect(await enforced()).toBe('8');
    expect(lines.at(-1)).toMatchObject({ fleet: 're-asserted', recordBelowEnforced: { 'requests.cpu': '3' } });
    expect(aboveRecord()).toEqual([0]);
  });

  it('no room to re-assert: E comes down to the record (no growth here), what the namespaces hold is never taken back', async () => {
    setHub(web(), { eu: [5], us: [5] }); // pool 0
    await loop().check('web');
    expect(await enforced()).toBe('5');
    expect(eu()).toEqual({ share: '5', lendable: '0' });
    expect(lines.at(-1)).toMatchObject({
      fleet: 'record-below-enforced',
      refusal: 'no-room',
      enforcedNow: { 'requests.cpu': '5' },
      aboveRecord: {},
    });
    expect(aboveRecord()).toEqual([0]);
  });

  it('the namespaces hold more than the record: E stops at what they hold, the excess is reported (log and metric) until their use falls', async () => {
    snapshot.upsertQuota(aQuota('web-a', { 'requests.cpu': '6' }, { used: { 'requests.cpu': '1' } })); // floor 6
    setHub(web(), { eu: [4], us: [6] }); // pool 0, record 4
    const l = loop();
    await l.check('web');
    expect(await enforced()).toBe('6');
    expect(lines.at(-1)).toMatchObject({ fleet: 'record-below-enforced', aboveRecord: { 'requests.cpu': '2' } });
    expect(aboveRecord()).toEqual([2]);
    // The quota falls to 3: E follows to the record (4) at the next check; nothing stays above it.
    snapshot.upsertQuota(aQuota('web-a', { 'requests.cpu': '3' }, { used: { 'requests.cpu': '1' } }));
    now += MIN;
    await l.check('web');
    expect(await enforced()).toBe('4');
    expect(aboveRecord()).toEqual([0]);
  });

  it('a released member: E comes down to what its namespaces hold (no growth), however much the pool has', async () => {
    const object = fleetBudgetFor(web(), TEST_NOW)!;
    hub.put(
      withShareRecordStatus(object, {
        budget: cpu(10),
        members: ['eu', 'us'],
        bounds: new Map(),
        shares: new Map([['us', { share: cpu(2), lendable: new Map() }]]),
        released: new Set(['eu']),
      }),
    );
    await loop().check('web');
    expect(await enforced()).toBe('2');
    expect(lines.at(-1)).toMatchObject({ fleet: 'released', released: true, aboveRecord: { 'requests.cpu': '2' } });
    expect(hub.writes).toBe(0);
    expect(aboveRecord()).toEqual([2]);
  });

  it('a standby sees the gap and writes nothing', async () => {
    setHub(web(), { eu: [5], us: [2] });
    await loop(false).check('web');
    expect(lines.at(-1)).toMatchObject({ fleet: 'observed', recordBelowEnforced: { 'requests.cpu': '3' } });
    expect(hub.writes).toBe(0);
    expect(await enforced()).toBe('8');
  });

  it('a growth between the hub read and the E read is no gap: the hub is read again and nothing is written', async () => {
    setHub(web(), { eu: [6], us: [2] });
    await lowerEnforced(ledger, 'web', () => cpu(6));
    // The webhook's growth lands between the loop's two reads: the hub first (6 → 8), then E (6 → 8).
    const read = ledger.read.bind(ledger);
    let grown = false;
    ledger.read = async (project: string) => {
      if (!grown) {
        grown = true;
        setHub(web(), { eu: [8], us: [2] });
        await raiseEnforced(ledger, 'web', 'webhook-grant', cpu(2));
      }
      return read(project);
    };
    await loop().check('web');
    expect(lines.at(-1)).toMatchObject({ fleet: 'kept', recheckedHub: true });
    expect(hub.writes).toBe(0);
    expect(await enforced()).toBe('8');
  });
});
