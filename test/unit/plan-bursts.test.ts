/**
 * Bursts in `tenantgate plan` (src/plan/plan.ts, src/validate/bursts.ts planBurstLines): the lines a
 * change shows, a future burst counts as a change, an ended burst changed is refused [B2].
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { planChange } from '../../src/plan/plan.js';
import { formatPlan } from '../../src/plan/format.js';
import { planBurstLines } from '../../src/validate/bursts.js';
import type { LiveState } from '../../src/plan/types.js';
import type { Burst, Project } from '../../src/validate/types.js';
import { aNamespace, aProject, aQuota } from '../support/fixtures.js';

const peak: Burst = {
  name: 'black-friday',
  from: '2026-12-01T00:00:00Z',
  until: '2026-12-03T00:00:00Z',
  reason: 'Black Friday traffic',
  quota: { hard: { 'requests.cpu': '8' } },
  namespace: 'web-frontend',
};

function web(bursts?: Burst[]): Project {
  return aProject('web', {
    quota: { hard: { 'requests.cpu': '6', pods: '60' } },
    namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', pods: '10' } } },
    namespaces: [{ name: 'web-frontend', quota: { hard: { 'requests.cpu': '3', pods: '30' } } }],
    ...(bursts ? { bursts } : {}),
  });
}

function live(project: Project): LiveState {
  return {
    cluster: 'local',
    projects: [project],
    namespaces: [aNamespace('web-frontend', { project: 'web' })],
    quotas: [aQuota('web-frontend', { 'requests.cpu': '3', pods: '30' }, { used: { 'requests.cpu': '0', pods: '0' } })],
  };
}

describe('plan: burst lines', () => {
  it('planBurstLines: added, changed, removed; unchanged ones only while active or upcoming', () => {
    const at = Date.parse('2026-11-27T00:00:00Z');
    expect(planBurstLines(web(), web([peak]), '', at)).toEqual([
      'black-friday (added): +8 requests.cpu from 2026-12-01 to 2026-12-03 on namespace web-frontend, upcoming — Black Friday traffic',
    ]);
    expect(planBurstLines(web([peak]), web([{ ...peak, until: '2026-12-04T12:00:00Z' }]), '', at)).toEqual([
      'black-friday (changed): +8 requests.cpu from 2026-12-01 to 2026-12-04T12:00:00Z on namespace web-frontend, upcoming — Black Friday traffic',
    ]);
    expect(planBurstLines(web([peak]), web(), '', at)).toEqual([
      'black-friday (removed): was +8 requests.cpu from 2026-12-01 to 2026-12-03',
    ]);
    expect(planBurstLines(web([peak]), web([peak]), '', Date.parse('2026-12-05T00:00:00Z'))).toEqual([]);
  });

  it('a pull request adding a future burst is a change, shown with its line in the table and in Markdown', () => {
    const plan = planChange({
      at: Date.parse('2026-11-27T00:00:00Z'),
      config: DEFAULT_CONFIG,
      base: { ref: 'main', projects: [web()] },
      after: [web([peak])],
      live: [live(web())],
    });
    expect(plan.changed).toBe(true);
    expect(plan.entries[0]?.bursts).toEqual([
      'black-friday (added): +8 requests.cpu from 2026-12-01 to 2026-12-03 on namespace web-frontend, upcoming — Black Friday traffic',
    ]);
    expect(formatPlan(plan, 'table')).toContain(
      '  burst black-friday (added): +8 requests.cpu from 2026-12-01 to 2026-12-03',
    );
    expect(formatPlan(plan, 'markdown')).toContain(
      '- black-friday (added): +8 requests.cpu from 2026-12-01 to 2026-12-03',
    );
  });

  it('in the window the budget shows the burst: 6 → 14 CPU', () => {
    const plan = planChange({
      at: Date.parse('2026-12-02T00:00:00Z'),
      config: DEFAULT_CONFIG,
      base: { ref: 'main', projects: [web()] },
      after: [web([peak])],
      live: [live(web())],
    });
    expect(plan.entries[0]?.resources.find((r) => r.resource === 'requests.cpu')).toMatchObject({
      budgetBefore: '6',
      budgetAfter: '14',
    });
  });
});
