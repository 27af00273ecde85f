/**
 * The webhook's headroom guard on a fleet member (src/webhook/headroom/guard.ts with src/webhook/headroom/fleet-growth.ts,
 * docs/adr/0039-fleet-budgets.md), on the in-memory ledger and hub: E as the budget of the
 * fleet-budgeted resources, a growth beyond E moved through the hub before it is decided, F2 on a
 * refusal or a hub that does not answer, no hub call within E, and no change for Projects, resources
 * and clusters outside the fleet.
 */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type TenantgateConfig } from '../../src/config/config.js';
import { decodeRecord } from '../../src/fleet/enforced-record.js';
import { fleetBudgetFor, withShareRecordStatus } from '../../src/fleet/fleet-budget-object.js';
import { memberShare, requestGrowth } from '../../src/fleet/shares.js';
import type { ReviewContext } from '../../src/validate/admission.js';
import { formatResources, parseResources } from '../../src/validate/resource-lists.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Project } from '../../src/validate/types.js';
import { HeadroomGuard } from '../../src/webhook/headroom/guard.js';
import { WebhookMetrics } from '../../src/webhook/metrics.js';
import { wireGuard, type SnapshotSource } from '../../src/webhook/start.js';
import type { AdmissionRequest } from '../../src/webhook/review.js';
import { aQuotaCreateRequest } from '../support/fixtures.js';
import { MemoryHub } from '../support/memory-hub.js';
import { MemoryLedger } from '../support/memory-ledger.js';
import { memberLimits, memberCapView, reachableLimits } from '../../src/fleet/member-budget.js';
import { budgetListIn } from '../../src/validate/budget/layers.js';

const CPU = 'requests.cpu';
const MEM = 'requests.memory';
const NAMESPACES = ['web-a', 'web-b', 'web-c', 'web-d'];
const r = (list: Record<string, string>) => parseResources({ ...list });

function project(name: string, fleet: boolean, clusters = ['eu', 'us']): Project {
  return {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name, uid: name },
    spec: {
      tenant: 'acme',
      owners: [{ kind: 'User', name: 'alice' }],
      // The upper bound of each member's share (and the static budget of requests.memory).
      quota: { hard: { [CPU]: '8', [MEM]: '4Gi' } },
      ...(fleet ? { fleet: { quota: { hard: { [CPU]: '10' } }, clusters } } : {}),
    },
  } as unknown as Project;
}

function snapshotOf(p: Project): MemorySnapshot {
  const name = p.metadata.name!;
  return MemorySnapshot.of({
    projects: [p],
    namespaces: NAMESPACES.map((n) => n.replace('web', name)).map((n) => ({
      metadata: { name: n, labels: { 'tenantgate.io/project': name, 'tenantgate.io/tenant': 'acme' } },
    })),
  });
}

const config: TenantgateConfig = { ...DEFAULT_CONFIG, clusterName: 'eu' };
const ctx = (s: MemorySnapshot): ReviewContext => ({
  at: TEST_NOW,
  config,
  snapshot: s,
  user: { username: 'alice', groups: [] },
});
const quota = (ns: string, cpu: string, o: { dryRun?: boolean; memory?: string } = {}): AdmissionRequest => {
  const req = aQuotaCreateRequest(ns, { cpu, ...(o.dryRun ? { dryRun: true } : {}) });
  (req.object as { spec: { hard: Record<string, string> } }).spec.hard[MEM] = o.memory ?? '1Gi';
  return req;
};

function setup(p = project('web', true)) {
  const hub = new MemoryHub();
  const fb = fleetBudgetFor(project('web', true), TEST_NOW);
  if (fb) hub.put(fb);
  const ledger = new MemoryLedger();
  const transfers: string[] = [];
  const guard = new HeadroomGuard({
    ttlMs: 60_000,
    ledger,
    fleet: {
      cluster: 'eu',
      hub,
      policy: { keep: r({ [CPU]: '1' }), above: r({ [CPU]: '2' }) },
      onTransfer: (t) => transfers.push(t),
      newKey: (() => {
        let i = 0;
        return () => `eu-${++i}`;
      })(),
    },
  });
  return { hub, ledger, guard, transfers, s: snapshotOf(p) };
}

