/**
 * A reconcile decides at one clock, the one it is given: the Argo CD grace of a new namespace and the
 * times of the conditions it writes both follow it (a second time source, such as Date.now() in a step,
 * makes the grace years long or the condition times today's).
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { ControllerApi } from '../../src/controller/kube.js';
import { Reconciler } from '../../src/controller/reconcile.js';
import { fixedClock } from '../../src/clock.js';
import type { Informers } from '../../src/kube/informers.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Project } from '../../src/validate/types.js';

const AT = '2031-03-04T05:06:07Z';

const project: Project = {
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: { name: 'shop', uid: 'u1', generation: 1, finalizers: ['tenantgate.io/cascade-delete'] },
  spec: { tenant: 'acme', quota: { hard: { pods: '10' } }, namespaceDefaults: { quota: { hard: { pods: '1' } } } },
};

function setup() {
  const writes: string[] = [];
  const statuses: Project['status'][] = [];
  const snapshot = MemorySnapshot.of({
    projects: [project],
    namespaces: [
      {
        metadata: {
          name: 'shop-a',
          uid: 'ns-a',
          // Created by an Argo CD sync 10 s before the clock's instant: 50 s of its grace are left.
          creationTimestamp: '2031-03-04T05:05:57Z',
          labels: { 'tenantgate.io/project': 'shop', 'tenantgate.io/tenant': 'acme' },
          annotations: {
            'tenantgate.io/project-uid': 'u1',
            'argocd.argoproj.io/tracking-id': 'shop:/Namespace:/shop-a',
          },
        },
      },
    ],
  });
  const informers = { snapshot, applyWritten: () => {}, forget: () => {} } as unknown as Informers;
  const api = {
    replaceStatus: async (p: Project, status: Project['status']) => (statuses.push(status), { ...p, status }),
    createQuota: async () => (writes.push('createQuota'), 'created' as const),
    recordEvent: async () => {},
  } as unknown as ControllerApi;
  const clock = fixedClock(Date.parse(AT));
  const reconciler = new Reconciler({ api, informers, config: DEFAULT_CONFIG, log: () => {}, clock });
  return { writes, statuses, reconciler };
}

describe('the reconciler reads one clock', () => {
  it("leaves a new Argo CD namespace to its sync for the grace left at the clock's instant", async () => {
    const { writes, reconciler } = setup();
    const result = await reconciler.reconcile('shop');
    expect(writes).not.toContain('createQuota');
    expect(result).toEqual({ kind: 'Requeue', reason: "left to Argo CD's sync for now: shop-a", afterMs: 50_100 });
  });

  it("stamps the conditions it writes with the clock's instant", async () => {
    const { statuses, reconciler } = setup();
    await reconciler.reconcile('shop');
    const times = (statuses[0]?.conditions ?? []).map((c) => c.lastTransitionTime);
    expect(times.length).toBeGreaterThan(0);
    expect(new Set(times)).toEqual(new Set([AT]));
  });
});
