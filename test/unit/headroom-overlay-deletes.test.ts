/**
 * Quota deletes judged against recorded writes the cache does not show yet (docs/design.md, "Headroom
 * under concurrency"). A recorded write that may not have landed counts its quota as possibly absent
 * (its versions include null: a create, or a delete). Seen in the fleet race (bench fleet): a
 * namespace whose two quotas both had such writes looked uncovered to the replica, so deleting one of
 * them passed Q3 ("nothing was covered before") and Q1 (an uncovered namespace counts
 * namespaceDefaults), while in truth the other quota stayed and let the namespace grow to its limit.
 */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { ReviewContext } from '../../src/validate/admission.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { ResourceQuotaObject } from '../../src/validate/types.js';
import type { UserInfo } from '../../src/validate/rules/tenancy.js';
import { HeadroomGuard } from '../../src/webhook/headroom/guard.js';
import type { AdmissionRequest } from '../../src/webhook/review.js';
import { MemoryLedger } from '../support/memory-ledger.js';

const CPU = 'requests.cpu';
const labels = { 'tenantgate.io/project': 'race', 'tenantgate.io/tenant': 'acme' };
const ADMIN: UserInfo = { username: 'root', groups: ['system:masters'] };
const ALICE: UserInfo = { username: 'alice', groups: [] };

/** Budget 1500m CPU, namespaceDefaults 500m; race-b and race-c hold 500m each, race-a is the one under test. */
function cache(quotasOfA: ResourceQuotaObject[]): MemorySnapshot {
  return MemorySnapshot.of({
    projects: [
      {
        metadata: { name: 'race', uid: 'u' },
        spec: {
          tenant: 'acme',
          owners: [{ kind: 'User', name: 'alice' }],
          quota: { hard: { [CPU]: '1500m' } },
          namespaceDefaults: { quota: { hard: { [CPU]: '500m' } } },
        },
      },
    ],
    namespaces: ['race-a', 'race-b', 'race-c'].map((name) => ({ metadata: { name, labels } })),
    quotas: [
      quota('race-b', 'tenantgate-quota', '500m', '3'),
      quota('race-c', 'tenantgate-quota', '500m', '4'),
      ...quotasOfA,
    ],
  });
}

function quota(namespace: string, name: string, cpu: string, resourceVersion?: string): ResourceQuotaObject {
  return {
    metadata: { name, namespace, ...(resourceVersion ? { resourceVersion } : {}) },
    spec: { hard: { [CPU]: cpu } },
  };
}

const ctx = (snapshot: MemorySnapshot, user: UserInfo = ALICE): ReviewContext => ({
  at: TEST_NOW,
  config: DEFAULT_CONFIG,
  snapshot,
  user,
});

function write(
  operation: 'CREATE' | 'UPDATE' | 'DELETE',
  object: ResourceQuotaObject | undefined,
  oldObject: ResourceQuotaObject | undefined,
  user: UserInfo = ALICE,
): AdmissionRequest {
  const q = (object ?? oldObject)!;
  return {
    uid: `${operation}-${q.metadata.name}`,
    kind: { group: '', version: 'v1', kind: 'ResourceQuota' },
    operation,
    namespace: q.metadata.namespace!,
    name: q.metadata.name!,
    userInfo: user,
    ...(object ? { object: object as unknown as Record<string, unknown> } : {}),
    ...(oldObject ? { oldObject: oldObject as unknown as Record<string, unknown> } : {}),
  };
}

/**
 * race-a gets tenantgate-quota (500m) and `extra` (1500m), both created through the guard (their
 * versions include null), then both are changed once more while the cache still shows them as created:
 * extra 1500m → 1400m, then tenantgate-quota 500m → 400m. In truth race-a holds min(tenantgate-quota,
 * extra) ≤ 500m, and `extra` stays at 1400m or 1500m whatever happens to tenantgate-quota.
 */
