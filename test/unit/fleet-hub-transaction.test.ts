/**
 * A transfer through the hub (src/fleet/hub-transaction.ts) against an in-memory hub of the
 * HubClient interface with compare-and-swap on a version, whose answers can be lost after or before
 * the write lands; and the enforced-limit record and its CAS store operations
 * (src/fleet/enforced-record.ts, src/fleet/enforced-limit.ts) on the in-memory headroom ledger.
 * test/integration/fleet-hub-io.test.ts runs the same I/O against a real apiserver, and alone shows
 * what rests on the stores' compare-and-swap (a stale write conflicts).
 */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import { applyOnHub, surelyGranted } from '../../src/fleet/hub-transaction.js';
import { fleetBudgetFor, withShareRecordStatus } from '../../src/fleet/fleet-budget-object.js';
import { memberShare, requestGrowth, type Granted } from '../../src/fleet/shares.js';
import {
  decodeRecord,
  encodeRecord,
  holdsEnforcedLimit,
  loweredRecord,
  raisedRecord,
  EMPTY_RECORD,
  MAX_GRANT_KEYS,
} from '../../src/fleet/enforced-record.js';
import { lowerEnforced, raiseEnforced } from '../../src/fleet/enforced-limit.js';
import { formatResources, parseResources } from '../../src/validate/resource-lists.js';
import type { Project } from '../../src/validate/types.js';
import { MemoryLedger } from '../support/memory-ledger.js';
import { MemoryHub } from '../support/memory-hub.js';

const CPU = 'requests.cpu';
const r = (list: Record<string, string>) => parseResources({ ...list });

const project: Project = {
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: { name: 'web' },
  spec: {
    owners: [{ kind: 'User', name: 'alice' }],
    quota: { hard: { [CPU]: '8' } },
    fleet: { quota: { hard: { [CPU]: '10' } }, clusters: ['eu', 'us'] },
  },
} as unknown as Project;

function hubWithWeb(): MemoryHub {
  const hub = new MemoryHub();
  hub.put(fleetBudgetFor(project, TEST_NOW)!);
  return hub;
}

const grow =
  (key: string, need: string, want = need) =>
  (l: Parameters<typeof requestGrowth>[0]) =>
    requestGrowth(l, 'eu', { id: key, need: r({ [CPU]: need }), want: r({ [CPU]: want }) });
const opts = (key: string) => ({ member: 'eu', key, deadlineMs: 2000, backoff: { baseMs: 0, maxMs: 0 } });

