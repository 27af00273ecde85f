/**
 * The reconcile of a deleting Project wires ADR 0096's decisions in order: breaker → policy → inventory
 * → confirmation → cascade. The API is recorded (every call the steps could make answers as the API
 * server would); what matters is which writes happen: no namespace delete while the breaker holds or a
 * namespace with data waits, a release (never a delete) for Orphan, the finalizer only when nothing remains.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type TenantgateConfig } from '../../src/config/config.js';
import type { ControllerApi } from '../../src/controller/kube.js';
import { Reconciler } from '../../src/controller/reconcile.js';
import { fixedClock } from '../../src/clock.js';
import type { NamespaceContents } from '../../src/controller/deletion/inventory.js';
import { inventoryResources } from '../../src/controller/deletion/discovery-inventory.js';
import { waitingDeletions } from '../../src/controller/deletion-metrics.js';
import type { Informers } from '../../src/kube/informers.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { NamespaceObject, Project } from '../../src/validate/types.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');

const namespace = (name: string, project = 'shop', uid = 'u1'): NamespaceObject => ({
  metadata: {
    name,
    uid: `ns-${name}`,
    resourceVersion: '7',
    labels: { 'tenantgate.io/project': project, 'tenantgate.io/tenant': 'acme' },
    annotations: { 'tenantgate.io/project-uid': uid },
  },
});

const deleting = (
  name: string,
  extra: { annotations?: Record<string, string>; deletionPolicy?: string; at?: number; uid?: string } = {},
): Project => ({
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: {
    name,
    uid: extra.uid ?? 'u1',
    generation: 1,
    resourceVersion: '1',
    deletionTimestamp: new Date(extra.at ?? NOW - 1000).toISOString(),
    finalizers: ['tenantgate.io/cascade-delete'],
    ...(extra.annotations ? { annotations: extra.annotations } : {}),
  },
  spec: {
    tenant: 'acme',
    quota: { hard: { pods: '10' } },
    namespaceDefaults: { quota: { hard: { pods: '1' } } },
    ...(extra.deletionPolicy ? { deletionPolicy: extra.deletionPolicy } : {}),
  } as Project['spec'],
});

interface Setup {
  projects: Project[];
  namespaces: NamespaceObject[];
  /** Namespace → what it holds (absent: nothing). */
  holds?: Record<string, NamespaceContents['kinds']>;
  breaker?: Record<string, string>;
  config?: TenantgateConfig;
  inventoryFails?: boolean;
}

function setup(s: Setup) {
  const writes: string[] = [];
  const events: string[] = [];
  let status: Project['status'];
  let breaker = s.breaker ? { data: s.breaker, resourceVersion: '3' } : undefined;
  const snapshot = MemorySnapshot.of({ projects: s.projects, namespaces: s.namespaces });
  // What the controller wrote goes into its snapshot, as Informers.applyWritten does.
  const applyWritten = (kind: string, o: never) => {
    if (kind === 'Namespace') snapshot.upsertNamespace(o);
  };
  const informers = { snapshot, applyWritten, forget: () => {} } as unknown as Informers;
  const api = {
    replaceStatus: async (p: Project, st: Project['status']) => (
      writes.push('replaceStatus'),
      (status = st),
      { ...p, metadata: { ...p.metadata, resourceVersion: '2' }, status: st }
    ),
    deleteNamespace: async (name: string) => (writes.push(`deleteNamespace ${name}`), 'deleted' as const),
    namespacesLabelled: async () => [],
    deleteLedger: async () => void writes.push('deleteLedger'),
    removeFinalizer: async (p: Project) => (writes.push('removeFinalizer'), p),
    patchNamespaceMetadata: async (name: string, patch: { metadata: { labels: Record<string, string | null> } }) => {
      writes.push(`patchNamespace ${name} ${JSON.stringify(patch)}`);
      const released = namespace(name);
      released.metadata.labels = {
        'tenantgate.io/released-from': patch.metadata.labels['tenantgate.io/released-from']!,
      };
      return released;
    },
    readConfigMap: async () => breaker,
    writeConfigMap: async (_ns: string, name: string, data: Record<string, string>, rv: string | undefined) => {
      writes.push(`writeConfigMap ${name} ${rv ?? 'create'}`);
      breaker = { data, resourceVersion: '4' };
    },
    crdDeletionTimestamp: async () => undefined,
    recordEvent: async (_p: Project, e: { reason: string; message: string }) =>
      void events.push(`${e.reason}: ${e.message}`),
  } as unknown as ControllerApi;
  const inventory = {
    contents: async (names: readonly string[]) => {
      if (s.inventoryFails) throw new Error('discovery failed');
      return names.map((n) => ({ namespace: n, kinds: s.holds?.[n] ?? [], unknown: [] }));
    },
  };
  const reconciler = new Reconciler({
    api,
    informers,
    inventory,
    config: s.config ?? DEFAULT_CONFIG,
    log: () => {},
    clock: fixedClock(NOW),
  });
  return { writes, events, reconciler, status: () => status, breaker: () => breaker };
}

