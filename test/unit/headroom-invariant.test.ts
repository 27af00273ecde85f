/**
 * The outside check of test/e2e/headroom-replicas.test.ts and bench/targets/replicas.ts
 * (test/support/replica-race/): it must catch every way stored objects can overspend a budget, and
 * not flag what is within it. Also the attempt generator and how answers are counted.
 */
import { describe, expect, it } from 'vitest';
import { classifyOutcome, countOutcome, emptyCounts, generateAttempts } from '../support/replica-race/attempts.js';
import {
  checkHeadroomInvariant,
  type ListedNamespace,
  type ListedQuota,
  type RaceProject,
} from '../support/replica-race/invariant.js';

const PROJECT: RaceProject = {
  name: 'shop',
  budget: { 'requests.cpu': '8', 'requests.memory': '16Gi' },
  defaults: { 'requests.cpu': '1', 'requests.memory': '2Gi' },
  maxNamespaces: 3,
};

const ns = (name: string, options: { project?: string | null; terminating?: boolean } = {}): ListedNamespace => ({
  metadata: {
    name,
    ...(options.project === null ? {} : { labels: { 'tenantgate.io/project': options.project ?? 'shop' } }),
    ...(options.terminating ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
  },
});

const quota = (
  namespace: string,
  cpu: string,
  memory: string,
  extra: Partial<ListedQuota> & { name?: string } = {},
): ListedQuota => ({
  metadata: { name: extra.name ?? 'tenantgate-quota', namespace },
  spec: { hard: { 'requests.cpu': cpu, 'requests.memory': memory }, ...extra.spec },
  ...(extra.status ? { status: extra.status } : {}),
});

const check = (namespaces: ListedNamespace[], quotas: ListedQuota[], project = PROJECT) =>
  checkHeadroomInvariant(project, namespaces, quotas, '42');

describe('checkHeadroomInvariant', () => {
  it('passes a project exactly at its budget and sums what each namespace holds', () => {
    const r = check(
      [ns('shop-a'), ns('shop-b')],
      [
        quota('shop-a', '4', '8Gi', {
          status: {
            hard: { 'requests.cpu': '4', 'requests.memory': '8Gi' },
            used: { 'requests.cpu': '3', 'requests.memory': '1Gi' },
          },
        }),
        quota('shop-b', '4000m', '8192Mi'),
      ],
    );
    expect(r.violations).toEqual([]);
    expect(r.held).toEqual({ 'requests.cpu': '8', 'requests.memory': '16Gi' });
    expect(r.resourceVersion).toBe('42');
  });

  it('catches an overspend of the quotas themselves, per resource', () => {
    const r = check([ns('shop-a'), ns('shop-b')], [quota('shop-a', '4', '8Gi'), quota('shop-b', '4001m', '8Gi')]);
    expect(r.violations).toEqual(['requests.cpu: the namespaces hold 8001m, the budget is 8']);
  });

  it('catches an overspend hidden in status.used: a quota lowered below what its pods use frees nothing', () => {
    const shrunk = quota('shop-a', '1', '2Gi', {
      status: {
        hard: { 'requests.cpu': '1', 'requests.memory': '2Gi' },
        used: { 'requests.cpu': '3', 'requests.memory': '1Gi' },
      },
    });
    const r = check([ns('shop-a'), ns('shop-b')], [shrunk, quota('shop-b', '6', '8Gi')]);
    expect(r.violations).toEqual(['requests.cpu: the namespaces hold 9, the budget is 8']);
    expect(r.detail['shop-a']!['requests.cpu']).toBe('3 (spec 1, status.hard 1, used 3)');
  });

  it('catches an overspend in status.hard: the apiserver still enforces the old, larger limit', () => {
    const lagging = quota('shop-a', '1', '2Gi', {
      status: { hard: { 'requests.cpu': '5', 'requests.memory': '2Gi' }, used: {} },
    });
    expect(check([ns('shop-a'), ns('shop-b')], [lagging, quota('shop-b', '4', '8Gi')]).violations).toEqual([
      'requests.cpu: the namespaces hold 9, the budget is 8',
    ]);
  });

  it('counts the tightest of two quotas of a namespace, and the other when the tight one is gone', () => {
    const loose = quota('shop-a', '6', '12Gi', { name: 'extra' });
    const tight = quota('shop-a', '1', '2Gi');
    expect(check([ns('shop-a'), ns('shop-b')], [loose, tight, quota('shop-b', '6', '8Gi')]).violations).toEqual([]);
    expect(check([ns('shop-a'), ns('shop-b')], [loose, quota('shop-b', '6', '8Gi')]).violations).toEqual([
      'requests.cpu: the namespaces hold 12, the budget is 8',
      'requests.memory: the namespaces hold 20Gi, the budget is 16Gi',
    ]);
  });

  it('counts namespaceDefaults for a live namespace without a quota, nothing more for a terminating one', () => {
    const full = [quota('shop-a', '7', '8Gi')];
    expect(check([ns('shop-a'), ns('shop-new')], full).violations).toEqual([]);
    expect(check([ns('shop-a'), ns('shop-new'), ns('shop-new2')], [quota('shop-a', '7', '8Gi')]).violations).toEqual([
      'requests.cpu: the namespaces hold 9, the budget is 8',
    ]);
    expect(check([ns('shop-a'), ns('shop-new'), ns('shop-gone', { terminating: true })], full).violations).toEqual([]);
    // A terminating namespace still counts the quotas it has left.
    expect(
      check([ns('shop-a'), ns('shop-gone', { terminating: true })], [...full, quota('shop-gone', '2', '1Gi')])
        .violations,
    ).toEqual(['requests.cpu: the namespaces hold 9, the budget is 8']);
  });

  it("counts a namespace with the project's prefix but no label, and never another project's namespaces", () => {
    const quotas = [quota('shop-a', '6', '8Gi'), quota('shop-unlabelled', '3', '1Gi'), quota('web-a', '100', '100Gi')];
    expect(
      check([ns('shop-a'), ns('shop-unlabelled', { project: null }), ns('web-a', { project: 'web' })], quotas)
        .violations,
    ).toEqual(['requests.cpu: the namespaces hold 9, the budget is 8']);
    expect(check([ns('shop-a'), ns('web-a', { project: 'web' })], quotas).violations).toEqual([]);
  });

  it('ignores scoped quotas (they bound only some pods)', () => {
    const scoped = quota('shop-a', '50', '50Gi', { name: 'best-effort', spec: { scopes: ['BestEffort'] } });
    expect(check([ns('shop-a')], [quota('shop-a', '1', '1Gi'), scoped]).violations).toEqual([]);
  });

  it('catches more live namespaces than maxNamespaces; terminating ones are not live', () => {
    const four = ['shop-a', 'shop-b', 'shop-c', 'shop-d'];
    const quotas = four.map((n) => quota(n, '1', '1Gi'));
    expect(
      check(
        four.map((n) => ns(n)),
        quotas,
      ).violations,
    ).toEqual(['namespaces: 4 live (shop-a, shop-b, shop-c, shop-d), maxNamespaces is 3']);
    const r = check([...four.slice(0, 3).map((n) => ns(n)), ns('shop-d', { terminating: true })], quotas);
    expect(r.violations).toEqual([]);
    expect([r.liveNamespaces, r.namespaces]).toEqual([3, 4]);
  });

  it('names the quota whose quantity it cannot read', () => {
    expect(() => check([ns('shop-a')], [quota('shop-a', 'lots', '1Gi')])).toThrow(
      /ResourceQuota shop-a\/tenantgate-quota requests.cpu: "lots" is not a quantity/,
    );
  });
});

describe('the racing attempts', () => {
  const plan = {
    users: ['alice', 'bob'] as [string, string],
    anchors: ['shop-a0'],
    pool: ['shop-n0', 'shop-n1'],
    quotaNames: ['tenantgate-quota', 'extra'],
    values: { 'requests.cpu': ['1', '2'], 'requests.memory': ['1Gi'] },
  };

  it('are the same for the same seed and cover every kind of write', () => {
    const a = generateAttempts(plan, 500, 7);
    expect(generateAttempts(plan, 500, 7)).toEqual(a);
    expect(generateAttempts(plan, 500, 8)).not.toEqual(a);
    expect(new Set(a.map((x) => x.kind))).toEqual(
      new Set(['namespace-create', 'namespace-delete', 'quota-write', 'quota-write-pair', 'quota-delete']),
    );
    // Namespaces are created and deleted in the pool only: the anchors hold the pods.
    for (const x of a)
      if (x.kind === 'namespace-delete' || x.kind === 'namespace-create') expect(plan.pool).toContain(x.namespace);
  });

  it('are counted by rule id, fail-closed, or the apiserver answer', () => {
    const counts = emptyCounts();
    for (const [status, message] of [
      [201, ''],
      [
        403,
        'admission webhook "validate.tenantgate.io" denied the request: [Q1] ResourceQuota shop-a/q asks requests.cpu 3 …\n[Q2] …',
      ],
      [
        403,
        'admission webhook "validate.tenantgate.io" denied the request: [Q5] project shop: the headroom ledger was updated by another webhook replica first 23 times in a row and no update of this replica won within 2000 ms; nothing was reserved, retry the request',
      ],
      [
        500,
        'Internal error occurred: failed calling webhook "validate.tenantgate.io": failed to call webhook: Post "https://127.0.0.1:1/validate": EOF',
      ],
      [
        403,
        'admission webhook "mutate.tenantgate.io" denied the request: tenantgate is not ready: its watch caches have not synced yet; retry in a few seconds',
      ],
      [
        409,
        'Operation cannot be fulfilled on resourcequotas "q": the object has been modified; please apply your changes to the latest version and try again',
      ],
    ] as const)
      countOutcome(counts, classifyOutcome(status, message));
    expect(counts).toEqual({
      writes: 6,
      admitted: 1,
      refused: { Q1: 1 },
      failClosed: { Q5: 1, 'webhook-call': 1, 'not-ready': 1 },
      other: { 'conflict (stale resourceVersion)': 1 },
    });
  });
});