/** us takes `cpu` of the fleet budget in the hub. */
function usHolds(hub: MemoryHub, cpu: string): void {
  const taken = requestGrowth(hub.ledger(), 'us', { id: 'us-1', need: r({ [CPU]: cpu }) });
  if (!taken.ok) throw new Error('us refused');
  hub.put(withShareRecordStatus(hub.objects.get('web')!, taken.record));
}

async function enforced(ledger: MemoryLedger, name = 'web') {
  const d = decodeRecord((await ledger.read(name)).fleet, name);
  if (!d.ok) throw new Error(d.problem);
  return { limits: formatResources(d.record.enforced), grants: d.record.grants };
}

describe('a fleet member decides against its enforced limit E', () => {
  it('a growth beyond E (0 at first) is moved through the hub (need + keep), E raised by the grant, then admitted', async () => {
    const { hub, ledger, guard, transfers, s } = setup();
    const v = await guard.decide(ctx(s), quota('web-a', '2'));
    expect(v.violations).toEqual([]);
    expect(transfers).toEqual(['granted']);
    expect(formatResources(memberShare(hub.ledger(), 'eu').share)).toEqual({ [CPU]: '3' });
    expect(await enforced(ledger)).toEqual({ limits: { [CPU]: '3' }, grants: ['eu-1'] });
    // The reservation was written in the same ledger, against the raised E.
    expect((await ledger.read('web')).entries.map((e) => e.namespace)).toEqual(['web-a']);
  });

  it('a growth within E never calls the hub', async () => {
    const { hub, guard, transfers, s } = setup();
    await guard.decide(ctx(s), quota('web-a', '2'));
    const reads = hub.reads;
    expect((await guard.decide(ctx(s), quota('web-b', '1'))).violations).toEqual([]);
    expect(hub.reads).toBe(reads);
    expect(transfers).toEqual(['granted']);
  });

  it('a growth the fleet cannot cover is denied with F2 naming who holds the room; E and the hub unchanged', async () => {
    const { hub, ledger, guard, transfers, s } = setup();
    usHolds(hub, '7');
    const v = await guard.decide(ctx(s), quota('web-a', '4'));
    expect(v.violations).toHaveLength(1);
    expect(v.violations[0]!.rule).toBe('F2');
    expect(v.violations[0]!.message).toMatch(
      /requests\.cpu needs 4 more than this cluster's share 0 of the fleet budget; the hub has 3 unallocated and 0 offered by other clusters, held by us 7/,
    );
    expect(transfers).toEqual(['refused']);
    expect(formatResources(memberShare(hub.ledger(), 'eu').share)).toEqual({});
    expect((await enforced(ledger)).limits).toEqual({});
  });

  it('asks for need + keep but takes what fits when only the need fits', async () => {
    const { hub, ledger, guard, s } = setup();
    usHolds(hub, '7');
    expect((await guard.decide(ctx(s), quota('web-a', '3'))).violations).toEqual([]);
    expect((await enforced(ledger)).limits).toEqual({ [CPU]: '3' });
  });

  it('the hub down: growth within E admitted, beyond it F2 "did not answer"', async () => {
    const { hub, guard, transfers, s } = setup();
    await guard.decide(ctx(s), quota('web-a', '2'));
    hub.down = true;
    expect((await guard.decide(ctx(s), quota('web-b', '1'))).violations).toEqual([]);
    const v = await guard.decide(ctx(s), quota('web-c', '1'));
    expect(v.violations.map((x) => x.rule)).toEqual(['F2']);
    expect(v.violations[0]!.message).toMatch(
      /requests\.cpu needs 1 more than the 3 this cluster enforces; when last read, no other cluster holds any; the fleet's hub did not answer within [\d.]+ s/,
    );
    expect(transfers).toEqual(['granted', 'unreachable']);
    // Back: transfers resume.
    hub.down = false;
    expect((await guard.decide(ctx(s), quota('web-c', '1'))).violations).toEqual([]);
    expect(transfers).toEqual(['granted', 'unreachable', 'granted']);
  });

  it('a dry run beyond E asks the hub whether it would grant, and writes nothing', async () => {
    const { hub, ledger, guard, s } = setup();
    expect((await guard.decide(ctx(s), quota('web-a', '2', { dryRun: true }))).violations).toEqual([]);
    expect(hub.writes).toBe(0);
    expect(ledger.writes).toBe(0);
    usHolds(hub, '8');
    expect((await guard.decide(ctx(s), quota('web-a', '3', { dryRun: true }))).violations[0]?.rule).toBe('F2');
    expect(hub.writes).toBe(0);
  });

  it('resources outside the fleet budget keep their static per-cluster budget (Q1), with no hub call', async () => {
    const { hub, guard, s } = setup();
    await guard.decide(ctx(s), quota('web-a', '2'));
    const reads = hub.reads;
    const v = await guard.decide(ctx(s), quota('web-b', '1', { memory: '4Gi' }));
    expect(v.violations.map((x) => x.rule)).toEqual(['Q1']);
    expect(v.violations[0]!.message).toMatch(/requests\.memory/);
    expect(hub.reads).toBe(reads);
  });

  it("a Project without spec.fleet, or a cluster not in spec.fleet.clusters: today's static budget, no hub", async () => {
    for (const p of [project('solo', false), project('web', true, ['us', 'ap'])]) {
      const { hub, ledger, guard, transfers, s } = setup(p);
      const ns = `${p.metadata.name}-a`;
      expect((await guard.decide(ctx(s), quota(ns, '8'))).violations).toEqual([]);
      expect((await guard.decide(ctx(s), quota(`${p.metadata.name}-b`, '1'))).violations.map((x) => x.rule)).toEqual([
        'Q1',
      ]);
      expect(hub.reads).toBe(0);
      expect(transfers).toEqual([]);
      expect((await ledger.read(p.metadata.name!)).fleet).toBeUndefined();
    }
  });

  it('the per-cluster upper bound stays a static limit: beyond it Q1, and the hub is not asked', async () => {
    const { hub, guard, s } = setup();
    const v = await guard.decide(ctx(s), quota('web-a', '9'));
    expect(v.violations.map((x) => x.rule)).toEqual(['Q1']);
    expect(hub.reads).toBe(0);
  });

  it('a fleet member without the ledger does not start', () => {
    const source = {
      snapshot: snapshotOf(project('web', true)),
      synced: true,
      onEvent: () => {},
    } as unknown as SnapshotSource;
    expect(() =>
      wireGuard({
        config,
        source,
        metrics: new WebhookMetrics(),
        fleet: { cluster: 'eu', hub: new MemoryHub(), policy: { keep: new Map(), above: new Map() } },
      }),
    ).toThrow(/fleet.hubKubeconfig is set but the webhook runs without the headroom ledger/);
  });
});

