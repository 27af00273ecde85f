/**
 * Priority tiers (docs/budgets.md#priority-tiers, ADR 0067): tier keys, the budget and defaults with
 * tiers, which quotas count under which keys, Q1/Q2/Q3 with tier keys offline and in admission, the
 * rendered quotas and the controller's plan.
 */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import { aNamespace, aProject, aQuota, aUser, reviewContext } from '../support/fixtures.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { planDefaultQuotas } from '../../src/controller/defaults.js';
import { headroomText } from '../../src/kubectl/format.js';
import { planChange } from '../../src/plan/plan.js';
import { renderProjectsLazily } from '../../src/render/render.js';
import { projectBudget, projectBudgetJson } from '../../src/validate/budget.js';
import { reviewNamespace, reviewResourceQuota } from '../../src/validate/admission.js';
import { validateDeclarations } from '../../src/validate/offline.js';
import { budgetList, budgetOf, defaultsOf } from '../../src/validate/budget/layers.js';
import { clusterShares } from '../../src/validate/shares.js';
import { effectiveQuota, quotaHold, quotaUsed } from '../../src/validate/quota-hold.js';
import { formatResources, parseResources } from '../../src/validate/resource-lists.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import {
  OTHER_TIERS,
  OTHER_TIERS_PODS,
  otherTiersScopeSelector,
  quotaTier,
  splitTierKey,
  tierKey,
  tierQuotasOf,
  withTierBudgets,
} from '../../src/validate/tiers.js';
import type { Project, ProjectSpec, ResourceQuotaObject } from '../../src/validate/types.js';

const OWNER = aUser('ben', ['acme:ml-admins']);
const ADMIN = aUser('admin', ['system:masters']);

function ml(extra: Partial<ProjectSpec> = {}): Project {
  return aProject('ml', {
    owners: [{ kind: 'Group', name: 'acme:ml-admins' }],
    quota: { hard: { 'requests.cpu': '80', pods: '100' } },
    tiers: {
      production: { quota: { hard: { 'requests.cpu': '20' } } },
      batch: { quota: { hard: { 'requests.cpu': '60' } } },
      'best-effort': {},
    },
    namespaceDefaults: {
      quota: { hard: { 'requests.cpu': '4', pods: '20' } },
      tiers: {
        production: { quota: { hard: { 'requests.cpu': '2' } } },
        batch: { quota: { hard: { 'requests.cpu': '4' } } },
      },
    },
    ...extra,
  });
}

