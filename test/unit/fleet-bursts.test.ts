/**
 * A fleet member with an active burst (docs/fleet.md "What a member enforces", docs/adr/0039-fleet-budgets.md): the
 * burst is counted exactly once. A fleet-budgeted resource is budgeted at min(E, the cluster's upper
 * bound with the burst added once, the fleet budget) — never above E; a resource outside the fleet
 * budget at its declared budget plus the burst. The expected budgets are computed here from the raw
 * Project spec, not by the functions under test; they are checked in the member view the webhook's
 * rules read, in the view the controller's floor, metrics and budget view read, and through admission
 * on the member.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fixedClock, getProcessClock, setProcessClock } from '../../src/clock.js';
import { DEFAULT_CONFIG, type TenantgateConfig } from '../../src/config/config.js';
import { decodeRecord } from '../../src/fleet/enforced-record.js';
import { fleetBudgetFor } from '../../src/fleet/fleet-budget-object.js';
import { fleetProjectBudget } from '../../src/fleet/give-back.js';
import { memberLimits, memberCapView, reachableLimits } from '../../src/fleet/member-budget.js';
import { Quantity } from '../../src/quantity/quantity.js';
import type { ReviewContext } from '../../src/validate/admission.js';
import { budgetIn } from '../../src/validate/budget/layers.js';
import { formatResources, parseResources } from '../../src/validate/resource-lists.js';
import type { Resources } from '../../src/validate/types.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Project, ResourceList } from '../../src/validate/types.js';
import { HeadroomGuard } from '../../src/webhook/headroom/guard.js';
import type { AdmissionRequest } from '../../src/webhook/review.js';
import { aQuotaCreateRequest } from '../support/fixtures.js';
import { MemoryHub } from '../support/memory-hub.js';
import { MemoryLedger } from '../support/memory-ledger.js';

const CPU = 'requests.cpu';
const MEM = 'requests.memory';
const NAMESPACES = ['web-a', 'web-b', 'web-c', 'web-d'];
/** Inside the burst's window, and after it. */
const DURING = Date.parse('2030-12-02T00:00:00Z');
const AFTER = Date.parse('2030-12-04T00:00:00Z');
const r = (list: Record<string, string>) => parseResources({ ...list });

/** CPU is fleet-budgeted (10 over eu and us, at most 8 on each); memory is not. The burst raises both on every cluster. */
function project(): Project {
  return {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: 'web', uid: 'web' },
    spec: {
      tenant: 'acme',
      owners: [{ kind: 'User', name: 'alice' }],
      quota: { hard: { [CPU]: '8', [MEM]: '4Gi' } },
      fleet: { quota: { hard: { [CPU]: '10' } }, clusters: ['eu', 'us'] },
      bursts: [
        {
          name: 'peak',
          from: '2030-12-01T00:00:00Z',
          until: '2030-12-03T00:00:00Z',
          reason: 'the peak',
          quota: { hard: { [CPU]: '2', [MEM]: '1Gi' } },
        },
      ],
    },
  } as unknown as Project;
}

/**
 * The oracle, from the raw spec: per declared resource, the declaration plus every burst active at
 * `at` on `cluster` (once); for a fleet-budgeted resource, the least of E (missing: 0), that and the
 * fleet budget.
 */
function expectedBudget(p: Project, cluster: string, enforced: ResourceList, at: number): Record<string, string> {
  const declared = p.spec.clusters?.[cluster]?.quota?.hard ?? p.spec.quota!.hard!;
  const fleet = p.spec.fleet!.quota!.hard!;
  const out: Record<string, string> = {};
  for (const [resource, raw] of Object.entries(declared)) {
    let q = Quantity.parse(raw);
    for (const b of p.spec.bursts ?? []) {
      const active = Date.parse(b.from) <= at && at < Date.parse(b.until) && (!b.cluster || b.cluster === cluster);
      const add = b.quota.hard?.[resource];
      if (active && add !== undefined) q = q.add(Quantity.parse(add));
    }
    if (fleet[resource] !== undefined) {
      for (const bound of [Quantity.parse(enforced[resource] ?? '0'), Quantity.parse(fleet[resource])])
        if (bound.cmp(q) < 0) q = bound;
    }
    out[resource] = q.toString();
  }
  return out;
}

/** A budget as canonical strings, for comparing with the oracle whatever format each side kept. */
const canonical = (list: Record<string, string> | Resources): Record<string, string> => {
  const m: Resources = list instanceof Map ? (list as Resources) : r(list as Record<string, string>);
  return Object.fromEntries([...m.keys()].sort().map((k) => [k, m.get(k)!.toString()]));
};

function snapshotOf(p: Project): MemorySnapshot {
  return MemorySnapshot.of({
    projects: [p],
    namespaces: NAMESPACES.map((n) => ({
      metadata: { name: n, labels: { 'tenantgate.io/project': 'web', 'tenantgate.io/tenant': 'acme' } },
    })),
  });
}

const previous = getProcessClock();
beforeEach(() => setProcessClock(fixedClock(DURING))); // for the edges under test that read the process clock
afterEach(() => setProcessClock(previous));

