/**
 * The pure mapping from the cache to the tenantgate_project_* series (src/controller/project-metrics.ts),
 * and the gauges serving it at scrape time from a prom-client registry: values follow the cache,
 * series vanish with their project, and nothing is served before the cache has synced.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ProjectGauges, projectSeries, type Sample } from '../../src/controller/project-metrics.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Project } from '../../src/validate/types.js';
import { aNamespace, aProject, aQuota } from '../support/fixtures.js';

const pay = aProject(
  'pay',
  {
    tenant: 'acme',
    quota: { hard: { 'requests.cpu': '10', 'requests.memory': '8Gi' } },
    clusters: { 'prod-eu': { quota: { hard: { 'requests.cpu': '4' } } } },
    namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', 'requests.memory': '1Gi' } } },
  },
  { uid: 'uid-pay' },
);

function snapshot(): MemorySnapshot {
  return MemorySnapshot.of({
    projects: [{ ...pay, status: { phase: 'Active' } }],
    namespaces: [
      aNamespace('pay-api', { project: 'pay', uid: 'uid-pay' }),
      aNamespace('pay-web', { project: 'pay', uid: 'uid-pay' }),
      aNamespace('other', {}),
    ],
    quotas: [
      aQuota(
        'pay-api',
        { 'requests.cpu': '3', 'requests.memory': '2Gi', pods: '20' },
        { used: { 'requests.cpu': '2500m', 'requests.memory': '1Gi', pods: '4' } },
      ),
      aQuota('other', { 'requests.cpu': '50' }, { used: { 'requests.cpu': '40' } }),
    ],
  });
}

/** "label=value,…" → value, for compact expectations. */
const flat = (samples: Sample[]) =>
  Object.fromEntries(
    samples.map((s) => [
      Object.entries(s.labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
      s.value,
    ]),
  );

describe('projectSeries', () => {
  it('maps projectBudget to budget, allocated, used and headroom per resource (cores and bytes), namespaces and phase', () => {
    const s = projectSeries(snapshot(), '');
    const p = 'project=pay,tenant=acme,cluster=';
    expect(flat(s.budget)).toEqual({
      [`${p},resource=requests.cpu`]: 10,
      [`${p},resource=requests.memory`]: 8 * 2 ** 30,
    });
    // pay-web has no quota: it holds namespaceDefaults (1 cpu, 1Gi); pay-api its quota (3 cpu, 2Gi).
    expect(flat(s.allocated)).toEqual({
      [`${p},resource=requests.cpu`]: 4,
      [`${p},resource=requests.memory`]: 3 * 2 ** 30,
    });
    expect(flat(s.used)).toEqual({ [`${p},resource=requests.cpu`]: 2.5, [`${p},resource=requests.memory`]: 2 ** 30 });
    expect(flat(s.headroom)).toEqual({
      [`${p},resource=requests.cpu`]: 6,
      [`${p},resource=requests.memory`]: 5 * 2 ** 30,
    });
    expect(flat(s.namespaces)).toEqual({ [p]: 2 });
    expect(flat(s.phase)).toEqual({
      [`${p},phase=Active`]: 1,
      [`${p},phase=Terminating`]: 0,
      [`${p},phase=Degraded`]: 0,
    });
    expect(flat(s.cascadeInProgress)).toEqual({ [p]: 0 });
    expect(flat(s.cascadeNamespacesRemaining)).toEqual({ [p]: 0 });
    expect(s.failed).toEqual([]);
  });

  it("uses the cluster's own budget, labels the cluster, and reports a negative headroom over budget", () => {
    const s = projectSeries(snapshot(), 'prod-eu');
    const p = 'project=pay,tenant=acme,cluster=prod-eu';
    expect(flat(s.budget)).toEqual({ [`${p},resource=requests.cpu`]: 4 });
    expect(flat(s.headroom)).toEqual({ [`${p},resource=requests.cpu`]: 0 });
    const tight = MemorySnapshot.of({
      projects: [
        aProject('pay', { ...pay.spec, clusters: { 'prod-eu': { quota: { hard: { 'requests.cpu': '3' } } } } }),
      ],
      namespaces: [aNamespace('pay-api', { project: 'pay' }), aNamespace('pay-web', { project: 'pay' })],
      quotas: [aQuota('pay-api', { 'requests.cpu': '3' })],
    });
    expect(flat(projectSeries(tight, 'prod-eu').headroom)).toEqual({ [`${p},resource=requests.cpu`]: -1 });
  });

  it('reports a cascade in progress with the owned namespaces the cache still shows (foreign ones do not count)', () => {
    const s = MemorySnapshot.of({
      projects: [
        {
          ...pay,
          metadata: { ...pay.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' },
          status: { phase: 'Terminating' },
        },
      ],
      namespaces: [
        aNamespace('pay-api', { project: 'pay', uid: 'uid-pay', terminating: true }),
        aNamespace('pay-web', { project: 'pay', uid: 'uid-pay' }),
        aNamespace('pay-foreign', { project: 'pay', uid: 'someone-else' }),
      ],
    });
    const series = projectSeries(s, '');
    expect(flat(series.cascadeInProgress)).toEqual({ 'project=pay,tenant=acme,cluster=': 1 });
    expect(flat(series.cascadeNamespacesRemaining)).toEqual({ 'project=pay,tenant=acme,cluster=': 2 });
    expect(flat(series.phase)['project=pay,tenant=acme,cluster=,phase=Terminating']).toBe(1);
  });

  it('skips a budget quantity that does not parse (as the rules do) and leaves out a project it cannot compute, saying which', () => {
    const typo = aProject('typo', { quota: { hard: { 'requests.cpu': 'lots', pods: '10' } } });
    // A Project object without a spec (the CRD requires one; the cache must not trust it).
    const broken = { ...aProject('broken'), spec: undefined } as unknown as Project;
    const s = projectSeries(MemorySnapshot.of({ projects: [typo, broken, pay] }), '');
    expect(s.budget.filter((x) => x.labels.project === 'typo').map((x) => x.labels.resource)).toEqual(['pods']);
    expect(s.failed.map((f) => f.project)).toEqual(['broken']);
    expect(s.failed[0]!.error).not.toBe('');
    expect(s.budget.some((x) => x.labels.project === 'broken')).toBe(false);
    // The broken project still has its phase and cascade series.
    expect(s.cascadeInProgress.map((x) => x.labels.project).sort()).toEqual(['broken', 'pay', 'typo']);
  });
});

describe('ProjectGauges at scrape time', () => {
  const line = (text: string, series: string) =>
    text
      .split('\n')
      .find((l) => l.startsWith(`${series} `))
      ?.slice(series.length + 1);

  it('serves nothing before the cache syncs, then follows the cache, and drops a deleted project', async () => {
    const registry = new Registry();
    const gauges = new ProjectGauges(registry);
    expect(await registry.metrics()).not.toMatch(/^tenantgate_project_budget\{/m);
    const s = snapshot();
    let synced = false;
    gauges.observe({ snapshot: () => (synced ? s : undefined), cluster: '' });
    expect(await registry.metrics()).not.toMatch(/^tenantgate_project_budget\{/m);
    synced = true;
    const cpu = '{project="pay",tenant="acme",cluster="",resource="requests.cpu"}';
    let text = await registry.metrics();
    expect(line(text, `tenantgate_project_allocated${cpu}`)).toBe('4');
    expect(line(text, `tenantgate_project_headroom${cpu}`)).toBe('6');
    expect(line(text, 'tenantgate_project_metrics_failed')).toBe('0');

    // A quota grows: the next scrape shows it (nothing cached across scrapes).
    await new Promise((r) => setImmediate(r));
    s.upsertQuota(aQuota('pay-web', { 'requests.cpu': '5', 'requests.memory': '1Gi' }));
    text = await registry.metrics();
    expect(line(text, `tenantgate_project_allocated${cpu}`)).toBe('8');
    expect(line(text, `tenantgate_project_headroom${cpu}`)).toBe('2');

    await new Promise((r) => setImmediate(r));
    s.deleteProject('pay');
    text = await registry.metrics();
    expect(text).not.toContain('project="pay"');
  });
});
