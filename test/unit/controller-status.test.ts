import { TEST_NOW } from '../support/instant.js';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { aNamespace, aQuota } from '../support/fixtures.js';
import { describe, expect, it } from 'vitest';
import { classifyNamespaces, remainingReport } from '../../src/controller/cascade.js';
import { planDefaultQuotas } from '../../src/controller/defaults.js';
import {
  computeStatus,
  statusEquals,
  withTransitionTimes,
  budgetUse,
  type CascadeReport,
} from '../../src/controller/status.js';
import { parseResources } from '../../src/validate/resource-lists.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import {
  LABEL_PROJECT,
  LABEL_TENANT,
  type NamespaceObject,
  type Project,
  type ProjectStatus,
  type ResourceQuotaObject,
} from '../../src/validate/types.js';

const NOW = '2025-01-01T00:00:00Z';
const LATER = '2025-01-01T01:00:00Z';

function project(overrides: Partial<Project['spec']> = {}, meta: Partial<Project['metadata']> = {}): Project {
  return {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: 'pay', uid: 'uid-pay', generation: 3, ...meta },
    spec: {
      tenant: 'acme',
      quota: { hard: { 'requests.cpu': '20', pods: '100' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', pods: '10' } } },
      ...overrides,
    },
  };
}

/** A namespace of project pay (tenant acme, uid-pay) unless told otherwise; '' leaves a label out, null the uid. */
function ns(
  name: string,
  opts: {
    project?: string;
    tenant?: string;
    uid?: string | null;
    terminating?: boolean;
    conditions?: NonNullable<NamespaceObject['status']>['conditions'];
  } = {},
): NamespaceObject {
  const project = opts.project ?? 'pay';
  const tenant = opts.tenant ?? 'acme';
  const base = aNamespace(name, {
    ...(opts.uid === null ? {} : { uid: opts.uid ?? 'uid-pay' }),
    labels: { ...(project ? { [LABEL_PROJECT]: project } : {}), ...(tenant ? { [LABEL_TENANT]: tenant } : {}) },
    ...(opts.terminating ? { terminating: true } : {}),
    ...(opts.conditions ? { conditions: opts.conditions } : {}),
  });
  return {
    ...base,
    metadata: { annotations: {}, ...base.metadata, ...(opts.terminating ? { deletionTimestamp: NOW } : {}) },
    status: {
      phase: opts.terminating ? 'Terminating' : 'Active',
      ...(opts.conditions ? { conditions: opts.conditions } : {}),
    },
  };
}

const quota = (
  namespace: string,
  hard: Record<string, string>,
  used: Record<string, string> = {},
  name = 'tenantgate-quota',
  scopes?: string[],
): ResourceQuotaObject => aQuota(namespace, hard, { name, used, ...(scopes ? { scopes } : {}) });

const cond = (s: ProjectStatus, type: string) => s.conditions?.find((c) => c.type === type);

describe('computeStatus (CR3)', () => {
  it('a healthy project: Active, Ready, allocated/used/headroom, budgetUse, namespaceCount, observedGeneration', () => {
    const snap = MemorySnapshot.of({
      projects: [project()],
      namespaces: [ns('pay-api'), ns('pay-web')],
      quotas: [
        quota('pay-api', { 'requests.cpu': '8', pods: '50' }, { 'requests.cpu': '1500m', pods: '3' }),
        quota('pay-web', { 'requests.cpu': '8', pods: '20' }, { 'requests.cpu': '500m', pods: '1' }),
      ],
    });
    const s = computeStatus({ project: project(), snapshot: snap, cluster: '', now: NOW });
    expect(s.phase).toBe('Active');
    expect(s.observedGeneration).toBe(3);
    expect(s.allocated).toEqual({ pods: '70', 'requests.cpu': '16' });
    expect(s.used).toEqual({ pods: '4', 'requests.cpu': '2' });
    expect(s.headroom).toEqual({ pods: '30', 'requests.cpu': '4' });
    expect(s.budgetUse).toBe('requests.cpu 16/20');
    expect(s.namespaceCount).toBe(2);
    expect(s.namespaces).toEqual([
      { name: 'pay-api', health: 'Healthy', phase: 'Active' },
      { name: 'pay-web', health: 'Healthy', phase: 'Active' },
    ]);
    for (const t of ['Ready', 'QuotaWithinBudget', 'NamespacesHealthy']) {
      expect(cond(s, t)).toMatchObject({ status: 'True', lastTransitionTime: NOW, observedGeneration: 3 });
    }
    expect(cond(s, 'NamespacesRemaining')).toBeUndefined();
  });

  it('QuotaMissing when no unscoped quota covers the budget (scoped quotas do not count); the message says whether a default fits', () => {
    const p = project({ namespaceDefaults: { quota: { hard: { 'requests.cpu': '30', pods: '10' } } } });
    const snap = MemorySnapshot.of({
      projects: [p],
      namespaces: [ns('pay-api')],
      quotas: [quota('pay-api', { pods: '5' }, {}, 'scoped', ['BestEffort'])],
    });
    const s = computeStatus({ project: p, snapshot: snap, cluster: '', now: NOW });
    expect(s.namespaces?.[0]).toMatchObject({ name: 'pay-api', health: 'QuotaMissing' });
    expect(s.namespaces?.[0]?.message).toContain('no unscoped ResourceQuota covers pods, requests.cpu');
    expect(s.namespaces?.[0]?.message).toContain('requests.cpu 30 asked, 20 of 20 left');
    expect(cond(s, 'NamespacesHealthy')).toMatchObject({ status: 'False', reason: 'QuotaMissing' });
    expect(cond(s, 'NamespacesHealthy')?.message).toContain('pay-api: QuotaMissing');
    // An uncovered namespace counts with the defaults (the rule engine's allocation), so this is also over budget.
    expect(cond(s, 'QuotaWithinBudget')).toMatchObject({
      status: 'False',
      message: 'requests.cpu: 30 allocated, budget 20 (pay-api 30 (default, no quota yet))',
    });
    expect(cond(s, 'Ready')).toMatchObject({ status: 'False', reason: 'OverBudget' });
    expect(s.phase).toBe('Degraded');
  });

  it('QuotaMismatch when a declared namespace has another quota than declared (or than the defaults)', () => {
    const p = project({
      namespaces: [{ name: 'pay-api', quota: { hard: { 'requests.cpu': '8', pods: '50' } } }, { name: 'pay-web' }],
    });
    const snap = MemorySnapshot.of({
      projects: [p],
      namespaces: [ns('pay-api'), ns('pay-web')],
      quotas: [
        quota('pay-api', { 'requests.cpu': '8000m', pods: '40' }),
        quota('pay-web', { 'requests.cpu': '2', pods: '10' }),
      ],
    });
    const s = computeStatus({ project: p, snapshot: snap, cluster: '', now: NOW });
    expect(s.namespaces).toEqual([
      {
        name: 'pay-api',
        health: 'QuotaMismatch',
        phase: 'Active',
        message: 'effective quota differs from the declaration: pods is 40 (declared 50)',
      },
      { name: 'pay-web', health: 'Healthy', phase: 'Active' },
    ]);
    expect(cond(s, 'NamespacesHealthy')?.reason).toBe('QuotaMismatch');
  });

  it('LabelMismatch for a wrong tenant label, a declared namespace labelled for another project, another project-uid', () => {
    const p = project({ namespaces: [{ name: 'pay-other' }] });
    const snap = MemorySnapshot.of({
      projects: [p],
      namespaces: [
        ns('pay-api', { tenant: 'globex' }),
        ns('pay-other', { project: 'other' }),
        ns('pay-old', { uid: 'uid-old' }),
      ],
      quotas: ['pay-api', 'pay-other', 'pay-old'].map((n) => quota(n, { 'requests.cpu': '2', pods: '10' })),
    });
    const s = computeStatus({ project: p, snapshot: snap, cluster: '', now: NOW });
    const byName = Object.fromEntries((s.namespaces ?? []).map((n) => [n.name, n]));
    expect(byName['pay-api']).toMatchObject({
      health: 'LabelMismatch',
      message: 'label tenantgate.io/tenant is "globex", expected "acme"',
    });
    expect(byName['pay-other']).toMatchObject({
      health: 'LabelMismatch',
      message: 'label tenantgate.io/project is "other", expected "pay"',
    });
    expect(byName['pay-old']?.health).toBe('LabelMismatch');
    expect(byName['pay-old']?.message).toContain('annotation tenantgate.io/project-uid is "uid-old"');
    expect(s.namespaceCount).toBe(2); // pay-other is labelled for another project
    expect(cond(s, 'NamespacesHealthy')).toMatchObject({ status: 'False', reason: 'LabelMismatch' });
  });

  it('a declared namespace not created yet is Missing, which does not make the project unhealthy (Argo CD creates it in a later wave)', () => {
    const p = project({ namespaces: [{ name: 'pay-api' }, { name: 'pay-eu', cluster: 'eu' }] });
    const snap = MemorySnapshot.of({ projects: [p] });
    const s = computeStatus({ project: p, snapshot: snap, cluster: '', now: NOW });
    expect(s.namespaces).toEqual([
      { name: 'pay-api', health: 'Missing', message: 'declared in spec.namespaces but does not exist' },
    ]);
    expect(cond(s, 'NamespacesHealthy')).toMatchObject({
      status: 'True',
      message: '0 namespaces healthy; pay-api Missing',
    });
    expect(s.phase).toBe('Active');
    expect(s.budgetUse).toBe('pods 0/100'); // a tie: the first resource by name
  });

  it('QuotaWithinBudget counts usage: a namespace whose quota was lowered below what it uses holds what it uses, and the message says so', () => {
    const snap = MemorySnapshot.of({
      projects: [project()],
      namespaces: [ns('pay-api'), ns('pay-web')],
      // pay-api filled 14 CPU, then its quota was lowered to 1; pay-web took the "freed" room
      quotas: [
        quota('pay-api', { 'requests.cpu': '1', pods: '10' }, { 'requests.cpu': '14', pods: '7' }),
        quota('pay-web', { 'requests.cpu': '12', pods: '10' }, { 'requests.cpu': '12', pods: '6' }),
      ],
    });
    const s = computeStatus({ project: project(), snapshot: snap, cluster: '', now: NOW });
    expect(cond(s, 'QuotaWithinBudget')).toMatchObject({
      status: 'False',
      reason: 'OverBudget',
      message: 'requests.cpu: 26 allocated, 26 in use, budget 20 (pay-api 14 (in use; its quota says 1), pay-web 12)',
    });
    expect(s.used?.['requests.cpu']).toBe('26');
    expect(s.budgetUse).toBe('requests.cpu 26/20');
  });

  it('QuotaWithinBudget False with the numbers, per namespace, when quotas were raised out of band', () => {
    const snap = MemorySnapshot.of({
      projects: [project()],
      namespaces: [ns('pay-api'), ns('pay-web')],
      quotas: [
        quota('pay-api', { 'requests.cpu': '16', pods: '10' }),
        quota('pay-web', { 'requests.cpu': '8', pods: '10' }),
      ],
    });
    const s = computeStatus({ project: project(), snapshot: snap, cluster: '', now: NOW });
    expect(cond(s, 'QuotaWithinBudget')).toMatchObject({
      status: 'False',
      reason: 'OverBudget',
      message: 'requests.cpu: 24 allocated, budget 20 (pay-api 16, pay-web 8)',
    });
    expect(s.headroom?.['requests.cpu']).toBe('-4');
    expect(s.budgetUse).toBe('requests.cpu 24/20');
    expect(s.phase).toBe('Degraded');
    expect(cond(s, 'Ready')?.reason).toBe('OverBudget');
  });

  it('uses the per-cluster budget and the namespaces placed on that cluster', () => {
    const p = project({
      clusters: { eu: { quota: { hard: { 'requests.cpu': '4' } } } },
      namespaces: [{ name: 'pay-us', cluster: 'us' }],
    });
    const snap = MemorySnapshot.of({
      projects: [p],
      namespaces: [ns('pay-api')],
      quotas: [quota('pay-api', { 'requests.cpu': '3' })],
    });
    const s = computeStatus({ project: p, snapshot: snap, cluster: 'eu', now: NOW });
    expect(s.allocated).toEqual({ 'requests.cpu': '3' });
    expect(s.headroom).toEqual({ 'requests.cpu': '1' });
    expect(s.namespaces?.map((n) => n.name)).toEqual(['pay-api']);
    expect(s.phase).toBe('Active');
  });

  it('Terminating: NamespacesRemaining lists the namespaces with their deletion conditions and the ones left in place', () => {
    const p = project({}, { deletionTimestamp: NOW, finalizers: ['tenantgate.io/cascade-delete'] });
    const snap = MemorySnapshot.of({
      projects: [p],
      namespaces: [ns('pay-api', { terminating: true }), ns('pay-x', { uid: null })],
    });
    const cascade: CascadeReport = {
      remaining: [
        {
          name: 'pay-api',
          phase: 'Terminating',
          deleting: true,
          conditions: ['NamespaceContentRemaining: Some resources are remaining: configmaps. has 3 resource instances'],
        },
      ],
      foreign: [{ name: 'pay-x', reason: 'no tenantgate.io/project-uid annotation' }],
    };
    const s = computeStatus({ project: p, snapshot: snap, cluster: '', now: NOW, cascade });
    expect(s.phase).toBe('Terminating');
    const remaining = cond(s, 'NamespacesRemaining');
    expect(remaining).toMatchObject({ status: 'True', reason: 'NamespacesRemaining' });
    expect(remaining?.message).toBe(
      'waiting for 1 namespace to be deleted: pay-api (NamespaceContentRemaining: Some resources are remaining: configmaps. has 3 resource instances); not deleted: pay-x (no tenantgate.io/project-uid annotation)',
    );
    expect(s.namespaces).toEqual([
      {
        name: 'pay-api',
        health: 'Terminating',
        phase: 'Terminating',
        message: 'NamespaceContentRemaining: Some resources are remaining: configmaps. has 3 resource instances',
      },
      {
        name: 'pay-x',
        health: 'LabelMismatch',
        phase: 'Active',
        message: 'no tenantgate.io/project-uid annotation: not deleted with the project',
      },
    ]);
    expect(cond(s, 'Ready')).toMatchObject({ status: 'False', reason: 'Terminating' });
    const done = computeStatus({
      project: p,
      snapshot: snap,
      cluster: '',
      now: NOW,
      cascade: { remaining: [], foreign: cascade.foreign },
    });
    expect(cond(done, 'NamespacesRemaining')).toMatchObject({ status: 'False', reason: 'NoNamespacesRemaining' });
  });

  it('is stable: the status computed for a project that already has it compares equal (no write), times are kept', () => {
    const snap = MemorySnapshot.of({
      projects: [project()],
      namespaces: [ns('pay-api')],
      quotas: [quota('pay-api', { 'requests.cpu': '2', pods: '10' })],
    });
    const first = computeStatus({ project: project(), snapshot: snap, cluster: '', now: NOW });
    const withStatus = { ...project(), status: first };
    const second = computeStatus({ project: withStatus, snapshot: snap, cluster: '', now: LATER });
    expect(statusEquals(first, second)).toBe(true);
    expect(second.conditions?.every((c) => c.lastTransitionTime === NOW)).toBe(true);
  });
});

describe('statusEquals / withTransitionTimes', () => {
  const base: ProjectStatus = {
    phase: 'Active',
    allocated: { 'requests.cpu': '1' },
    conditions: [
      { type: 'Ready', status: 'True', reason: 'Ready', message: 'ok', lastTransitionTime: NOW },
      { type: 'A', status: 'True', reason: 'X', message: 'm', lastTransitionTime: NOW },
    ],
  };
  it('ignores lastTransitionTime, key order, condition order, and quantity spelling', () => {
    const other: ProjectStatus = {
      conditions: [
        { type: 'A', status: 'True', reason: 'X', message: 'm', lastTransitionTime: LATER },
        { message: 'ok', reason: 'Ready', status: 'True', type: 'Ready' },
      ],
      allocated: { 'requests.cpu': '1000m' },
      phase: 'Active',
    };
    expect(statusEquals(base, other)).toBe(true);
    expect(statusEquals(base, { ...other, phase: 'Degraded' })).toBe(false);
    expect(statusEquals(base, { ...other, allocated: { 'requests.cpu': '2' } })).toBe(false);
    expect(statusEquals(undefined, {})).toBe(true);
  });
  it('moves lastTransitionTime only when a condition flips', () => {
    const next: ProjectStatus = {
      conditions: [
        { type: 'Ready', status: 'False', reason: 'R', message: 'x' },
        { type: 'A', status: 'True', reason: 'Y', message: 'changed' },
        { type: 'New', status: 'True', reason: 'Z', message: 'z' },
      ],
    };
    const out = withTransitionTimes(next, base, LATER);
    expect(out.conditions?.map((c) => c.lastTransitionTime)).toEqual([LATER, NOW, LATER]);
  });
  it('budgetUse picks the tightest resource by ratio', () => {
    expect(
      budgetUse(
        parseResources({ 'requests.cpu': '20', 'requests.memory': '64Gi' }),
        parseResources({ 'requests.cpu': '10', 'requests.memory': '48Gi' }),
      ),
    ).toBe('requests.memory 48Gi/64Gi');
    expect(budgetUse(new Map(), new Map())).toBeUndefined();
  });
});

describe('planDefaultQuotas (CR4)', () => {
  it('gives uncovered namespaces their declared quota or the defaults while the headroom allows, in name order', () => {
    const p = project({ namespaces: [{ name: 'pay-a', quota: { hard: { 'requests.cpu': '6', pods: '10' } } }] });
    const snap = MemorySnapshot.of({
      projects: [p],
      namespaces: [ns('pay-a'), ns('pay-b'), ns('pay-c'), ns('pay-d'), ns('pay-gone', { terminating: true })],
      quotas: [
        quota('pay-d', { 'requests.cpu': '10', pods: '10' }),
        quota('pay-gone', { 'requests.cpu': '0', pods: '0' }, {}, 'other'),
      ],
    });
    // Budget 20 cpu: d has 10; a asks 6 (declared); b asks 2 (defaults); c asks 2 → 20, fits exactly.
    const plan = planDefaultQuotas(p, snap, '', TEST_NOW);
    expect(plan.create).toEqual([
      { namespace: 'pay-a', hard: { 'requests.cpu': '6', pods: '10' } },
      { namespace: 'pay-b', hard: { 'requests.cpu': '2', pods: '10' } },
      { namespace: 'pay-c', hard: { 'requests.cpu': '2', pods: '10' } },
    ]);
    expect(plan.blocked.size).toBe(0);
  });

  it('blocks a namespace whose default does not fit, saying by how much; nothing for a project without defaults', () => {
    const p = project();
    const snap = MemorySnapshot.of({
      projects: [p],
      namespaces: [ns('pay-a'), ns('pay-b')],
      quotas: [quota('pay-a', { 'requests.cpu': '19', pods: '10' })],
    });
    const plan = planDefaultQuotas(p, snap, '', TEST_NOW);
    expect(plan.create).toEqual([]);
    expect(plan.blocked.get('pay-b')).toBe(
      'quota tenantgate-quota does not fit the project budget: requests.cpu 2 asked, 1 of 20 left',
    );
    const bare = project({ namespaceDefaults: undefined });
    const plan2 = planDefaultQuotas(
      bare,
      MemorySnapshot.of({ projects: [bare], namespaces: [ns('pay-a')] }),
      '',
      TEST_NOW,
    );
    expect(plan2.blocked.get('pay-a')).toContain('neither a quota for it nor namespaceDefaults.quota');
  });

  it('plans nothing for a project being deleted', () => {
    const p = project({}, { deletionTimestamp: NOW });
    expect(
      planDefaultQuotas(p, MemorySnapshot.of({ projects: [p], namespaces: [ns('pay-a')] }), '', TEST_NOW).create,
    ).toEqual([]);
  });
});

/** A JSON value as a Lua table constructor, the way Argo CD hands objects to its Lua health checks. */
function toLua(value: unknown): string {
  if (value === null || value === undefined) return 'nil';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') {
    let out = '"';
    for (const byte of Buffer.from(value, 'utf8'))
      out +=
        byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c
          ? String.fromCharCode(byte)
          : `\\${String(byte).padStart(3, '0')}`;
    return `${out}"`;
  }
  if (Array.isArray(value)) return `{${value.map(toLua).join(', ')}}`;
  return `{${Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => `[${toLua(k)}] = ${toLua(v)}`)
    .join(', ')}}`;
}

