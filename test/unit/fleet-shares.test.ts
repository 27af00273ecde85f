/**
 * The share record's transitions (src/fleet/shares.ts) and the member's own decisions
 * (src/fleet/member.ts), case by case; test/unit/fleet-shares-model.test.ts checks them against a hub
 * with compare-and-swap, lost messages and crashes.
 */
import { describe, expect, it } from 'vitest';
import { decideLocally, growthWant } from '../../src/fleet/member.js';
import {
  emptyShareRecord,
  enforceableLimit,
  giveBack,
  shareRecordProblems,
  memberShare,
  offer,
  poolOf,
  releaseMember,
  requestGrowth,
  setBudget,
  setMembers,
  withdrawOffer,
  type ShareRecord,
} from '../../src/fleet/shares.js';
import { formatResources, parseResources } from '../../src/validate/resource-lists.js';

const CPU = 'requests.cpu';
const MEM = 'requests.memory';
const r = (list: Record<string, string>) => parseResources({ ...list });
const fmt = (x: ReadonlyMap<string, import('../../src/quantity/quantity.js').Quantity>) => formatResources(x);

function ledger(): ShareRecord {
  return emptyShareRecord(r({ [CPU]: '10', [MEM]: '16Gi' }), ['eu', 'us', 'ap'], new Map([['eu', r({ [CPU]: '6' })]]));
}

function ok<T extends { ok: boolean }>(t: T): Extract<T, { ok: true }> {
  if (!t.ok) throw new Error(`refused: ${JSON.stringify(t)}`);
  return t as Extract<T, { ok: true }>;
}

describe('requestGrowth', () => {
  it('takes from the pool in one ledger and records the request id', () => {
    const g = ok(
      requestGrowth(ledger(), 'us', { id: 'us-1', need: r({ [CPU]: '3', [MEM]: '1Gi' }), want: r({ [CPU]: '4' }) }),
    );
    expect(fmt(g.granted)).toEqual({ [CPU]: '4', [MEM]: '1Gi' });
    expect(fmt(g.fromPool)).toEqual({ [CPU]: '4', [MEM]: '1Gi' });
    expect(fmt(memberShare(g.record, 'us').share)).toEqual({ [CPU]: '4', [MEM]: '1Gi' });
    expect(memberShare(g.record, 'us').lastRequest).toBe('us-1');
    expect(fmt(poolOf(g.record))).toEqual({ [CPU]: '6', [MEM]: '15Gi' });
    expect(shareRecordProblems(g.record)).toEqual([]);
  });

  it('applies a request id once: the retry of a stored write changes nothing', () => {
    const first = ok(requestGrowth(ledger(), 'us', { id: 'us-1', need: r({ [CPU]: '3' }) }));
    const again = ok(requestGrowth(first.record, 'us', { id: 'us-1', need: r({ [CPU]: '3' }) }));
    expect(again.duplicate).toBe(true);
    expect(again.record).toBe(first.record);
    expect(fmt(memberShare(again.record, 'us').share)).toEqual({ [CPU]: '3' });
  });

  it('takes what others offer when the pool is empty, the largest offer first, and never their unoffered share', () => {
    let l = ok(requestGrowth(ledger(), 'us', { id: 'u1', need: r({ [CPU]: '6' }) })).record;
    l = ok(requestGrowth(l, 'ap', { id: 'a1', need: r({ [CPU]: '4' }) })).record;
    l = ok(offer(l, 'us', { id: 'u2', amount: r({ [CPU]: '1500m' }) })).record;
    l = ok(offer(l, 'ap', { id: 'a2', amount: r({ [CPU]: '500m' }) })).record;
    const g = ok(requestGrowth(l, 'eu', { id: 'e1', need: r({ [CPU]: '1700m' }) }));
    expect(fmt(g.fromPool)).toEqual({});
    expect(fmt(g.fromLenders.get('us')!)).toEqual({ [CPU]: '1500m' });
    expect(fmt(g.fromLenders.get('ap')!)).toEqual({ [CPU]: '200m' });
    expect(fmt(memberShare(g.record, 'us').share)).toEqual({ [CPU]: '4500m' });
    expect(fmt(memberShare(g.record, 'us').lendable)).toEqual({});
    expect(fmt(memberShare(g.record, 'ap').lendable)).toEqual({ [CPU]: '300m' });
    // What a lender still enforces is unchanged: only what it had offered moved.
    expect(fmt(enforceableLimit(g.record, 'us'))).toEqual(fmt(enforceableLimit(l, 'us')));
    expect(shareRecordProblems(g.record)).toEqual([]);

    const refused = requestGrowth(g.record, 'eu', { id: 'e2', need: r({ [CPU]: '1' }) });
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.reason).toBe('no-room');
    expect(
      refused.shortfalls[0]!.holders.map((h) => `${h.cluster} ${h.share.toString()} ${h.lendable.toString()}`),
    ).toEqual(['us 4500m 0', 'ap 3800m 300m']);
  });

  it('refuses beyond the upper bound, a resource outside the fleet budget, a non-member and a released member', () => {
    const bound = requestGrowth(ledger(), 'eu', { id: 'e1', need: r({ [CPU]: '7' }) });
    expect(!bound.ok && bound.reason === 'no-room' && bound.shortfalls[0]!.limitedBy).toBe('bound');
    const capped = ok(requestGrowth(ledger(), 'eu', { id: 'e1', need: r({ [CPU]: '5' }), want: r({ [CPU]: '9' }) }));
    expect(fmt(capped.granted)).toEqual({ [CPU]: '6' });
    expect(requestGrowth(ledger(), 'eu', { id: 'e1', need: r({ pods: '1' }) })).toMatchObject({
      ok: false,
      reason: 'not-fleet-budgeted',
      resources: ['pods'],
    });
    expect(requestGrowth(ledger(), 'xx', { id: 'x1', need: r({ [CPU]: '1' }) })).toMatchObject({
      ok: false,
      reason: 'not-a-member',
    });
    const released = releaseMember(ledger(), 'ap').record;
    expect(requestGrowth(released, 'ap', { id: 'a1', need: r({ [CPU]: '1' }) })).toMatchObject({
      ok: false,
      reason: 'released',
    });
    expect(setMembers(released, ['eu', 'us', 'ap'], new Map()).members).toEqual(['eu', 'us']);
  });
});

