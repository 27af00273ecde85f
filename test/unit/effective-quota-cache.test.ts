/**
 * The snapshot memoises each namespace's effective quota for Q1. A memo that outlives a quota change
 * would let Q1 count the old quota and admit an overspend: these tests change quotas through the
 * snapshot's own write paths (as the informers do) and check both the memo and the Q1 decision.
 */
import { describe, expect, it } from 'vitest';
import { aNamespace, aQuota, reviewContext } from '../support/fixtures.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { reviewNamespace, reviewResourceQuota } from '../../src/validate/admission.js';
import { effectiveQuota } from '../../src/validate/quota-hold.js';
import { formatResources } from '../../src/validate/resource-lists.js';
import type { UserInfo } from '../../src/validate/rules/tenancy.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Project, ResourceList } from '../../src/validate/types.js';

const ALICE = { username: 'alice@acme.example', uid: 'uid-alice', groups: ['system:authenticated'] } as UserInfo;

const PAYMENTS: Project = {
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: { name: 'payments', uid: 'uid-payments', generation: 1 },
  spec: {
    tenant: 'acme',
    owners: [{ kind: 'User', name: 'alice@acme.example' }],
    quota: { hard: { 'requests.cpu': '20' } },
    namespaceDefaults: { quota: { hard: { 'requests.cpu': '2' } } },
  },
};

const cpu = (value: string): ResourceList => ({ 'requests.cpu': value });

function cluster(): MemorySnapshot {
  return MemorySnapshot.of({
    projects: [PAYMENTS],
    namespaces: [
      aNamespace('payments-api', { project: 'payments', tenant: 'acme' }),
      aNamespace('payments-batch', { project: 'payments', tenant: 'acme' }),
    ],
    quotas: [aQuota('payments-api', cpu('8')), aQuota('payments-batch', cpu('8'))],
  });
}

const memo = (snap: MemorySnapshot, ns: string) => formatResources(new Map(snap.effectiveQuotaOf(ns)));
const uncached = (snap: MemorySnapshot, ns: string) => formatResources(effectiveQuota(snap.quotasInNamespace(ns)));

describe('effective quota memo', () => {
  it('follows every quota write of the namespace: replace, add a tighter one, delete', () => {
    const snap = cluster();
    expect(memo(snap, 'payments-api')).toEqual({ 'requests.cpu': '8' });
    snap.upsertQuota(aQuota('payments-api', cpu('12')));
    expect(memo(snap, 'payments-api')).toEqual({ 'requests.cpu': '12' });
    snap.upsertQuota(aQuota('payments-api', cpu('3'), { name: 'tighter' }));
    expect(memo(snap, 'payments-api')).toEqual({ 'requests.cpu': '3' });
    snap.deleteQuota('payments-api', 'tighter');
    expect(memo(snap, 'payments-api')).toEqual({ 'requests.cpu': '12' });
    snap.deleteQuota('payments-api', 'tenantgate-quota');
    expect(memo(snap, 'payments-api')).toEqual({});
    expect(memo(snap, 'payments-api')).toEqual(uncached(snap, 'payments-api'));
  });

  it('leaves other namespaces alone and ignores scoped quotas like the uncached computation', () => {
    const snap = cluster();
    expect(memo(snap, 'payments-batch')).toEqual({ 'requests.cpu': '8' });
    snap.upsertQuota(aQuota('payments-api', cpu('1')));
    snap.upsertQuota(aQuota('payments-batch', cpu('1'), { name: 'best-effort', spec: { scopes: ['BestEffort'] } }));
    expect(memo(snap, 'payments-batch')).toEqual({ 'requests.cpu': '8' });
    expect(memo(snap, 'payments-api')).toEqual({ 'requests.cpu': '1' });
    expect(memo(snap, 'payments-batch')).toEqual(uncached(snap, 'payments-batch'));
  });

  it('Q1 sees a raised quota at once: no overspend from a stale memo', () => {
    const snap = cluster();
    const ctx = reviewContext(ALICE, snap, DEFAULT_CONFIG);
    // 16 of 20 allocated: a third namespace with the 2-cpu defaults fits, and fills the memo.
    expect(
      reviewNamespace(ctx, 'CREATE', aNamespace('payments-dev', { project: 'payments', tenant: 'acme' }), undefined)
        .violations,
    ).toEqual([]);
    // payments-batch grows to 12 (an informer update): 20 of 20 allocated, nothing fits any more.
    snap.upsertQuota(aQuota('payments-batch', cpu('12')));
    const after = reviewNamespace(
      reviewContext(ALICE, snap, DEFAULT_CONFIG),
      'CREATE',
      aNamespace('payments-dev', { project: 'payments', tenant: 'acme' }),
      undefined,
    );
    expect(after.violations.map((v) => v.rule)).toEqual(['Q1']);
    expect(after.violations[0]!.message).toContain('of which 20 are allocated to other namespaces: nothing fits');
  });

  it('Q1 sees a deleted quota at once: the namespace falls back to the defaults', () => {
    const snap = cluster();
    const ask = () =>
      reviewResourceQuota(
        reviewContext(ALICE, snap, DEFAULT_CONFIG),
        'UPDATE',
        'payments-api',
        aQuota('payments-api', cpu('11')),
        aQuota('payments-api', cpu('8')),
      );
    // batch holds 8: api may grow to 12 at most, so 11 fits.
    expect(ask().violations).toEqual([]);
    snap.upsertQuota(aQuota('payments-batch', cpu('10')));
    // batch now holds 10: at most 10 fits, 11 does not.
    expect(ask().violations.map((v) => v.rule)).toEqual(['Q1']);
    snap.deleteQuota('payments-batch', 'tenantgate-quota');
    // batch counts with its 2-cpu defaults: 11 fits again.
    expect(ask().violations).toEqual([]);
  });
});
