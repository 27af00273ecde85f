/** F1 (a fleet budget declaration makes sense, offline) and F2's messages (src/validate/rules/fleet.ts). */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import {
  emptyShareRecord,
  offer,
  releaseMember,
  requestGrowth,
  setBudget,
  type ShareRecord,
} from '../../src/fleet/shares.js';
import { validateDeclarations } from '../../src/validate/offline.js';
import { parseResources } from '../../src/validate/resource-lists.js';
import { checkFleetBudget, fleetGrowthRefusal, fleetHubUnreachable } from '../../src/validate/rules/fleet.js';
import { validateProjectSchema } from '../../src/validate/schema/validate-schema.js';
import type { Project } from '../../src/validate/types.js';

const CPU = 'requests.cpu';

function project(spec: Partial<Project['spec']> = {}): Project {
  return {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: 'web' },
    spec: {
      tenant: 'acme',
      quota: { hard: { [CPU]: '20' } },
      clusters: { 'prod-eu': { quota: { hard: { [CPU]: '30' } } } },
      namespaceDefaults: { quota: { hard: { [CPU]: '4' } } },
      namespaces: [
        { name: 'web-a', quota: { hard: { [CPU]: '10' } } },
        { name: 'web-b', cluster: 'prod-us' },
      ],
      fleet: { quota: { hard: { [CPU]: '40' } }, clusters: ['prod-eu', 'prod-us'] },
      ...spec,
    },
  };
}

const render = (p: Project) =>
  validateDeclarations([p], DEFAULT_CONFIG, TEST_NOW).map((v) => `[${v.rule}] ${v.message}`);

describe('F1', () => {
  it('judges the bounds as declared: an active burst raising a bound past the fleet budget is no F1 (it raises how far a member may grow, never the fleet budget)', () => {
    const burst = {
      name: 'peak',
      from: '2020-01-01T00:00:00Z',
      until: '2099-01-01T00:00:00Z',
      reason: 'always on, for the test',
      quota: { hard: { [CPU]: '15' } },
    };
    expect(render(project({ bursts: [burst] }))).toEqual([]);
    // The declared bound alone above the fleet budget still is.
    expect(render(project({ bursts: [burst], quota: { hard: { [CPU]: '41' } } })).join('\n')).toContain(
      '[F1] Project web: spec.quota.hard[requests.cpu] is 41, above the fleet budget 40',
    );
  });

  it('accepts a fleet budget that its bounds and declared namespaces fit, through the schema and the offline rules', () => {
    expect(validateProjectSchema(project())).toEqual([]);
    expect(render(project())).toEqual([]);
  });

  it('changes nothing for a Project without spec.fleet', () => {
    const { fleet: _, ...spec } = project().spec;
    const without = { ...project(), spec };
    expect(checkFleetBudget(without)).toEqual([]);
    // The same Project with its namespaces over the budget on prod-us reports today's Q1, and only that.
    const over = { ...without, spec: { ...spec, quota: { hard: { [CPU]: '12' } } } };
    expect(render(over)).toEqual([
      '[Q1] project web on cluster prod-us: namespaces allocate requests.cpu 14 but the budget is 12 (web-a 10, web-b 4 (defaults)): 2 over',
    ]);
  });

  it('names a bound above the fleet budget, the clusters it bounds, and what is allowed', () => {
    const p = project({
      quota: { hard: { [CPU]: '50' } },
      clusters: { 'prod-eu': { quota: { hard: { [CPU]: '41' } } } },
    });
    expect(checkFleetBudget(p)).toEqual([
      {
        rule: 'F1',
        path: ['spec', 'clusters', 'prod-eu', 'quota', 'hard', CPU],
        message:
          'Project web: spec.clusters[prod-eu].quota.hard[requests.cpu] is 41, above the fleet budget 40 (spec.fleet.quota.hard[requests.cpu]); it bounds the share of prod-eu, which can never exceed the fleet budget: lower it to at most 40, or remove it',
      },
      {
        rule: 'F1',
        path: ['spec', 'quota', 'hard', CPU],
        message:
          'Project web: spec.quota.hard[requests.cpu] is 50, above the fleet budget 40 (spec.fleet.quota.hard[requests.cpu]); it bounds the share of prod-us, which can never exceed the fleet budget: lower it to at most 40, or remove it',
      },
    ]);
  });

  it('sums the namespaces declared on every member (defaults for those without a quota) against the fleet budget', () => {
    const p = project({
      fleet: { quota: { hard: { [CPU]: '20' } }, clusters: ['prod-eu', 'prod-us'] },
      quota: { hard: { [CPU]: '20' } },
      clusters: {},
    });
    expect(render(p)).toEqual([
      "[F1] Project web: the namespaces declared on the fleet's clusters allocate requests.cpu 24 (prod-eu 10, prod-us 14), but the fleet budget is 20: 4 over",
    ]);
  });

  it('refuses an empty budget, a negative one, no members and a member named twice', () => {
    expect(render(project({ fleet: { quota: { hard: {} }, clusters: ['prod-eu'] } }))).toEqual([
      '[F1] Project web: spec.fleet.quota.hard names no resource; a fleet budget needs at least one (e.g. requests.cpu: "40"), or remove spec.fleet',
    ]);
    expect(render(project({ fleet: { quota: { hard: { [CPU]: '-1' } }, clusters: [] } }))).toEqual([
      '[F1] Project web: spec.fleet.quota.hard[requests.cpu] is -1, must be 0 or more',
      '[F1] Project web: spec.fleet.clusters is empty; name the member clusters that share the fleet budget (their names in spec.clusters, what render gets as ARGOCD_ENV_CLUSTER)',
    ]);
    expect(
      render(project({ fleet: { quota: { hard: { [CPU]: '40' } }, clusters: ['prod-eu', 'prod-us', 'prod-eu'] } })),
    ).toEqual([
      '[F1] Project web: spec.fleet.clusters[2] names cluster prod-eu again (first at [0]); each member once',
    ]);
  });

  it('leaves a misspelt or missing field to the schema (S1)', () => {
    const typo = project();
    (typo.spec.fleet as Record<string, unknown>)['cluster'] = ['prod-eu'];
    delete typo.spec.fleet!.clusters;
    expect(render(typo)).toEqual([
      '[S1] Project web: spec.fleet.clusters is required',
      '[S1] Project web: spec.fleet.cluster is not a known field (spec.fleet has quota, clusters); did you mean clusters?',
    ]);
  });
});