describe('give back, offer, withdraw, release, budget', () => {
  it('gives back at most what is not lent; offers and withdraws within the share', () => {
    let l = ok(requestGrowth(ledger(), 'us', { id: 'u1', need: r({ [CPU]: '5' }) })).record;
    l = ok(offer(l, 'us', { id: 'u2', amount: r({ [CPU]: '2' }) })).record;
    expect(giveBack(l, 'us', { id: 'u3', amount: r({ [CPU]: '4' }) })).toMatchObject({
      ok: false,
      reason: 'more-than-held',
    });
    l = ok(giveBack(l, 'us', { id: 'u3', amount: r({ [CPU]: '3' }) })).record;
    expect(fmt(memberShare(l, 'us').share)).toEqual({ [CPU]: '2' });
    expect(offer(l, 'us', { id: 'u4', amount: r({ [CPU]: '1' }) })).toMatchObject({
      ok: false,
      reason: 'more-than-held',
    });
    expect(withdrawOffer(l, 'us', { id: 'u4', amount: r({ [CPU]: '3' }) })).toMatchObject({
      ok: false,
      reason: 'more-than-held',
    });
    l = ok(withdrawOffer(l, 'us', { id: 'u4', amount: r({ [CPU]: '2' }) })).record;
    expect(fmt(enforceableLimit(l, 'us'))).toEqual({ [CPU]: '2', [MEM]: '0' });
    // A member removed from the fleet in git may still lower, not grow.
    l = setMembers(l, ['eu', 'ap'], new Map());
    expect(requestGrowth(l, 'us', { id: 'u5', need: r({ [CPU]: '1' }) })).toMatchObject({
      ok: false,
      reason: 'not-a-member',
    });
    l = ok(giveBack(l, 'us', { id: 'u5', amount: r({ [CPU]: '2' }) })).record;
    expect(fmt(memberShare(l, 'us').share)).toEqual({});
  });

  it('an operator release returns a vanished member share to the pool', () => {
    const l = ok(requestGrowth(ledger(), 'ap', { id: 'a1', need: r({ [CPU]: '7' }) })).record;
    const released = releaseMember(l, 'ap').record;
    expect(fmt(poolOf(released))).toEqual({ [CPU]: '10', [MEM]: '16Gi' });
    expect(released.released.has('ap')).toBe(true);
    expect(releaseMember(released, 'ap').duplicate).toBe(true);
  });

  it('lowers the fleet budget only down to what the members hold', () => {
    const l = ok(requestGrowth(ledger(), 'ap', { id: 'a1', need: r({ [CPU]: '7' }) })).record;
    const refused = setBudget(l, r({ [CPU]: '6', [MEM]: '16Gi' }));
    expect(refused).toMatchObject({ ok: false, reason: 'below-shares' });
    if (!refused.ok) expect(refused.shortfalls[0]!.need.toString()).toBe('1');
    const lowered = ok(setBudget(l, r({ [CPU]: '7' })));
    expect(fmt(poolOf(lowered.record))).toEqual({ [CPU]: '0' });
    expect(fmt(memberShare(lowered.record, 'ap').share)).toEqual({ [CPU]: '7' });
  });
});

