/**
 * Cost (docs/budgets.md#cost): the price sheet in tenantgate.yaml, exact monthly costs, money as people
 * read it, and C1 offline, in the webhook's rules and across replicas sharing the headroom ledger.
 */
import { TEST_NOW } from '../support/instant.js';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { discoverConfig } from '../../src/config/load.js';
import { ConfigError, DEFAULT_CONFIG, parseConfig, type TenantgateConfig } from '../../src/config/config.js';
import { Quantity } from '../../src/quantity/quantity.js';
import {
  reviewNamespace,
  reviewProject,
  reviewResourceQuota,
  type ReviewContext,
} from '../../src/validate/admission.js';
import {
  cmp,
  costByResource,
  decimal,
  formatDelta,
  formatMoney,
  moneyJson,
  monthlyCost,
  ofQuantity,
  priceSheet,
  projectCostJson,
  add,
} from '../../src/validate/cost.js';
import { validateDeclarations } from '../../src/validate/offline.js';
import { parseResources } from '../../src/validate/resource-lists.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Project, ProjectSpec, ResourceList } from '../../src/validate/types.js';
import type { UserInfo } from '../../src/validate/rules/tenancy.js';
import { HeadroomGuard } from '../../src/webhook/headroom/guard.js';
import { aNamespace, aProject, aQuota, aQuotaCreateRequest } from '../support/fixtures.js';
import { MemoryLedger } from '../support/memory-ledger.js';

const PRICING = `pricing:
  currency: USD
  hoursPerMonth: 500
  perHour:
    requests.cpu: {price: "0.0575", per: "1"}
    requests.memory: {price: "0.00671875", per: 1Gi}
`;
const CONFIG = parseConfig(PRICING);
const sheet = () => priceSheet(CONFIG.pricing!);

const errorOf = (text: string): string => {
  try {
    parseConfig(text);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`accepted: ${text}`);
};

describe('pricing in tenantgate.yaml', () => {
  it('is absent by default (no cost anywhere); per defaults to 1 and hoursPerMonth to 730', () => {
    expect(DEFAULT_CONFIG.pricing).toBeUndefined();
    expect(parseConfig('').pricing).toBeUndefined();
    expect(parseConfig('pricing: {currency: EUR, perHour: {requests.cpu: {price: "0.031"}}}').pricing).toEqual({
      currency: 'EUR',
      hoursPerMonth: 730,
      perHour: { 'requests.cpu': { price: '0.031', per: '1' } },
    });
  });

  it('fails closed on bad prices, naming the field, the value and what is allowed', () => {
    expect(errorOf('pricing: {currency: USD, perHour: {requests.cpu: {price: 0.031}}}')).toBe(
      'tenantgate.yaml: pricing.perHour.requests.cpu.price is 0.031; allowed: a string',
    );
    expect(errorOf('pricing: {currency: USD, perHour: {requests.cpu: {price: "-1"}}}')).toBe(
      'tenantgate.yaml: pricing.perHour.requests.cpu.price is "-1"; allowed: a decimal price as a quoted string, such as "0.031" (no sign, no exponent: prices are exact)',
    );
    expect(errorOf('pricing: {currency: USD, perHour: {requests.cpu: {price: "1e-3"}}}')).toContain(
      'pricing.perHour.requests.cpu.price is "1e-3"; allowed: a decimal price',
    );
    expect(errorOf('pricing: {currency: usd, perHour: {}}')).toBe(
      'tenantgate.yaml: pricing.currency is "usd"; allowed: an ISO 4217 currency code such as USD, EUR',
    );
    expect(errorOf('pricing: {perHour: {}}')).toBe(
      'tenantgate.yaml: pricing.currency is missing; allowed: an ISO 4217 currency code such as USD, EUR',
    );
    expect(errorOf('pricing: {currency: USD, perHour: {requests.cpu: {price: "1", per: "0"}}}')).toBe(
      'tenantgate.yaml: pricing.perHour.requests.cpu.per is "0"; allowed: a quantity above 0 such as 1, 1Gi (the price is per that much)',
    );
    expect(errorOf('pricing: {currency: USD, perHour: {requests.cpu: {price: "1", per: 0}}}')).toBe(
      'tenantgate.yaml: pricing.perHour.requests.cpu.per is 0; allowed: a number above 0',
    );
    expect(errorOf('pricing: {currency: USD, perHour: {requests.cpu: {price: "1", per: "1 Gi"}}}')).toBe(
      'tenantgate.yaml: pricing.perHour.requests.cpu.per is "1 Gi"; allowed: a Kubernetes quantity such as 500m, 2, 1.5Gi',
    );
    expect(errorOf('pricing: {currency: USD, perHour: {requests.cpu@batch: {price: "1"}}}')).toBe(
      'tenantgate.yaml: pricing.perHour.requests.cpu@batch is not an allowed key; allowed: a resource name without "@" such as requests.cpu (a tier key counts the same pods as its resource)',
    );
    expect(errorOf('pricing: {currency: USD, perHour: {requests.cpu: {cost: "1"}}}')).toContain(
      'pricing.perHour.requests.cpu.cost is not a known key; allowed: price, per',
    );
    expect(errorOf('pricing: {currency: USD, hoursPerMonth: 0, perHour: {}}')).toBe(
      'tenantgate.yaml: pricing.hoursPerMonth is 0; allowed: a number above 0, at most 744',
    );
    expect(errorOf('pricing: {currency: USD, hourly: {}}')).toContain(
      'pricing.hourly is not a known key; allowed: currency, hoursPerMonth, perHour',
    );
  });
});

