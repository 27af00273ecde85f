/**
 * Q1 and Q2 offline, through `validateDeclarations`: budgets per cluster placement,
 * namespaceDefaults for namespaces without a quota, exact quantity arithmetic.
 */
import { TEST_NOW } from '../support/instant.js';
import { aProject } from '../support/fixtures.js';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { validateDeclarations } from '../../src/validate/offline.js';
import type { DeclaredNamespace, Project, ProjectSpec, ResourceList, Violation } from '../../src/validate/types.js';

const project = (spec: Partial<ProjectSpec>, name = 'shop'): Project => aProject(name, spec);

function ns(name: string, hard?: ResourceList, cluster?: string): DeclaredNamespace {
  return { name, ...(cluster ? { cluster } : {}), ...(hard ? { quota: { hard } } : {}) };
}

function check(...projects: Project[]): Violation[] {
  return validateDeclarations(projects, DEFAULT_CONFIG, TEST_NOW);
}

function budget(hard: ResourceList): Pick<ProjectSpec, 'quota'> {
  return { quota: { hard } };
}

describe('Q1: the namespaces fit the budget', () => {
  it('rejects declared quotas over the budget: resource, total, budget, each share and the excess', () => {
    const violations = check(
      project({
        ...budget({ 'requests.cpu': '4', pods: '20' }),
        namespaces: [
          ns('shop-api', { 'requests.cpu': '3', pods: '10' }),
          ns('shop-web', { 'requests.cpu': '1500m', pods: '10' }),
        ],
      }),
    );
    expect(violations).toHaveLength(1);
    const [v] = violations;
    expect(v!.rule).toBe('Q1');
    expect(v!.path).toEqual(['spec', 'quota', 'hard', 'requests.cpu']);
    expect(v!.message).toBe(
      'project shop: namespaces allocate requests.cpu 4500m but the budget is 4 (shop-api 3, shop-web 1500m): 500m over',
    );
  });

  it('counts namespaceDefaults for namespaces without a quota (and says so)', () => {
    const spec = {
      ...budget({ 'requests.cpu': '4', pods: '20' }),
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', pods: '5' } } },
    };
    const over = check(
      project({ ...spec, namespaces: [ns('shop-api', { 'requests.cpu': '3500m', pods: '10' }), ns('shop-web')] }),
    );
    expect(over.map((v) => [v.rule, v.path])).toEqual([['Q1', ['spec', 'quota', 'hard', 'requests.cpu']]]);
    expect(over[0]!.message).toContain('namespaces allocate requests.cpu 4500m but the budget is 4');
    expect(over[0]!.message).toContain('shop-web 1 (defaults)');
    expect(over[0]!.message).toContain('500m over');
    // the same declarations with a smaller declared quota fit: defaults count exactly once
    expect(
      check(project({ ...spec, namespaces: [ns('shop-api', { 'requests.cpu': '3', pods: '10' }), ns('shop-web')] })),
    ).toEqual([]);
  });

  it('counts defaults per resource: a namespace quota without pods takes the default pods', () => {
    const spec = {
      ...budget({ 'requests.cpu': '4', pods: '10' }),
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', pods: '6' } } },
    };
    const violations = check(
      project({
        ...spec,
        namespaces: [ns('shop-api', { 'requests.cpu': '1' }), ns('shop-web', { 'requests.cpu': '1', pods: '5' })],
      }),
    );
    expect(violations.map((v) => [v.rule, v.path])).toEqual([['Q1', ['spec', 'quota', 'hard', 'pods']]]);
    expect(violations[0]!.message).toContain('namespaces allocate pods 11 but the budget is 10');
    expect(violations[0]!.message).toContain('shop-api 6 (defaults)');
  });

  it('sums exactly: 1500m + 500m fits exactly in "2", 0.1 + 0.2 fits "0.3" and "300m"', () => {
    expect(
      check(
        project({
          ...budget({ 'requests.cpu': '2' }),
          namespaces: [ns('shop-a', { 'requests.cpu': '1500m' }), ns('shop-b', { 'requests.cpu': '500m' })],
        }),
      ),
    ).toEqual([]);
    expect(
      check(
        project({
          ...budget({ 'requests.cpu': '0.3' }),
          namespaces: [ns('shop-a', { 'requests.cpu': '0.1' }), ns('shop-b', { 'requests.cpu': '0.2' })],
        }),
      ),
    ).toEqual([]);
    expect(
      check(
        project({
          ...budget({ 'requests.cpu': '300m' }),
          namespaces: [ns('shop-a', { 'requests.cpu': '0.1' }), ns('shop-b', { 'requests.cpu': '200m' })],
        }),
      ),
    ).toEqual([]);
    expect(
      check(
        project({ ...budget({ pods: 30 }), namespaces: [ns('shop-a', { pods: 10 }), ns('shop-b', { pods: '20' })] }),
      ),
    ).toEqual([]);
    expect(
      check(
        project({
          ...budget({ memory: '1Gi' }),
          namespaces: [ns('shop-a', { memory: '512Mi' }), ns('shop-b', { memory: '536870912' })],
        }),
      ),
    ).toEqual([]);
    expect(
      check(
        project({
          ...budget({ memory: '2G' }),
          namespaces: [ns('shop-a', { memory: '1e9' }), ns('shop-b', { memory: '1000M' })],
        }),
      ),
    ).toEqual([]);
  });

  it('is exact by one unit: 1500m + 501m does not fit "2"; 512Mi + 536870913 does not fit 1Gi', () => {
    const cpu = check(
      project({
        ...budget({ 'requests.cpu': '2' }),
        namespaces: [ns('shop-a', { 'requests.cpu': '1500m' }), ns('shop-b', { 'requests.cpu': '501m' })],
      }),
    );
    expect(cpu.map((v) => v.rule)).toEqual(['Q1']);
    expect(cpu[0]!.message).toContain('allocate requests.cpu 2001m but the budget is 2');
    expect(cpu[0]!.message).toContain('1m over');
    const tiny = check(
      project({
        ...budget({ 'requests.cpu': '0.3' }),
        namespaces: [ns('shop-a', { 'requests.cpu': '0.1' }), ns('shop-b', { 'requests.cpu': '0.2001' })],
      }),
    );
    expect(tiny[0]!.message).toContain('100u over');
    const mem = check(
      project({
        ...budget({ memory: '1Gi' }),
        namespaces: [ns('shop-a', { memory: '512Mi' }), ns('shop-b', { memory: '536870913' })],
      }),
    );
    expect(mem[0]!.message).toContain('allocate memory 1073741825 but the budget is 1Gi');
    expect(mem[0]!.message).toContain('1 over');
  });

  it('budgets per cluster: a namespace with cluster counts only there, the others everywhere', () => {
    // Σ over all namespaces (8 + 8 + 2 = 18) exceeds 10, but no cluster holds more than 10.
    const spec: Partial<ProjectSpec> = {
      ...budget({ 'requests.cpu': '10' }),
      namespaces: [
        ns('shop-eu', { 'requests.cpu': '8' }, 'prod-eu'),
        ns('shop-us', { 'requests.cpu': '8' }, 'prod-us'),
        ns('shop-common', { 'requests.cpu': '2' }),
      ],
    };
    expect(check(project(spec))).toEqual([]);
  });

  it('uses spec.clusters[c] as the budget on cluster c, pointing at it', () => {
    const spec: Partial<ProjectSpec> = {
      ...budget({ 'requests.cpu': '20' }),
      clusters: { 'prod-eu': { quota: { hard: { 'requests.cpu': '4' } } } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '2' } } },
      namespaces: [ns('shop-eu', { 'requests.cpu': '3' }, 'prod-eu'), ns('shop-batch')],
    };
    const violations = check(project(spec));
    expect(violations).toHaveLength(1);
    expect(violations[0]!.rule).toBe('Q1');
    expect(violations[0]!.path).toEqual(['spec', 'clusters', 'prod-eu', 'quota', 'hard', 'requests.cpu']);
    expect(violations[0]!.message).toBe(
      'project shop on cluster prod-eu: namespaces allocate requests.cpu 5 but the budget is 4 (shop-eu 3, shop-batch 2 (defaults)): 1 over',
    );
  });

  it('checks the unnamed cluster with the namespaces that have no cluster, against spec.quota', () => {
    const spec: Partial<ProjectSpec> = {
      ...budget({ 'requests.cpu': '4' }),
      clusters: { 'prod-eu': { quota: { hard: { 'requests.cpu': '100' } } } },
      namespaces: [
        ns('shop-a', { 'requests.cpu': '3' }),
        ns('shop-b', { 'requests.cpu': '3' }),
        ns('shop-eu', { 'requests.cpu': '50' }, 'prod-eu'),
      ],
    };
    const violations = check(project(spec));
    expect(violations.map((v) => [v.rule, v.path])).toEqual([['Q1', ['spec', 'quota', 'hard', 'requests.cpu']]]);
    expect(violations[0]!.message).toBe(
      'project shop: namespaces allocate requests.cpu 6 but the budget is 4 (shop-a 3, shop-b 3): 2 over',
    );
  });

  it('applies maxNamespaces per cluster (as Q1)', () => {
    const violations = check(project({ maxNamespaces: 1, namespaces: [ns('shop-a'), ns('shop-b')] }));
    expect(violations.map((v) => [v.rule, v.path])).toEqual([['Q1', ['spec', 'maxNamespaces']]]);
    expect(violations[0]!.message).toContain('declares 2 namespaces but maxNamespaces is 1');
    expect(
      check(
        project({
          maxNamespaces: 1,
          namespaces: [ns('shop-a', undefined, 'prod-eu'), ns('shop-b', undefined, 'prod-us')],
        }),
      ),
    ).toEqual([]);
  });

  it('refuses YAML floats as quantities (S1, as the CRD schema does) instead of summing them in floating point', () => {
    const violations = check(
      project({
        ...budget({ 'requests.cpu': '300m' }),
        namespaces: [ns('shop-a', { 'requests.cpu': 0.1 }), ns('shop-b', { 'requests.cpu': '200m' })],
      }),
    );
    expect(violations.map((v) => [v.rule, v.path])).toEqual([
      ['S1', ['spec', 'namespaces', 0, 'quota', 'hard', 'requests.cpu']],
    ]);
  });

  it('accepts a project without a budget, whatever its namespaces ask', () => {
    expect(check(project({ namespaces: [ns('shop-a', { 'requests.cpu': '1000' })] }))).toEqual([]);
  });
});