describe('the status agrees with the Argo CD health check (manifests/argocd/health-project.lua)', () => {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const health = (p: Project): { status: string; message: string } => {
    const r = spawnSync(
      process.env['LUA'] ?? 'lua5.4',
      [`${root}test/fixtures/lua/run-health.lua`, `${root}manifests/argocd/health-project.lua`],
      { input: toLua(p), encoding: 'utf8', timeout: 10_000 },
    );
    if (r.error) throw r.error;
    if (r.status !== 0) throw new Error(r.stderr);
    const line = r.stdout.replace(/\n$/, '');
    return { status: line.slice(0, line.indexOf('\t')), message: line.slice(line.indexOf('\t') + 1) };
  };
  const withStatus = (p: Project, snap: MemorySnapshot, cascade?: CascadeReport): Project => ({
    ...p,
    status: computeStatus({ project: p, snapshot: snap, cluster: '', now: NOW, ...(cascade ? { cascade } : {}) }),
  });

  it('Healthy when Ready; Progressing before the first status and for a newer generation', () => {
    const p = project();
    const snap = MemorySnapshot.of({
      projects: [p],
      namespaces: [ns('pay-a')],
      quotas: [quota('pay-a', { 'requests.cpu': '2', pods: '10' })],
    });
    expect(health(withStatus(p, snap))).toEqual({ status: 'Healthy', message: 'the project is ready' });
    expect(health(p).status).toBe('Progressing');
    expect(health({ ...withStatus(p, snap), metadata: { ...p.metadata, generation: 4 } }).status).toBe('Progressing');
  });

  it('Healthy while a declared namespace is still Missing (Argo CD creates it in a later sync wave: no deadlock)', () => {
    const p = project({ namespaces: [{ name: 'pay-later' }] });
    expect(health(withStatus(p, MemorySnapshot.of({ projects: [p] }))).status).toBe('Healthy');
  });

  it('Degraded with the numbers when over budget, and with the namespaces when unhealthy', () => {
    const p = project();
    const over = MemorySnapshot.of({
      projects: [p],
      namespaces: [ns('pay-a')],
      quotas: [quota('pay-a', { 'requests.cpu': '21', pods: '10' })],
    });
    expect(health(withStatus(p, over))).toEqual({
      status: 'Degraded',
      message: 'requests.cpu: 21 allocated, budget 20 (pay-a 21)',
    });
    const mismatch = MemorySnapshot.of({
      projects: [p],
      namespaces: [ns('pay-a', { tenant: 'globex' })],
      quotas: [quota('pay-a', { 'requests.cpu': '2', pods: '10' })],
    });
    expect(health(withStatus(p, mismatch))).toEqual({
      status: 'Degraded',
      message: 'pay-a: LabelMismatch (label tenantgate.io/tenant is "globex", expected "acme")',
    });
  });

  it('Progressing with the remaining namespaces while Terminating', () => {
    const p = project({}, { deletionTimestamp: NOW });
    const cascade: CascadeReport = { remaining: [{ name: 'pay-a', deleting: true, conditions: [] }], foreign: [] };
    expect(health(withStatus(p, MemorySnapshot.of({ projects: [p] }), cascade))).toEqual({
      status: 'Progressing',
      message: 'waiting for 1 namespace to be deleted: pay-a',
    });
  });
});