const PVC = [{ kind: 'PersistentVolumeClaim', count: 1, more: false }];

describe('a deleting Project (ADR 0096)', () => {
  it('deletes the namespaces that hold nothing at once and keeps the one with data, saying what it holds', async () => {
    const t = setup({
      projects: [deleting('shop')],
      namespaces: [namespace('shop-empty'), namespace('shop-data')],
      holds: { 'shop-data': PVC },
    });
    const result = await t.reconciler.reconcile('shop');
    expect(t.writes.filter((w) => w.startsWith('deleteNamespace'))).toEqual(['deleteNamespace shop-empty']);
    expect(t.writes).not.toContain('removeFinalizer');
    expect(result).toMatchObject({ kind: 'Requeue', afterMs: 30_000 });
    const waiting = t.status()?.conditions?.find((c) => c.type === 'DeletionConfirmed');
    expect(waiting).toMatchObject({ status: 'False', reason: 'AwaitingConfirmation' });
    expect(waiting?.message).toContain('shop-data: 1 PersistentVolumeClaim');
    expect(waiting?.message).toContain('tenantgate.io/deletion-confirmed: u1');
    expect(t.events.filter((e) => e.startsWith('DeletionAwaitingConfirmation: '))).toHaveLength(1);
  });

  it('deletes every namespace once the annotation names the uid, and not for another uid', async () => {
    const other = setup({
      projects: [deleting('shop', { annotations: { 'tenantgate.io/deletion-confirmed': 'u0' } })],
      namespaces: [namespace('shop-data')],
      holds: { 'shop-data': PVC },
    });
    await other.reconciler.reconcile('shop');
    expect(other.writes.filter((w) => w.startsWith('deleteNamespace'))).toEqual([]);

    const t = setup({
      projects: [deleting('shop', { annotations: { 'tenantgate.io/deletion-confirmed': 'u1' } })],
      namespaces: [namespace('shop-data')],
      holds: { 'shop-data': PVC },
    });
    await t.reconciler.reconcile('shop');
    expect(t.writes).toContain('deleteNamespace shop-data');
    expect(t.status()?.conditions?.find((c) => c.type === 'DeletionConfirmed')).toMatchObject({ status: 'True' });
  });

  it('an inventory that fails deletes nothing (fails closed)', async () => {
    const t = setup({ projects: [deleting('shop')], namespaces: [namespace('shop-a')], inventoryFails: true });
    await expect(t.reconciler.reconcile('shop')).rejects.toThrow(/discovery failed/);
    expect(t.writes.filter((w) => w.startsWith('deleteNamespace'))).toEqual([]);
  });

  it('Orphan releases every namespace (labels, annotations), deletes none, then removes the finalizer', async () => {
    const t = setup({
      projects: [deleting('shop', { deletionPolicy: 'Orphan' })],
      namespaces: [namespace('shop-a')],
      holds: { 'shop-a': PVC },
    });
    await t.reconciler.reconcile('shop');
    expect(t.writes.filter((w) => w.startsWith('deleteNamespace'))).toEqual([]);
    const patch = t.writes.find((w) => w.startsWith('patchNamespace shop-a'))!;
    expect(JSON.parse(patch.slice('patchNamespace shop-a '.length))).toEqual({
      metadata: {
        resourceVersion: '7',
        labels: { 'tenantgate.io/project': null, 'tenantgate.io/released-from': 'shop' },
        annotations: { 'tenantgate.io/project-uid': null, 'tenantgate.io/released-at': '2026-06-01T12:00:00Z' },
      },
    });
    expect(t.writes).toContain('removeFinalizer');
    expect(t.events).toContain(
      'CascadeFinished: every namespace of the project is released (deletionPolicy Orphan), none deleted; finalizer removed',
    );
  });

  it('tenantgate.yaml deletion.policy Orphan applies to a Project without its own', async () => {
    const config = { ...DEFAULT_CONFIG, deletion: { ...DEFAULT_CONFIG.deletion, policy: 'Orphan' as const } };
    const t = setup({ projects: [deleting('shop')], namespaces: [namespace('shop-a')], config });
    await t.reconciler.reconcile('shop');
    expect(t.writes.filter((w) => w.startsWith('deleteNamespace'))).toEqual([]);
    expect(t.writes.some((w) => w.startsWith('patchNamespace shop-a'))).toBe(true);
  });

  it('more Projects deleting in the window than allowed: the breaker trips (recorded once), nothing is deleted or released', async () => {
    const names = ['p1', 'p2', 'p3', 'p4'];
    const t = setup({
      projects: names.map((n, i) => deleting(n, { uid: `u${i}`, deletionPolicy: i === 0 ? 'Orphan' : 'Delete' })),
      namespaces: names.map((n, i) => namespace(`${n}-a`, n, `u${i}`)),
    });
    for (const n of names) await t.reconciler.reconcile(n);
    expect(t.writes.filter((w) => /^(deleteNamespace|patchNamespace|removeFinalizer)/.test(w))).toEqual([]);
    expect(t.writes.filter((w) => w.startsWith('writeConfigMap'))).toEqual([
      'writeConfigMap tenantgate-deletion-breaker create',
    ]);
    expect(t.breaker()?.data).toMatchObject({ projects: 'p1,p2,p3,p4', trippedAt: new Date(NOW).toISOString() });
    const paused = t.status()?.conditions?.find((c) => c.type === 'DeletionPaused');
    expect(paused).toMatchObject({ status: 'True', reason: 'BreakerTripped' });
    expect(paused?.message).toMatch(/^\[D2\] the deletion breaker tripped/);
  });

  it('a breaker resumed after the deletions began lets them proceed; one tripped and not resumed holds even one', async () => {
    const resumed = setup({
      projects: [deleting('shop')],
      namespaces: [namespace('shop-a')],
      breaker: { trippedAt: new Date(NOW - 5000).toISOString(), resumedAt: new Date(NOW - 500).toISOString() },
    });
    await resumed.reconciler.reconcile('shop');
    expect(resumed.writes).toContain('deleteNamespace shop-a');

    const held = setup({
      projects: [deleting('shop')],
      namespaces: [namespace('shop-a')],
      breaker: { trippedAt: new Date(NOW - 5000).toISOString() },
    });
    await held.reconciler.reconcile('shop');
    expect(held.writes.filter((w) => w.startsWith('deleteNamespace'))).toEqual([]);
    expect(held.writes.filter((w) => w.startsWith('writeConfigMap'))).toEqual([]);
  });
});

