/**
 * What the caches keep of an object (`slim`), the paged list functions, and MemorySnapshot's
 * incremental counts (the P3 memory and per-event CPU fixes).
 */
import * as k8s from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { computeStatus } from '../../src/controller/status.js';
import { LAST_APPLIED_ANNOTATION, LIST_PAGE_SIZE, listInPages, slim } from '../../src/kube/lists.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import {
  ANNOTATION_PROJECT_UID,
  LABEL_PROJECT,
  LABEL_TENANT,
  type NamespaceObject,
  type Project,
  type ResourceQuotaObject,
} from '../../src/validate/types.js';

const managedFields = [
  {
    manager: 'kubectl-client-side-apply',
    operation: 'Update',
    apiVersion: 'v1',
    time: '2026-01-01T00:00:00Z',
    fieldsType: 'FieldsV1',
    fieldsV1: { 'f:metadata': { 'f:labels': { 'f:team': {} } } },
  },
];

/** A Namespace as the API server serves it. */
function servedNamespace(name: string, extra: Record<string, unknown> = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name,
      uid: `uid-${name}`,
      resourceVersion: '42',
      creationTimestamp: '2026-01-01T00:00:00Z',
      labels: { [LABEL_PROJECT]: 'pay', [LABEL_TENANT]: 'acme', 'kubernetes.io/metadata.name': name },
      annotations: {
        [ANNOTATION_PROJECT_UID]: 'uid-pay',
        [LAST_APPLIED_ANNOTATION]: '{"apiVersion":"v1","kind":"Namespace"}',
      },
      managedFields,
      ...extra,
    },
    spec: { finalizers: ['kubernetes'] },
    status: { phase: 'Active' },
  };
}

function servedProject(): Project {
  return {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: {
      name: 'pay',
      uid: 'uid-pay',
      resourceVersion: '40',
      generation: 3,
      creationTimestamp: '2026-01-01T00:00:00Z',
      finalizers: ['tenantgate.io/cascade-delete'],
      annotations: { [LAST_APPLIED_ANNOTATION]: '{"big":"copy"}' },
      managedFields,
    } as Project['metadata'],
    spec: {
      tenant: 'acme',
      quota: { hard: { 'requests.cpu': '20', pods: '100' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', pods: '10' } } },
      namespaces: [{ name: 'pay-api', quota: { hard: { 'requests.cpu': '4', pods: '10' } } }, { name: 'pay-web' }],
    },
    status: {
      phase: 'Active',
      allocated: { 'requests.cpu': '5' },
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'AllHealthy',
          message: '',
          lastTransitionTime: '2026-01-01T00:01:00Z',
        },
      ],
    },
  };
}

function servedQuota(namespace: string, hard: Record<string, string>): ResourceQuotaObject {
  return {
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: {
      name: 'tenantgate-quota',
      namespace,
      uid: `q-${namespace}`,
      resourceVersion: '43',
      labels: { [LABEL_PROJECT]: 'pay' },
      managedFields,
      ownerReferences: [],
    } as ResourceQuotaObject['metadata'],
    spec: { hard },
    status: { hard, used: { 'requests.cpu': '500m', pods: '3' } },
  };
}