async function raceAWithUnseenWrites(
  guard: HeadroomGuard,
): Promise<{ seen: MemorySnapshot; tq: ResourceQuotaObject; extra: ResourceQuotaObject }> {
  const admitted = async (snapshot: MemorySnapshot, request: AdmissionRequest) =>
    expect((await guard.decide(ctx(snapshot), request)).violations).toEqual([]);
  await admitted(cache([]), write('CREATE', quota('race-a', 'tenantgate-quota', '500m'), undefined));
  const tq = quota('race-a', 'tenantgate-quota', '500m', '10');
  await admitted(cache([tq]), write('CREATE', quota('race-a', 'extra', '1500m'), undefined));
  const extra = quota('race-a', 'extra', '1500m', '11');
  const seen = cache([tq, extra]);
  await admitted(seen, write('UPDATE', quota('race-a', 'extra', '1400m', '11'), extra));
  await admitted(seen, write('UPDATE', quota('race-a', 'tenantgate-quota', '400m', '10'), tq));
  return { seen, tq, extra };
}

describe("HeadroomGuard: quota deletes while both of a namespace's quotas have unseen recorded writes", () => {
  for (const ledger of [true, false]) {
    it(`a tenant deletes neither quota: each is (or may be) the only coverage, and the other may let the namespace grow (${ledger ? 'ledger' : 'one process'})`, async () => {
      const guard = new HeadroomGuard({ ttlMs: 30_000, ...(ledger ? { ledger: new MemoryLedger() } : {}) });
      const { seen, tq, extra } = await raceAWithUnseenWrites(guard);
      // Deleting tenantgate-quota leaves `extra` (1400m or 1500m): race-a would grow from ≤ 500m to
      // 1500m, 2500m of 1500m in all. Before the fix: admitted (race-a looked uncovered, counted 500m).
      // `extra`'s create may not have landed either, so tenantgate-quota may be the only coverage (Q3).
      const first = await guard.decide(ctx(seen), write('DELETE', undefined, tq));
      expect(first.violations.map((v) => v.rule)).toEqual(['Q3']);
      expect(first.violations[0]!.message).toMatch(
        /ResourceQuota race-a\/tenantgate-quota provides the only coverage of requests\.cpu in namespace race-a/,
      );
      // Deleting `extra` instead: tenantgate-quota's create may not have landed, so `extra` may be the only coverage (Q3).
      const second = await guard.decide(ctx(seen), write('DELETE', undefined, extra));
      expect(second.violations.map((v) => v.rule)).toEqual(['Q3']);
    });
  }

  it('a privileged delete (not bound by Q3) still counts the other quota at the most it may hold (Q1)', async () => {
    const guard = new HeadroomGuard({ ttlMs: 30_000, ledger: new MemoryLedger() });
    const { seen, tq } = await raceAWithUnseenWrites(guard);
    const verdict = await guard.decide(ctx(seen, ADMIN), write('DELETE', undefined, tq, ADMIN));
    expect(verdict.violations.map((v) => v.rule)).toEqual(['Q1']);
    expect(verdict.violations[0]!.message).toMatch(
      /ResourceQuota race-a\/tenantgate-quota asks requests\.cpu 1500m, project race has 1500m/,
    );
  });

  it("with room for the other quota's limit, the privileged delete is admitted and reserves that limit", async () => {
    const ledger = new MemoryLedger();
    const guard = new HeadroomGuard({ ttlMs: 30_000, ledger });
    const { tq, extra } = await raceAWithUnseenWrites(guard);
    // race-b and race-c are gone in this cache: the whole budget is room for race-a.
    const roomy = MemorySnapshot.of({
      projects: [...cache([]).projects()],
      namespaces: [{ metadata: { name: 'race-a', labels } }],
      quotas: [tq, extra],
    });
    const verdict = await guard.decide(ctx(roomy, ADMIN), write('DELETE', undefined, tq, ADMIN));
    expect(verdict.violations).toEqual([]);
    const reserved = (await ledger.read('race')).entries
      .filter((e) => e.namespace === 'race-a' && e.quota === 'tenantgate-quota')
      .map((e) => e.allocation[CPU]);
    expect(reserved).toEqual(['1500m']);
  });
});