const tierQuota = (namespace: string, tier: string, cpu: string, used?: string): ResourceQuotaObject => ({
  ...aQuota(
    namespace,
    { 'requests.cpu': cpu },
    {
      name: `tenantgate-quota-${tier}`,
      spec: { scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In', values: [tier] }] } },
    },
  ),
  ...(used ? { status: { hard: { 'requests.cpu': cpu }, used: { 'requests.cpu': used } } } : {}),
});
const otherTiers = (namespace: string, pods = '0'): ResourceQuotaObject =>
  aQuota(
    namespace,
    { pods },
    {
      name: 'tenantgate-quota-other-tiers',
      spec: { scopeSelector: otherTiersScopeSelector(['batch', 'best-effort', 'production']) },
    },
  );

/** A namespace of ml with every quota the controller gives it (production `prod` CPUs). */
function fullNamespace(name: string, prod = '2'): ResourceQuotaObject[] {
  return [
    aQuota(name, { 'requests.cpu': '4', pods: '20' }),
    tierQuota(name, 'production', prod),
    tierQuota(name, 'batch', '4'),
    otherTiers(name),
  ];
}

describe('tier keys', () => {
  it('build and split', () => {
    expect(tierKey('requests.cpu', 'production')).toBe('requests.cpu@production');
    expect(splitTierKey('requests.cpu@production')).toEqual({ resource: 'requests.cpu', tier: 'production' });
    expect(splitTierKey('requests.nvidia.com/gpu')).toEqual({ resource: 'requests.nvidia.com/gpu' });
    expect(splitTierKey(OTHER_TIERS_PODS)).toEqual({ resource: 'pods', tier: OTHER_TIERS });
  });
});

describe('the budget with tiers', () => {
  it("adds each tier's quota under tier keys and pods@* = 0; a tier without quota adds nothing", () => {
    expect(formatResources(budgetOf(ml(), '', TEST_NOW))).toEqual({
      'requests.cpu': '80',
      pods: '100',
      'requests.cpu@batch': '60',
      'requests.cpu@production': '20',
      'pods@*': '0',
    });
  });

  it('is the same object for the same spec (its parse is cached), and the declared list itself without tiers', () => {
    const p = ml();
    expect(budgetList(p, '', TEST_NOW)).toBe(budgetList(p, '', TEST_NOW));
    expect(budgetOf(p, '', TEST_NOW)).toBe(budgetOf(p, '', TEST_NOW));
    const plain = aProject('plain', { quota: { hard: { pods: '1' } } });
    expect(withTierBudgets(plain, plain.spec.quota!.hard!)).toBe(plain.spec.quota!.hard);
    const none = aProject('none', { tiers: { production: {} } });
    expect(budgetList(none, '', TEST_NOW)).toBe(budgetList(none, '', TEST_NOW));
  });

  it('defaults: namespaceDefaults.tiers under tier keys and pods@* = 0', () => {
    expect(formatResources(defaultsOf(ml()))).toEqual({
      'requests.cpu': '4',
      pods: '20',
      'requests.cpu@production': '2',
      'requests.cpu@batch': '4',
      'pods@*': '0',
    });
    const plain = aProject('plain', { namespaceDefaults: { quota: { hard: { pods: '1' } } } });
    expect(defaultsOf(plain)).toBe(parseResources(plain.spec.namespaceDefaults!.quota!.hard));
  });
});

describe('which quotas count under which keys', () => {
  it('classifies scopes: unscoped, one PriorityClass, the other tiers, anything else', () => {
    expect(quotaTier(aQuota('ml-a', { pods: '1' }))).toBe('');
    expect(quotaTier(tierQuota('ml-a', 'production', '1'))).toBe('production');
    expect(quotaTier(otherTiers('ml-a'))).toBe(OTHER_TIERS);
    expect(
      quotaTier(
        aQuota(
          'ml-a',
          { pods: '0' },
          {
            spec: {
              scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'NotIn', values: ['a'] }] },
            },
          },
        ),
      ),
    ).toBe(OTHER_TIERS);
    expect(
      quotaTier(
        aQuota(
          'ml-a',
          { pods: '1' },
          {
            spec: {
              scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In', values: ['a', 'b'] }] },
            },
          },
        ),
      ),
    ).toBeUndefined();
    expect(
      quotaTier(
        aQuota(
          'ml-a',
          { pods: '1' },
          { spec: { scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'Exists' }] } } },
        ),
      ),
    ).toBeUndefined();
    expect(quotaTier(aQuota('ml-a', { pods: '1' }, { scopes: ['BestEffort'] }))).toBeUndefined();
  });

  it('effectiveQuota, quotaHold and quotaUsed carry tier quotas under tier keys, other scoped quotas not at all', () => {
    const quotas = [
      ...fullNamespace('ml-a', '5'),
      { ...tierQuota('ml-a', 'production', '3', '4'), metadata: { name: 'tight', namespace: 'ml-a' } },
      aQuota('ml-a', { pods: '1' }, { name: 'be', scopes: ['BestEffort'] }),
    ];
    expect(formatResources(effectiveQuota(quotas))).toEqual({
      'requests.cpu': '4',
      pods: '20',
      'requests.cpu@production': '3',
      'requests.cpu@batch': '4',
      'pods@*': '0',
    });
    // What is in use above the tightest production quota counts (lowering a quota evicts nothing).
    expect(formatResources(quotaHold(quotas))['requests.cpu@production']).toBe('4');
    expect(formatResources(quotaUsed(quotas))).toEqual({ 'requests.cpu@production': '4' });
  });

  it('keeps the fast path: one unscoped quota is its cached parse', () => {
    const only = aQuota('ml-a', { pods: '1' });
    expect(effectiveQuota([only])).toBe(parseResources(only.spec!.hard));
    expect(quotaHold([only])).toBe(parseResources(only.spec!.hard));
  });
});

