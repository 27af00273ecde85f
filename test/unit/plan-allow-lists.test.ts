/** `tenantgate plan` on a narrowed allow-list (src/plan/allow-lists.ts): the running objects it strands, and nothing for a widened one. */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { planChange, planFails } from '../../src/plan/plan.js';
import type { LiveState } from '../../src/plan/types.js';
import type { AllowLists, Project } from '../../src/validate/types.js';
import { aNamespace, aProject } from '../support/fixtures.js';

const web = (allow: AllowLists): Project => aProject('web', { allow });
const pod = (namespace: string, name: string, priorityClassName: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { namespace, name },
  spec: { priorityClassName, containers: [{ name: 'c', image: 'registry.example.com/c' }] },
});
const service = (namespace: string, name: string, type: string) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { namespace, name },
  spec: { type },
});

function live(project: Project): LiveState {
  return {
    cluster: 'local',
    projects: [project],
    namespaces: [aNamespace('web-app', { project: 'web' }), aNamespace('other', {})],
    quotas: [],
    objects: [
      pod('web-app', 'api-1', 'batch-high'),
      pod('web-app', 'api-2', 'batch-low'),
      service('web-app', 'edge', 'NodePort'),
      pod('other', 'elsewhere', 'batch-high'),
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'web-app', name: 'cm' } },
    ],
  };
}

describe('plan: objects a narrowed allow-list strands', () => {
  it('lists each running object the new lists refuse and the old ones admitted, with its rule', () => {
    const before = web({ priorityClasses: ['batch-low', 'batch-high'], services: { types: ['NodePort'] } });
    const after = web({ priorityClasses: ['batch-low'] });
    const plan = planChange({
      at: TEST_NOW,
      config: DEFAULT_CONFIG,
      base: { ref: 'main', projects: [before] },
      after: [after],
      live: [live(before)],
    });
    const findings = plan.entries.flatMap((e) => e.findings).filter((f) => f.by === 'plan');
    expect(findings.map((f) => [f.rule, f.object])).toEqual([
      ['X1', 'Pod web-app/api-1'],
      ['X3', 'Service web-app/edge'],
    ]);
    expect(findings[0]!.message).toBe(
      'Pod web-app/api-1: priorityClassName "batch-high" is not allowed for project web; allowed: batch-low (it runs now: it keeps running, but could not be created again)',
    );
    expect(planFails(plan)).toBe(true);
  });

  it('finds nothing when the lists widen or stay, or what ran was refused already', () => {
    const narrow = web({ priorityClasses: ['batch-low'] });
    const wide = web({ priorityClasses: ['batch-low', 'batch-high'], services: { types: ['NodePort'] } });
    for (const [before, after] of [
      [narrow, wide],
      [wide, wide],
      [narrow, narrow],
    ] as const) {
      const plan = planChange({
        at: TEST_NOW,
        config: DEFAULT_CONFIG,
        base: { ref: 'main', projects: [before] },
        after: [after],
        live: [live(before)],
      });
      expect(plan.entries.flatMap((e) => e.findings).filter((f) => f.by === 'plan')).toEqual([]);
    }
  });
});
