/**
 * Fleet budgets on the members (docs/adr/0039-fleet-budgets.md): a hub control plane with the
 * FleetBudget CRD and a FleetBudget, two member control planes running tenantgate's webhook (ledger on,
 * reviews from their apiserver only) configured as fleet members that write to the hub as their
 * member ServiceAccount (test/support/fleet-hub.ts). Growth is self-service namespaces of alice, each
 * holding 2 CPUs (namespaceDefaults), in a Project whose fleet budget is 6 CPUs for both clusters.
 *
 * Shown: a growth beyond a member's share that fits the fleet is admitted after a transfer (the share
 * moves in the hub, E is raised in the member's ledger); one beyond the fleet is refused with F2 on
 * every member, naming who holds the room; with the hub's kube-apiserver stopped a member admits
 * within E and refuses beyond it with F2 "did not answer", and transfers resume once it is back; a
 * Project without spec.fleet behaves as before and never reaches the hub.
 */
import { processNow } from '../../src/clock.js';
import { execa } from 'execa';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeRecord } from '../../src/fleet/enforced-record.js';
import { fleetBudgetFor, FLEET_NAMESPACE } from '../../src/fleet/fleet-budget-object.js';
import { formatResources } from '../../src/validate/resource-lists.js';
import type { Project } from '../../src/validate/types.js';
import { REPO_ROOT } from '../support/devcluster/controlplane.js';
import { aProject } from '../support/fixtures.js';
import { startFleetHub, startFleetMember, type FleetHub, type FleetMemberCluster } from '../support/fleet-hub.js';

const CPU = 'requests.cpu';
const RESERVATION_TTL_SECONDS = 3;
const log = (l: string) => {
  if (process.env.TG_FLEET_LOG === '1') process.stderr.write(`[fleet-shares] ${l}\n`);
};

function shop(fleetCpu = '6'): Project {
  return aProject('shop', {
    owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
    // Each member's upper bound: the whole fleet budget (F1 allows equal).
    quota: { hard: { [CPU]: '6' } },
    namespaceDefaults: { quota: { hard: { [CPU]: '2' } } },
    fleet: { quota: { hard: { [CPU]: fleetCpu } }, clusters: ['eu', 'us'] },
  });
}

const plain = aProject('plain', {
  owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
  quota: { hard: { [CPU]: '4' } },
  namespaceDefaults: { quota: { hard: { [CPU]: '2' } } },
});

let hub: FleetHub;
let eu: FleetMemberCluster;
let us: FleetMemberCluster;

const as = (m: FleetMemberCluster, user: string, args: string[], input?: string) =>
  execa(join(m.cp.info.binDir, 'kubectl'), args, {
    env: { KUBECONFIG: m.cp.info.kubeconfigs[user] ?? '' },
    reject: false,
    timeout: 60_000,
    ...(input ? { input } : {}),
  });
const createNamespace = (m: FleetMemberCluster, name: string) => as(m, 'alice', ['create', 'namespace', name]);
const applyAll = async (m: FleetMemberCluster, objects: unknown[]) => {
  const out = await as(m, 'admin', ['apply', '-f', '-'], objects.map((o) => JSON.stringify(o)).join('\n'));
  expect(out.exitCode, out.stderr).toBe(0);
};

async function shareOn(cluster: string): Promise<Record<string, string | number>> {
  return (await hub.fleetBudget('shop'))?.status?.members?.[cluster]?.share ?? {};
}

async function enforcedOn(m: FleetMemberCluster): Promise<Record<string, string>> {
  const got = await as(m, 'admin', [
    '-n',
    'tenantgate-system',
    'get',
    'configmap',
    'tenantgate-ledger-shop',
    '-o',
    'jsonpath={.data.fleet}',
  ]);
  const d = decodeRecord(got.stdout || undefined, 'shop');
  if (!d.ok) throw new Error(d.problem);
  return formatResources(d.record.enforced);
}

async function counter(
  m: FleetMemberCluster,
  metric: 'fleetTransfers' | 'fleetHubRequests',
  labels: Record<string, string> = {},
): Promise<number> {
  const { values } = await m.webhook.webhook.metrics[metric].get();
  return values
    .filter((v) => Object.entries(labels).every(([k, want]) => (v.labels as Record<string, unknown>)[k] === want))
    .reduce((n, v) => n + v.value, 0);
}