describe('offline: Q1 per tier, Q2 for tier keys, tier names', () => {
  it('Q1: the namespaces of a tier over its budget, at the tier path', () => {
    const violations = validateDeclarations(
      [
        ml({
          namespaces: [
            { name: 'ml-a', tiers: { production: { quota: { hard: { 'requests.cpu': '15' } } } } },
            { name: 'ml-b', tiers: { production: { quota: { hard: { 'requests.cpu': '6' } } } } },
          ],
        }),
      ],
      DEFAULT_CONFIG,
      TEST_NOW,
    );
    expect(violations.map((v) => [v.rule, v.path])).toEqual([
      ['Q1', ['spec', 'tiers', 'production', 'quota', 'hard', 'requests.cpu']],
    ]);
    // "(defaults)": their plain quota and batch tier come from namespaceDefaults.
    expect(violations[0]!.message).toBe(
      'project ml: namespaces allocate requests.cpu@production 21 but the budget is 20 (ml-a 15 (defaults), ml-b 6 (defaults)): 1 over',
    );
  });

  it('namespaceDefaults.tiers count for namespaces without their own tiers', () => {
    const spec = {
      namespaces: Array.from({ length: 11 }, (_, i) => ({ name: `ml-n${i}` })),
      quota: { hard: { 'requests.cpu': '80', pods: '300' } },
    };
    const violations = validateDeclarations([ml(spec)], DEFAULT_CONFIG, TEST_NOW);
    expect(violations.map((v) => v.message)).toEqual([
      'project ml: namespaces allocate requests.cpu@production 22 but the budget is 20 (ml-n0 2 (defaults), ml-n1 2 (defaults), ml-n2 2 (defaults), ml-n3 2 (defaults), ml-n4 2 (defaults), ml-n5 2 (defaults), ml-n6 2 (defaults), ml-n7 2 (defaults), ml-n8 2 (defaults), ml-n9 2 (defaults), ml-n10 2 (defaults)): 2 over',
    ]);
  });

  it('Q2: a tier budget without a namespace quota for it names the scoped quota it needs', () => {
    const p = ml({
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '4', pods: '20' } } },
      namespaces: [{ name: 'ml-a' }],
    });
    const violations = validateDeclarations([p], DEFAULT_CONFIG, TEST_NOW);
    expect(violations.map((v) => v.rule)).toEqual(['Q2']);
    expect(violations[0]!.message).toContain('leaves requests.cpu@batch, requests.cpu@production without a quota');
    expect(violations[0]!.message).toContain(
      'a ResourceQuota scoped PriorityClass In [production] covering requests.cpu',
    );
  });

  it('a tier budget of a resource the project does not budget is fine', () => {
    expect(
      validateDeclarations(
        [
          ml({
            tiers: { production: { quota: { hard: { 'requests.memory': '8Gi' } } } },
            namespaceDefaults: {
              quota: { hard: { 'requests.cpu': '4', pods: '20' } },
              tiers: { production: { quota: { hard: { 'requests.memory': '1Gi' } } } },
            },
            namespaces: [{ name: 'ml-a' }],
          }),
        ],
        DEFAULT_CONFIG,
        TEST_NOW,
      ),
    ).toEqual([]);
  });

  it('S1: a tier is a PriorityClass name, and namespace tiers are declared tiers', () => {
    const p = ml({ namespaces: [{ name: 'ml-a', tiers: { urgent: { quota: { hard: { 'requests.cpu': '1' } } } } }] });
    p.spec.tiers = { ...p.spec.tiers, Prod_1: {} };
    const s1 = validateDeclarations([p], DEFAULT_CONFIG, TEST_NOW).filter((v) => v.rule === 'S1');
    expect(s1.map((v) => v.path)).toEqual([
      ['spec', 'tiers', 'Prod_1'],
      ['spec', 'namespaces', 0, 'tiers', 'urgent'],
    ]);
    expect(s1[1]!.message).toBe(
      'Project ml: spec.namespaces.0.tiers.urgent names no tier of spec.tiers (declared: Prod_1, batch, best-effort, production)',
    );
  });
});

