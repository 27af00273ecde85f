/**
 * Cost by what Kubernetes counts, whatever its spelling (docs/budgets.md#cost, docs/adr/0067-budgets.md): a
 * ResourceQuota counts a pod's requests of cpu, memory, ephemeral-storage and hugepages-<size> under the
 * bare name and under its `requests.` form alike, so a budget, a quota or a price sheet in either
 * spelling prices the same quantity. A list naming both spellings is held to both limits by Kubernetes:
 * it costs the smaller, once, namespace by namespace. Checked together with tiers and with bursts, in C1
 * (quota admission, Project write), the budget view, the metrics and plan. Every expected amount is
 * computed here from the raw quota objects and price sheet text, not by the code under test.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fixedClock, getProcessClock, setProcessClock } from '../../src/clock.js';
import { TEST_NOW } from '../support/instant.js';
import { ConfigError, parseConfig, type TenantgateConfig } from '../../src/config/config.js';
import { projectSeries } from '../../src/controller/project-metrics.js';
import { planChange } from '../../src/plan/plan.js';
import type { LiveState } from '../../src/plan/types.js';
import { Quantity } from '../../src/quantity/quantity.js';
import { reviewProject, reviewResourceQuota, type ReviewContext } from '../../src/validate/admission.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { otherTiersScopeSelector } from '../../src/validate/tiers.js';
import type { Project, ProjectSpec, ResourceList, ResourceQuotaObject } from '../../src/validate/types.js';
import { budgetObject } from '../../src/view/api.js';
import { aNamespace, aProject, aQuota } from '../support/fixtures.js';

const HOURS = 500;
/** The price sheets as written: one in the `requests.` spelling, one in the bare spelling. */
const REQUESTS_SHEET = {
  'requests.cpu': { price: '0.05', per: '1' },
  'requests.memory': { price: '0.01', per: '1Gi' },
};
const BARE_SHEET = { cpu: { price: '0.05', per: '1' }, memory: { price: '0.01', per: '1Gi' } };
const configOf = (sheet: Record<string, { price: string; per: string }>): TenantgateConfig =>
  parseConfig(
    `pricing:\n  currency: USD\n  hoursPerMonth: ${HOURS}\n  perHour:\n${Object.entries(sheet)
      .map(([r, p]) => `    ${r}: {price: "${p.price}", per: "${p.per}"}`)
      .join('\n')}\n`,
  );

// --- the oracle ------------------------------------------------------------------------------------

/** Kubernetes' pod evaluator: these bare names count exactly what their `requests.` forms count. */
const REQUESTS_FORM: Record<string, string> = {
  cpu: 'requests.cpu',
  memory: 'requests.memory',
  'ephemeral-storage': 'requests.ephemeral-storage',
};
const counted = (name: string): string =>
  REQUESTS_FORM[name] ?? (name.startsWith('hugepages-') ? `requests.${name}` : name);
const value = (raw: string | number): number => Number(Quantity.parse(String(raw)).toDecimalString());

/** Dollars per unit and month, per counted name, from the sheet as written: price ÷ per × hours. */
function rates(sheet: Record<string, { price: string; per: string }>): Map<string, number> {
  return new Map(Object.entries(sheet).map(([r, p]) => [counted(r), (Number(p.price) / value(p.per)) * HOURS]));
}

/**
 * What one namespace's unscoped quotas let its pods request, per counted name: every limit that counts
 * it applies, so the smallest (tier quotas count the same pods again and are left out).
 */
function enforced(quotas: readonly ResourceQuotaObject[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const q of quotas) {
    if (q.spec?.scopeSelector || q.spec?.scopes?.length) continue;
    for (const [name, raw] of Object.entries(q.spec?.hard ?? {})) {
      const c = counted(name);
      const v = value(raw);
      if (!out.has(c) || v < out.get(c)!) out.set(c, v);
    }
  }
  return out;
}

/** Σ over namespaces of Σ over priced names of enforced × rate, in cents (the fixtures' amounts are whole cents). */
function oracleCents(
  byNamespace: ReadonlyArray<readonly ResourceQuotaObject[]>,
  sheet: Record<string, { price: string; per: string }>,
): number {
  const rate = rates(sheet);
  let total = 0;
  for (const quotas of byNamespace)
    for (const [c, v] of enforced(quotas)) total += Math.round(v * (rate.get(c) ?? 0) * 100);
  return total;
}

const dollars = (cents: number): string => `$${(cents / 100).toFixed(2)}`;
const plain = (cents: number): string => (cents / 100).toFixed(2);

const previous = getProcessClock();
beforeEach(() => setProcessClock(fixedClock(TEST_NOW))); // projectSeries (an edge) reads the process clock
afterEach(() => setProcessClock(previous));

