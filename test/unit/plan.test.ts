/**
 * The planner (src/plan/plan.ts) on live objects held in memory: numbers before → after, the webhook's
 * refusals of the simulated sync (Q1), plan's own findings (Q6, Q7), which entries show, the roll-up.
 */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { planChange, planFails } from '../../src/plan/plan.js';
import type { LiveState, PlanEntry } from '../../src/plan/types.js';
import type { Project, ResourceList } from '../../src/validate/types.js';
import { aNamespace, aProject, aQuota } from '../support/fixtures.js';

const config = DEFAULT_CONFIG;

function web(
  frontend: ResourceList = { 'requests.cpu': '3', pods: '30' },
  extra: Partial<Project['spec']> = {},
): Project {
  return aProject('web', {
    quota: { hard: { 'requests.cpu': '6', pods: '60' } },
    namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', pods: '10' } } },
    namespaces: [{ name: 'web-frontend', quota: { hard: frontend } }, { name: 'web-staging' }],
    ...extra,
  });
}

/** web as synced, plus web-extra that a tenant made (its default quota takes 1 CPU); `used` per namespace. */
function live(cluster = 'local', used: Record<string, ResourceList> = {}, project: Project = web()): LiveState {
  const ns = (name: string) => aNamespace(name, { project: 'web' });
  return {
    cluster,
    projects: [project],
    namespaces: [ns('web-frontend'), ns('web-staging'), ns('web-extra')],
    quotas: [
      aQuota(
        'web-frontend',
        { 'requests.cpu': '3', pods: '30' },
        { used: used['web-frontend'] ?? { 'requests.cpu': '0', pods: '0' } },
      ),
      aQuota(
        'web-staging',
        { 'requests.cpu': '1', pods: '10' },
        { used: used['web-staging'] ?? { 'requests.cpu': '0', pods: '0' } },
      ),
      aQuota(
        'web-extra',
        { 'requests.cpu': '1', pods: '10' },
        { used: used['web-extra'] ?? { 'requests.cpu': '0', pods: '0' } },
      ),
    ],
  };
}

const only = (entries: PlanEntry[], project: string, cluster = 'local'): PlanEntry => {
  const e = entries.find((x) => x.project === project && x.cluster === cluster);
  if (!e)
    throw new Error(`no entry ${project} on ${cluster}: ${entries.map((x) => `${x.project}@${x.cluster}`).join(', ')}`);
  return e;
};