describe('admission with tier keys', () => {
  const snapshot = () =>
    MemorySnapshot.of({
      projects: [ml()],
      namespaces: [aNamespace('ml-a', { project: 'ml' }), aNamespace('ml-b', { project: 'ml' })],
      quotas: [...fullNamespace('ml-a', '12'), ...fullNamespace('ml-b', '6')],
    });

  it('Q1: raising a production quota beyond the tier budget says how much fits', () => {
    const v = reviewResourceQuota(
      reviewContext(OWNER, snapshot()),
      'UPDATE',
      'ml-a',
      tierQuota('ml-a', 'production', '15'),
      tierQuota('ml-a', 'production', '12'),
    );
    expect(v.violations.map((x) => x.rule)).toEqual(['Q1']);
    expect(v.violations[0]!.message).toBe(
      'ResourceQuota ml-a/tenantgate-quota-production asks requests.cpu@production 15, project ml has 20 of which 6 are allocated to other namespaces: at most 14 fits',
    );
    expect(
      reviewResourceQuota(
        reviewContext(OWNER, snapshot()),
        'UPDATE',
        'ml-a',
        tierQuota('ml-a', 'production', '14'),
        tierQuota('ml-a', 'production', '12'),
      ).violations,
    ).toEqual([]);
  });

  it('Q1: the other-tiers quota cannot be opened (pods@* has a budget of 0)', () => {
    const v = reviewResourceQuota(
      reviewContext(OWNER, snapshot()),
      'UPDATE',
      'ml-a',
      otherTiers('ml-a', '3'),
      otherTiers('ml-a'),
    );
    expect(v.violations.map((x) => x.rule)).toEqual(['Q1']);
    expect(v.violations[0]!.message).toContain('asks pods@* 3');
  });

  it('Q3: the only production quota of a namespace is not deleted by its owner; an admin may', () => {
    const v = reviewResourceQuota(
      reviewContext(OWNER, snapshot()),
      'DELETE',
      'ml-a',
      undefined,
      tierQuota('ml-a', 'production', '12'),
    );
    expect(v.violations.map((x) => x.rule)).toEqual(['Q3']);
    expect(v.violations[0]!.message).toContain(
      'provides the only coverage of requests.cpu@production in namespace ml-a',
    );
    expect(v.allocation?.quotaWrite?.removesCoverage).toBe(true);
    expect(
      reviewResourceQuota(
        reviewContext(ADMIN, snapshot()),
        'DELETE',
        'ml-a',
        undefined,
        tierQuota('ml-a', 'production', '12'),
      ).violations,
    ).toEqual([]);
  });

  it('Q2: a tier quota updated to leave its tier uncovered is refused, naming the scoped quota it needs', () => {
    const emptied = {
      ...tierQuota('ml-a', 'production', '1'),
      spec: { ...tierQuota('ml-a', 'production', '1').spec, hard: { pods: '5' } },
    };
    const v = reviewResourceQuota(
      reviewContext(OWNER, snapshot()),
      'UPDATE',
      'ml-a',
      emptied,
      tierQuota('ml-a', 'production', '12'),
    );
    expect(v.violations.map((x) => x.rule)).toEqual(['Q2']);
    expect(v.violations[0]!.message).toContain('leaves requests.cpu@production without a quota');
    expect(v.violations[0]!.message).toContain(
      'a ResourceQuota scoped PriorityClass In [production] covering requests.cpu',
    );
  });

  it('Q2: an other-tiers quota may leave out only declared tiers (an admin may write any)', () => {
    const wider = aQuota(
      'ml-a',
      { pods: '0' },
      {
        name: 'tenantgate-quota-other-tiers',
        spec: { scopeSelector: otherTiersScopeSelector(['batch', 'best-effort', 'production', 'urgent']) },
      },
    );
    const v = reviewResourceQuota(reviewContext(OWNER, snapshot()), 'UPDATE', 'ml-a', wider, otherTiers('ml-a'));
    expect(v.violations.map((x) => x.rule)).toEqual(['Q2']);
    expect(v.violations[0]!.message).toBe(
      'ResourceQuota ml-a/tenantgate-quota-other-tiers is scoped PriorityClass NotIn [batch, best-effort, production, urgent], which leaves pods of urgent without a quota, but project ml budgets pods@* = 0 (pods of a PriorityClass that is no tier): the other-tiers quota may leave out only the declared tiers (batch, best-effort, production)',
    );
    const narrower = aQuota(
      'ml-a',
      { pods: '0' },
      { name: 'tenantgate-quota-other-tiers', spec: { scopeSelector: otherTiersScopeSelector(['production']) } },
    );
    expect(
      reviewResourceQuota(reviewContext(OWNER, snapshot()), 'UPDATE', 'ml-a', narrower, otherTiers('ml-a')).violations,
    ).toEqual([]);
    expect(
      reviewResourceQuota(reviewContext(ADMIN, snapshot()), 'UPDATE', 'ml-a', wider, otherTiers('ml-a')).violations,
    ).toEqual([]);
  });

  it('a new namespace counts with its tier defaults: [Q1] when the tier has no room for them', () => {
    const full = MemorySnapshot.of({
      projects: [ml()],
      namespaces: [aNamespace('ml-a', { project: 'ml' })],
      quotas: fullNamespace('ml-a', '19'),
    });
    const v = reviewNamespace(reviewContext(OWNER, full), 'CREATE', aNamespace('ml-c', { project: 'ml' }), undefined);
    expect(v.violations.map((x) => x.rule)).toEqual(['Q1']);
    expect(v.violations[0]!.message).toContain('asks requests.cpu@production 2 (namespaceDefaults)');
  });

  it('Q2 for a new namespace: without namespaceDefaults.tiers the platform team is told what to declare', () => {
    const p = ml({ namespaceDefaults: { quota: { hard: { 'requests.cpu': '4', pods: '20' } } } });
    const v = reviewNamespace(
      reviewContext(OWNER, MemorySnapshot.of({ projects: [p] })),
      'CREATE',
      aNamespace('ml-c', { project: 'ml' }),
      undefined,
    );
    const q2 = v.violations.find((x) => x.rule === 'Q2');
    expect(q2?.message).toBe(
      'Namespace ml-c would have no quota for requests.cpu@batch, requests.cpu@production: project ml budgets them, but spec.namespaceDefaults.tiers does not cover them; the platform team must declare spec.namespaceDefaults.tiers.batch.quota.hard with requests.cpu and spec.namespaceDefaults.tiers.production.quota.hard with requests.cpu in Project ml',
    );
  });
});