describe('a fleet member with an active burst: the member view the rules read', () => {
  for (const e of ['3', '9', '12']) {
    it(`E = ${e} CPU: CPU at min(E, 8 + 2, 10), memory at 4Gi + 1Gi`, () => {
      const p = project();
      const view = memberCapView(snapshotOf(p), 'eu', (q) => memberLimits(q, 'eu', DURING, r({ [CPU]: e })));
      const want = expectedBudget(p, 'eu', { [CPU]: e }, DURING);
      expect(canonical(budgetIn(view, view.project('web')!, 'eu', DURING))).toEqual(canonical(want));
      // Never above E for the fleet-budgeted resource.
      expect(budgetIn(view, view.project('web')!, 'eu', DURING).get(CPU)!.cmp(Quantity.parse(e))).toBeLessThanOrEqual(
        0,
      );
    });
  }

  it('the reachable view (what the hub could grant): CPU at most the fleet budget, memory with the burst once', () => {
    const p = project();
    const view = memberCapView(snapshotOf(p), 'eu', (q) => reachableLimits(q, 'eu', DURING));
    expect(canonical(budgetIn(view, view.project('web')!, 'eu', DURING))).toEqual(
      canonical(expectedBudget(p, 'eu', p.spec.fleet!.quota!.hard!, DURING)),
    );
  });

  it('after the burst, the same view budgets the declarations alone', () => {
    setProcessClock(fixedClock(AFTER));
    const p = project();
    const view = memberCapView(snapshotOf(p), 'eu', (q) => memberLimits(q, 'eu', AFTER, r({ [CPU]: '9' })));
    expect(canonical(budgetIn(view, view.project('web')!, 'eu', AFTER))).toEqual(
      canonical(expectedBudget(p, 'eu', { [CPU]: '9' }, AFTER)),
    );
  });

  it("the controller's view (floor, metrics, budget view): memory with the burst once, CPU at the 0 it is given", () => {
    const p = project();
    const b = fleetProjectBudget(snapshotOf(p), p, 'eu', DURING, [CPU]);
    expect(canonical(b.budget)).toEqual(canonical(expectedBudget(p, 'eu', { [CPU]: '0' }, DURING)));
  });
});

describe('a fleet member with an active burst: admission', () => {
  const config: TenantgateConfig = { ...DEFAULT_CONFIG, clusterName: 'eu' };
  const ctx = (s: MemorySnapshot): ReviewContext => ({
    at: DURING,
    config,
    snapshot: s,
    user: { username: 'alice', groups: [] },
  });
  const quota = (ns: string, cpu: string, memory = '1Gi'): AdmissionRequest => {
    const req = aQuotaCreateRequest(ns, { cpu });
    (req.object as { spec: { hard: Record<string, string> } }).spec.hard[MEM] = memory;
    return req;
  };

  it('CPU grows beyond E only through the hub; memory stops at its declaration plus the burst', async () => {
    const p = project();
    const hub = new MemoryHub();
    hub.put(fleetBudgetFor(p, DURING)!);
    const ledger = new MemoryLedger();
    const transfers: string[] = [];
    let key = 0;
    const guard = new HeadroomGuard({
      ttlMs: 60_000,
      ledger,
      fleet: {
        cluster: 'eu',
        hub,
        policy: { keep: r({ [CPU]: '1' }), above: r({ [CPU]: '2' }) },
        onTransfer: (t) => transfers.push(t),
        newKey: () => `eu-${++key}`,
      },
    });
    const s = snapshotOf(p);
    const enforcedCpu = async (): Promise<Quantity> => {
      const d = decodeRecord((await ledger.read('web')).fleet, 'web');
      if (!d.ok) throw new Error(d.problem);
      return d.record.enforced.get(CPU) ?? Quantity.zero();
    };
    const admitted: Array<{ cpu: string; memory: string }> = [];
    const decide = async (ns: string, cpu: string, memory = '1Gi') => {
      const v = await guard.decide(ctx(s), quota(ns, cpu, memory));
      if (v.violations.length === 0) admitted.push({ cpu, memory });
      return v;
    };
    const sum = (key: 'cpu' | 'memory') => admitted.reduce((t, a) => t.add(Quantity.parse(a[key])), Quantity.zero());

    // The member never holds more CPU than the E it enforces: after every admission, allocated ≤ E.
    const withinE = async (step: string) => {
      const e = await enforcedCpu();
      expect(
        sum('cpu').cmp(e),
        `${step}: the member admitted ${sum('cpu').toString()} CPU while it enforces E = ${e.toString()}`,
      ).toBeLessThanOrEqual(0);
    };
    expect((await decide('web-a', '2')).violations).toEqual([]); // E 0 → 3 (need 2 + keep 1) through the hub
    await withinE('web-a 2');
    expect(transfers).toEqual(['granted']);
    expect((await decide('web-b', '1')).violations).toEqual([]); // within E = 3, no hub
    await withinE('web-b 1');
    expect(transfers).toEqual(['granted']);
    expect((await decide('web-c', '1')).violations).toEqual([]); // 4 > E = 3: asks the hub again
    await withinE('web-c 1');
    expect(transfers).toEqual(['granted', 'granted']);

    // Memory: 3Gi allocated; the budget is 4Gi + the burst's 1Gi = 5Gi, counted once.
    const memoryBudget = Quantity.parse(expectedBudget(p, 'eu', {}, DURING)[MEM]!);
    const over = await decide('web-d', '0', '3Gi');
    expect(over.violations.map((v) => v.rule)).toEqual(['Q1']);
    expect(over.violations[0]!.message).toContain(MEM);
    expect((await decide('web-d', '0', '2Gi')).violations).toEqual([]);
    expect(sum('memory').cmp(memoryBudget)).toBe(0);
    expect(formatResources(r({ [MEM]: sum('memory').toString() }))).toEqual({ [MEM]: '5Gi' });
  });
});