describe('applyOnHub', () => {
  it('reads, computes and writes with the version read: the share moves in the hub', async () => {
    const hub = hubWithWeb();
    const out = await applyOnHub(hub, 'web', grow('eu-1', '2', '3'), opts('eu-1'));
    expect(out.kind).toBe('stored');
    if (out.kind !== 'stored') return;
    expect(out.confirmedBy).toBe('answer');
    expect(formatResources(surelyGranted(out.results as Granted[]))).toEqual({ [CPU]: '3' });
    expect(formatResources(memberShare(hub.ledger(), 'eu').share)).toEqual({ [CPU]: '3' });
    expect(memberShare(hub.ledger(), 'eu').lastRequest).toBe('eu-1');
  });

  it('on a conflict re-reads and recomputes with the same key (a rival took room meanwhile)', async () => {
    const hub = hubWithWeb();
    let rival = true;
    hub.beforeWrite = () => {
      if (!rival) return;
      rival = false;
      // us takes 8 of the 10 between eu's read and eu's write.
      const taken = requestGrowth(hub.ledger(), 'us', { id: 'us-1', need: r({ [CPU]: '8' }) });
      if (!taken.ok) throw new Error('rival refused');
      hub.put(withShareRecordStatus(hub.objects.get('web')!, taken.record));
    };
    const out = await applyOnHub(hub, 'web', grow('eu-1', '2', '3'), opts('eu-1'));
    expect(out.kind).toBe('stored');
    if (out.kind !== 'stored') return;
    // Recomputed against the rival's ledger: only 2 were left.
    expect(formatResources(surelyGranted(out.results as Granted[]))).toEqual({ [CPU]: '2' });
    expect(formatResources(memberShare(hub.ledger(), 'eu').share)).toEqual({ [CPU]: '2' });
    expect(formatResources(memberShare(hub.ledger(), 'us').share)).toEqual({ [CPU]: '8' });
  });

  it('a lost answer of a write that landed is resolved by the re-read (lastRequest = key): stored once', async () => {
    const hub = hubWithWeb();
    hub.loseNext = 'after';
    const out = await applyOnHub(hub, 'web', grow('eu-1', '2', '3'), opts('eu-1'));
    expect(out.kind).toBe('stored');
    if (out.kind !== 'stored') return;
    expect(out.confirmedBy).toBe('re-read');
    expect(hub.writes).toBe(1);
    expect(formatResources(surelyGranted(out.results as Granted[]))).toEqual({ [CPU]: '3' });
    expect(formatResources(memberShare(hub.ledger(), 'eu').share)).toEqual({ [CPU]: '3' });
  });

  it('a write lost before it landed is sent again with the same key', async () => {
    const hub = hubWithWeb();
    hub.loseNext = 'before';
    const out = await applyOnHub(hub, 'web', grow('eu-1', '2'), opts('eu-1'));
    expect(out.kind).toBe('stored');
    expect(hub.writes).toBe(1);
    expect(memberShare(hub.ledger(), 'eu').lastRequest).toBe('eu-1');
  });

  it('refuses with the typed refusal when the fleet cannot cover the need; nothing is written', async () => {
    const hub = hubWithWeb();
    const out = await applyOnHub(hub, 'web', grow('eu-1', '9'), opts('eu-1'));
    // eu's upper bound is 8 (spec.quota.hard).
    expect(out.kind).toBe('refused');
    if (out.kind === 'refused') expect(out.refusal.shortfalls[0]?.limitedBy).toBe('bound');
    expect(hub.writes).toBe(0);
  });

  it('no FleetBudget, or one it cannot read: unusable (fail closed), nothing written', async () => {
    const hub = new MemoryHub();
    expect((await applyOnHub(hub, 'web', grow('eu-1', '1'), opts('eu-1'))).kind).toBe('unusable');
    const bad = fleetBudgetFor(project, TEST_NOW)!;
    bad.status = { members: { us: { share: { [CPU]: 'lots' } } } };
    hub.put(bad);
    const out = await applyOnHub(hub, 'web', grow('eu-1', '1'), opts('eu-1'));
    expect(out.kind).toBe('unusable');
    if (out.kind === 'unusable') expect(out.problems.join()).toMatch(/status.*us.*share/);
    expect(hub.writes).toBe(0);
  });

  it('a write the hub answers with a refusal (its admission policy): rejected at once, nothing stored', async () => {
    const hub = hubWithWeb();
    hub.writeStatus = () =>
      Promise.reject(
        Object.assign(new Error('denied'), {
          statusCode: 422,
          body: {
            message: 'ValidatingAdmissionPolicy tenantgate-fleet-shares denied request: [F3] share above the bound',
          },
        }),
      );
    const out = await applyOnHub(hub, 'web', grow('eu-1', '1'), opts('eu-1'));
    expect(out.kind).toBe('rejected');
    if (out.kind === 'rejected')
      expect(out.problems).toEqual([
        'the hub refused the write of FleetBudget tenantgate-fleet/web: 422: ValidatingAdmissionPolicy tenantgate-fleet-shares denied request: [F3] share above the bound',
      ]);
    expect(hub.reads).toBe(1);
  });

  it('a hub that does not answer: unreachable after its attempts, with the last ledger read', async () => {
    const hub = hubWithWeb();
    hub.down = true;
    const out = await applyOnHub(hub, 'web', grow('eu-1', '1'), { ...opts('eu-1'), maxAttempts: 3 });
    expect(out.kind).toBe('unreachable');
    if (out.kind === 'unreachable') expect(out.reason).toMatch(/ECONNREFUSED/);
  });

  it('a hub that never answers within the deadline: unreachable', async () => {
    const hub = hubWithWeb();
    hub.read = () => new Promise(() => {});
    const out = await applyOnHub(hub, 'web', grow('eu-1', '1'), { ...opts('eu-1'), deadlineMs: 50 });
    expect(out).toMatchObject({ kind: 'unreachable', reason: 'no answer within 50 ms' });
  });

  it('surelyGranted keeps the least of what several unconfirmed writes granted', () => {
    const g = (list: Record<string, string>) => ({ granted: r(list) }) as unknown as Granted;
    expect(formatResources(surelyGranted([g({ [CPU]: '3', x: '1' }), g({ [CPU]: '2' })]))).toEqual({ [CPU]: '2' });
    expect(surelyGranted([]).size).toBe(0);
  });
});

