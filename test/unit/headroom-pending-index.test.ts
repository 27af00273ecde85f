/**
 * HeadroomGuard keeps its pending allocations indexed by project and, without a ledger, decides
 * without a promise chain: what a project sees pending is exactly its own admitted, unexpired,
 * not yet observed namespaces, and concurrent decisions still never overspend.
 */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { ReviewContext } from '../../src/validate/admission.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { HeadroomGuard } from '../../src/webhook/headroom/guard.js';
import type { AdmissionRequest } from '../../src/webhook/review.js';
import { aQuotaCreateRequest } from '../support/fixtures.js';

const PROJECTS = ['alpha', 'beta'];
const nsOf = (p: string, i: number) => `${p}-n${i}`;

function snapshot(): MemorySnapshot {
  return MemorySnapshot.of({
    projects: PROJECTS.map((p) => ({
      metadata: { name: p, uid: p },
      spec: { tenant: 'acme', owners: [{ kind: 'User', name: 'alice' }], quota: { hard: { 'requests.cpu': '3' } } },
    })),
    namespaces: PROJECTS.flatMap((p) =>
      [0, 1, 2, 3, 4].map((i) => ({
        metadata: { name: nsOf(p, i), labels: { 'tenantgate.io/project': p, 'tenantgate.io/tenant': 'acme' } },
      })),
    ),
  });
}

const ctx = (s: MemorySnapshot): ReviewContext => ({
  at: TEST_NOW,
  config: DEFAULT_CONFIG,
  snapshot: s,
  user: { username: 'alice', groups: [] },
});
const createQuota = (ns: string): AdmissionRequest => aQuotaCreateRequest(ns);

describe('HeadroomGuard pending index', () => {
  it('per project: its own admitted namespaces only, forgotten when observed or expired; no overspend per project', async () => {
    let now = 1_000;
    const s = snapshot();
    const guard = new HeadroomGuard({ ttlMs: 10_000, now: () => now });
    const requests = PROJECTS.flatMap((p) => [0, 1, 2, 3, 4].map((i) => createQuota(nsOf(p, i))));
    const verdicts = await Promise.all(requests.map((r) => guard.decide(ctx(s), r)));
    // 3 CPU per project, 1 per quota: three of five admitted in each project.
    for (const p of PROJECTS) {
      const admitted = requests
        .filter((r, k) => r.namespace!.startsWith(`${p}-`) && verdicts[k]!.violations.length === 0)
        .map((r) => r.namespace!);
      expect(admitted).toHaveLength(3);
      expect([...guard.pending.namespaces(p)].sort()).toEqual(admitted.sort());
    }
    expect(guard.pendingCount).toBe(6);
    // The cache shows alpha's first quota: that entry goes, the others stay.
    const first = [...guard.pending.namespaces('alpha')][0]!;
    s.upsertQuota({ metadata: { name: 'q', namespace: first }, spec: { hard: { 'requests.cpu': '1' } } });
    guard.observe({ at: TEST_NOW, snapshot: s, config: DEFAULT_CONFIG }, first);
    expect([...guard.pending.namespaces('alpha')]).not.toContain(first);
    expect([...guard.pending.namespaces('alpha')]).toHaveLength(2);
    expect([...guard.pending.namespaces('beta')]).toHaveLength(3);
    // Past the TTL nothing is pending any more.
    now += 10_001;
    expect([...guard.pending.namespaces('alpha')]).toEqual([]);
    expect([...guard.pending.namespaces('beta')]).toEqual([]);
    expect(guard.pendingCount).toBe(0);
  });
});
