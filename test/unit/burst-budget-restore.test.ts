/**
 * After its bursts end a project comes back within its budget (src/controller/burst-budget-restore.ts
 * through planBurstQuotas, which the controller writes): quotas lowered, never below use nor below what
 * git declares, the controller's own raises first, then the most room; what cannot be lowered yet is
 * reported (the BurstEnded condition). Judged by an oracle computed here from the raw quotas: the final
 * allocation is the budget when the floors allow it, else the sum of the floors.
 */
import { describe, expect, it } from 'vitest';
import { ANNOTATION_BURST_RAISED, burstCondition, planBurstQuotas } from '../../src/controller/burst-quotas.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Burst, Project, ResourceQuotaObject } from '../../src/validate/types.js';
import { aNamespace, aProject, aQuota } from '../support/fixtures.js';

const T = (s: string) => Date.parse(s);
const DURING = T('2026-12-02T00:00:00Z');
const AFTER = T('2026-12-04T00:00:00Z');
const CPU = 'requests.cpu';
const wide: Burst = {
  name: 'black-friday',
  from: '2026-12-01T00:00:00Z',
  until: '2026-12-03T00:00:00Z',
  reason: 'traffic',
  quota: { hard: { [CPU]: '6' } },
};

/** Parses plain numbers only (the tests use whole CPUs). */
const n = (v: string | number | undefined) => Number(v ?? 0);

interface Ns {
  name: string;
  hard: number;
  used: number;
  /** The quota git declares for it (spec.namespaces[].quota), if any. */
  declared?: number;
  raised?: boolean;
}

function world(budget: number, namespaces: Ns[], bursts: Burst[] = [wide]) {
  const project: Project = aProject('shop', {
    quota: { hard: { [CPU]: String(budget) } },
    namespaceDefaults: { quota: { hard: { [CPU]: '1' } } },
    namespaces: namespaces
      .filter((x) => x.declared !== undefined)
      .map((x) => ({ name: x.name, quota: { hard: { [CPU]: String(x.declared) } } })),
    bursts,
  });
  const quotas: ResourceQuotaObject[] = namespaces.map((x) => {
    const quota = aQuota(x.name, { [CPU]: String(x.hard) }, { used: { [CPU]: String(x.used) } });
    return x.raised
      ? { ...quota, metadata: { ...quota.metadata, annotations: { [ANNOTATION_BURST_RAISED]: CPU } } }
      : quota;
  });
  const snapshot = MemorySnapshot.of({
    projects: [project],
    namespaces: namespaces.map((x) => aNamespace(x.name, { project: 'shop' })),
    quotas,
  });
  return { project, snapshot, quotas };
}

/** The quotas after the plan's writes, from the raw objects: namespace → hard. */
function afterWrites(quotas: ResourceQuotaObject[], plan: ReturnType<typeof planBurstQuotas>): Map<string, number> {
  const out = new Map(quotas.map((q) => [q.metadata.namespace!, n(q.spec?.hard?.[CPU])]));
  for (const w of plan.writes) out.set(w.namespace, n(w.desired.spec?.hard?.[CPU]));
  return out;
}

describe('a project-wide burst ends: the project comes back within its budget', () => {
  it('the namespaces with the most room above their floor give back first, each named with what it gives back', () => {
    // Budget 10 (+6 during the burst): a 8 (uses 3), b 6 (uses 5), c declared 2 in git (uses 1): 16 allocated.
    const { project, snapshot, quotas } = world(10, [
      { name: 'shop-a', hard: 8, used: 3 },
      { name: 'shop-b', hard: 6, used: 5 },
      { name: 'shop-c', hard: 2, used: 1, declared: 2 },
    ]);
    expect(planBurstQuotas(project, snapshot, '', DURING).writes).toEqual([]);
    const plan = planBurstQuotas(project, snapshot, '', AFTER);
    expect(Object.fromEntries(afterWrites(quotas, plan))).toEqual({ 'shop-a': 3, 'shop-b': 5, 'shop-c': 2 });
    expect(plan.writes.map((w) => [w.namespace, w.changes])).toEqual([
      ['shop-a', ["requests.cpu 8 → 3 (for the project's budget)"]],
      ['shop-b', ["requests.cpu 6 → 5 (for the project's budget)"]],
    ]);
    expect(plan.stillOver).toEqual([]);
    expect(burstCondition(project, snapshot, '', AFTER)?.reason).toBe('Lowering');
  });

  it('what is used cannot be lowered: the rest is reported as still over budget, naming who uses it', () => {
    const { project, snapshot, quotas } = world(10, [
      { name: 'shop-a', hard: 8, used: 7 },
      { name: 'shop-b', hard: 6, used: 6 },
    ]);
    const plan = planBurstQuotas(project, snapshot, '', AFTER);
    expect(Object.fromEntries(afterWrites(quotas, plan))).toEqual({ 'shop-a': 7, 'shop-b': 6 });
    expect(plan.stillOver.map((s) => [s.resource, s.allocated.toString(), s.budget.toString(), s.heldBy])).toEqual([
      [CPU, '13', '10', ['shop-a uses 7', 'shop-b uses 6']],
    ]);
    const condition = burstCondition(project, snapshot, '', AFTER);
    expect(condition).toMatchObject({ status: 'True', reason: 'OverBudget' });
    expect(condition?.message).toContain('requests.cpu: 13 allocated, budget 10 (shop-a uses 7, shop-b uses 6)');
  });

  it('nothing while a burst is active, before any burst, or for a burst of another cluster', () => {
    const ns = [{ name: 'shop-a', hard: 14, used: 1 }];
    const before = world(10, ns);
    expect(planBurstQuotas(before.project, before.snapshot, '', T('2026-11-30T00:00:00Z')).writes).toEqual([]);
    const elsewhere = world(10, ns, [{ ...wide, cluster: 'us' }]);
    expect(planBurstQuotas(elsewhere.project, elsewhere.snapshot, 'eu', AFTER).writes).toEqual([]);
    const later = world(10, ns, [
      wide,
      { ...wide, name: 'cyber-monday', from: '2026-12-03T12:00:00Z', until: '2026-12-05T00:00:00Z' },
    ]);
    expect(planBurstQuotas(later.project, later.snapshot, '', AFTER).writes).toEqual([]);
  });
});