describe('slim', () => {
  it('keeps the metadata fields tenantgate reads and drops the rest, in place', () => {
    const ns = servedNamespace('pay-api', {
      deletionTimestamp: '2026-01-02T00:00:00Z',
      finalizers: ['x'],
      generation: 1,
      namespace: '',
      ownerReferences: [{ kind: 'X' }],
      generateName: 'pay-',
    });
    const { spec, status } = ns;
    const out = slim(ns);
    expect(out).toBe(ns);
    expect(ns.metadata).toEqual({
      name: 'pay-api',
      namespace: '',
      uid: 'uid-pay-api',
      resourceVersion: '42',
      generation: 1,
      creationTimestamp: '2026-01-01T00:00:00Z',
      labels: { [LABEL_PROJECT]: 'pay', [LABEL_TENANT]: 'acme', 'kubernetes.io/metadata.name': 'pay-api' },
      annotations: { [ANNOTATION_PROJECT_UID]: 'uid-pay' },
      finalizers: ['x'],
      deletionTimestamp: '2026-01-02T00:00:00Z',
    });
    // Everything outside metadata is untouched (the same objects).
    expect(ns.spec).toBe(spec);
    expect(ns.status).toBe(status);
    expect(ns.apiVersion).toBe('v1');
    expect(ns.kind).toBe('Namespace');
  });

  it('drops annotations that held only the last-applied configuration, and is idempotent', () => {
    const p = servedProject();
    slim(p);
    expect(p.metadata).toEqual({
      name: 'pay',
      uid: 'uid-pay',
      resourceVersion: '40',
      generation: 3,
      creationTimestamp: '2026-01-01T00:00:00Z',
      finalizers: ['tenantgate.io/cascade-delete'],
    });
    const once = JSON.stringify(p);
    const meta = p.metadata;
    slim(p);
    expect(JSON.stringify(p)).toBe(once);
    // Already slim: left as it is, not rebuilt.
    expect(p.metadata).toBe(meta);
  });

  it('leaves objects without metadata alone and does not copy an annotation map it does not change', () => {
    const bare = { kind: 'Status' } as { kind: string; metadata?: object };
    expect(slim(bare)).toEqual({ kind: 'Status' });
    const annotations = { a: 'b' };
    const o = { metadata: { name: 'x', annotations, managedFields } };
    slim(o);
    expect(o.metadata).toEqual({ name: 'x', annotations: { a: 'b' } });
    expect((o.metadata as { annotations: object }).annotations).toBe(annotations);
  });

  it('changes nothing the controller computes from the snapshot', () => {
    const full = () => ({
      projects: [servedProject()],
      namespaces: [
        servedNamespace('pay-api'),
        servedNamespace('pay-web', { deletionTimestamp: '2026-01-02T00:00:00Z' }),
        servedNamespace('pay-extra'),
      ] as unknown as NamespaceObject[],
      quotas: [
        servedQuota('pay-api', { 'requests.cpu': '4', pods: '10' }),
        servedQuota('pay-extra', { 'requests.cpu': '1' }),
      ],
    });
    const a = full();
    const b = full();
    for (const o of [...b.projects, ...b.namespaces, ...b.quotas]) slim(o);
    const status = (s: ReturnType<typeof full>) =>
      computeStatus({
        project: s.projects[0]!,
        snapshot: MemorySnapshot.of(s),
        cluster: '',
        now: '2026-01-01T00:00:00Z',
      });
    expect(status(b)).toEqual(status(a));
    expect(JSON.stringify(b).length).toBeLessThan(JSON.stringify(a).length * 0.7);
  });
});

describe('listInPages', () => {
  it('asks for pages of LIST_PAGE_SIZE with the continue token, and returns one slim plain list at the first page resourceVersion', async () => {
    const calls: Array<{ limit: number; _continue?: string }> = [];
    // Typed pages (client-node: `_continue`, Date fields) and a raw one (custom objects: `continue`).
    const typed = (name: string): k8s.V1Namespace => ({
      metadata: {
        name,
        resourceVersion: '7',
        deletionTimestamp: new Date('2026-01-02T00:00:00Z'),
        managedFields: [{ manager: 'm' }],
      },
      status: { phase: 'Terminating' },
    });
    const pages = [
      { metadata: { resourceVersion: '100', _continue: 'a' }, items: [typed('n1'), typed('n2')] },
      { metadata: { resourceVersion: '100', continue: 'b' }, items: [servedNamespace('n3')] },
      { metadata: { resourceVersion: '100', _continue: '' }, items: [] },
    ];
    const list = await listInPages('v1', 'NamespaceList', async (params) => {
      calls.push(params);
      return pages[calls.length - 1]!;
    });
    expect(calls).toEqual([
      { limit: LIST_PAGE_SIZE },
      { limit: LIST_PAGE_SIZE, _continue: 'a' },
      { limit: LIST_PAGE_SIZE, _continue: 'b' },
    ]);
    expect(list.apiVersion).toBe('v1');
    expect(list.kind).toBe('NamespaceList');
    expect(list.metadata).toEqual({ resourceVersion: '100' });
    expect(list.items.map((i) => i.metadata?.name)).toEqual(['n1', 'n2', 'n3']);
    // Plain JSON: dates are strings, as a watch delivers them.
    expect(list.items[0]).toEqual({
      metadata: { name: 'n1', resourceVersion: '7', deletionTimestamp: '2026-01-02T00:00:00.000Z' },
      status: { phase: 'Terminating' },
    });
    expect(list.items[2]!.metadata).not.toHaveProperty('managedFields');
    expect(list.items[2]!.metadata?.annotations).toEqual({ [ANNOTATION_PROJECT_UID]: 'uid-pay' });
  });

  it('stops after one page when there is no continue token', async () => {
    let n = 0;
    const list = await listInPages('tenantgate.io/v1alpha1', 'ProjectList', async () => {
      n += 1;
      return { metadata: { resourceVersion: '5' }, items: [servedProject()] };
    });
    expect(n).toBe(1);
    expect(list.items).toHaveLength(1);
    expect(list.metadata?.resourceVersion).toBe('5');
  });

  it('fails when a page fails (the informer lists again)', async () => {
    let n = 0;
    const failing = listInPages('v1', 'NamespaceList', async () => {
      n += 1;
      if (n === 2) throw new Error('410 continue token expired');
      return { metadata: { resourceVersion: '1', _continue: 'x' }, items: [] };
    });
    await expect(failing).rejects.toThrow('410');
  });
});

