/**
 * The replica race's attempts (test/support/replica-race/): the generator and how answers are counted.
 * Its judge, test/support/budget-invariant.ts, has test/unit/budget-invariant.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { classifyOutcome, countOutcome, emptyCounts, generateAttempts } from '../support/replica-race/attempts.js';

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
