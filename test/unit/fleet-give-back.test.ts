/**
 * The member controller's give-back and offer decisions (src/fleet/give-back.ts): the idle clock and
 * its hysteresis band, offer after offerAfter, give back (offered part included) after giveBackAfter,
 * everything above the floor at once when the fleet budget was lowered below the shares or the cluster
 * left the fleet; and, for any state, the hub write never leaves share − lendable below max(E', floor).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decideReturn, returnRoom, type MemberState, type ReturnPolicy } from '../../src/fleet/give-back.js';
import { shareRecordProblems, memberShare, type MemberShare, type ShareRecord } from '../../src/fleet/shares.js';
import { Quantity } from '../../src/quantity/quantity.js';

const q = (v: string | number) => Quantity.parse(String(v));
const cpu = (v: string | number) => new Map([['requests.cpu', q(v)]]);
const policy: ReturnPolicy = { keep: cpu(1), above: cpu(2), offerAfterMs: 60_000, giveBackAfterMs: 300_000 };

function ledger(budget: number, shares: Record<string, [number, number?]>): ShareRecord {
  const entries = new Map<string, MemberShare>(
    Object.entries(shares).map(([m, [s, l]]) => [m, { share: cpu(s), lendable: l ? cpu(l) : new Map() }]),
  );
  return { budget: cpu(budget), members: ['eu', 'us'], bounds: new Map(), shares: entries, released: new Set() };
}

function state(o: {
  e: number;
  floor: number;
  share: number;
  lent?: number;
  other?: number;
  declared?: number;
  inFleet?: boolean;
}): MemberState {
  return {
    member: 'eu',
    enforced: cpu(o.e),
    floor: cpu(o.floor),
    record: ledger(20, { eu: [o.share, o.lent], us: [o.other ?? 4] }),
    declaredBudget: cpu(o.declared ?? 20),
    inFleet: o.inFleet ?? true,
  };
}

const cpuOf = (l: ShareRecord, m = 'eu') => ({
  share: memberShare(l, m).share.get('requests.cpu')?.toString() ?? '0',
  lendable: memberShare(l, m).lendable.get('requests.cpu')?.toString() ?? '0',
});

describe('decideReturn: the idle clock and its band', () => {
  it('idle room within the band (share − floor ≤ above) starts no clock and does nothing', () => {
    const d = decideReturn(state({ e: 7, floor: 5, share: 7 }), policy, new Map(), 0);
    expect(d).toEqual({ clock: new Map() });
  });

  it('above the band: the clock starts; before offerAfter nothing; after it an offer down to floor + keep; after giveBackAfter a give-back', () => {
    const s = state({ e: 10, floor: 5, share: 10 });
    const first = decideReturn(s, policy, new Map(), 1_000);
    expect(first.step).toBeUndefined();
    expect(first.clock.get('requests.cpu')).toBe(1_000);
    const offered = decideReturn(s, policy, first.clock, 61_000);
    expect(offered.step).toMatchObject({ reason: 'idle', modes: new Map([['requests.cpu', 'offer']]) });
    expect(offered.step?.lowerTo.get('requests.cpu')?.toString()).toBe('6');
    expect(offered.clock.get('requests.cpu')).toBe(1_000);
    const back = decideReturn(s, policy, first.clock, 301_000);
    expect(back.step?.modes.get('requests.cpu')).toBe('give-back');
    expect(back.step?.lowerTo.get('requests.cpu')?.toString()).toBe('6');
    expect(back.clock.has('requests.cpu')).toBe(false);
  });

  it('the clock keeps running after an offer (the lent part is idle too), and then the offer is given back with the rest', () => {
    // After the offer: E 6, share 10 of which 4 lent; share − floor = 5 > above.
    const s = state({ e: 6, floor: 5, share: 10, lent: 4 });
    expect(decideReturn(s, policy, new Map([['requests.cpu', 0]]), 120_000).step).toBeUndefined();
    const d = decideReturn(s, policy, new Map([['requests.cpu', 0]]), 300_000);
    expect(d.step?.modes.get('requests.cpu')).toBe('give-back');
    const after = returnRoom(s.record, 'eu', 'k1', d.step!, d.step!.lowerTo, s.floor, s.record);
    expect(after.ok && cpuOf(after.record)).toEqual({ share: '6', lendable: '0' });
    expect(after.ok && memberShare(after.record, 'eu').lastRequest).toBe('k1');
  });

  it('with offerAfter equal to giveBackAfter (the shipped default) room is given back, never offered', () => {
    const s = state({ e: 10, floor: 5, share: 10 });
    const same = { ...policy, offerAfterMs: 300_000 };
    expect(decideReturn(s, same, new Map([['requests.cpu', 0]]), 299_000).step).toBeUndefined();
    expect(decideReturn(s, same, new Map([['requests.cpu', 0]]), 300_000).step?.modes).toEqual(
      new Map([['requests.cpu', 'give-back']]),
    );
  });

  it('use that comes back inside the band stops the clock', () => {
    const d = decideReturn(state({ e: 10, floor: 8, share: 10 }), policy, new Map([['requests.cpu', 0]]), 400_000);
    expect(d).toEqual({ clock: new Map() });
  });

  it('the fleet budget declared below Σ shares: everything above the floor returns at once, offered part included', () => {
    const s = state({ e: 10, floor: 5, share: 12, lent: 2, other: 6, declared: 15 });
    const d = decideReturn(s, policy, new Map(), 0);
    expect(d.step).toMatchObject({ reason: 'budget-lowered', modes: new Map([['requests.cpu', 'give-back']]) });
    expect(d.step?.lowerTo.get('requests.cpu')?.toString()).toBe('5');
    const after = returnRoom(s.record, 'eu', 'k', d.step!, d.step!.lowerTo, s.floor, s.record);
    expect(after.ok && cpuOf(after.record)).toEqual({ share: '5', lendable: '0' });
  });

  it('a cluster that left spec.fleet.clusters returns all above its floor at once', () => {
    const d = decideReturn(state({ e: 9, floor: 3, share: 9, inFleet: false }), policy, new Map(), 0);
    expect(d.step).toMatchObject({ reason: 'left-the-fleet' });
    expect(d.step?.lowerTo.get('requests.cpu')?.toString()).toBe('3');
  });
});

describe('returnRoom', () => {
  it('never returns share below the floor, even when E is below it (a member that joined with namespaces already running)', () => {
    const s = state({ e: 2, floor: 5, share: 10 });
    const d = decideReturn(s, policy, new Map([['requests.cpu', 0]]), 400_000);
    expect(d.step?.lowerTo.get('requests.cpu')?.toString()).toBe('2');
    const after = returnRoom(s.record, 'eu', 'k', d.step!, d.step!.lowerTo, s.floor, s.record);
    expect(after.ok && cpuOf(after.record)).toEqual({ share: '5', lendable: '0' });
  });

  it('the same key on a ledger that already applied it changes nothing (a retry after a lost answer)', () => {
    const s = state({ e: 10, floor: 5, share: 10 });
    const step = decideReturn(s, policy, new Map([['requests.cpu', 0]]), 400_000).step!;
    const once = returnRoom(s.record, 'eu', 'k', step, step.lowerTo, s.floor, s.record);
    if (!once.ok) throw new Error('refused');
    const twice = returnRoom(once.record, 'eu', 'k', step, step.lowerTo, s.floor, s.record);
    expect(twice).toEqual({ ok: true, record: once.record, duplicate: true });
  });

  it("for any state and clock: the write keeps share − lendable ≥ max(E', floor), Σ shares ≤ budget, and touches no other member", () => {
    fc.assert(
      fc.property(
        fc.record({
          share: fc.integer({ min: 0, max: 12 }),
          lent: fc.integer({ min: 0, max: 12 }),
          e: fc.integer({ min: 0, max: 12 }),
          floor: fc.integer({ min: 0, max: 12 }),
          declared: fc.integer({ min: 0, max: 20 }),
          inFleet: fc.boolean(),
          at: fc.integer({ min: 0, max: 400_000 }),
        }),
        (o) => {
          const lent = Math.min(o.lent, o.share);
          const e = Math.min(o.e, o.share - lent);
          const s = state({ e, floor: o.floor, share: o.share, lent, declared: o.declared, inFleet: o.inFleet });
          const d = decideReturn(s, policy, new Map([['requests.cpu', 0]]), o.at);
          if (!d.step) return;
          const lowered = d.step.lowerTo.get('requests.cpu') ?? q(e);
          expect(lowered.cmp(q(e))).toBeLessThanOrEqual(0);
          const after = returnRoom(s.record, 'eu', 'k', d.step, d.step.lowerTo, s.floor, s.record);
          if (!after.ok) throw new Error(`refused: ${after.reason}`);
          const mine = memberShare(after.record, 'eu');
          const limit = (mine.share.get('requests.cpu') ?? q(0)).sub(mine.lendable.get('requests.cpu') ?? q(0));
          expect(limit.cmp(lowered)).toBeGreaterThanOrEqual(0);
          expect(limit.cmp(q(Math.min(o.floor, o.share - lent)))).toBeGreaterThanOrEqual(0);
          expect((mine.share.get('requests.cpu') ?? q(0)).cmp(q(Math.min(o.floor, o.share)))).toBeGreaterThanOrEqual(0);
          expect(shareRecordProblems(after.record)).toEqual([]);
          expect(memberShare(after.record, 'us')).toEqual(memberShare(s.record, 'us'));
        },
      ),
      { numRuns: 500 },
    );
  });
});