// --- tiers × cost ------------------------------------------------------------------------------------

describe('tiers × cost: a budget and quotas spelled cpu / memory, priced in the requests. spelling', () => {
  const OWNER = { username: 'ben', groups: ['acme:ml-admins'] };
  const TIERS = ['production'];
  const spec = (monthly: string): Partial<ProjectSpec> => ({
    owners: [{ kind: 'Group', name: 'acme:ml-admins' }],
    quota: { hard: { cpu: '16', memory: '64Gi' } },
    tiers: { production: { quota: { hard: { cpu: '4' } } } },
    costBudget: { monthly },
  });
  const tierQuota = (ns: string, cpu: string) =>
    aQuota(
      ns,
      { cpu },
      {
        name: 'tenantgate-quota-production',
        spec: {
          scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In', values: ['production'] }] },
        },
      },
    );
  const otherTiers = (ns: string) =>
    aQuota(
      ns,
      { pods: '0' },
      { name: 'tenantgate-quota-other-tiers', spec: { scopeSelector: otherTiersScopeSelector(TIERS) } },
    );
  const quotasOf = (ns: string, hard: ResourceList) => [aQuota(ns, hard), tierQuota(ns, '2'), otherTiers(ns)];
  const A = { cpu: '6', memory: '16Gi' };
  const B = { cpu: '4', memory: '8Gi' };
  const cluster = (p: Project) =>
    MemorySnapshot.of({
      projects: [p],
      namespaces: ['ml-a', 'ml-b'].map((n) => aNamespace(n, { project: 'ml' })),
      quotas: [...quotasOf('ml-a', A), ...quotasOf('ml-b', B)],
    });
  const config = configOf(REQUESTS_SHEET);
  const ctx = (s: MemorySnapshot): ReviewContext => ({ at: TEST_NOW, config, snapshot: s, user: OWNER });
  const raise = (p: Project, hard: ResourceList) =>
    reviewResourceQuota(ctx(cluster(p)), 'UPDATE', 'ml-a', aQuota('ml-a', hard), aQuota('ml-a', A));

  it('C1 refuses a raise of cpu beyond the cost budget, with what it would cost and what is allocated', () => {
    const allocated = oracleCents([quotasOf('ml-a', A), quotasOf('ml-b', B)], REQUESTS_SHEET);
    const raised = { cpu: '8', memory: '16Gi' };
    const after = oracleCents([quotasOf('ml-a', raised), quotasOf('ml-b', B)], REQUESTS_SHEET);
    const monthly = plain(after - 2000); // $20 short of it
    const v = raise(aProject('ml', spec(monthly)), raised);
    expect(v.violations.map((x) => `[${x.rule}] ${x.message}`)).toEqual([
      `[C1] ResourceQuota ml-a/tenantgate-quota asks cpu 8: project ml's allocation would cost ${dollars(after)}/month, its cost budget is ${dollars(after - 2000)}/month, ${dollars(allocated)} is allocated`,
    ]);
  });

  it('a raise within it is admitted, to the cent: the tier quotas count the same pods and are not priced again', () => {
    const raised = { cpu: '7', memory: '16Gi' };
    const after = oracleCents([quotasOf('ml-a', raised), quotasOf('ml-b', B)], REQUESTS_SHEET);
    expect(raise(aProject('ml', spec(plain(after))), raised).violations).toEqual([]);
    expect(raise(aProject('ml', spec(plain(after - 1))), raised).violations.map((x) => x.rule)).toEqual(['C1']);
  });

  it('the budget view and the metrics show what the quotas cost', () => {
    const p = aProject('ml', spec('1000'));
    const s = cluster(p);
    const want = oracleCents([quotasOf('ml-a', A), quotasOf('ml-b', B)], REQUESTS_SHEET);
    const cost = budgetObject(s, p, 'ml-a', '', TEST_NOW, undefined, config.pricing).cost!;
    expect(cost.monthly).toBe(plain(want));
    expect(cost.headroom).toBe(plain(100_000 - want));
    const cpuOnly = oracleCents([[aQuota('ml-a', { cpu: A.cpu })], [aQuota('ml-b', { cpu: B.cpu })]], REQUESTS_SHEET);
    expect(cost.resources).toEqual({ 'requests.cpu': plain(cpuOnly), 'requests.memory': plain(want - cpuOnly) });
    expect(projectSeries(s, '', config.pricing).cost.map((x) => x.value)).toEqual([want / 100]);
  });
});

// --- bursts × cost -----------------------------------------------------------------------------------

