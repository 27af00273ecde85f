/** The owners' RoleBinding: one pure function for render and the controller, and its comparison. */
import { describe, expect, it } from 'vitest';
import { ownerBinding, ownerBindingMatches, PROJECT_OWNER_ROLE } from '../../src/render/owner-binding.js';
import type { Project } from '../../src/validate/types.js';

const shop: Project = {
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: { name: 'shop', uid: 'u1' },
  spec: {
    tenant: 'acme',
    owners: [
      { kind: 'Group', name: 'acme:shop' },
      { kind: 'User', name: 'alice' },
      { kind: 'ServiceAccount', namespace: 'ci', name: 'deployer' },
    ],
  },
};

describe('ownerBinding', () => {
  it('binds every owner in the namespace to the project-owner ClusterRole, labelled for the project', () => {
    const b = ownerBinding(shop, 'shop-api');
    expect(b.metadata).toEqual({
      name: 'tenantgate-owners',
      namespace: 'shop-api',
      labels: { 'tenantgate.io/project': 'shop', 'app.kubernetes.io/managed-by': 'tenantgate' },
    });
    expect(b.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: PROJECT_OWNER_ROLE });
    expect(b.subjects).toEqual([
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'acme:shop' },
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' },
      { kind: 'ServiceAccount', name: 'deployer', namespace: 'ci' },
    ]);
  });

  it('has no subjects for a project without owners (the controller then empties a stale binding)', () => {
    expect(ownerBinding({ ...shop, spec: { tenant: 'acme' } }, 'shop-api').subjects).toEqual([]);
  });
});

describe('ownerBindingMatches', () => {
  const desired = ownerBinding(shop, 'shop-api');
  const copy = () => structuredClone(desired);

  it('matches itself, in any subject order, with extra labels and annotations (Argo CD adds some)', () => {
    const reordered = copy();
    reordered.subjects.reverse();
    reordered.metadata.labels['argocd.argoproj.io/instance'] = 'tenants';
    reordered.metadata.annotations = { 'argocd.argoproj.io/sync-wave': '0' };
    expect(ownerBindingMatches(reordered, desired)).toBe(true);
  });

  it('does not match a widened, narrowed, re-pointed or unlabelled binding', () => {
    const widened = copy();
    widened.subjects.push({ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'mallory' });
    const narrowed = copy();
    narrowed.subjects.pop();
    const repointed = copy();
    repointed.roleRef.name = 'cluster-admin';
    const sameNameOtherKind = copy();
    sameNameOtherKind.subjects[1] = { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'alice' };
    const unlabelled = copy();
    delete (unlabelled.metadata.labels as Record<string, string>)['tenantgate.io/project'];
    for (const b of [widened, narrowed, repointed, sameNameOtherKind, unlabelled])
      expect(ownerBindingMatches(b, desired)).toBe(false);
  });
});
