/**
 * The fleet part of the budget view's Budget (src/view/fleet.ts through src/view/api.ts's handle) and of
 * `kubectl tenantgate headroom` (src/kubectl/model.ts, format.ts): the fleet budget, E, the allocation,
 * this cluster's share and every member's, the room here and in the fleet, from what the controller's
 * fleet loop last saw; no fleet part for a Project without spec.fleet or on a cluster outside it.
 */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import type { MemberShare, ShareRecord } from '../../src/fleet/shares.js';
import { headroomText } from '../../src/kubectl/format.js';
import { budgetFromView } from '../../src/kubectl/model.js';
import { Quantity } from '../../src/quantity/quantity.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Project } from '../../src/validate/types.js';
import { handle, VIEW_API_PATH, type BudgetObject, type ViewSource } from '../../src/view/api.js';
import type { FleetSeen } from '../../src/view/fleet.js';
import { aNamespace, aProject, aQuota } from '../support/fixtures.js';

const cpu = (v: string | number) => new Map([['requests.cpu', Quantity.parse(String(v))]]);
const AT = Date.parse('2026-11-25T16:00:00Z');

function web(o: { fleet?: boolean } = {}): Project {
  return aProject('web', {
    quota: { hard: { 'requests.cpu': '8' } },
    ...(o.fleet === false ? {} : { fleet: { quota: { hard: { 'requests.cpu': '10' } }, clusters: ['eu', 'us'] } }),
  });
}

function ledger(): ShareRecord {
  const shares = new Map<string, MemberShare>([
    ['eu', { share: cpu(5), lendable: cpu(1) }],
    ['us', { share: cpu(3), lendable: cpu(2) }],
  ]);
  return { budget: cpu(10), members: ['eu', 'us'], bounds: new Map(), shares, released: new Set() };
}

function source(project: Project, cluster = 'eu', seen?: FleetSeen): ViewSource {
  const snapshot = MemorySnapshot.of({
    projects: [project],
    namespaces: [aNamespace('web-a', { project: 'web' })],
    quotas: [aQuota('web-a', { 'requests.cpu': '3' }, { used: { 'requests.cpu': '1' } })],
  });
  return { snapshot: () => snapshot, cluster, fleet: () => seen };
}

const get = (src: ViewSource) =>
  handle(
    {
      at: TEST_NOW,
      method: 'GET',
      path: `${VIEW_API_PATH}/namespaces/web-a/budgets/web`,
      accept: 'application/json',
      user: { username: 'alice', groups: [] },
    },
    src,
  ).body as BudgetObject;

describe('the budget view of a fleet-budgeted project', () => {
  it('shows the fleet budget, E, the allocation, this cluster’s share, the room here and in the fleet, and every member’s share', () => {
    const b = get(source(web(), 'eu', { record: ledger(), enforced: cpu(4), at: AT }));
    expect(b.fleet).toEqual({
      members: ['eu', 'us'],
      observedAt: '2026-11-25T16:00:00.000Z',
      // E 4 − allocated 3 = 1 here; pool 10 − 8 = 2; us offers 2: 1 + 2 + 2 = 5.
      resources: [
        {
          resource: 'requests.cpu',
          fleetBudget: '10',
          allocated: '3',
          enforced: '4',
          headroomHere: '1',
          share: '5',
          lendable: '1',
          pool: '2',
          offeredByOthers: '2',
          fleetHeadroom: '5',
        },
      ],
      clusters: [
        { cluster: 'eu', share: { 'requests.cpu': '5' }, lendable: { 'requests.cpu': '1' } },
        { cluster: 'us', share: { 'requests.cpu': '3' }, lendable: { 'requests.cpu': '2' } },
      ],
    });
  });

  it('before the controller read the hub: the fleet budget and the allocation only', () => {
    expect(get(source(web())).fleet).toEqual({
      members: ['eu', 'us'],
      resources: [{ resource: 'requests.cpu', fleetBudget: '10', allocated: '3' }],
      clusters: [],
    });
  });

  it('no fleet part without spec.fleet, or on a cluster the fleet does not name', () => {
    expect(
      get(source(web({ fleet: false }), 'eu', { record: ledger(), enforced: cpu(4), at: AT })).fleet,
    ).toBeUndefined();
    expect(get(source(web(), 'ap', { record: ledger(), enforced: cpu(4), at: AT })).fleet).toBeUndefined();
  });
});

describe('kubectl tenantgate headroom of a fleet-budgeted project', () => {
  it('keeps the view’s fleet part and prints it after the budget', () => {
    const b = budgetFromView(get(source(web(), 'eu', { record: ledger(), enforced: cpu(4), at: AT })));
    expect(b.fleet?.resources[0]?.fleetHeadroom).toBe('5');
    const text = headroomText(b, 100);
    expect(text).toContain(
      'Fleet budget shared by eu, us (shares as last read from the hub at 2026-11-25T16:00:00.000Z)',
    );
    expect(text).toMatch(
      /RESOURCE\s+FLEET BUDGET\s+SHARE HERE\s+ENFORCED\s+ALLOCATED\s+HEADROOM HERE\s+FLEET HEADROOM\n\s*requests\.cpu\s+10\s+5 \(1 offered\)\s+4\s+3\s+1\s+5/,
    );
    expect(text).toMatch(
      /CLUSTER\s+RESOURCE\s+SHARE\s+OFFERED\neu\s+requests\.cpu\s+5\s+1\nus\s+requests\.cpu\s+3\s+2/,
    );
  });

  it('a project without spec.fleet prints no fleet part', () => {
    const text = headroomText(budgetFromView(get(source(web({ fleet: false })))), 100);
    expect(text).not.toContain('Fleet');
  });
});
