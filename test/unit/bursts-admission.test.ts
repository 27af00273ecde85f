/**
 * The webhook's Project review around a burst (src/validate/admission.ts reviewProject): B2 on create,
 * and Q1 on update judging only what the update lowers, so a project held above its budget after a
 * burst ended (pods still running) can still be edited.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { fixedClock, getProcessClock, setProcessClock } from '../../src/clock.js';
import { reviewProject } from '../../src/validate/admission.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Burst, Project } from '../../src/validate/types.js';
import { aNamespace, aProject, aQuota, reviewContext } from '../support/fixtures.js';

const ADMIN = { username: 'kubernetes-admin', groups: ['system:masters', 'system:authenticated'] };
const peak: Burst = {
  name: 'peak',
  from: '2026-12-01T00:00:00Z',
  until: '2026-12-03T00:00:00Z',
  reason: 'the peak',
  quota: { hard: { 'requests.cpu': '4' } },
  namespace: 'web-frontend',
};
const web = (extra: Partial<Project['spec']> = {}) =>
  aProject('web', {
    quota: { hard: { 'requests.cpu': '4' } },
    namespaces: [{ name: 'web-frontend', quota: { hard: { 'requests.cpu': '2' } } }],
    bursts: [peak],
    ...extra,
  });
// After the burst: the controller held web-frontend's quota at the 6 CPU its pods use.
const snap = MemorySnapshot.of({
  projects: [web()],
  namespaces: [aNamespace('web-frontend', { project: 'web' })],
  quotas: [aQuota('web-frontend', { 'requests.cpu': '6' }, { used: { 'requests.cpu': '6' } })],
});
const ctx = () => reviewContext(ADMIN, snap, DEFAULT_CONFIG);
const rules = (v: { violations: Array<{ rule: string }> }) => v.violations.map((x) => x.rule);

const previous = getProcessClock();
afterEach(() => setProcessClock(previous));

describe('reviewProject with bursts', () => {
  it('after the burst, with pods above the budget: an unrelated edit is admitted, lowering the budget is Q1, changing the burst is B2', () => {
    setProcessClock(fixedClock(Date.parse('2026-12-04T00:00:00Z')));
    expect(rules(reviewProject(ctx(), 'UPDATE', web({ displayName: 'Web' }), web()))).toEqual([]);
    expect(rules(reviewProject(ctx(), 'UPDATE', web({ bursts: [] }), web()))).toEqual([]); // removing the ended burst
    expect(rules(reviewProject(ctx(), 'UPDATE', web({ quota: { hard: { 'requests.cpu': '3' } } }), web()))).toEqual([
      'Q1',
    ]);
    expect(
      rules(reviewProject(ctx(), 'UPDATE', web({ bursts: [{ ...peak, until: '2026-12-10T00:00:00Z' }] }), web())),
    ).toEqual(['B2']);
  });

  it('B2 on create: a Project created with a burst that has ended', () => {
    setProcessClock(fixedClock(Date.parse('2026-12-04T00:00:00Z')));
    const fresh = MemorySnapshot.of({ projects: [], namespaces: [], quotas: [] });
    const v = reviewProject(reviewContext(ADMIN, fresh, DEFAULT_CONFIG), 'CREATE', web(), undefined);
    expect(rules(v)).toEqual(['B2']);
    setProcessClock(fixedClock(Date.parse('2026-11-27T00:00:00Z')));
    expect(rules(reviewProject(reviewContext(ADMIN, fresh, DEFAULT_CONFIG), 'CREATE', web(), undefined))).toEqual([]);
  });
});