describe('the enforced-limit record', () => {
  it('round-trips, and a missing record is E = 0', () => {
    const rec = raisedRecord(EMPTY_RECORD, 'k1', r({ [CPU]: '2' }));
    const back = decodeRecord(encodeRecord(rec), 'web');
    expect(back.ok && formatResources(back.record.enforced)).toEqual({ [CPU]: '2' });
    expect(back.ok && back.record.grants).toEqual(['k1']);
    const none = decodeRecord(undefined, 'web');
    expect(none.ok && none.record.enforced.size).toBe(0);
  });

  it('a grant key raises once; the key list stays bounded', () => {
    let rec = raisedRecord(EMPTY_RECORD, 'k1', r({ [CPU]: '2' }));
    rec = raisedRecord(rec, 'k1', r({ [CPU]: '2' }));
    expect(formatResources(rec.enforced)).toEqual({ [CPU]: '2' });
    for (let i = 0; i < MAX_GRANT_KEYS + 5; i++) rec = raisedRecord(rec, `g${i}`, r({ [CPU]: '1m' }));
    expect(rec.grants.length).toBe(MAX_GRANT_KEYS);
  });

  it('lowers only down, never below zero', () => {
    const rec = raisedRecord(EMPTY_RECORD, 'k1', r({ [CPU]: '4' }));
    expect(formatResources(loweredRecord(rec, r({ [CPU]: '6' })).enforced)).toEqual({ [CPU]: '4' });
    expect(formatResources(loweredRecord(rec, r({ [CPU]: '1' })).enforced)).toEqual({ [CPU]: '1' });
    expect(loweredRecord(rec, r({ [CPU]: '0' })).enforced.size).toBe(0);
  });

  it('counts every lowering in its generation; a raise made with an older generation adds nothing (a give-back raced the grant)', async () => {
    const rec = raisedRecord(EMPTY_RECORD, 'k1', r({ [CPU]: '4' }));
    expect(rec.generation).toBe(0);
    const lowered = loweredRecord(rec, r({ [CPU]: '1' }));
    expect(lowered.generation).toBe(1);
    expect(loweredRecord(lowered, r({ [CPU]: '3' }))).toBe(lowered); // nothing lower: same record, same generation
    expect(raisedRecord(lowered, 'k2', r({ [CPU]: '2' }), 0)).toBe(lowered);
    expect(formatResources(raisedRecord(lowered, 'k2', r({ [CPU]: '2' }), 1).enforced)).toEqual({ [CPU]: '3' });
    const back = decodeRecord(encodeRecord(lowered), 'web');
    expect(back.ok && back.record.generation).toBe(1);
    expect(decodeRecord('{"enforced":{},"generation":-1}', 'web')).toEqual({
      ok: false,
      problem: 'the headroom ledger of project web, data key fleet: generation is -1; allowed: a whole number ≥ 0',
    });
    const ledger = new MemoryLedger();
    await raiseEnforced(ledger, 'web', 'k1', r({ [CPU]: '4' }));
    await lowerEnforced(ledger, 'web', () => r({ [CPU]: '1' }));
    expect((await raiseEnforced(ledger, 'web', 'k2', r({ [CPU]: '2' }), { ifGeneration: 0 })).applied).toBe(false);
    expect((await raiseEnforced(ledger, 'web', 'k3', r({ [CPU]: '2' }), { ifGeneration: 1 })).applied).toBe(true);
  });

  it('an unreadable record fails closed: named problem, counts as holding room', () => {
    const bad = decodeRecord('{"enforced":{"requests.cpu":"many"}}', 'web');
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.problem).toMatch(/project web.*fleet.*requests\.cpu/);
    expect(decodeRecord('[1]', 'web').ok).toBe(false);
    expect(decodeRecord('{"enforced":{"requests.cpu":"-1"}}', 'web').ok).toBe(false);
    expect(holdsEnforcedLimit({ fleet: 'not json' })).toBe(true);
    expect(holdsEnforcedLimit({ fleet: encodeRecord(EMPTY_RECORD) })).toBe(false);
    expect(holdsEnforcedLimit({})).toBe(false);
  });
});