describe('member decisions', () => {
  it('admits what fits the enforced limit without the hub, and says how much more is needed otherwise', () => {
    expect(decideLocally(r({ [CPU]: '4' }), r({ [CPU]: '4', pods: '100' }))).toEqual({ fits: true });
    const d = decideLocally(r({ [CPU]: '4', [MEM]: '1Gi' }), r({ [CPU]: '4500m', [MEM]: '1Gi' }));
    expect(d.fits).toBe(false);
    if (!d.fits) expect(fmt(d.need)).toEqual({ [CPU]: '500m' });
    expect(fmt(growthWant(r({ [CPU]: '500m' }), { keep: r({ [CPU]: '1' }), above: r({ [CPU]: '2' }) }))).toEqual({
      [CPU]: '1500m',
    });
  });
});

describe('a member taking back its own offer', () => {
  it('grows what it may enforce from its own offer first, without growing its share or taking the pool', () => {
    let ledger = emptyShareRecord(parseResources({ 'requests.cpu': '10' }), ['eu', 'us']);
    const first = requestGrowth(ledger, 'eu', { id: 'eu-1', need: parseResources({ 'requests.cpu': '6' }) });
    if (!first.ok) throw new Error(first.reason);
    const lent = offer(first.record, 'eu', { id: 'eu-2', amount: parseResources({ 'requests.cpu': '4' }) });
    if (!lent.ok) throw new Error(lent.reason);
    ledger = lent.record;
    expect(enforceableLimit(ledger, 'eu').get('requests.cpu')?.toString()).toBe('2');
    const back = requestGrowth(ledger, 'eu', { id: 'eu-3', need: parseResources({ 'requests.cpu': '5' }) });
    if (!back.ok) throw new Error(back.reason);
    // 4 of its own offer, then 1 from the pool: share 7, nothing lent, enforceable 7.
    expect(back.fromOwnOffer.get('requests.cpu')?.toString()).toBe('4');
    expect(back.fromPool.get('requests.cpu')?.toString()).toBe('1');
    expect(back.granted.get('requests.cpu')?.toString()).toBe('5');
    expect(back.record.shares.get('eu')?.share.get('requests.cpu')?.toString()).toBe('7');
    expect(back.record.shares.get('eu')?.lendable.get('requests.cpu')).toBeUndefined();
    expect(enforceableLimit(back.record, 'eu').get('requests.cpu')?.toString()).toBe('7');
    expect(poolOf(back.record).get('requests.cpu')?.toString()).toBe('3');
  });

  it('counts its own offer within its upper bound: taking it back passes no bound', () => {
    const ledger0 = emptyShareRecord(
      parseResources({ 'requests.cpu': '10' }),
      ['eu', 'us'],
      new Map([['eu', parseResources({ 'requests.cpu': '6' })]]),
    );
    const first = requestGrowth(ledger0, 'eu', { id: 'eu-1', need: parseResources({ 'requests.cpu': '6' }) });
    if (!first.ok) throw new Error(first.reason);
    const lent = offer(first.record, 'eu', { id: 'eu-2', amount: parseResources({ 'requests.cpu': '3' }) });
    if (!lent.ok) throw new Error(lent.reason);
    const back = requestGrowth(lent.record, 'eu', { id: 'eu-3', need: parseResources({ 'requests.cpu': '3' }) });
    expect(back.ok).toBe(true);
    const beyond = requestGrowth(lent.record, 'eu', { id: 'eu-4', need: parseResources({ 'requests.cpu': '4' }) });
    expect(beyond.ok).toBe(false);
    if (!beyond.ok) expect(beyond.shortfalls[0]?.limitedBy).toBe('bound');
  });
});
