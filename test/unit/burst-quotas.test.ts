import { describe, expect, it } from 'vitest';
import { aNamespace, aQuota } from '../support/fixtures.js';
import { ANNOTATION_BURST_RAISED, burstCondition, planBurstQuotas } from '../../src/controller/burst-quotas.js';
import { burstSeries } from '../../src/controller/burst-metrics.js';
import { computeStatus } from '../../src/controller/status.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import {
  LABEL_PROJECT,
  LABEL_TENANT,
  type Burst,
  type Project,
  type ResourceQuotaObject,
} from '../../src/validate/types.js';

const T = (s: string) => Date.parse(s);
const BEFORE = T('2026-11-30T00:00:00Z');
const DURING = T('2026-12-02T00:00:00Z');
const AFTER = T('2026-12-04T00:00:00Z');

const burst: Burst = {
  name: 'black-friday',
  from: '2026-12-01T00:00:00Z',
  until: '2026-12-03T00:00:00Z',
  reason: 'Black Friday traffic',
  quota: { hard: { 'requests.cpu': '8' } },
  namespace: 'ml-serving',
};

const project = (bursts: Burst[] = [burst]): Project => ({
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: { name: 'ml', uid: 'uid-ml', generation: 1 },
  spec: {
    tenant: 'research',
    quota: { hard: { 'requests.cpu': '20' } },
    namespaces: [{ name: 'ml-serving', quota: { hard: { 'requests.cpu': '4' } } }],
    bursts,
  },
});

const ns = aNamespace('ml-serving', { uid: 'uid-ml', labels: { [LABEL_PROJECT]: 'ml', [LABEL_TENANT]: 'research' } });

function snap(quota: ResourceQuotaObject, p = project()) {
  return MemorySnapshot.of({ projects: [p], namespaces: [ns], quotas: [quota] });
}
const raisedQuota = (hard: string, used: string) => {
  const q = aQuota('ml-serving', { 'requests.cpu': hard }, { used: { 'requests.cpu': used } });
  return { ...q, metadata: { ...q.metadata, annotations: { [ANNOTATION_BURST_RAISED]: 'requests.cpu' } } };
};

describe('planBurstQuotas: raise and lower a namespace quota', () => {
  it('before the burst: nothing to do', () => {
    expect(planBurstQuotas(project(), snap(aQuota('ml-serving', { 'requests.cpu': '4' })), '', BEFORE)).toEqual({
      writes: [],
      above: [],
      stillOver: [],
    });
  });

  it('during the burst: raised to declared + burst, and marked as raised', () => {
    const plan = planBurstQuotas(project(), snap(aQuota('ml-serving', { 'requests.cpu': '4' })), '', DURING);
    expect(plan.writes).toHaveLength(1);
    const w = plan.writes[0]!;
    expect(w.kind).toBe('raise');
    expect(w.desired.spec?.hard).toEqual({ 'requests.cpu': '12' });
    expect(w.desired.metadata.annotations?.[ANNOTATION_BURST_RAISED]).toBe('requests.cpu');
    expect(w.changes).toEqual(['requests.cpu 4 → 12']);
    expect(w.bursts).toEqual(['black-friday']);
    // once raised: converged
    expect(planBurstQuotas(project(), snap(raisedQuota('12', '0')), '', DURING).writes).toEqual([]);
  });

  it('after the burst, nothing used above the declaration: lowered fully and the mark removed', () => {
    const plan = planBurstQuotas(project(), snap(raisedQuota('12', '3')), '', AFTER);
    expect(plan.above).toEqual([]);
    expect(plan.writes[0]?.kind).toBe('lower');
    expect(plan.writes[0]?.desired.spec?.hard).toEqual({ 'requests.cpu': '4' });
    expect(plan.writes[0]?.desired.metadata.annotations?.[ANNOTATION_BURST_RAISED]).toBeUndefined();
  });

  it('after the burst, pods still use 10: never below what is used; reported; lowered further as usage drops', () => {
    const plan = planBurstQuotas(project(), snap(raisedQuota('12', '10')), '', AFTER);
    expect(plan.writes[0]?.desired.spec?.hard).toEqual({ 'requests.cpu': '10' });
    expect(plan.writes[0]?.desired.metadata.annotations?.[ANNOTATION_BURST_RAISED]).toBe('requests.cpu');
    expect(plan.above).toEqual([
      { namespace: 'ml-serving', resource: 'requests.cpu', used: '10', declared: '4', held: '10' },
    ]);
    // held at the usage: nothing to write while it does not drop, still reported
    const held = planBurstQuotas(project(), snap(raisedQuota('10', '10')), '', AFTER);
    expect(held.writes).toEqual([]);
    expect(held.above).toHaveLength(1);
    // usage drops to 6: lowered to 6; to 2: lowered to the declaration
    expect(planBurstQuotas(project(), snap(raisedQuota('10', '6')), '', AFTER).writes[0]?.desired.spec?.hard).toEqual({
      'requests.cpu': '6',
    });
    expect(planBurstQuotas(project(), snap(raisedQuota('6', '2')), '', AFTER).writes[0]?.desired.spec?.hard).toEqual({
      'requests.cpu': '4',
    });
  });

  it('a burst removed from the Project while its raise is on the quota is still lowered; a quota nobody raised is left alone', () => {
    expect(
      planBurstQuotas(project([]), snap(raisedQuota('12', '0'), project([])), '', AFTER).writes[0]?.desired.spec?.hard,
    ).toEqual({ 'requests.cpu': '4' });
    expect(
      planBurstQuotas(project([]), snap(aQuota('ml-serving', { 'requests.cpu': '12' }), project([])), '', AFTER).writes,
    ).toEqual([]);
  });
});

