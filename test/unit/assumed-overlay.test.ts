/**
 * The quotas a replica counts for the writes it admitted and its cache does not show yet
 * (src/webhook/headroom/assumed-state.ts, `overlay`): a write whose precondition the cache has moved past
 * counts no more. Seen in test/e2e/fleet-race.test.ts: replica A admitted `tenantgate-quota` 250m → 500m
 * (conditional on version 381); replica B raised it to 2 and then deleted it. A's cache showed the delete
 * (and the ledger's entry for it was settled), but A's own lost write still brought the quota back at
 * 500m: raising `extra` from 1 to 2 CPUs looked as if the namespace stayed at 500m, was admitted as not
 * growing, and the member held 2.5 CPUs under an enforced limit of 1.5.
 */
import { describe, expect, it } from 'vitest';
import { AssumedState } from '../../src/webhook/headroom/assumed-state.js';
import { supersededInCache } from '../../src/webhook/headroom/quota-versions.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Verdict } from '../../src/validate/admission.js';
import type { AdmissionRequest } from '../../src/webhook/review.js';
import type { ResourceQuotaObject } from '../../src/validate/types.js';
import { Quantity } from '../../src/quantity/quantity.js';
import { aNamespace, aQuota } from '../support/fixtures.js';
import { TEST_NOW } from '../support/instant.js';

const NS = 'frace-a';
const at = (q: ResourceQuotaObject, resourceVersion: string): ResourceQuotaObject => ({
  ...q,
  metadata: { ...q.metadata, resourceVersion },
});
const tgq = (cpu: string, rv: string) => at(aQuota(NS, { 'requests.cpu': cpu }), rv);
const extra = (cpu: string, rv: string) => at(aQuota(NS, { 'requests.cpu': cpu }, { name: 'extra' }), rv);

/** This replica admitted tenantgate-quota 250m → 500m, conditional on version 381. */
function assumedRaise(): AssumedState {
  const assumed = new AssumedState(30_000, () => TEST_NOW);
  assumeWrite(assumed, { from: '250m', to: '500m', basedOn: '381' });
  return assumed;
}

/** Assumes this replica admitted tenantgate-quota `from` → `to`, conditional on version `basedOn`. */
function assumeWrite(assumed: AssumedState, write: { from: string; to: string; basedOn: string }): void {
  const newer = tgq(write.to, write.basedOn);
  const request: AdmissionRequest = {
    uid: 'u1',
    kind: { group: '', version: 'v1', kind: 'ResourceQuota' },
    operation: 'UPDATE',
    namespace: NS,
    name: 'tenantgate-quota',
    userInfo: { username: 'alice', groups: [] },
    object: newer as unknown as Record<string, unknown>,
    oldObject: tgq(write.from, write.basedOn) as unknown as Record<string, unknown>,
  };
  const verdict: Verdict = {
    violations: [],
    warnings: [],
    allocation: {
      project: 'frace',
      namespace: NS,
      resources: new Map([['requests.cpu', Quantity.parse('250m')]]),
      grows: false,
      quotaWrite: { name: 'tenantgate-quota', quota: newer, removesCoverage: false },
    },
  };
  assumed.assume(verdict, request);
}

function cache(...quotas: ResourceQuotaObject[]): MemorySnapshot {
  const snapshot = new MemorySnapshot();
  snapshot.upsertNamespace(aNamespace(NS, { project: 'frace' }));
  for (const q of quotas) snapshot.upsertQuota(q);
  return snapshot;
}

const overlaid = (assumed: AssumedState, snapshot: MemorySnapshot) =>
  assumed.pendingOver(snapshot).quotaOverlay?.(NS)?.get('tenantgate-quota');

describe('a write the cache has moved past no longer counts in the overlay', () => {
  it('a quota deleted after the version the write was conditional on stays deleted', () => {
    // The cache shows tenantgate-quota gone and extra at 393: the quota stream passed 381.
    expect(overlaid(assumedRaise(), cache(extra('1', '393')))).toBeUndefined();
  });

  it('a quota changed after that version counts as the cache shows it', () => {
    expect(overlaid(assumedRaise(), cache(tgq('2', '397'), extra('1', '393')))).toBeUndefined();
  });

  it('while the cache has not passed that version the write counts (its envelope)', () => {
    expect(overlaid(assumedRaise(), cache(tgq('250m', '381'), extra('1', '354')))?.spec?.hard).toEqual({
      'requests.cpu': '500m',
    });
    // Absent, but nothing in the namespace shows the stream past 381: the cache may be behind.
    expect(overlaid(assumedRaise(), cache(extra('1', '354')))?.spec?.hard).toEqual({ 'requests.cpu': '500m' });
  });

  it('supersededInCache: later version, deletion seen, not passed, and a create', () => {
    expect(supersededInCache(cache(tgq('2', '397')), NS, 'tenantgate-quota', '381')).toBe(true);
    expect(supersededInCache(cache(extra('1', '393')), NS, 'tenantgate-quota', '381')).toBe(true);
    expect(supersededInCache(cache(tgq('1', '381'), extra('1', '393')), NS, 'tenantgate-quota', '381')).toBe(false);
    expect(supersededInCache(cache(extra('1', '300')), NS, 'tenantgate-quota', '381')).toBe(false);
    expect(supersededInCache(cache(tgq('2', '397')), NS, 'tenantgate-quota', undefined)).toBe(false);
  });
});

describe('of two writes of a quota, the one that can land last is the one counted', () => {
  it('a write admitted later but conditional on an older version does not hide one that can still land', () => {
    // 250m → 500m conditional on 381 is admitted first; a slower review of 1 → 250m, conditional on the older
    // 375, is admitted after it. The cache shows 250m at 381: the second can no longer land, the first still can.
    const assumed = assumedRaise();
    assumeWrite(assumed, { from: '1', to: '250m', basedOn: '375' });
    const shown = cache(tgq('250m', '381'), extra('1', '354'));
    assumed.observe({ snapshot: shown, config: {} as never, at: TEST_NOW }, NS);
    // Still counted at the envelope of every version it may have (1, 250m, 500m): not as the cache shows it.
    expect(overlaid(assumed, shown)?.spec?.hard).toEqual({ 'requests.cpu': '1' });
  });
});