describe('monthly cost, exactly', () => {
  it('prices a quantity by its exact value: 500m, 512Mi and 0.1 + 0.2 have no rounding error', () => {
    const s = sheet();
    // 1 CPU: 0.0575 × 500 = 28.75 a month; 1Gi: 0.00671875 × 500 = 3.359375
    expect(monthlyCost(s, parseResources({ 'requests.cpu': '1' }))).toEqual(decimal('28.75'));
    expect(monthlyCost(s, parseResources({ 'requests.cpu': '500m' }))).toEqual(decimal('14.375'));
    expect(monthlyCost(s, parseResources({ 'requests.memory': '512Mi' }))).toEqual(decimal('1.6796875'));
    expect(monthlyCost(s, parseResources({ 'requests.memory': '1073741824' }))).toEqual(decimal('3.359375'));
    const tenth = monthlyCost(s, parseResources({ 'requests.cpu': '0.1' }));
    const fifth = monthlyCost(s, parseResources({ 'requests.cpu': '0.2' }));
    expect(cmp(add(tenth, fifth), monthlyCost(s, parseResources({ 'requests.cpu': '300m' })))).toBe(0);
    // 1G is not 1Gi: 10^9 bytes cost 10^9 / 2^30 of a Gi
    expect(
      cmp(
        monthlyCost(s, parseResources({ 'requests.memory': '1G' })),
        monthlyCost(s, parseResources({ 'requests.memory': '1Gi' })),
      ),
    ).toBe(-1);
    expect(ofQuantity(Quantity.parse('1G'))).toEqual(decimal('1000000000'));
  });

  it('counts unscoped, priced keys only: tier keys count the same pods again, unpriced keys cost nothing', () => {
    const resources = parseResources({
      'requests.cpu': '4',
      'requests.cpu@production': '4',
      pods: '100',
      'requests.memory': '2Gi',
    });
    expect([...costByResource(sheet(), resources).keys()].sort()).toEqual(['requests.cpu', 'requests.memory']);
    expect(moneyJson(monthlyCost(sheet(), resources))).toBe('121.72'); // 4 × 28.75 + 2 × 3.359375 = 121.71875, shown rounded up
  });

  it('compares where a float would not: 0.1 + 0.2 of a 0.3 budget fits exactly', () => {
    const c = parseConfig('pricing: {currency: USD, hoursPerMonth: 1, perHour: {requests.cpu: {price: "1"}}}');
    const s = priceSheet(c.pricing!);
    expect(0.1 + 0.2 <= 0.3).toBe(false);
    expect(
      cmp(
        add(
          monthlyCost(s, parseResources({ 'requests.cpu': '0.1' })),
          monthlyCost(s, parseResources({ 'requests.cpu': '0.2' })),
        ),
        decimal('0.3'),
      ),
    ).toBe(0);
  });

  it('shows money with the currency, 2 decimals and thousands separators, rounded up to the cent', () => {
    expect(formatMoney(decimal('1580'), 'USD')).toBe('$1,580.00');
    expect(formatMoney(decimal('1234567.891'), 'USD')).toBe('$1,234,567.90');
    expect(formatMoney(decimal('0.001'), 'EUR')).toBe('€0.01');
    expect(formatMoney(decimal('0'), 'GBP')).toBe('£0.00');
    expect(formatMoney(decimal('999.5'), 'CHF')).toBe('CHF 999.50');
    expect(formatMoney(decimal('-230'), 'USD')).toBe('-$230.00');
    expect(formatDelta(decimal('1350'), decimal('1580'), 'USD')).toBe('+$230.00');
    expect(formatDelta(decimal('1580'), decimal('1350'), 'USD')).toBe('-$230.00');
    expect(formatDelta(decimal('1'), decimal('1'), 'USD')).toBe('+$0.00');
    expect(moneyJson(decimal('1234567.891'))).toBe('1234567.90');
  });

  it('gives the JSON of a project cost: per resource, the total, the budget and what is left', () => {
    const p = ml({});
    expect(projectCostJson(sheet(), p, [parseResources({ 'requests.cpu': '32', 'requests.memory': '128Gi' })])).toEqual(
      {
        currency: 'USD',
        monthly: '1350.00',
        budget: '1500.00',
        headroom: '150.00',
        resources: { 'requests.cpu': '920.00', 'requests.memory': '430.00' },
      },
    );
  });
});