describe('MemorySnapshot.sizes', () => {
  const q = (namespace: string, name: string): ResourceQuotaObject => ({
    metadata: { namespace, name },
    spec: { hard: {} },
  });
  const n = (name: string, project?: string): NamespaceObject => ({
    metadata: { name, ...(project ? { labels: { [LABEL_PROJECT]: project } } : {}) },
  });

  it('counts as objects come and go: re-upserting a key or deleting a missing one changes nothing', () => {
    const s = new MemorySnapshot();
    expect(s.sizes).toEqual({ projects: 0, namespaces: 0, quotas: 0 });
    s.upsertQuota(q('a', 'x'));
    s.upsertQuota(q('a', 'x'));
    s.upsertQuota(q('a', 'y'));
    s.upsertQuota(q('b', 'x'));
    s.upsertQuota({ metadata: { name: 'no-namespace' } });
    expect(s.sizes.quotas).toBe(3);
    s.deleteQuota('a', 'missing');
    s.deleteQuota('missing', 'x');
    expect(s.sizes.quotas).toBe(3);
    s.deleteQuota('a', 'x');
    s.deleteQuota('a', 'x');
    expect(s.sizes.quotas).toBe(2);
    s.deleteQuota('a', 'y');
    s.deleteQuota('b', 'x');
    expect(s.sizes.quotas).toBe(0);
    expect([...s.quotasInNamespace('a')]).toEqual([]);
    s.upsertQuota(q('a', 'x'));
    expect(s.sizes.quotas).toBe(1);

    s.upsertNamespace(n('a', 'p'));
    s.upsertNamespace(n('a', 'other'));
    s.upsertNamespace(n('b'));
    s.upsertProject({ metadata: { name: 'p' }, spec: { tenant: 't' } });
    s.upsertProject({ metadata: { name: 'p' }, spec: { tenant: 't' } });
    expect(s.sizes).toEqual({ projects: 1, namespaces: 2, quotas: 1 });
    s.deleteNamespace('a');
    s.deleteProject('p');
    expect(s.sizes).toEqual({ projects: 0, namespaces: 1, quotas: 1 });
  });

  it('agrees with the contents after random operations', () => {
    const s = new MemorySnapshot();
    let seed = 1;
    const rnd = (k: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % k);
    for (let i = 0; i < 5000; i++) {
      const ns = `ns${rnd(20)}`;
      const name = `q${rnd(5)}`;
      if (rnd(3) === 0) s.deleteQuota(ns, name);
      else s.upsertQuota(q(ns, name));
    }
    let counted = 0;
    for (let i = 0; i < 20; i++) counted += [...s.quotasInNamespace(`ns${i}`)].length;
    expect(s.sizes.quotas).toBe(counted);
  });
});
