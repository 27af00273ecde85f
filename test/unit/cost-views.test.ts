/**
 * The cost of a project where people read it (docs/budgets.md#cost): `tenantgate plan`'s cost line and
 * its C1 finding, the budget view's Budget, OwnedProject and table row, `kubectl tenantgate headroom`,
 * and the controller's tenantgate_project_cost_* series. Without pricing, none of them shows a cost.
 */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, parseConfig } from '../../src/config/config.js';
import { projectSeries } from '../../src/controller/project-metrics.js';
import { budgetFromObjects, budgetFromView } from '../../src/kubectl/model.js';
import { costLine, headroomText } from '../../src/kubectl/format.js';
import { costText, planMarkdown, planTable } from '../../src/plan/format.js';
import { planChange } from '../../src/plan/plan.js';
import type { LiveState } from '../../src/plan/types.js';
import { handle, type ViewSource } from '../../src/view/api.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Project, ResourceList } from '../../src/validate/types.js';
import { aNamespace, aProject, aQuota } from '../support/fixtures.js';

// 1 CPU: 0.0575 × 500 = $28.75 a month; 1Gi: $3.359375.
const CONFIG = parseConfig(`pricing:
  currency: USD
  hoursPerMonth: 500
  perHour:
    requests.cpu: {price: "0.0575"}
    requests.memory: {price: "0.00671875", per: 1Gi}
`);

function ml(serving: ResourceList = { 'requests.cpu': '16', 'requests.memory': '64Gi' }, monthly = '1500'): Project {
  return aProject('ml', {
    owners: [{ kind: 'User', name: 'alice' }],
    quota: { hard: { 'requests.cpu': '80', 'requests.memory': '320Gi' } },
    costBudget: { monthly },
    namespaces: [
      { name: 'ml-serving', quota: { hard: serving } },
      { name: 'ml-train', quota: { hard: { 'requests.cpu': '16', 'requests.memory': '64Gi' } } },
    ],
  });
}

function live(project = ml()): LiveState {
  return {
    cluster: 'local',
    projects: [project],
    namespaces: ['ml-serving', 'ml-train'].map((n) => aNamespace(n, { project: 'ml' })),
    quotas: ['ml-serving', 'ml-train'].map((n) =>
      aQuota(
        n,
        { 'requests.cpu': '16', 'requests.memory': '64Gi' },
        { used: { 'requests.cpu': '4', 'requests.memory': '8Gi' } },
      ),
    ),
  };
}

describe('tenantgate plan: the cost line per change', () => {
  it('+$143.75/month within the cost budget: "$1,493.75 of $1,500.00", no finding', () => {
    const plan = planChange({
      at: TEST_NOW,
      config: CONFIG,
      base: { ref: 'main', projects: [ml()] },
      after: [ml({ 'requests.cpu': '21', 'requests.memory': '64Gi' })],
      live: [live()],
    });
    const [e] = plan.entries;
    expect(e!.cost).toEqual({
      currency: 'USD',
      before: '1350.00',
      after: '1493.75',
      change: '143.75',
      budget: '1500.00',
    });
    expect(e!.findings).toEqual([]);
    expect(planTable(plan)).toContain('\n  cost: +$143.75/month; $1,493.75 of $1,500.00\n');
    expect(planMarkdown(plan)).toContain('\nCost: +$143.75/month; $1,493.75 of $1,500.00.\n');
  });

  it('beyond it: the line says so and the simulated sync is refused with [C1]', () => {
    const plan = planChange({
      at: TEST_NOW,
      config: CONFIG,
      base: { ref: 'main', projects: [ml()] },
      after: [ml({ 'requests.cpu': '24', 'requests.memory': '64Gi' })],
      live: [live()],
    });
    const [e] = plan.entries;
    expect(costText(e!.cost!)).toBe('+$230.00/month; $1,580.00 of $1,500.00 (over the cost budget)');
    // The declarations alone are over it (the Project write), and so is the quota written after it.
    expect(e!.findings.map((f) => [f.rule, f.object, f.message])).toEqual([
      [
        'C1',
        'Project ml',
        "project ml's allocation costs $1,580.00/month (ml-serving $905.00, ml-train $675.00), but its cost budget spec.costBudget.monthly is $1,500.00/month: $80.00 over",
      ],
      [
        'C1',
        'ResourceQuota ml-serving/tenantgate-quota',
        "ResourceQuota ml-serving/tenantgate-quota asks requests.cpu 24: project ml's allocation on cluster local would cost $1,580.00/month, its cost budget is $1,500.00/month, $1,350.00 is allocated",
      ],
    ]);
    expect(plan.findings).toBe(2);
  });

  it('a lower cost budget alone: -$0.00 of change, and without a costBudget or without pricing no budget or no line', () => {
    const lowered = planChange({
      at: TEST_NOW,
      config: CONFIG,
      base: { ref: 'main', projects: [ml()] },
      after: [ml(undefined, '1300')],
      live: [live()],
    });
    expect(costText(lowered.entries[0]!.cost!)).toBe('+$0.00/month; $1,350.00 of $1,300.00 (over the cost budget)');
    expect(lowered.entries[0]!.findings.map((f) => [f.rule, f.object, f.message])).toEqual([
      [
        'C1',
        'Project ml',
        "project ml's allocation costs $1,350.00/month (ml-serving $675.00, ml-train $675.00), but its cost budget spec.costBudget.monthly is $1,300.00/month: $50.00 over",
      ],
    ]);
    const shrink = planChange({
      at: TEST_NOW,
      config: CONFIG,
      base: { ref: 'main', projects: [ml()] },
      after: [ml({ 'requests.cpu': '8', 'requests.memory': '64Gi' })],
      live: [live()],
    });
    expect(costText(shrink.entries[0]!.cost!)).toBe('-$230.00/month; $1,120.00 of $1,500.00');
    const unbudgeted = { ...ml(), spec: { ...ml().spec, costBudget: undefined } } as Project;
    const none = planChange({
      at: TEST_NOW,
      config: CONFIG,
      after: [unbudgeted],
      live: [live(unbudgeted)],
      all: true,
    });
    expect(costText(none.entries[0]!.cost!)).toBe('+$0.00/month; $1,350.00/month');
    const unpriced = planChange({
      at: TEST_NOW,
      config: DEFAULT_CONFIG,
      after: [unbudgeted],
      live: [live(unbudgeted)],
      all: true,
    });
    expect(unpriced.entries[0]!.cost).toBeUndefined();
    expect(planTable(unpriced)).not.toContain('cost:');
  });
});