// Project ml: budget 80 CPU / 320Gi, cost budget $1,500; ml-serving and ml-train hold 16 CPU / 64Gi each: $1,350.
function ml(spec: Partial<ProjectSpec>): Project {
  return aProject(
    'ml',
    {
      owners: [{ kind: 'User', name: 'alice' }],
      quota: { hard: { 'requests.cpu': '80', 'requests.memory': '320Gi' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', 'requests.memory': '8Gi' } } },
      costBudget: { monthly: '1500' },
      ...spec,
    },
    { uid: 'uid-ml' },
  );
}

function cluster(project = ml({})): MemorySnapshot {
  return MemorySnapshot.of({
    projects: [project],
    namespaces: ['ml-serving', 'ml-train'].map((n) => aNamespace(n, { project: 'ml' })),
    quotas: ['ml-serving', 'ml-train'].map((n) => aQuota(n, { 'requests.cpu': '16', 'requests.memory': '64Gi' })),
  });
}

const alice: UserInfo = { username: 'alice', groups: [] };
const ctx = (s: MemorySnapshot, config: TenantgateConfig = CONFIG, user = alice): ReviewContext => ({
  at: TEST_NOW,
  config,
  snapshot: s,
  user,
});
const raise = (s: MemorySnapshot, hard: ResourceList, config: TenantgateConfig = CONFIG) => {
  const old = aQuota('ml-serving', { 'requests.cpu': '16', 'requests.memory': '64Gi' });
  return reviewResourceQuota(ctx(s, config), 'UPDATE', 'ml-serving', aQuota('ml-serving', hard), old);
};

describe('C1 in the webhook rules', () => {
  it('refuses a quota raise beyond the cost budget: what it would cost, the budget, what is allocated', () => {
    const v = raise(cluster(), { 'requests.cpu': '24', 'requests.memory': '64Gi' });
    expect(v.violations).toEqual([
      {
        rule: 'C1',
        path: ['spec', 'hard'],
        message:
          "ResourceQuota ml-serving/tenantgate-quota asks requests.cpu 24: project ml's allocation would cost $1,580.00/month, its cost budget is $1,500.00/month, $1,350.00 is allocated",
      },
    ]);
  });

  it('admits a raise within the cost budget, to the cent, and any change that costs no more', () => {
    // +5 CPU: $143.75 → $1,493.75
    expect(raise(cluster(), { 'requests.cpu': '21', 'requests.memory': '64Gi' }).violations).toEqual([]);
    // A cost exactly at the budget fits; a cent less does not.
    const exact = cluster(ml({ costBudget: { monthly: '1493.75' } }));
    expect(raise(exact, { 'requests.cpu': '21', 'requests.memory': '64Gi' }).violations).toEqual([]);
    const byACent = cluster(ml({ costBudget: { monthly: '1493.74' } }));
    expect(
      raise(byACent, { 'requests.cpu': '21', 'requests.memory': '64Gi' }).violations.map((x) => x.message),
    ).toEqual([
      "ResourceQuota ml-serving/tenantgate-quota asks requests.cpu 21: project ml's allocation would cost $1,493.75/month, its cost budget is $1,493.74/month, $1,350.00 is allocated",
    ]);
    // Over the cost budget already (prices rose): shrinking or moving room that costs no more is admitted.
    const over = cluster(ml({ costBudget: { monthly: '1000' } }));
    expect(raise(over, { 'requests.cpu': '8', 'requests.memory': '64Gi' }).violations).toEqual([]);
  });

  it('names several grown resources and a namespace created with namespaceDefaults', () => {
    const v = raise(cluster(ml({ costBudget: { monthly: '1400' } })), {
      'requests.cpu': '17',
      'requests.memory': '80Gi',
    });
    expect(v.violations.map((x) => x.message)).toEqual([
      "ResourceQuota ml-serving/tenantgate-quota asks requests.cpu 17, requests.memory 80Gi: project ml's allocation would cost $1,432.50/month, its cost budget is $1,400.00/month, $1,350.00 is allocated",
    ]);
    const ns = reviewNamespace(
      ctx(cluster(ml({ costBudget: { monthly: '1400' } }))),
      'CREATE',
      { metadata: { name: 'ml-extra', labels: { 'tenantgate.io/project': 'ml', 'tenantgate.io/tenant': 'acme' } } },
      undefined,
    );
    expect(ns.violations.filter((x) => x.rule === 'C1').map((x) => x.message)).toEqual([
      "Namespace ml-extra asks requests.cpu 2, requests.memory 8Gi (namespaceDefaults): project ml's allocation would cost $1,434.38/month, its cost budget is $1,400.00/month, $1,350.00 is allocated",
    ]);
  });

  it('says which cluster is counted', () => {
    const config = { ...CONFIG, clusterName: 'prod-eu' };
    expect(
      raise(cluster(), { 'requests.cpu': '24', 'requests.memory': '64Gi' }, config).violations[0]!.message,
    ).toContain("project ml's allocation on cluster prod-eu would cost $1,580.00/month");
  });

  it('refuses growth in a project with a costBudget when tenantgate.yaml has no pricing, instead of passing silently', () => {
    const v = raise(cluster(), { 'requests.cpu': '17', 'requests.memory': '64Gi' }, DEFAULT_CONFIG);
    expect(v.violations.map((x) => `[${x.rule}] ${x.message}`)).toEqual([
      `[C1] ResourceQuota ml-serving/tenantgate-quota asks requests.cpu 17: project ml has spec.costBudget.monthly "1500" but this cluster's tenantgate.yaml has no pricing, so the cost of its allocation cannot be checked; allowed: pricing: {currency, hoursPerMonth, perHour} in tenantgate.yaml (docs/budgets.md#cost)`,
    ]);
    // A project without a costBudget is unaffected, priced or not.
    expect(
      raise(cluster(ml({ costBudget: undefined })), { 'requests.cpu': '24', 'requests.memory': '64Gi' }, DEFAULT_CONFIG)
        .violations,
    ).toEqual([]);
    expect(
      raise(cluster(ml({ costBudget: undefined })), { 'requests.cpu': '24', 'requests.memory': '64Gi' }).violations,
    ).toEqual([]);
  });

  it('refuses a Project write whose cost budget is below what its namespaces already cost, or that has no price sheet to be checked with', () => {
    const admin = { username: 'admin', groups: ['system:masters'] };
    const lowered = ml({ costBudget: { monthly: '1300' } });
    const v = reviewProject(ctx(cluster(), CONFIG, admin), 'UPDATE', lowered, ml({}));
    expect(v.violations.map((x) => `[${x.rule}] ${x.message}`)).toEqual([
      "[C1] project ml's allocation costs $1,350.00/month (ml-serving $675.00, ml-train $675.00), but its cost budget spec.costBudget.monthly is $1,300.00/month: $50.00 over",
    ]);
    const unpriced = reviewProject(ctx(cluster(), DEFAULT_CONFIG, admin), 'UPDATE', ml({}), ml({}));
    expect(unpriced.violations.map((x) => x.rule)).toEqual(['C1']);
  });
});

describe('C1 offline (tenantgate validate)', () => {
  const declared = (monthly: string) =>
    ml({
      costBudget: { monthly },
      namespaces: [
        { name: 'ml-serving', quota: { hard: { 'requests.cpu': '24', 'requests.memory': '64Gi' } } },
        { name: 'ml-train' },
      ],
    });

  it('prices the declared allocation (namespaceDefaults included) against the cost budget', () => {
    // 24 CPU + 64Gi = $905.00; defaults 2 CPU + 8Gi = $84.375
    expect(validateDeclarations([declared('989.38')], CONFIG, TEST_NOW)).toEqual([]);
    const v = validateDeclarations([declared('989.37')], CONFIG, TEST_NOW);
    expect(v).toEqual([
      {
        rule: 'C1',
        path: ['spec', 'costBudget', 'monthly'],
        document: 0,
        message:
          "project ml's allocation costs $989.38/month (ml-serving $905.00, ml-train $84.38 (defaults)), but its cost budget spec.costBudget.monthly is $989.37/month: $0.01 over",
      },
    ]);
  });

  it('is an error, not a silent pass, when tenantgate.yaml has no pricing', () => {
    const v = validateDeclarations([declared('1500')], DEFAULT_CONFIG, TEST_NOW);
    expect(v.map((x) => `[${x.rule}] ${x.message}`)).toEqual([
      '[C1] Project ml: spec.costBudget.monthly is "1500", but tenantgate.yaml has no pricing, so its cost cannot be checked; allowed: a costBudget only with a price sheet (pricing: {currency, hoursPerMonth, perHour} in tenantgate.yaml (docs/budgets.md#cost)), or no spec.costBudget',
    ]);
  });

  it('refuses an amount with more than 2 decimals or a sign (S1)', () => {
    for (const monthly of ['1500.001', '-5', '1e3']) {
      const v = validateDeclarations([declared(monthly)], CONFIG, TEST_NOW);
      expect(v.map((x) => x.rule)).toContain('S1');
      expect(v.find((x) => x.rule === 'S1')!.message).toContain('spec.costBudget.monthly');
    }
  });
});

describe('C1 across replicas sharing the headroom ledger', () => {
  // Q1 has room for 100 CPU; the cost budget for 10 (1 CPU: $7.30 a month, budget $73).
  const pricing = parseConfig('pricing: {currency: USD, hoursPerMonth: 730, perHour: {requests.cpu: {price: "0.01"}}}');
  const NAMESPACES = Array.from({ length: 20 }, (_, i) => `race-n${i}`);
  const snapshot = () =>
    MemorySnapshot.of({
      projects: [
        aProject(
          'race',
          {
            owners: [{ kind: 'User', name: 'alice' }],
            quota: { hard: { 'requests.cpu': '100' } },
            costBudget: { monthly: '73' },
          },
          { uid: 'u' },
        ),
      ],
      namespaces: NAMESPACES.map((n) => aNamespace(n, { project: 'race' })),
    });

  it('two replicas with separate caches admit exactly the 10 CPU the cost budget pays for; without the ledger they overspend', async () => {
    for (const shared of [true, false]) {
      const ledger = new MemoryLedger();
      const replicas = [0, 1].map(() => ({
        s: snapshot(),
        guard: new HeadroomGuard({ ttlMs: 60_000, ...(shared ? { ledger } : {}) }),
      }));
      const verdicts = await Promise.all(
        NAMESPACES.map((ns, i) =>
          replicas[i % 2]!.guard.decide(ctx(replicas[i % 2]!.s, pricing), aQuotaCreateRequest(ns)),
        ),
      );
      const admitted = verdicts.filter((v) => v.violations.length === 0).length;
      const refused = verdicts.flatMap((v) => v.violations.map((x) => x.rule));
      if (shared) {
        expect(admitted).toBe(10);
        expect(new Set(refused)).toEqual(new Set(['C1']));
      } else expect(admitted).toBe(20);
    }
  });
});

describe('tenantgate validate without --config finds the price sheet (discoverConfig)', () => {
  it('./tenantgate.yaml first, else the one in or next to the first argument that has one, else none', () => {
    const root = mkdtempSync(join(tmpdir(), 'tg-discover-'));
    try {
      mkdirSync(join(root, 'repo', 'projects'), { recursive: true });
      writeFileSync(join(root, 'repo', 'projects', 'ml.yaml'), '');
      expect(discoverConfig([join(root, 'repo', 'projects', 'ml.yaml'), join(root, 'repo')], root)).toBeUndefined();
      writeFileSync(join(root, 'repo', 'tenantgate.yaml'), PRICING);
      expect(discoverConfig([join(root, 'repo')], root)).toBe(join(root, 'repo', 'tenantgate.yaml'));
      expect(discoverConfig([join(root, 'repo', 'projects', 'ml.yaml')], root)).toBeUndefined();
      writeFileSync(join(root, 'repo', 'projects', 'tenantgate.yaml'), PRICING);
      expect(discoverConfig([join(root, 'nothing-here.yaml'), join(root, 'repo', 'projects', 'ml.yaml')], root)).toBe(
        join(root, 'repo', 'projects', 'tenantgate.yaml'),
      );
      // where pre-commit runs: the repository's root
      expect(discoverConfig(['projects/ml.yaml'], join(root, 'repo'))).toBe(join(root, 'repo', 'tenantgate.yaml'));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