describe('cascade classification and report (CR2)', () => {
  it('owns only namespaces whose label and project-uid both match; says why the others are left', () => {
    const p = project();
    const { owned, foreign } = classifyNamespaces(p, [
      ns('pay-b'),
      ns('pay-a'),
      ns('pay-old', { uid: 'uid-old' }),
      ns('pay-none', { uid: null }),
      ns('other-x', { project: 'other' }),
    ]);
    expect(owned.map((n) => n.metadata.name)).toEqual(['pay-a', 'pay-b']);
    expect(foreign).toEqual([
      { name: 'pay-none', reason: 'no tenantgate.io/project-uid annotation' },
      { name: 'pay-old', reason: 'tenantgate.io/project-uid is uid-old, not uid-pay' },
    ]);
  });

  it('reports each remaining namespace with its own deletion conditions that are True', () => {
    const deleting = ns('pay-a', {
      terminating: true,
      conditions: [
        {
          type: 'NamespaceDeletionDiscoveryFailure',
          status: 'False',
          reason: 'ResourcesDiscovered',
          message: 'All resources successfully discovered',
        },
        {
          type: 'NamespaceContentRemaining',
          status: 'True',
          reason: 'SomeResourcesRemain',
          message: 'Some resources are remaining: configmaps. has 1 resource instances',
        },
        {
          type: 'NamespaceFinalizersRemaining',
          status: 'True',
          reason: 'SomeFinalizersRemain',
          message: 'Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances',
        },
      ],
    });
    expect(remainingReport([deleting, ns('pay-b')], [])).toEqual({
      remaining: [
        {
          name: 'pay-a',
          phase: 'Terminating',
          deleting: true,
          conditions: [
            'NamespaceContentRemaining: Some resources are remaining: configmaps. has 1 resource instances',
            'NamespaceFinalizersRemaining: Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances',
          ],
        },
        { name: 'pay-b', phase: 'Active', deleting: false, conditions: [] },
      ],
      foreign: [],
    });
  });
});