describe('bursts × cost: a budget in the requests. spelling, priced by a sheet in the bare spelling', () => {
  const DURING = Date.parse('2030-12-02T00:00:00Z');
  const config = configOf(BARE_SHEET);
  const A = { 'requests.cpu': '10', 'requests.memory': '8Gi' };
  const ml = (monthly: string, a: ResourceList = A): Project =>
    aProject('ml', {
      owners: [{ kind: 'User', name: 'alice' }],
      quota: { hard: { 'requests.cpu': '8', 'requests.memory': '32Gi' } },
      bursts: [
        {
          name: 'peak',
          from: '2030-12-01T00:00:00Z',
          until: '2030-12-03T00:00:00Z',
          reason: 'the peak',
          quota: { hard: { 'requests.cpu': '4' } },
        },
      ],
      costBudget: { monthly },
      namespaces: [{ name: 'ml-a', quota: { hard: a } }, { name: 'ml-b' }],
    });
  const live = (p: Project): LiveState => ({
    cluster: 'local',
    projects: [p],
    namespaces: ['ml-a', 'ml-b'].map((n) => aNamespace(n, { project: 'ml' })),
    quotas: [aQuota('ml-a', A)],
  });
  const snapshot = (p: Project) =>
    MemorySnapshot.of({ projects: [p], namespaces: live(p).namespaces, quotas: live(p).quotas });

  it('the burst lets the quotas grow to 12 CPU (Q1), but C1 still bounds what they cost', () => {
    const allocated = oracleCents([[aQuota('ml-a', A)]], BARE_SHEET);
    const B = { 'requests.cpu': '2', 'requests.memory': '1Gi' };
    const after = oracleCents([[aQuota('ml-a', A)], [aQuota('ml-b', B)]], BARE_SHEET);
    const p = ml(plain(allocated + 1000)); // $10 of room
    const ctx: ReviewContext = {
      at: DURING,
      config,
      snapshot: snapshot(p),
      user: { username: 'alice', groups: [] },
    };
    const v = reviewResourceQuota(ctx, 'CREATE', 'ml-b', aQuota('ml-b', B), undefined);
    expect(v.violations.map((x) => `[${x.rule}] ${x.message}`)).toEqual([
      `[C1] ResourceQuota ml-b/tenantgate-quota asks requests.cpu 2, requests.memory 1Gi: project ml's allocation would cost ${dollars(after)}/month, its cost budget is ${dollars(allocated + 1000)}/month, ${dollars(allocated)} is allocated`,
    ]);
    // With the cost budget at what it would cost: admitted (12 CPU fit the budget raised by the burst).
    const fits = ml(plain(after));
    expect(
      reviewResourceQuota({ ...ctx, snapshot: snapshot(fits) }, 'CREATE', 'ml-b', aQuota('ml-b', B), undefined)
        .violations,
    ).toEqual([]);
  });

  it('plan, the budget view and the metrics price it', () => {
    setProcessClock(fixedClock(DURING));
    const before = oracleCents([[aQuota('ml-a', A)]], BARE_SHEET);
    const raised = { 'requests.cpu': '11', 'requests.memory': '8Gi' };
    const after = oracleCents([[aQuota('ml-a', raised)]], BARE_SHEET);
    const plan = planChange({
      at: DURING,
      config,
      base: { ref: 'main', projects: [ml('1000')] },
      after: [ml('1000', raised)],
      live: [live(ml('1000'))],
    });
    expect(plan.entries[0]!.cost).toEqual({
      currency: 'USD',
      before: plain(before),
      after: plain(after),
      change: plain(after - before),
      budget: '1000.00',
    });
    const p = ml('1000');
    expect(budgetObject(snapshot(p), p, 'ml-a', '', DURING, undefined, config.pricing).cost?.monthly).toBe(
      plain(before),
    );
    expect(projectSeries(snapshot(p), '', config.pricing).cost.map((x) => x.value)).toEqual([before / 100]);
  });
});

// --- both spellings ----------------------------------------------------------------------------------