describe('render and the controller', () => {
  it('render: the default quota, one quota per tier with a quota scoped PriorityClass In [tier], and the other-tiers quota', () => {
    const p = ml({
      namespaces: [{ name: 'ml-a', tiers: { production: { quota: { hard: { 'requests.cpu': '10' } } } } }],
    });
    const quotas = [...renderProjectsLazily([p], DEFAULT_CONFIG, { at: TEST_NOW, cluster: '' })].filter(
      (o) => o.kind === 'ResourceQuota',
    );
    expect(quotas.map((q) => [q.metadata.name, q.spec])).toEqual([
      ['tenantgate-quota', { hard: { pods: '20', 'requests.cpu': '4' } }],
      [
        'tenantgate-quota-batch',
        {
          hard: { 'requests.cpu': '4' },
          scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In', values: ['batch'] }] },
        },
      ],
      [
        'tenantgate-quota-other-tiers',
        {
          hard: { pods: '0' },
          scopeSelector: {
            matchExpressions: [
              { scopeName: 'PriorityClass', operator: 'Exists' },
              { scopeName: 'PriorityClass', operator: 'NotIn', values: ['batch', 'best-effort', 'production'] },
            ],
          },
        },
      ],
      [
        'tenantgate-quota-production',
        {
          hard: { 'requests.cpu': '10' },
          scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In', values: ['production'] }] },
        },
      ],
    ]);
    expect(tierQuotasOf(aProject('plain'), undefined)).toEqual([]);
  });

  it('the controller plans the tier quotas a namespace lacks, blocks one that does not fit, and puts back the other-tiers quota', () => {
    const snap = MemorySnapshot.of({
      projects: [ml()],
      namespaces: [aNamespace('ml-a', { project: 'ml' }), aNamespace('ml-b', { project: 'ml' })],
      quotas: [
        ...fullNamespace('ml-a', '19'),
        aQuota('ml-b', { 'requests.cpu': '4', pods: '20' }),
        tierQuota('ml-b', 'batch', '4'),
      ],
    });
    const plan = planDefaultQuotas(ml(), snap, '', TEST_NOW);
    expect(plan.create.map((c) => [c.namespace, c.name, c.hard])).toEqual([
      ['ml-b', 'tenantgate-quota-other-tiers', { pods: '0' }],
    ]);
    expect(plan.blocked.get('ml-b')).toBe(
      'quota tenantgate-quota-production does not fit the project budget: requests.cpu@production 2 asked, 1 of 20 left',
    );
    const fine = planDefaultQuotas(
      ml(),
      MemorySnapshot.of({ projects: [ml()], namespaces: [aNamespace('ml-c', { project: 'ml' })] }),
      '',
      TEST_NOW,
    );
    expect(fine.create.map((c) => c.name ?? 'tenantgate-quota')).toEqual([
      'tenantgate-quota-batch',
      'tenantgate-quota-other-tiers',
      'tenantgate-quota-production',
      'tenantgate-quota',
    ]);
    expect(formatResources(clusterShares(snap, ml(), '', TEST_NOW)[0]!.resources)['requests.cpu@production']).toBe(
      '19',
    );
    expect(plan.replace).toEqual([]);
  });

  it('the controller repairs an other-tiers quota whose scope no longer leaves out exactly the tiers', () => {
    const old = {
      ...aQuota(
        'ml-a',
        { pods: '0' },
        { name: 'tenantgate-quota-other-tiers', spec: { scopeSelector: otherTiersScopeSelector(['production']) } },
      ),
      metadata: { name: 'tenantgate-quota-other-tiers', namespace: 'ml-a', resourceVersion: '7' },
    };
    const quotas = [...fullNamespace('ml-a').filter((q) => q.metadata.name !== 'tenantgate-quota-other-tiers'), old];
    const plan = planDefaultQuotas(
      ml(),
      MemorySnapshot.of({ projects: [ml()], namespaces: [aNamespace('ml-a', { project: 'ml' })], quotas }),
      '',
      TEST_NOW,
    );
    expect(plan.create).toEqual([]);
    expect(plan.replace).toEqual([
      {
        ...old,
        spec: { hard: { pods: '0' }, scopeSelector: otherTiersScopeSelector(['batch', 'best-effort', 'production']) },
      },
    ]);
  });
});