describe('F2 messages', () => {
  function fleet(): ShareRecord {
    let l = emptyShareRecord(
      parseResources({ [CPU]: '40' }),
      ['prod-eu', 'prod-us', 'prod-ap'],
      new Map([['prod-eu', parseResources({ [CPU]: '30' })]]),
    );
    for (const [m, id, n] of [
      ['prod-us', 'u', '30'],
      ['prod-ap', 'a', '8'],
    ] as const) {
      const g = requestGrowth(l, m, { id, need: parseResources({ [CPU]: n }) });
      if (!g.ok) throw new Error('setup');
      l = g.record;
    }
    const o = offer(l, 'prod-us', { id: 'u2', amount: parseResources({ [CPU]: '2' }) });
    if (!o.ok) throw new Error('setup');
    return o.record;
  }

  it('names the clusters that hold the room and what the pool and the offers had', () => {
    const refused = requestGrowth(fleet(), 'prod-eu', { id: 'e1', need: parseResources({ [CPU]: '6' }) });
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(fleetGrowthRefusal('web', 'prod-eu', refused)).toEqual({
      rule: 'F2',
      message:
        "project web on cluster prod-eu: requests.cpu needs 6 more than this cluster's share 0 of the fleet budget; the hub has 2 unallocated and 2 offered by other clusters, held by prod-us 30 (2 offered), prod-ap 8; free room there (unused share returns to the pool) or raise spec.fleet.quota.hard[requests.cpu] in git",
    });
  });

  it('says when the upper bound, membership, a release or the hub is what stops the growth', () => {
    const l = fleet();
    const bound = requestGrowth(
      emptyShareRecord(
        parseResources({ [CPU]: '40' }),
        ['prod-eu'],
        new Map([['prod-eu', parseResources({ [CPU]: '3' })]]),
      ),
      'prod-eu',
      { id: 'b', need: parseResources({ [CPU]: '4' }) },
    );
    if (bound.ok) throw new Error('expected a refusal');
    expect(fleetGrowthRefusal('web', 'prod-eu', bound).message).toBe(
      "project web on cluster prod-eu: requests.cpu needs 4 more than this cluster's share 0 of the fleet budget, but its upper bound is 3 (at most 3 more)",
    );
    const stranger = requestGrowth(l, 'prod-xx', { id: 'x', need: parseResources({ [CPU]: '1' }) });
    if (stranger.ok) throw new Error('expected a refusal');
    expect(fleetGrowthRefusal('web', 'prod-xx', stranger).message).toBe(
      'project web on cluster prod-xx: cluster prod-xx is not in spec.fleet.clusters, so it holds no share of the fleet budget; the platform team adds it in git',
    );
    const gone = requestGrowth(releaseMember(l, 'prod-ap').record, 'prod-ap', {
      id: 'x',
      need: parseResources({ [CPU]: '1' }),
    });
    if (gone.ok) throw new Error('expected a refusal');
    expect(fleetGrowthRefusal('web', 'prod-ap', gone).message).toContain(
      'an operator released cluster prod-ap from the fleet',
    );
    const lowered = setBudget(l, parseResources({ [CPU]: '30' }));
    if (lowered.ok) throw new Error('expected a refusal');
    expect(fleetGrowthRefusal('web', '', lowered).message).toBe(
      'project web: the fleet budget cannot go below what the member clusters hold: requests.cpu 8 too low (held by prod-us 30 (2 offered), prod-ap 8); lower it after they give unused share back',
    );
    expect(
      fleetHubUnreachable('web', 'prod-eu', parseResources({ [CPU]: '2' }), parseResources({ [CPU]: '4' }), 2, l)
        .message,
    ).toBe(
      "project web on cluster prod-eu: requests.cpu needs 2 more than the 4 this cluster enforces; when last read, held by prod-us 30 (2 offered), prod-ap 8; the fleet's hub did not answer within 2 s, so nothing more was granted (growth within the share is still admitted); retry later",
    );
  });
});