describe('the member budget view (src/fleet/member-budget.ts)', () => {
  it('budgets each fleet-budgeted resource at min(E, upper bound, fleet budget); other resources, projects and clusters unchanged', () => {
    const p = project('web', true);
    expect(formatResources(memberLimits(p, 'eu', TEST_NOW, r({ [CPU]: '3' }))!)).toEqual({ [CPU]: '3' });
    expect(formatResources(memberLimits(p, 'eu', TEST_NOW, r({ [CPU]: '9' }))!)).toEqual({ [CPU]: '8' });
    expect(formatResources(memberLimits(p, 'eu', TEST_NOW, new Map())!)).toEqual({ [CPU]: '0' });
    expect(formatResources(reachableLimits(p, 'eu', TEST_NOW)!)).toEqual({ [CPU]: '8' });
    expect(memberLimits(p, 'ap', TEST_NOW, new Map())).toBeUndefined();
    expect(memberLimits(project('solo', false), 'eu', TEST_NOW, new Map())).toBeUndefined();
    const s = snapshotOf(p);
    const view = memberCapView(s, 'eu', (q) => memberLimits(q, 'eu', TEST_NOW, r({ [CPU]: '3' })));
    expect(budgetListIn(view, view.project('web')!, 'eu', TEST_NOW)).toEqual({ [CPU]: '3', [MEM]: '4Gi' });
    expect([...view.projects()].map((q) => budgetListIn(view, q, 'eu', TEST_NOW))).toEqual([
      { [CPU]: '3', [MEM]: '4Gi' },
    ]);
    // The base's own methods, optional memos included, are the view's.
    expect(typeof view.effectiveQuotaOf).toBe('function');
    expect([...view.namespacesOfProject('web')].length).toBe(NAMESPACES.length);
    expect(memberCapView(s, 'eu', () => undefined).project('web')).toBe(s.project('web'));
  });
});
