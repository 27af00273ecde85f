/**
 * `tenantgate plan` over a fleet budget (src/plan/fleet.ts through planChange): the fleet budget, each
 * member's share (from the hub's share record when given) and allocation (live where plan reads the cluster,
 * declared elsewhere), the fleet's headroom; F1 when the namespaces hold more than the new fleet budget,
 * F2 when the new fleet budget is below the shares the members hold; nothing without spec.fleet.
 */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { MemberShare, ShareRecord } from '../../src/fleet/shares.js';
import { formatPlan } from '../../src/plan/format.js';
import { planChange, planFails } from '../../src/plan/plan.js';
import type { HubShareRecord } from '../../src/plan/fleet.js';
import type { LiveState } from '../../src/plan/types.js';
import { Quantity } from '../../src/quantity/quantity.js';
import type { Project } from '../../src/validate/types.js';
import { aNamespace, aProject, aQuota } from '../support/fixtures.js';

const config = DEFAULT_CONFIG;
const cpu = (v: string) => new Map([['requests.cpu', Quantity.parse(v)]]);

/** web shares 10 CPUs between eu and us (each bounded by 8); web-eu (4) on eu, web-us (3) on us. */
function web(o: { fleet?: string; us?: string; noFleet?: boolean } = {}): Project {
  return aProject('web', {
    ...(o.noFleet ? {} : { fleet: { quota: { hard: { 'requests.cpu': o.fleet ?? '10' } }, clusters: ['eu', 'us'] } }),
    quota: { hard: { 'requests.cpu': '8' } },
    namespaces: [
      { name: 'web-eu', cluster: 'eu', quota: { hard: { 'requests.cpu': '4' } } },
      { name: 'web-us', cluster: 'us', quota: { hard: { 'requests.cpu': o.us ?? '3' } } },
    ],
  });
}

/** eu as synced, plus web-extra (2 CPUs) that a tenant made there. */
function eu(project: Project = web()): LiveState {
  return {
    cluster: 'eu',
    projects: [project],
    namespaces: [aNamespace('web-eu', { project: 'web' }), aNamespace('web-extra', { project: 'web' })],
    quotas: [
      aQuota('web-eu', { 'requests.cpu': '4' }, { used: { 'requests.cpu': '1500m' } }),
      aQuota('web-extra', { 'requests.cpu': '2' }, { used: { 'requests.cpu': '0' } }),
    ],
  };
}

function ledger(budget: string, shares: Record<string, { share: string; lendable?: string }>): ShareRecord {
  const entries = new Map<string, MemberShare>(
    Object.entries(shares).map(([m, s]) => [
      m,
      { share: cpu(s.share), lendable: s.lendable ? cpu(s.lendable) : new Map() },
    ]),
  );
  return {
    budget: cpu(budget),
    members: ['eu', 'us'],
    bounds: new Map([
      ['eu', cpu('8')],
      ['us', cpu('8')],
    ]),
    shares: entries,
    released: new Set(),
  };
}

const hub = (l: ShareRecord): ReadonlyMap<string, HubShareRecord> => new Map([['web', { state: 'read', record: l }]]);

