/** Bursts in the budget view (src/view/api.ts) and the kubectl plugin (src/kubectl): active and upcoming ones shown, the budget raised. */
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, getProcessClock, setProcessClock } from '../../src/clock.js';
import { budgetObject, ownedProjectObject } from '../../src/view/api.js';
import { budgetFromObjects, budgetFromView } from '../../src/kubectl/model.js';
import { headroomText } from '../../src/kubectl/format.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Burst } from '../../src/validate/types.js';
import { aNamespace, aProject, aQuota } from '../support/fixtures.js';

const peak: Burst = {
  name: 'black-friday',
  from: '2026-12-01T00:00:00Z',
  until: '2026-12-03T00:00:00Z',
  reason: 'Black Friday traffic',
  quota: { hard: { 'requests.cpu': '8' } },
  namespace: 'web-frontend',
};
const project = aProject('web', {
  quota: { hard: { 'requests.cpu': '6' } },
  namespaces: [{ name: 'web-frontend', quota: { hard: { 'requests.cpu': '3' } } }],
  bursts: [peak],
});
const ns = aNamespace('web-frontend', { project: 'web' });
const quota = aQuota('web-frontend', { 'requests.cpu': '11' }, { used: { 'requests.cpu': '1' } });
const snapshot = MemorySnapshot.of({ projects: [project], namespaces: [ns], quotas: [quota] });

const previous = getProcessClock();
afterEach(() => setProcessClock(previous));

describe('the budget view and the plugin show bursts', () => {
  it('during the burst: the Budget has it (active) and its budget includes it', () => {
    const during = Date.parse('2026-12-02T00:00:00Z');
    setProcessClock(fixedClock(during)); // budgetFromObjects (the plugin's edge) reads the process clock
    const b = budgetObject(snapshot, project, 'web-frontend', '', during);
    expect(b.bursts).toEqual([
      {
        name: 'black-friday',
        phase: 'active',
        from: peak.from,
        until: peak.until,
        reason: peak.reason,
        increase: { 'requests.cpu': '8' },
        namespace: 'web-frontend',
      },
    ]);
    expect(b.resources.find((r) => r.resource === 'requests.cpu')?.budget).toBe('14');
    expect(ownedProjectObject(snapshot, project, '', during).bursts?.[0]?.phase).toBe('active');
    // the plugin, through the view and directly: the same line
    const text = headroomText(budgetFromView(b), 200); // wide: the burst's sentence on one line
    expect(text).toContain(
      'burst black-friday (active until 2026-12-03T00:00:00Z): +8 requests.cpu on namespace web-frontend — Black Friday traffic',
    );
    expect(headroomText(budgetFromObjects(project, [ns], [quota], ''))).toContain('burst black-friday (active until');
  });

  it('before: upcoming; after: not shown, the budget back at 6', () => {
    const before = Date.parse('2026-11-27T00:00:00Z');
    expect(budgetObject(snapshot, project, 'web-frontend', '', before).bursts?.[0]?.phase).toBe('upcoming');
    const after = budgetObject(snapshot, project, 'web-frontend', '', Date.parse('2026-12-05T00:00:00Z'));
    expect(after.bursts).toBeUndefined();
    expect(after.resources.find((r) => r.resource === 'requests.cpu')?.budget).toBe('6');
  });
});