describe('the budget view and the plugin', () => {
  const snapshot = () => MemorySnapshot.of(live());
  const source = (pricing: typeof CONFIG.pricing | null = CONFIG.pricing): ViewSource => ({
    snapshot,
    cluster: '',
    ...(pricing ? { pricing } : {}),
  });
  const alice = { username: 'alice', groups: [] };
  const get = (path: string, s: ViewSource, accept = 'application/json') =>
    handle({ at: TEST_NOW, method: 'GET', path: `/apis/view.tenantgate.io/v1alpha1${path}`, accept, user: alice }, s)
      .body as Record<string, unknown>;
  const COST = {
    currency: 'USD',
    monthly: '1350.00',
    budget: '1500.00',
    headroom: '150.00',
    resources: { 'requests.cpu': '920.00', 'requests.memory': '430.00' },
  };

  it('Budget and OwnedProject carry the cost; kubectl get shows it as one more row', () => {
    expect(get('/namespaces/ml-serving/budgets/ml', source()).cost).toEqual(COST);
    expect(get('/ownedprojects/ml', source()).cost).toEqual(COST);
    const table = get('/namespaces/ml-serving/budgets', source(), 'application/json;as=Table;v=v1;g=meta.k8s.io') as {
      rows: Array<{ cells: string[] }>;
    };
    expect(table.rows.map((r) => r.cells)).toContainEqual([
      'ml',
      'cost/month (USD)',
      '1500.00',
      '1350.00',
      '-',
      '150.00',
    ]);
    expect(get('/namespaces/ml-serving/budgets/ml', source(null)).cost).toBeUndefined();
  });

  it("the plugin prints the view's cost under the resources; the objects alone (no price sheet for tenants) print none", () => {
    const viewed = budgetFromView(get('/namespaces/ml-serving/budgets/ml', source()));
    expect(viewed.cost).toEqual(COST);
    expect(costLine(viewed.cost!)).toBe(
      'Cost $1,350.00/month of $1,500.00 (requests.cpu $920.00, requests.memory $430.00): $150.00 left',
    );
    // Unwrapped: the plugin breaks the sentence at spaces to the terminal's width.
    expect(headroomText(viewed, 200)).toContain(
      '\n\nCost $1,350.00/month of $1,500.00 (requests.cpu $920.00, requests.memory $430.00): $150.00 left\n',
    );
    expect(costLine({ ...COST, monthly: '1580.00', headroom: '-80.00', resources: {} })).toBe(
      'Cost $1,580.00/month of $1,500.00: $80.00 over the cost budget',
    );
    const { projects, namespaces, quotas } = live();
    expect(headroomText(budgetFromObjects(projects[0]!, namespaces, quotas, ''))).not.toContain('Cost');
    // A malformed cost from the view is left out, not printed wrong.
    expect(
      budgetFromView({
        ...get('/namespaces/ml-serving/budgets/ml', source()),
        cost: { currency: 'USD', monthly: 1350 },
      }).cost,
    ).toBeUndefined();
  });
});

describe('the controller metrics', () => {
  it('tenantgate_project_cost_monthly and tenantgate_project_cost_budget_monthly, labelled with the currency; none without pricing', () => {
    const s = projectSeries(MemorySnapshot.of(live()), '', CONFIG.pricing);
    const labels = { project: 'ml', tenant: 'acme', cluster: '', currency: 'USD' };
    expect(s.cost).toEqual([{ labels, value: 1350 }]);
    expect(s.costBudget).toEqual([{ labels, value: 1500 }]);
    const none = projectSeries(MemorySnapshot.of(live()), '');
    expect([none.cost, none.costBudget]).toEqual([[], []]);
  });
});