describe('the budget as status, view, plan and the plugin read it', () => {
  it('lists each tier key after its resource, with budget, allocated, used and headroom', () => {
    const snap = MemorySnapshot.of({
      projects: [ml()],
      namespaces: [aNamespace('ml-a', { project: 'ml' }), aNamespace('ml-b', { project: 'ml' })],
      quotas: [
        ...fullNamespace('ml-a', '12').map((q) =>
          q.metadata.name === 'tenantgate-quota-production' ? tierQuota('ml-a', 'production', '12', '7') : q,
        ),
        ...fullNamespace('ml-b', '6'),
      ],
    });
    const json = projectBudgetJson(projectBudget(snap, ml(), '', TEST_NOW));
    expect(json.resources.map((r) => [r.resource, r.budget, r.allocated, r.used, r.headroom])).toEqual([
      ['pods', '100', '40', '0', '60'],
      ['pods@*', '0', '0', '0', '0'],
      ['requests.cpu', '80', '8', '0', '72'],
      ['requests.cpu@batch', '60', '8', '0', '52'],
      ['requests.cpu@production', '20', '18', '7', '2'],
    ]);
    const text = headroomText(json, 100);
    expect(text).toMatch(/requests\.cpu@production .* 18\/20 +7 +2/);
  });
});

describe('plan with tiers', () => {
  it('adding tiers to a live project: the tier keys before → after, and [Q1] when the declared tier quotas do not fit the tier', () => {
    const base = aProject('ml', {
      quota: { hard: { 'requests.cpu': '80', pods: '100' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '4', pods: '20' } } },
      namespaces: [{ name: 'ml-a' }, { name: 'ml-b' }],
    });
    const after = ml({
      namespaces: [
        { name: 'ml-a', tiers: { production: { quota: { hard: { 'requests.cpu': '19' } } } } },
        { name: 'ml-b' },
      ],
    });
    const live = {
      cluster: 'local',
      projects: [base],
      namespaces: [aNamespace('ml-a', { project: 'ml' }), aNamespace('ml-b', { project: 'ml' })],
      quotas: [
        aQuota('ml-a', { 'requests.cpu': '4', pods: '20' }),
        aQuota('ml-b', { 'requests.cpu': '4', pods: '20' }),
      ],
    };
    const plan = planChange({
      at: TEST_NOW,
      config: DEFAULT_CONFIG,
      base: { ref: 'main', projects: [base] },
      after: [after],
      live: [live],
    });
    const e = plan.entries.find((x) => x.project === 'ml')!;
    expect(e.resources.find((r) => r.resource === 'requests.cpu@production')).toMatchObject({
      budgetAfter: '20',
      allocatedAfter: '21',
    });
    expect(e.resources.find((r) => r.resource === 'pods')).toMatchObject({
      allocatedBefore: '40',
      allocatedAfter: '40',
    });
    expect(e.findings.map((f) => [f.rule, f.object])).toEqual([['Q1', 'Project ml']]);
    expect(e.findings[0]!.message).toContain('requests.cpu@production 21 but the budget is 20');
  });
});