describe('what the status and the metrics say', () => {
  it('BurstEnded: NoneEnded before, Active during, UsageAboveQuota while pods use more, Lowered once back', () => {
    expect(burstCondition(project(), snap(aQuota('ml-serving', { 'requests.cpu': '4' })), '', BEFORE)).toMatchObject({
      status: 'False',
      reason: 'NoneEnded',
      message: 'upcoming: black-friday (from 2026-12-01T00:00:00Z)',
    });
    expect(burstCondition(project(), snap(raisedQuota('12', '0')), '', DURING)).toMatchObject({
      status: 'False',
      reason: 'Active',
      message: 'active: black-friday (requests.cpu +8 until 2026-12-03T00:00:00Z)',
    });
    expect(burstCondition(project(), snap(raisedQuota('10', '10')), '', AFTER)).toEqual({
      type: 'BurstEnded',
      status: 'True',
      reason: 'UsageAboveQuota',
      message:
        'a burst has ended but ml-serving uses requests.cpu 10, declared 4: its quota stays at 10 until usage allows lowering it',
    });
    expect(burstCondition(project(), snap(aQuota('ml-serving', { 'requests.cpu': '4' })), '', AFTER)).toMatchObject({
      status: 'True',
      reason: 'Lowered',
    });
    expect(
      burstCondition(
        { ...project(), spec: { ...project().spec, bursts: [] } },
        snap(aQuota('ml-serving', { 'requests.cpu': '4' })),
        '',
        AFTER,
      ),
    ).toBeUndefined();
  });

  it('a raised namespace is healthy during the burst (its expected quota includes the burst)', () => {
    const status = computeStatus({
      project: project(),
      snapshot: snap(raisedQuota('12', '0')),
      cluster: '',
      now: '2026-12-02T00:00:00Z',
      at: DURING,
    });
    expect(status.namespaces?.find((n) => n.name === 'ml-serving')?.health).toBe('Healthy');
    expect(status.conditions?.find((c) => c.type === 'QuotaWithinBudget')?.status).toBe('True');
  });

  it('the metrics: active, seconds left, and what runs above after the end', () => {
    expect(burstSeries(snap(raisedQuota('12', '0')), '', DURING)).toEqual({
      active: [{ labels: { project: 'ml', tenant: 'research', cluster: '', burst: 'black-friday' }, value: 1 }],
      endsIn: [{ labels: { project: 'ml', tenant: 'research', cluster: '', burst: 'black-friday' }, value: 86_400 }],
      overAfter: [],
    });
    const after = burstSeries(snap(raisedQuota('10', '10')), '', AFTER);
    expect(after.active[0]?.value).toBe(0);
    expect(after.overAfter).toEqual([
      {
        labels: { project: 'ml', tenant: 'research', cluster: '', namespace: 'ml-serving', resource: 'requests.cpu' },
        value: 6,
      },
    ]);
  });
});

describe('Argo CD and the controller (docs/argocd.md)', () => {
  it("the example Application ignores exactly what the controller's burst field manager writes on tenantgate-quota", async () => {
    const { readFileSync } = await import('node:fs');
    const { parse } = await import('yaml');
    const { BURST_FIELD_MANAGER } = await import('../../src/controller/burst-quotas.js');
    const app = parse(
      readFileSync(new URL('../../manifests/argocd/application-example.yaml', import.meta.url), 'utf8'),
    ) as { spec: { ignoreDifferences?: unknown[]; syncPolicy?: { syncOptions?: string[] } } };
    expect(app.spec.ignoreDifferences).toEqual([
      { group: '', kind: 'ResourceQuota', name: 'tenantgate-quota', managedFieldsManagers: [BURST_FIELD_MANAGER] },
    ]);
    expect(app.spec.syncPolicy?.syncOptions ?? []).not.toContain('RespectIgnoreDifferences=true');
  });
});
