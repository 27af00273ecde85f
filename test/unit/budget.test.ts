import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import { projectBudget, projectBudgetJson, usedIn } from '../../src/validate/budget.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { aNamespace, aProject, aQuota } from '../support/fixtures.js';

const pay = aProject('pay', {
  tenant: 'acme',
  quota: { hard: { 'requests.cpu': '10', 'requests.memory': '8Gi' } },
  clusters: { 'prod-eu': { quota: { hard: { 'requests.cpu': '4' } } } },
  namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', 'requests.memory': '1Gi' } } },
});

function snapshot(): MemorySnapshot {
  return MemorySnapshot.of({
    projects: [pay],
    namespaces: [
      aNamespace('pay-api', { project: 'pay' }),
      aNamespace('pay-web', { project: 'pay' }),
      aNamespace('other', {}),
    ],
    quotas: [
      aQuota(
        'pay-api',
        { 'requests.cpu': '3', 'requests.memory': '2Gi', pods: '20' },
        { used: { 'requests.cpu': '2500m', 'requests.memory': '1Gi', pods: '4' } },
      ),
      // A second, looser unscoped quota reporting less use: the namespace uses the largest report.
      aQuota('pay-api', { 'requests.cpu': '5' }, { name: 'extra', used: { 'requests.cpu': '2' } }),
      aQuota('other', { 'requests.cpu': '50' }, { used: { 'requests.cpu': '40' } }),
    ],
  });
}

describe('projectBudget', () => {
  it('counts per resource budget, allocated, used and headroom, and per namespace its share', () => {
    const b = projectBudget(snapshot(), pay, '', TEST_NOW);
    expect(projectBudgetJson(b)).toEqual({
      project: 'pay',
      tenant: 'acme',
      cluster: '',
      resources: [
        // pay-web has no quota: it holds namespaceDefaults (1 cpu, 1Gi); pay-api holds its tightest hard.
        { resource: 'requests.cpu', budget: '10', allocated: '4', used: '2500m', headroom: '6' },
        { resource: 'requests.memory', budget: '8Gi', allocated: '3Gi', used: '1Gi', headroom: '5Gi' },
      ],
      namespaces: [
        {
          namespace: 'pay-api',
          allocated: { 'requests.cpu': '3', 'requests.memory': '2Gi' },
          used: { pods: '4', 'requests.cpu': '2500m', 'requests.memory': '1Gi' },
          hard: { pods: '20', 'requests.cpu': '3', 'requests.memory': '2Gi' },
          defaulted: false,
        },
        {
          namespace: 'pay-web',
          allocated: { 'requests.cpu': '1', 'requests.memory': '1Gi' },
          used: {},
          hard: {},
          defaulted: true,
        },
      ],
    });
  });

  it('uses the per-cluster budget and shows a negative headroom when over it', () => {
    const b = projectBudgetJson(projectBudget(snapshot(), pay, 'prod-eu', TEST_NOW));
    expect(b.resources).toEqual([
      { resource: 'requests.cpu', budget: '4', allocated: '4', used: '2500m', headroom: '0' },
      // requests.memory is not budgeted on prod-eu: the rules allocate nothing for it there.
    ]);
    const tight = aProject('pay', {
      ...pay.spec,
      clusters: { 'prod-eu': { quota: { hard: { 'requests.cpu': '3' } } } },
    });
    expect(projectBudgetJson(projectBudget(snapshot(), tight, 'prod-eu', TEST_NOW)).resources[0]).toMatchObject({
      allocated: '4',
      headroom: '-1',
    });
  });

  it('ignores scoped quotas when counting use', () => {
    const s = MemorySnapshot.of({
      projects: [pay],
      namespaces: [aNamespace('pay-api', { project: 'pay' })],
      quotas: [
        aQuota(
          'pay-api',
          { 'requests.cpu': '9' },
          { name: 'besteffort', scopes: ['BestEffort'], used: { 'requests.cpu': '9' } },
        ),
      ],
    });
    expect(usedIn(s, 'pay-api').size).toBe(0);
  });
});
