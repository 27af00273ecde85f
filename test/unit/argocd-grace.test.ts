import { describe, expect, it } from 'vitest';
import { ARGOCD_SYNC_GRACE_MS, argoCdGraceLeft } from '../../src/controller/argocd-grace.js';
import { slim } from '../../src/kube/lists.js';
import type { NamespaceObject } from '../../src/validate/types.js';

const created = '2026-11-27T10:00:00Z';
const at = (seconds: number) => Date.parse(created) + seconds * 1000;
const ns = (metadata: Partial<NamespaceObject['metadata']>): NamespaceObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name: 'shop-a', creationTimestamp: created, ...metadata },
});

describe('a namespace Argo CD just created is left to its sync', () => {
  it('tracked by annotation (Argo CD 3) or label (before 3): the rest of the grace after its creation; then none', () => {
    const byAnnotation = ns({ annotations: { 'argocd.argoproj.io/tracking-id': 'gitops:/Namespace:/shop-a' } });
    expect(argoCdGraceLeft(byAnnotation, at(10))).toBe(ARGOCD_SYNC_GRACE_MS - 10_000);
    expect(argoCdGraceLeft(byAnnotation, at(60))).toBe(0);
    expect(argoCdGraceLeft(ns({ labels: { 'app.kubernetes.io/instance': 'gitops' } }), at(59))).toBe(1_000);
  });

  it("what the informer cache keeps of a namespace (slim) still tells: its creation time and Argo CD's tracking", () => {
    const served = {
      ...ns({ annotations: { 'argocd.argoproj.io/tracking-id': 't' } }),
      metadata: {
        ...ns({}).metadata,
        annotations: { 'argocd.argoproj.io/tracking-id': 't' },
        managedFields: [{ manager: 'argocd-controller' }],
      },
    };
    expect(argoCdGraceLeft(slim(served) as NamespaceObject, at(30))).toBe(30_000);
  });

  it('not tracked (a tenant created it), or without a creation time: no grace', () => {
    expect(argoCdGraceLeft(ns({}), at(1))).toBe(0);
    expect(
      argoCdGraceLeft(
        {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name: 'x', annotations: { 'argocd.argoproj.io/tracking-id': 't' } },
        },
        at(1),
      ),
    ).toBe(0);
  });
});