describe('planChange', () => {
  it('a raised declared quota that a self-service namespace left no room for: Q1 on that quota, the numbers before → after', () => {
    const plan = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [web()] },
      after: [web({ 'requests.cpu': '4500m', pods: '30' })],
      live: [live()],
    });
    const e = only(plan.entries, 'web');
    expect(e.change).toBe('changed');
    expect(e.namespaces).toMatchObject({
      added: [],
      removed: [],
      changed: ['web-frontend'],
      selfService: ['web-extra'],
      countBefore: 3,
      countAfter: 3,
    });
    expect(e.resources.find((r) => r.resource === 'requests.cpu')).toEqual({
      resource: 'requests.cpu',
      budgetBefore: '6',
      budgetAfter: '6',
      allocatedBefore: '5',
      allocatedAfter: '6500m',
      used: '0',
      headroomAfter: '-500m',
      headroomPercent: -8,
    });
    expect(e.findings.map((f) => [f.rule, f.object, f.by])).toEqual([
      ['Q1', 'ResourceQuota web-frontend/tenantgate-quota', 'webhook'],
    ]);
    expect(e.findings[0]!.message).toMatch(
      /asks requests\.cpu 4500m, project web on cluster local has 6 of which 2 are allocated to other namespaces: at most 4 fits/,
    );
    expect(plan.findings).toBe(1);
    expect(planFails(plan)).toBe(true);
  });

  it('the same raise within the headroom is admitted: no finding, exit 0', () => {
    const plan = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [web()] },
      after: [web({ 'requests.cpu': '4', pods: '30' })],
      live: [live()],
    });
    const e = only(plan.entries, 'web');
    expect(e.findings).toEqual([]);
    expect(e.resources.find((r) => r.resource === 'requests.cpu')).toMatchObject({
      allocatedAfter: '6',
      headroomAfter: '0',
      headroomPercent: 0,
    });
    expect(planFails(plan)).toBe(false);
  });

  it('a budget lowered below what the namespaces use: Q6 (plan), besides the Q1s the webhook gives the Project (declared and live)', () => {
    const lowered = web(undefined, { quota: { hard: { 'requests.cpu': '2', pods: '60' } } });
    const plan = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [web()] },
      after: [lowered],
      live: [live('local', { 'web-frontend': { 'requests.cpu': '2500m', pods: '3' } })],
    });
    const e = only(plan.entries, 'web');
    expect(e.findings.map((f) => `${f.rule} ${f.by} ${f.object}`).sort()).toEqual([
      'Q1 webhook Project web',
      'Q1 webhook Project web',
      'Q6 plan Project web',
    ]);
    expect(e.findings.filter((f) => f.rule === 'Q1').map((f) => f.message)).toEqual([
      expect.stringMatching(
        /^project web: namespaces allocate requests\.cpu 4 but the budget is 2 \(web-frontend 3, web-staging 1 \(defaults\)\)/,
      ),
      expect.stringMatching(/^project web on cluster local: namespaces allocate requests\.cpu 5 but the budget is 2/),
    ]);
    expect(e.findings.find((f) => f.rule === 'Q6')!.message).toMatch(
      /budget for requests\.cpu goes from 6 to 2, but its namespaces use 2500m \(web-frontend 2500m\)/,
    );
  });

  it('a declared namespace removed while its quota counts pods: Q7; removed without pods: none', () => {
    const without = aProject('web', {
      ...web().spec,
      namespaces: [{ name: 'web-frontend', quota: { hard: { 'requests.cpu': '3', pods: '30' } } }],
    });
    const busy = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [web()] },
      after: [without],
      live: [live('local', { 'web-staging': { 'requests.cpu': '500m', pods: '2' } })],
    });
    const e = only(busy.entries, 'web');
    expect(e.namespaces.removed).toEqual(['web-staging']);
    expect(e.namespaces.countAfter).toBe(2);
    expect(e.findings.map((f) => f.rule)).toEqual(['Q7']);
    expect(e.findings[0]!.message).toMatch(
      /namespace web-staging is no longer declared in project web on cluster local, but its quota reports pods 2 in use/,
    );
    // web-staging's 1 CPU is free after the prune.
    expect(e.resources.find((r) => r.resource === 'requests.cpu')).toMatchObject({
      allocatedBefore: '5',
      allocatedAfter: '4',
    });
    const idle = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [web()] },
      after: [without],
      live: [live()],
    });
    expect(only(idle.entries, 'web').findings).toEqual([]);
  });

  it('a new declared namespace beyond maxNamespaces (self-service ones count): Q1 on the Namespace', () => {
    const before = web(undefined, { maxNamespaces: 4 });
    const after = aProject('web', {
      ...before.spec,
      maxNamespaces: 3,
      namespaces: [...before.spec.namespaces!, { name: 'web-new' }],
    });
    const plan = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [before] },
      after: [after],
      live: [live('local', {}, before)],
    });
    const e = only(plan.entries, 'web');
    expect(e.namespaces.added).toEqual(['web-new']);
    expect(e.findings.map((f) => [f.rule, f.object])).toContainEqual(['Q1', 'Namespace web-new']);
    expect(e.namespaces).toMatchObject({ countBefore: 3, countAfter: 4, maxNamespaces: 3 });
  });

  it('shows only the projects a change touches on each cluster; a project it does not touch but whose sync is refused shows too', () => {
    const other = aProject('ops', {
      quota: { hard: { pods: '10' } },
      namespaceDefaults: { quota: { hard: { pods: '5' } } },
      namespaces: [{ name: 'ops-a' }],
    });
    const state = live();
    state.projects.push(other);
    const plan = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [web(), other] },
      after: [web({ 'requests.cpu': '4', pods: '30' }), other],
      live: [state],
    });
    // ops-a is declared but missing on the cluster: its creation is judged too and fits, so ops is not shown.
    expect(plan.entries.map((e) => e.project)).toEqual(['web']);
    expect(plan.changed).toBe(true);
    const all = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [web(), other] },
      after: [web({ 'requests.cpu': '4', pods: '30' }), other],
      live: [state],
      all: true,
    });
    expect(all.entries.map((e) => `${e.project}:${e.change}`)).toEqual(['ops:unchanged', 'web:changed']);
  });

  it('with nothing changed, every project as it is (and whether its resync would be admitted)', () => {
    const plan = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [web()] },
      after: [web()],
      live: [live()],
    });
    expect(plan.changed).toBe(false);
    expect(plan.entries.map((e) => `${e.project}:${e.change}`)).toEqual(['web:unchanged']);
    expect(plan.findings).toBe(0);
  });

  it('without --base the live Projects are the before', () => {
    const plan = planChange({
      at: TEST_NOW,
      config,
      after: [web({ 'requests.cpu': '4500m', pods: '30' })],
      live: [live()],
    });
    expect(plan.base).toBeUndefined();
    expect(only(plan.entries, 'web').findings.map((f) => f.rule)).toEqual(['Q1']);
  });

  it('a project added by the change and one removed (with pods: Q7 for each of its namespaces)', () => {
    const added = aProject('ops', {
      quota: { hard: { pods: '10' } },
      namespaceDefaults: { quota: { hard: { pods: '5' } } },
      namespaces: [{ name: 'ops-a' }],
    });
    const plan = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [web()] },
      after: [added],
      live: [live('local', { 'web-extra': { 'requests.cpu': '0', pods: '1' } })],
    });
    expect(only(plan.entries, 'ops')).toMatchObject({
      change: 'added',
      before: null,
      namespaces: { added: ['ops-a'], countAfter: 1 },
    });
    const gone = only(plan.entries, 'web');
    expect(gone).toMatchObject({
      change: 'removed',
      after: null,
      namespaces: { removed: ['web-extra', 'web-frontend', 'web-staging'] },
    });
    expect(gone.findings.map((f) => `${f.rule} ${f.object}`)).toEqual(['Q7 Namespace web-extra']);
  });

  it('per cluster budgets, and a roll-up per project across clusters', () => {
    const spec = { ...web().spec, clusters: { eu: { quota: { hard: { 'requests.cpu': '10', pods: '60' } } } } };
    const before = aProject('web', spec);
    const after = aProject('web', {
      ...spec,
      clusters: { eu: { quota: { hard: { 'requests.cpu': '8', pods: '60' } } } },
    });
    const plan = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [before] },
      after: [after],
      live: [live('eu', {}, before), live('us', {}, before)],
    });
    // Only eu's budget changed.
    expect(plan.entries.map((e) => `${e.project}@${e.cluster}`)).toEqual(['web@eu']);
    expect(only(plan.entries, 'web', 'eu').resources.find((r) => r.resource === 'requests.cpu')).toMatchObject({
      budgetBefore: '10',
      budgetAfter: '8',
      allocatedAfter: '5',
      headroomAfter: '3',
      headroomPercent: 38,
    });
    expect(plan.rollup).toHaveLength(1);
    const cpu = plan.rollup[0]!.resources.find((r) => r.resource === 'requests.cpu')!;
    expect(cpu).toEqual({
      resource: 'requests.cpu',
      budget: '14',
      allocated: '10',
      used: '0',
      headroom: '4',
      headroomPercent: 29,
      perCluster: { eu: { headroom: '3', headroomPercent: 38 }, us: { headroom: '1', headroomPercent: 17 } },
    });
  });
});