describe('enforced limit in the headroom ledger', () => {
  // That a raise and a reservation batch written from the state before it are serialised (the batch
  // conflicts, E stays) is the real ConfigMap ledger's compare-and-swap, not this in-memory one's:
  // test/integration/fleet-hub-io.test.ts ("the enforced limit in the headroom-ledger ConfigMap").
  it('raise keeps the reservations and applies a key once', async () => {
    const ledger = new MemoryLedger();
    const entry = { namespace: 'web-a', allocation: { [CPU]: '1' }, created: 0, expires: TEST_NOW + 60_000 };
    await ledger.write('web', { entries: [] }, [entry]);
    await raiseEnforced(ledger, 'web', 'k1', r({ [CPU]: '3' }));
    await raiseEnforced(ledger, 'web', 'k1', r({ [CPU]: '3' }));
    const state = await ledger.read('web');
    expect(state.entries).toEqual([entry]);
    const rec = decodeRecord(state.fleet, 'web');
    expect(rec.ok && formatResources(rec.record.enforced)).toEqual({ [CPU]: '3' });
    // A later reservation write keeps E.
    const after = await ledger.write('web', state, [entry]);
    expect(decodeRecord((await ledger.read('web')).fleet, 'web').ok && after.fleet).toBe(state.fleet);
  });

  it('lower sees the state it is written against (a reservation that landed meanwhile)', async () => {
    const ledger = new MemoryLedger();
    await raiseEnforced(ledger, 'web', 'k1', r({ [CPU]: '5' }));
    let calls = 0;
    const out = await lowerEnforced(ledger, 'web', (state) => {
      calls += 1;
      if (calls === 1)
        void ledger.write('web', state, [
          { namespace: 'web-a', allocation: { [CPU]: '4' }, created: 0, expires: TEST_NOW + 60_000 },
        ]);
      const reserved = state.entries.reduce((n, e) => n + Number(e.allocation[CPU] ?? 0), 0);
      return r({ [CPU]: String(Math.max(1, reserved)) });
    });
    expect(calls).toBe(2);
    expect(formatResources(out.record.enforced)).toEqual({ [CPU]: '4' });
  });

  it('an unreadable record is not overwritten', async () => {
    const ledger = new MemoryLedger();
    await ledger.write('web', { entries: [], fleet: 'garbage' }, []);
    await expect(raiseEnforced(ledger, 'web', 'k1', r({ [CPU]: '1' }))).rejects.toThrow(/project web.*not JSON/);
    expect((await ledger.read('web')).fleet).toBe('garbage');
  });
});