describe('plan over a fleet budget', () => {
  it('shows the fleet budget, each member’s share and allocation (live on eu, declared on us) and the fleet headroom', () => {
    const plan = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [web()] },
      after: [web()],
      live: [eu()],
      all: true,
      hub: hub(ledger('10', { eu: { share: '6' }, us: { share: '3', lendable: '1' } })),
    });
    expect(plan.fleet).toHaveLength(1);
    const f = plan.fleet[0]!;
    expect(f).toMatchObject({ project: 'web', members: ['eu', 'us'], hub: 'read', findings: [] });
    expect(f.resources).toEqual([
      {
        resource: 'requests.cpu',
        budgetBefore: '10',
        budgetAfter: '10',
        allocated: '9',
        used: '1500m',
        headroom: '1',
        headroomPercent: 10,
        shares: '9',
        pool: '1',
        perMember: {
          eu: { allocated: '6', counted: 'live', used: '1500m', share: '6', lendable: '0' },
          us: { allocated: '3', counted: 'declared', share: '3', lendable: '1' },
        },
      },
    ]);
    expect(planFails(plan)).toBe(false);
    const text = formatPlan(plan, 'table');
    expect(text).toContain('✓ fleet web on eu + us — shares from the hub');
    expect(text).toMatch(
      /requests\.cpu\s+10\s+9\s+1500m\s+1 █░░░░░░░░░ 10%\s+9\s+1\s+6 of share 6\s+3 \(declared\) of share 3 \(1 offered\)/,
    );
    expect(formatPlan(plan, 'markdown')).toContain('### ✅ fleet web on eu + us');
  });

  it('F1: a raised quota that makes the namespaces on the members hold more than the fleet budget (the self-service namespace counts)', () => {
    // Declared alone: 4 + 6 = 10 fits (validate's F1 passes); with web-extra's 2 on eu it is 12.
    const plan = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [web()] },
      after: [web({ us: '6' })],
      live: [eu()],
    });
    const f = plan.fleet[0]!;
    expect(f.hub).toBe('not-read');
    expect(f.findings.map((x) => [x.rule, x.by])).toEqual([['F1', 'plan']]);
    expect(f.findings[0]!.message).toBe(
      "Project web: after the change the namespaces on the fleet's clusters hold requests.cpu 12 (eu 6, us 6 declared), above the fleet budget 10 (spec.fleet.quota.hard[requests.cpu]): 2 over; raise the fleet budget or lower the namespaces' quotas",
    );
    expect(plan.findings).toBe(1);
    expect(planFails(plan)).toBe(true);
    expect(formatPlan(plan, 'table')).toContain('[F1] Project web: after the change');
  });

  it('F2: a fleet budget lowered below the shares the members hold on the hub; without the hub it is not checked', () => {
    const before = web({ fleet: '12' });
    const after = web({ fleet: '10' });
    const held = ledger('12', { eu: { share: '7' }, us: { share: '4' } });
    const plan = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [before] },
      after: [after],
      live: [eu(before)],
      hub: hub(held),
    });
    const f = plan.fleet[0]!;
    expect(f.resources[0]).toMatchObject({
      budgetBefore: '12',
      budgetAfter: '10',
      shares: '11',
      pool: '-1',
      allocated: '9',
    });
    expect(f.findings.map((x) => x.rule)).toEqual(['F2']);
    expect(f.findings[0]!.message).toBe(
      'project web: the fleet budget cannot go below what the member clusters hold: requests.cpu 1 too low (held by eu 7, us 4); lower it after they give unused share back',
    );
    expect(planFails(plan)).toBe(true);

    const withoutHub = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [before] },
      after: [after],
      live: [eu(before)],
    });
    expect(withoutHub.fleet[0]!.findings).toEqual([]);
    expect(planFails(withoutHub)).toBe(false);

    // Once the members gave back to 10 or less, the same change passes.
    const gaveBack = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [before] },
      after: [after],
      live: [eu(before)],
      hub: hub(ledger('12', { eu: { share: '6' }, us: { share: '4' } })),
    });
    expect(gaveBack.fleet[0]!.findings).toEqual([]);
  });

  it('a member that left spec.fleet.clusters but holds a share is shown as leaving; no FleetBudget on the hub means nobody holds one', () => {
    const l = ledger('10', { eu: { share: '6' }, us: { share: '3' }, ap: { share: '1' } });
    const plan = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [web()] },
      after: [web()],
      live: [eu()],
      all: true,
      hub: hub(l),
    });
    expect(plan.fleet[0]!.formerMembers).toEqual(['ap']);
    expect(plan.fleet[0]!.resources[0]!.perMember.ap).toEqual({ share: '1', lendable: '0' });
    expect(formatPlan(plan, 'table')).toContain('(leaving: ap)');
    const missing = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [web()] },
      after: [web()],
      live: [eu()],
      all: true,
      hub: new Map([['web', { state: 'missing' }]]),
    });
    expect(formatPlan(missing, 'table')).toContain('no FleetBudget on the hub yet');
  });

  it("counts a fleet-budgeted resource the clusters' own budgets do not name", () => {
    const p = aProject('web', {
      fleet: { quota: { hard: { 'requests.cpu': '10' } }, clusters: ['eu', 'us'] },
      quota: { hard: { pods: '20' } },
      namespaces: [{ name: 'web-eu', cluster: 'eu', quota: { hard: { 'requests.cpu': '4', pods: '5' } } }],
    });
    const plan = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [p] },
      after: [p],
      live: [eu(p)],
      all: true,
    });
    expect(plan.fleet[0]!.resources[0]).toMatchObject({
      resource: 'requests.cpu',
      allocated: '6',
      perMember: { eu: { allocated: '6', counted: 'live' } },
    });
  });

  it('a Project without spec.fleet has no fleet roll-up and its plan is as before', () => {
    const plain = web({ noFleet: true });
    const plan = planChange({
      at: TEST_NOW,
      config,
      base: { ref: 'main', projects: [plain] },
      after: [plain],
      live: [eu(plain)],
      all: true,
    });
    expect(plan.fleet).toEqual([]);
    expect(formatPlan(plan, 'table')).not.toContain('fleet');
  });
});