describe('a list naming both spellings', () => {
  const config = configOf(REQUESTS_SHEET);
  const ADMIN = { username: 'admin', groups: ['system:masters'] };
  const project = (monthly: string): Project =>
    aProject('ml', {
      owners: [{ kind: 'User', name: 'alice' }],
      quota: { hard: { cpu: '32', 'requests.cpu': '32' } },
      costBudget: { monthly },
    });
  // ml-a limits cpu only, ml-b requests.cpu only, ml-c both (Kubernetes holds it to the smaller).
  const quotas = {
    'ml-a': [aQuota('ml-a', { cpu: '4' })],
    'ml-b': [aQuota('ml-b', { 'requests.cpu': '6' })],
    'ml-c': [aQuota('ml-c', { cpu: '2', 'requests.cpu': '3' })],
    'ml-d': [] as ResourceQuotaObject[],
  };
  const snapshot = (p: Project) =>
    MemorySnapshot.of({
      projects: [p],
      namespaces: Object.keys(quotas).map((n) => aNamespace(n, { project: 'ml' })),
      quotas: Object.values(quotas).flat(),
    });
  const allocated = oracleCents(Object.values(quotas), REQUESTS_SHEET);

  it('costs each namespace once, at the smaller limit: neither both nor a sum of either spelling', () => {
    // 4 + 6 + 2 CPUs at $25: $300. Summing both spellings would say $375; the smaller sum $150, the larger $225.
    expect(allocated).toBe(30_000);
    const p = project('1000');
    expect(budgetObject(snapshot(p), p, 'ml-a', '', TEST_NOW, undefined, config.pricing).cost).toMatchObject({
      monthly: plain(allocated),
      resources: { 'requests.cpu': plain(allocated) },
    });
    expect(projectSeries(snapshot(p), '', config.pricing).cost.map((x) => x.value)).toEqual([allocated / 100]);
  });

  it('C1 on a quota write counts the other namespaces the same way, and on a Project write too', () => {
    const asked = { cpu: '1', 'requests.cpu': '1' };
    const after = oracleCents([...Object.values(quotas), [aQuota('ml-d', asked)]], REQUESTS_SHEET);
    const ctx = (p: Project): ReviewContext => ({
      at: TEST_NOW,
      config,
      snapshot: snapshot(p),
      user: { username: 'alice', groups: [] },
    });
    const tight = project(plain(after - 1));
    expect(
      reviewResourceQuota(ctx(tight), 'CREATE', 'ml-d', aQuota('ml-d', asked), undefined).violations.map(
        (x) => x.message,
      ),
    ).toEqual([
      `ResourceQuota ml-d/tenantgate-quota asks cpu 1, requests.cpu 1: project ml's allocation would cost ${dollars(after)}/month, its cost budget is ${dollars(after - 1)}/month, ${dollars(allocated)} is allocated`,
    ]);
    expect(
      reviewResourceQuota(ctx(project(plain(after))), 'CREATE', 'ml-d', aQuota('ml-d', asked), undefined).violations,
    ).toEqual([]);
    const low = project(plain(allocated - 1));
    const v = reviewProject({ ...ctx(low), user: ADMIN }, 'UPDATE', low, project('1000'));
    expect(v.violations.filter((x) => x.rule === 'C1').map((x) => x.message)).toEqual([
      `project ml's allocation costs ${dollars(allocated)}/month (ml-a $100.00, ml-b $150.00, ml-c $50.00, ml-d $0.00), but its cost budget spec.costBudget.monthly is ${dollars(allocated - 1)}/month: $0.01 over`,
    ]);
  });

  it('ephemeral-storage and hugepages-<size> too: a quota in one spelling, the sheet in the other', () => {
    const sheet = {
      'ephemeral-storage': { price: '0.002', per: '1Gi' },
      'requests.hugepages-2Mi': { price: '0.04', per: '1Gi' },
    };
    const c = configOf(sheet);
    const hard = { 'requests.ephemeral-storage': '50Gi', 'hugepages-2Mi': '2Gi' };
    const p = aProject('edge', {
      owners: [{ kind: 'User', name: 'alice' }],
      quota: { hard: { 'requests.ephemeral-storage': '100Gi', 'hugepages-2Mi': '4Gi' } },
    });
    const s = MemorySnapshot.of({
      projects: [p],
      namespaces: [aNamespace('edge-a', { project: 'edge' })],
      quotas: [aQuota('edge-a', hard)],
    });
    const want = oracleCents([[aQuota('edge-a', hard)]], sheet);
    expect(want).toBe(5000 + 4000); // 50Gi × $1 + 2Gi × $20
    expect(budgetObject(s, p, 'edge-a', '', TEST_NOW, undefined, c.pricing).cost?.monthly).toBe(plain(want));
  });

  it('a price sheet naming both spellings of one quantity is refused', () => {
    const text = 'pricing: {currency: USD, perHour: {cpu: {price: "0.05"}, requests.cpu: {price: "0.04"}}}';
    expect(() => parseConfig(text)).toThrow(ConfigError);
    expect(() => parseConfig(text)).toThrow(
      "tenantgate.yaml: pricing.perHour.cpu and pricing.perHour.requests.cpu price the same quantity (a ResourceQuota counts a pod's cpu requests under both names); allowed: one of them",
    );
  });
});