/** Waits until the member's webhook cache shows the Project at this fleet budget. */
async function projectSeen(m: FleetMemberCluster, fleetCpu: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (m.webhook.webhook.cache.snapshot.project('shop')?.spec.fleet?.quota?.hard?.[CPU] === fleetCpu) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${m.name} never saw project shop with fleet budget ${fleetCpu}`);
}

beforeAll(async () => {
  const dir = await mkdtemp(join(REPO_ROOT, '.run', 'fleet-shares-'));
  hub = await startFleetHub(dir, ['eu', 'us'], log);
  // keep 0: each transfer moves exactly what a namespace needs. Reservations live 3 s (a deleted
  // namespace's reservation counts until it expires, docs/adr/0003-headroom-ledger.md).
  const o = {
    fleet: { keep: { [CPU]: '0' }, above: { [CPU]: '2' } },
    config: { reservationTtlSeconds: RESERVATION_TTL_SECONDS },
    log,
  };
  [eu, us] = await Promise.all([startFleetMember('eu', dir, hub, o), startFleetMember('us', dir, hub, o)]);
  await hub.apply([fleetBudgetFor(shop(), processNow())]);
  for (const m of [eu, us]) {
    await applyAll(m, [shop(), plain]);
    await projectSeen(m, '6');
  }
}, 300_000);

afterAll(async () => {
  // What each namespace decision cost (not asserted: docs/adr/0039-fleet-budgets.md quotes it).
  for (const m of [eu, us]) {
    const creates = (m?.decisions ?? []).filter(
      (d) => d.kind === 'Namespace' && d.operation === 'CREATE' && d.path === 'validate',
    );
    process.stderr.write(
      `[fleet-shares] ${m?.name}: ${creates.map((d) => `${d.name} ${d.verdict}${d.rules.length ? ` ${d.rules.join(',')}` : ''} ${d.ms} ms`).join('; ')}\n`,
    );
  }
  await Promise.all([eu?.stop(), us?.stop()]);
  await hub?.stop();
});

describe('fleet budgets on two members sharing one hub', () => {
  it("a growth beyond the member's share that fits the fleet is admitted after a transfer: the share moves in the hub, E rises", async () => {
    expect(await shareOn('eu')).toEqual({});
    const a = await createNamespace(eu, 'shop-a');
    expect(a.exitCode, a.stderr).toBe(0);
    expect(await shareOn('eu')).toEqual({ [CPU]: '2' });
    expect(await enforcedOn(eu)).toEqual({ [CPU]: '2' });
    const b = await createNamespace(eu, 'shop-b');
    expect(b.exitCode, b.stderr).toBe(0);
    expect(await shareOn('eu')).toEqual({ [CPU]: '4' });
    expect(await enforcedOn(eu)).toEqual({ [CPU]: '4' });
    expect(await counter(eu, 'fleetTransfers', { result: 'granted' })).toBe(2);
    // us got its share the same way.
    const x = await createNamespace(us, 'shop-x');
    expect(x.exitCode, x.stderr).toBe(0);
    expect(await shareOn('us')).toEqual({ [CPU]: '2' });
  });

  it('a growth beyond the fleet budget is refused with F2 on every member, naming who holds the room', async () => {
    const onEu = await createNamespace(eu, 'shop-c');
    expect(onEu.exitCode).not.toBe(0);
    expect(onEu.stderr).toContain(
      "[F2] project shop on cluster eu: requests.cpu needs 2 more than this cluster's share 4 of the fleet budget; the hub has 0 unallocated and 0 offered by other clusters, held by us 2;",
    );
    const onUs = await createNamespace(us, 'shop-y');
    expect(onUs.exitCode).not.toBe(0);
    expect(onUs.stderr).toContain(
      "[F2] project shop on cluster us: requests.cpu needs 2 more than this cluster's share 2 of the fleet budget; the hub has 0 unallocated and 0 offered by other clusters, held by eu 4;",
    );
    for (const [m, ns] of [
      [eu, 'shop-c'],
      [us, 'shop-y'],
    ] as const)
      expect((await as(m, 'admin', ['get', 'namespace', ns, '--ignore-not-found', '-o', 'name'])).stdout.trim()).toBe(
        '',
      );
    expect({ eu: await shareOn('eu'), us: await shareOn('us') }).toEqual({ eu: { [CPU]: '4' }, us: { [CPU]: '2' } });
  });

  it('with the hub down a member admits within E and refuses beyond it with F2; transfers resume when the hub is back', async () => {
    // Free 2 of eu's E: a namespace goes (its share stays eu's until a give-back).
    const del = await as(eu, 'admin', ['delete', 'namespace', 'shop-b', '--wait=true', '--timeout=60s']);
    expect(del.exitCode, del.stderr).toBe(0);
    // Its reservation (made when it was created) counts until it expires.
    await new Promise((r) => setTimeout(r, (RESERVATION_TTL_SECONDS + 1) * 1000));
    await hub.cp.stopApiserver();
    try {
      const requests = await counter(eu, 'fleetHubRequests');
      const within = await createNamespace(eu, 'shop-d');
      expect(within.exitCode, within.stderr).toBe(0);
      // Within E: the hub was not even asked.
      expect(await counter(eu, 'fleetHubRequests')).toBe(requests);
      const beyond = await createNamespace(eu, 'shop-e');
      expect(beyond.exitCode).not.toBe(0);
      expect(beyond.stderr).toMatch(
        /\[F2\] project shop on cluster eu: requests\.cpu needs 2 more than the 4 this cluster enforces; when last read, held by us 2; the fleet's hub did not answer within [\d.]+ s, so nothing more was granted \(growth within the share is still admitted\); retry later/,
      );
      const onUs = await createNamespace(us, 'shop-y');
      expect(onUs.stderr).toMatch(/\[F2\] project shop on cluster us: .*the fleet's hub did not answer/);
      expect(await counter(eu, 'fleetTransfers', { result: 'unreachable' })).toBe(1);
      expect((await eu.webhook.webhook.metrics.fleetHubReachable.get()).values[0]?.value).toBe(0);
    } finally {
      await hub.cp.resumeApiserver();
    }
    // Back, and the platform raised the fleet budget to 8 in git (hub and members): eu gets the 2 new CPUs.
    await hub.apply([fleetBudgetFor(shop('8'), processNow())]);
    for (const m of [eu, us]) {
      await applyAll(m, [shop('8')]);
      await projectSeen(m, '8');
    }
    const again = await createNamespace(eu, 'shop-e');
    expect(again.exitCode, again.stderr).toBe(0);
    expect(await shareOn('eu')).toEqual({ [CPU]: '6' });
    expect(await enforcedOn(eu)).toEqual({ [CPU]: '6' });
    expect((await eu.webhook.webhook.metrics.fleetHubReachable.get()).values[0]?.value).toBe(1);
  });

  it('a Project without spec.fleet keeps its static budget on the member and never reaches the hub', async () => {
    const requests = await counter(eu, 'fleetHubRequests');
    for (const ns of ['plain-a', 'plain-b']) {
      const ok = await createNamespace(eu, ns);
      expect(ok.exitCode, ok.stderr).toBe(0);
    }
    const third = await createNamespace(eu, 'plain-c');
    expect(third.exitCode).not.toBe(0);
    expect(third.stderr).toMatch(
      /\[Q1\] Namespace plain-c asks requests\.cpu 2 \(namespaceDefaults\), project plain on cluster eu has 4 of which 4 are allocated/,
    );
    expect(await counter(eu, 'fleetHubRequests')).toBe(requests);
    const ledger = await as(eu, 'admin', [
      '-n',
      'tenantgate-system',
      'get',
      'configmap',
      'tenantgate-ledger-plain',
      '-o',
      'jsonpath={.data.fleet}',
    ]);
    expect(ledger.stdout).toBe('');
    expect(await hub.fleetBudget('plain')).toBeUndefined();
    expect(FLEET_NAMESPACE).toBe('tenantgate-fleet');
  });
});