describe('discovery (inventoryResources) and the gauges (waitingDeletions)', () => {
  it('lists only namespaced resources with list and delete, no subresources, no derived kinds', () => {
    const got = inventoryResources('apps', 'apps/v1', {
      resources: [
        { name: 'deployments', namespaced: true, kind: 'Deployment', verbs: ['list', 'delete', 'get'] },
        { name: 'deployments/scale', namespaced: true, kind: 'Scale', verbs: ['list', 'delete'] },
        { name: 'controllerrevisions', namespaced: true, kind: 'ControllerRevision', verbs: ['list', 'delete'] },
        { name: 'readonly', namespaced: true, kind: 'ReadOnly', verbs: ['list', 'get'] },
        { name: 'clusterthings', namespaced: false, kind: 'ClusterThing', verbs: ['list', 'delete'] },
      ],
    });
    expect(got).toEqual([
      {
        group: 'apps',
        resource: 'deployments',
        kind: 'Deployment',
        path: '/apis/apps/v1/namespaces/{namespace}/deployments',
      },
    ]);
    expect(
      inventoryResources('', 'v1', {
        resources: [{ name: 'pods', namespaced: true, kind: 'Pod', verbs: ['list', 'delete'] }],
      })[0]?.path,
    ).toBe('/api/v1/namespaces/{namespace}/pods');
  });

  it('a deleting Project reports BreakerTripped over AwaitingConfirmation; a live one nothing', () => {
    const withConditions = (p: Project, conditions: Array<[string, 'True' | 'False']>): Project => ({
      ...p,
      status: { conditions: conditions.map(([type, status]) => ({ type, status, reason: 'r', message: 'm' })) },
    });
    const live = withConditions(deleting('live'), [['DeletionConfirmed', 'False']]);
    delete live.metadata.deletionTimestamp;
    const snapshot = MemorySnapshot.of({
      projects: [
        withConditions(deleting('a'), [['DeletionConfirmed', 'False']]),
        withConditions(deleting('b'), [
          ['DeletionConfirmed', 'False'],
          ['DeletionPaused', 'True'],
        ]),
        withConditions(deleting('c'), [['DeletionConfirmed', 'True']]),
        live,
      ],
      namespaces: [],
    });
    expect(waitingDeletions(snapshot)).toEqual([
      { project: 'a', reason: 'AwaitingConfirmation' },
      { project: 'b', reason: 'BreakerTripped' },
    ]);
  });
});