describe('a namespace burst whose burst-raised annotation the tenant removed', () => {
  const nsBurst: Burst = { ...wide, namespace: 'shop-a', quota: { hard: { [CPU]: '8' } } };

  it('still lowered after the burst (not below its use), and the over-budget state stays reported', () => {
    // Budget 10: shop-a declared 4 (raised to 12 by the burst; the annotation removed, 7 in use), shop-b 6 (all used).
    const { project, snapshot, quotas } = world(
      10,
      [
        { name: 'shop-a', hard: 12, used: 7, declared: 4 },
        { name: 'shop-b', hard: 6, used: 6 },
      ],
      [nsBurst],
    );
    const plan = planBurstQuotas(project, snapshot, '', AFTER);
    expect(Object.fromEntries(afterWrites(quotas, plan))).toEqual({ 'shop-a': 7, 'shop-b': 6 });
    expect(plan.stillOver.map((s) => s.allocated.toString())).toEqual(['13']);
    expect(burstCondition(project, snapshot, '', AFTER)?.reason).toBe('OverBudget');
  });

  it("the controller's own raise gives back before a tenant's room", () => {
    const { project, snapshot, quotas } = world(
      10,
      [
        { name: 'shop-a', hard: 6, used: 1, raised: true },
        { name: 'shop-b', hard: 8, used: 1 },
      ],
      [wide],
    );
    const plan = planBurstQuotas(project, snapshot, '', AFTER);
    // 14 allocated, 4 to give back: shop-a (raised by the controller) goes back to its declaration
    // (namespaceDefaults, 1) first, though shop-b has more room; that is enough, shop-b keeps its 8.
    expect(Object.fromEntries(afterWrites(quotas, plan))).toEqual({ 'shop-a': 1, 'shop-b': 8 });
  });
});

describe('the oracle over random projects', () => {
  it('the allocation ends at the budget when the floors allow, else at the floors; no quota below its floor or raised', () => {
    let seed = 7;
    const rnd = (k: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % k;
    };
    for (let run = 0; run < 500; run++) {
      const namespaces: Ns[] = Array.from({ length: 1 + rnd(5) }, (_, i) => {
        const hard = rnd(10);
        const used = rnd(hard + 3); // may be above hard (usage counted)
        const declared = rnd(3) === 0 ? rnd(hard + 1) : undefined;
        // (No burst-raised marks: a marked quota goes back to its declaration whatever the budget, burst-quotas.test.ts.)
        return { name: `shop-${i}`, hard, used, ...(declared !== undefined ? { declared } : {}) };
      });
      const budget = rnd(30);
      const { project, snapshot, quotas } = world(budget, namespaces);
      const plan = planBurstQuotas(project, snapshot, '', AFTER);
      const after = afterWrites(quotas, plan);
      const allocation = (hards: (x: Ns) => number) => namespaces.reduce((s, x) => s + Math.max(hards(x), x.used), 0);
      // The declaration: git's quota, else namespaceDefaults (1).
      const floor = (x: Ns) => Math.min(x.hard, Math.max(x.used, x.declared ?? 1));
      const before = allocation((x) => x.hard);
      const expected = before <= budget ? before : Math.max(budget, allocation(floor));
      const context = JSON.stringify({ budget, namespaces });
      expect(
        allocation((x) => after.get(x.name)!),
        context,
      ).toBe(expected);
      for (const x of namespaces) {
        expect(after.get(x.name)!, context).toBeLessThanOrEqual(x.hard);
        expect(after.get(x.name)!, context).toBeGreaterThanOrEqual(floor(x));
      }
      expect(plan.stillOver.length > 0, context).toBe(expected > budget);
    }
  });
});
