/** A reconcile stops at its next step once its signal aborts (the Lease was lost): no further writes. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { ControllerApi } from '../../src/controller/kube.js';
import { Reconciler } from '../../src/controller/reconcile.js';
import type { Informers } from '../../src/kube/informers.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Project } from '../../src/validate/types.js';

function setup(project: Project) {
  const writes: string[] = [];
  const snapshot = MemorySnapshot.of({
    projects: [project],
    namespaces: ['a', 'b', 'c'].map((n) => ({
      metadata: {
        name: `shop-${n}`,
        uid: `ns-${n}`,
        labels: { 'tenantgate.io/project': 'shop', 'tenantgate.io/tenant': 'acme' },
        annotations: { 'tenantgate.io/project-uid': 'u1' },
      },
    })),
  });
  const informers = { snapshot, applyWritten: () => {}, forget: () => {} } as unknown as Informers;
  // Every API call the steps could make, recorded; each write answers with the object it was given.
  const api = {
    addFinalizer: async (p: Project) => (
      writes.push('addFinalizer'),
      { ...p, metadata: { ...p.metadata, finalizers: ['tenantgate.io/cascade-delete'] } }
    ),
    replaceStatus: async (p: Project, status: Project['status']) => (writes.push('replaceStatus'), { ...p, status }),
    createQuota: async () => (writes.push('createQuota'), 'exists' as const),
    deleteNamespace: async (name: string) => (writes.push(`deleteNamespace ${name}`), 'deleted' as const),
    namespacesLabelled: async () => [],
    deleteLedger: async () => void writes.push('deleteLedger'),
    removeFinalizer: async (p: Project) => (writes.push('removeFinalizer'), p),
    readConfigMap: async () => undefined,
    crdDeletionTimestamp: async () => undefined,
  } as unknown as ControllerApi;
  // The namespaces hold nothing (ADR 0096): the cascade deletes them at once.
  const inventory = {
    contents: async (names: readonly string[]) => names.map((namespace) => ({ namespace, kinds: [], unknown: [] })),
  };
  return { writes, reconciler: new Reconciler({ api, informers, inventory, config: DEFAULT_CONFIG, log: () => {} }) };
}

const project = (deleting: boolean): Project => ({
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: {
    name: 'shop',
    uid: 'u1',
    generation: 1,
    ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['tenantgate.io/cascade-delete'] } : {}),
  },
  spec: { tenant: 'acme', quota: { hard: { pods: '10' } }, namespaceDefaults: { quota: { hard: { pods: '1' } } } },
});

describe('reconcile with an AbortSignal', () => {
  it('writes as usual while the signal is live', async () => {
    const { writes, reconciler } = setup(project(false));
    await reconciler.reconcile('shop', new AbortController().signal);
    expect(writes).toContain('addFinalizer');
    expect(writes).toContain('replaceStatus');
  });

  it('makes no write at all once the signal has aborted (a live project)', async () => {
    const { writes, reconciler } = setup(project(false));
    const abort = new AbortController();
    abort.abort();
    await expect(reconciler.reconcile('shop', abort.signal)).rejects.toThrow(/abort/i);
    expect(writes).toEqual([]);
  });

  it('a cascade sends no delete and never removes the finalizer once aborted', async () => {
    const { writes, reconciler } = setup(project(true));
    const abort = new AbortController();
    abort.abort();
    await expect(reconciler.reconcile('shop', abort.signal)).rejects.toThrow(/abort/i);
    expect(writes).toEqual([]);
    const live = setup(project(true));
    await live.reconciler.reconcile('shop', new AbortController().signal);
    expect(live.writes.filter((w) => w.startsWith('deleteNamespace'))).toHaveLength(3);
  });
});