describe('Q2: every namespace covers every budget resource', () => {
  it('rejects a declared quota without a budget resource (no defaults), at that quota, naming what is missing', () => {
    const violations = check(
      project({
        ...budget({ 'requests.cpu': '4', pods: '20' }),
        namespaces: [ns('shop-api', { 'requests.cpu': '2' })],
      }),
    );
    expect(violations).toHaveLength(1);
    const [v] = violations;
    expect(v!.rule).toBe('Q2');
    expect(v!.path).toEqual(['spec', 'namespaces', 0, 'quota']);
    expect(v!.message).toBe(
      'namespace shop-api leaves pods without a quota, but project shop budgets it: every namespace needs an unscoped ResourceQuota covering pods, requests.cpu',
    );
  });

  it('rejects a namespace without quota when the defaults do not cover the budget, at its name', () => {
    const violations = check(
      project({
        ...budget({ 'requests.cpu': '4', pods: '20' }),
        namespaceDefaults: { quota: { hard: { pods: '5' } } },
        namespaces: [ns('shop-api')],
      }),
    );
    expect(violations.map((v) => [v.rule, v.path])).toEqual([['Q2', ['spec', 'namespaces', 0, 'name']]]);
    expect(violations[0]!.message).toContain(
      'namespace shop-api (namespaceDefaults) leaves requests.cpu without a quota',
    );
  });

  it('reports a namespace once even when several clusters check it', () => {
    const violations = check(
      project({
        ...budget({ pods: '20' }),
        clusters: { 'prod-eu': { quota: { hard: { pods: '10' } } } },
        namespaces: [ns('shop-api', { 'requests.cpu': '1' })],
      }),
    );
    expect(violations.map((v) => v.rule)).toEqual(['Q2']);
  });

  it('accepts namespaces covered by their quota, or by the defaults for what their quota leaves out', () => {
    const spec = {
      ...budget({ 'requests.cpu': '4', pods: '20' }),
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', pods: '5' } } },
    };
    expect(
      check(
        project({
          ...spec,
          namespaces: [
            ns('shop-api', { 'requests.cpu': '2' }),
            ns('shop-web'),
            ns('shop-db', { 'requests.cpu': '1', pods: '5', 'requests.memory': '1Gi' }),
          ],
        }),
      ),
    ).toEqual([]);
  });
});
