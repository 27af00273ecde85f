/**
 * The pure decisions of a Project's deletion (docs/adr/0096-deletion-loses-no-data.md): the inventory,
 * the confirmation, the cascade/release plan and the breaker, at fixed instants (no wall clock).
 */
import { describe, expect, it } from 'vitest';
import type { NamespaceObject, Project } from '../../src/validate/types.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { deletionConfirmed } from '../../src/controller/deletion/confirmation.js';
import {
  classifyContents,
  describeContents,
  holdsNothing,
  resourcesHolding,
  type InventoryResource,
} from '../../src/controller/deletion/inventory.js';
import { awaitingMessage, deletionPolicyOf, planCascade, releasePatch } from '../../src/controller/deletion/plan.js';
import { breakerData, decideBreaker, isTripped, parseBreaker } from '../../src/controller/deletion/breaker.js';

const T0 = Date.parse('2026-12-01T10:00:00Z');
const res = (group: string, resource: string, kind: string): InventoryResource => ({ group, resource, kind });
const PODS = res('', 'pods', 'Pod');
const PVCS = res('', 'persistentvolumeclaims', 'PersistentVolumeClaim');
const CMS = res('', 'configmaps', 'ConfigMap');
const SAS = res('', 'serviceaccounts', 'ServiceAccount');
const QUOTAS = res('', 'resourcequotas', 'ResourceQuota');
const EVENTS = res('', 'events', 'Event');
const DEPLOYS = res('apps', 'deployments', 'Deployment');
const obj = (name: string, labels?: Record<string, string>) => ({ metadata: { name, ...(labels ? { labels } : {}) } });
const project = (name: string, extra: Partial<Project['metadata']> = {}, spec: object = {}): Project =>
  ({ metadata: { name, uid: `uid-${name}`, ...extra }, spec: { tenant: 't', ...spec } }) as Project;

describe('inventory', () => {
  it('leaves out what tenantgate and Kubernetes made, counts the rest by kind', () => {
    const c = classifyContents('team-a-data', [
      { resource: CMS, items: [obj('kube-root-ca.crt'), obj('app-config')], more: false },
      { resource: SAS, items: [obj('default')], more: false },
      {
        resource: QUOTAS,
        items: [obj('tenantgate-quota', { 'app.kubernetes.io/managed-by': 'tenantgate' })],
        more: false,
      },
      { resource: EVENTS, items: [obj('e1'), obj('e2')], more: true },
      { resource: PODS, items: [obj('a'), obj('b')], more: false },
      { resource: PVCS, items: [obj('data')], more: false },
      { resource: DEPLOYS, items: [obj('web')], more: false },
    ]);
    expect(describeContents(c)).toBe('team-a-data: 1 ConfigMap, 1 Deployment, 1 PersistentVolumeClaim, 2 Pods');
    expect(holdsNothing(c)).toBe(false);
  });

  it('a namespace with only what was made for it holds nothing', () => {
    const c = classifyContents('empty', [
      { resource: CMS, items: [obj('kube-root-ca.crt')], more: false },
      { resource: SAS, items: [obj('default')], more: false },
      { resource: EVENTS, items: [obj('e')], more: false },
    ]);
    expect(holdsNothing(c)).toBe(true);
  });

  it('a failed list is unknown contents: the namespace waits (fails closed)', () => {
    const c = classifyContents('x', [{ resource: PVCS, error: 'forbidden' }]);
    expect(holdsNothing(c)).toBe(false);
    expect(describeContents(c)).toBe('x: unknown contents (could not list persistentvolumeclaims (forbidden))');
  });

  it('a truncated list says "at least"', () => {
    const c = classifyContents('x', [{ resource: PODS, items: [obj('a')], more: true }]);
    expect(describeContents(c)).toBe('x: 1+ Pods');
  });
});

describe('what is left in a terminating namespace (the AllowList finalizer)', () => {
  const ALLOW_LISTS = res('tenantgate.io', 'allowlists', 'AllowList');
  const notAllowLists = (r: InventoryResource) => r.group === 'tenantgate.io' && r.resource === 'allowlists';

  it('counts every object whoever made it, leaves out the derived kinds and the excepted resource', () => {
    const held = resourcesHolding(
      [
        { resource: ALLOW_LISTS, items: [obj('tenantgate-allow')], more: false },
        { resource: EVENTS, items: [obj('e')], more: true },
        { resource: CMS, items: [obj('kube-root-ca.crt')], more: false },
        { resource: QUOTAS, items: [], more: false },
        { resource: PVCS, items: [obj('data')], more: false },
      ],
      notAllowLists,
    );
    expect(held).toEqual(['configmaps', 'persistentvolumeclaims']);
  });

  it('nothing but the AllowList: nothing held; a failed list or a truncated empty page holds (fails closed)', () => {
    expect(
      resourcesHolding([{ resource: ALLOW_LISTS, items: [obj('tenantgate-allow')], more: false }], notAllowLists),
    ).toEqual([]);
    expect(resourcesHolding([{ resource: DEPLOYS, error: 'forbidden' }], notAllowLists)).toEqual([
      'deployments.apps (could not list: forbidden)',
    ]);
    expect(resourcesHolding([{ resource: PODS, items: [], more: true }], notAllowLists)).toEqual(['pods']);
  });
});

