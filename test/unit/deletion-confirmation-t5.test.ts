/**
 * T5 leaves one change of a Project to the API server: the deletion's confirmation alone (annotation
 * tenantgate.io/deletion-confirmed), which D1 judges there (docs/rules.md#deletion). Anything else
 * changed with it, or by a subject who is not privileged, is still T5's.
 */
import { describe, expect, it } from 'vitest';
import { reviewProject } from '../../src/validate/admission.js';
import { onlyChangesDeletionConfirmation } from '../../src/validate/rules/deletion-confirmation.js';
import type { UserInfo } from '../../src/validate/rules/tenancy.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Project } from '../../src/validate/types.js';
import { reviewContext } from '../support/fixtures.js';

const CAROL = { username: 'carol', uid: 'uid-carol', groups: ['platform-admins', 'system:authenticated'] } as UserInfo;

const shop = (annotations?: Record<string, string>, cpu = '4', extra: Partial<Project['metadata']> = {}): Project => ({
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: {
    name: 'shop',
    uid: 'u1',
    resourceVersion: '7',
    deletionTimestamp: '2026-12-07T13:00:00Z',
    finalizers: ['tenantgate.io/cascade-delete'],
    ...(annotations ? { annotations } : {}),
    ...extra,
  },
  spec: { tenant: 'acme', quota: { hard: { 'requests.cpu': cpu } } },
});

const confirmed = (others: Record<string, string> = {}) => ({ ...others, 'tenantgate.io/deletion-confirmed': 'u1' });

describe('T5 and the deletion confirmation (D1)', () => {
  it("lets a non-privileged subject's update through when it only sets, changes or removes the confirmation", () => {
    const ctx = reviewContext(CAROL, MemorySnapshot.of({ projects: [shop()] }));
    expect(
      reviewProject(
        ctx,
        'UPDATE',
        { ...shop(confirmed()), metadata: { ...shop(confirmed()).metadata, resourceVersion: '8' } },
        shop(),
      ).violations,
    ).toEqual([]);
    expect(
      reviewProject(ctx, 'UPDATE', shop({ 'tenantgate.io/deletion-confirmed': 'other' }), shop(confirmed())).violations,
    ).toEqual([]);
    expect(reviewProject(ctx, 'UPDATE', shop({ a: 'b' }), shop(confirmed({ a: 'b' }))).violations).toEqual([]);
  });

  it('anything else changed with it, or nothing changed, stays T5', () => {
    const ctx = reviewContext(CAROL, MemorySnapshot.of({ projects: [shop()] }));
    const rules = (o: Project, old: Project) => reviewProject(ctx, 'UPDATE', o, old).violations.map((v) => v.rule);
    expect(rules(shop(confirmed(), '40'), shop())).toEqual(['T5']); // the budget too
    expect(rules(shop(confirmed({ other: 'x' })), shop())).toEqual(['T5']); // another annotation too
    expect(rules(shop(confirmed(), '4', { finalizers: [] }), shop())).toEqual(['T5']); // the finalizer too
    expect(rules(shop(), shop())).toEqual(['T5']); // no change of the confirmation
    expect(onlyChangesDeletionConfirmation(shop(confirmed()), shop(confirmed()))).toBe(false);
  });
});