describe('confirmation', () => {
  it("is the annotation equal to the Project's uid, never a namesake's", () => {
    const confirm = (v: string) => ({ annotations: { 'tenantgate.io/deletion-confirmed': v } });
    expect(deletionConfirmed(project('p', confirm('uid-p')))).toBe(true);
    expect(deletionConfirmed(project('p', confirm('uid-old')))).toBe(false);
    expect(deletionConfirmed(project('p', confirm('true')))).toBe(false);
    expect(deletionConfirmed(project('p'))).toBe(false);
    expect(deletionConfirmed(project('p', { uid: '', ...confirm('') }))).toBe(false);
  });
});

describe('plan', () => {
  const empty = classifyContents('p-empty', []);
  const data = classifyContents('p-data', [{ resource: PVCS, items: [obj('d')], more: false }]);
  it('deletes empty namespaces at once and keeps the others until confirmed', () => {
    expect(planCascade([empty, data], false)).toEqual({ delete: ['p-empty'], waiting: [data] });
    expect(planCascade([empty, data], true)).toEqual({ delete: ['p-empty', 'p-data'], waiting: [] });
    expect(awaitingMessage(project('p'), [data])).toContain('p-data: 1 PersistentVolumeClaim');
  });
  it('spec.deletionPolicy over tenantgate.yaml', () => {
    const orphanCfg = { deletion: { ...DEFAULT_CONFIG.deletion, policy: 'Orphan' as const } };
    expect(deletionPolicyOf(project('p'), DEFAULT_CONFIG)).toBe('Delete');
    expect(deletionPolicyOf(project('p'), orphanCfg)).toBe('Orphan');
    expect(deletionPolicyOf(project('p', {}, { deletionPolicy: 'Delete' }), orphanCfg)).toBe('Delete');
    expect(deletionPolicyOf(project('p', {}, { deletionPolicy: 'Orphan' }), DEFAULT_CONFIG)).toBe('Orphan');
  });
  it('release removes the project label and uid, and says from what and when', () => {
    const ns = { metadata: { name: 'p-a', resourceVersion: '7' } } as NamespaceObject;
    expect(releasePatch(project('p'), ns, T0)).toEqual({
      metadata: {
        resourceVersion: '7',
        labels: { 'tenantgate.io/project': null, 'tenantgate.io/released-from': 'p' },
        annotations: { 'tenantgate.io/project-uid': null, 'tenantgate.io/released-at': '2026-12-01T10:00:00Z' },
      },
    });
  });
});

describe('breaker', () => {
  const B = { windowSeconds: 600, maxProjects: 3, maxShare: 0.1 };
  const at = (s: number) => new Date(T0 + s * 1000).toISOString();
  const live = (n: number) => Array.from({ length: n }, (_, i) => project(`live${i}`));
  const deleting = (n: number, secondsAgo: number) =>
    Array.from({ length: n }, (_, i) => project(`del${i}`, { deletionTimestamp: at(-secondsAgo) }));
  /** The oracle: deletions in (max(resume, now − window), now] above max(maxProjects, floor(share × all)). */
  const oracleTrips = (ps: Project[], resumedAt?: number) => {
    const from = Math.max(resumedAt ?? -Infinity, T0 - 600_000);
    const n = ps.filter((p) => p.metadata.deletionTimestamp && Date.parse(p.metadata.deletionTimestamp) > from).length;
    return n > Math.max(3, Math.floor(0.1 * ps.length));
  };

  it('trips above max(maxProjects, floor(maxShare × all)) within the window only', () => {
    for (const [n, ago, others] of [
      [3, 10, 0],
      [4, 10, 0],
      [4, 700, 0],
      [4, 10, 40],
      [5, 10, 40],
    ] as const) {
      const ps = [...deleting(n, ago), ...live(others)];
      const d = decideBreaker({ projects: ps, state: {}, breaker: B, at: T0 });
      expect(d.kind === 'Trip', `${n} deleted ${ago}s ago among ${n + others}`).toBe(oracleTrips(ps));
    }
  });

  it('counts only deletions after the last resume, and stays tripped until resumed', () => {
    const ps = deleting(5, 10);
    const resumed = { resumedAt: T0 - 5_000, trippedAt: T0 - 6_000 };
    expect(decideBreaker({ projects: ps, state: resumed, breaker: B, at: T0 }).kind).toBe('Closed');
    expect(oracleTrips(ps, resumed.resumedAt)).toBe(false);
    const tripped = { trippedAt: T0 - 1_000, reason: 'r' };
    expect(decideBreaker({ projects: [], state: tripped, breaker: B, at: T0 }).kind).toBe('Tripped');
  });

  it('trips when the Project CRD is being deleted (unless resumed after)', () => {
    const d = decideBreaker({ projects: [], crdDeletionTimestamp: at(-1), state: {}, breaker: B, at: T0 });
    expect(d.kind).toBe('Trip');
    const later = { resumedAt: T0, trippedAt: T0 - 500 };
    expect(decideBreaker({ projects: [], crdDeletionTimestamp: at(-1), state: later, breaker: B, at: T0 }).kind).toBe(
      'Closed',
    );
  });

  it('round-trips through the ConfigMap; an unreadable trippedAt stays tripped', () => {
    const s = { trippedAt: T0, reason: 'r', projects: ['a', 'b'] };
    expect(parseBreaker(breakerData(s))).toEqual(s);
    expect(isTripped(parseBreaker({ trippedAt: 'yesterday' }))).toBe(true);
    expect(isTripped(parseBreaker({ trippedAt: at(0), resumedAt: at(1) }))).toBe(false);
  });
});
