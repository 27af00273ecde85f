/**
 * The member controller's give-back and offer loop (src/controller/fleet-loop.ts,
 * docs/adr/0039-fleet-budgets.md) on real control planes: a hub with the FleetBudget CRD and the
 * member RBAC, and one member `eu` running tenantgate's webhook as a fleet member
 * (test/support/fleet-hub.ts) and the controller in this process as the tenantgate-controller
 * ServiceAccount with the chart's controller RBAC for a fleet member, the hub reached as member-eu.
 * Short hysteresis for the test: offer after 2 s, give back after 4 s, a check every second.
 *
 * Shown: growth moves share to eu through the hub; while the namespaces hold it nothing is returned
 * (never below what is allocated); once namespaces go, the unused share is first offered, then given
 * back to the pool, down to what the remaining namespace holds and no lower; the pool then serves new
 * growth; the controller's fleet metrics show the shares, E, the allocation and the hub reachable, and
 * every series the fleet alerts select; with the hub's apiserver stopped nothing is returned and the
 * hub is reported unreachable; with the hub's etcd restored from an older backup the member re-asserts
 * the gap from the pool, and where the pool has none stops growing and reports what stays above the
 * hub's record until its namespaces hold less.
 */
import { processNow } from '../../src/clock.js';
import { execa } from 'execa';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { helmBinary, helmTemplate } from '../../hack/chart-manifests.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { RunningController } from '../../src/controller/controller.js';
import { decodeRecord } from '../../src/fleet/enforced-record.js';
import { fleetBudgetFor } from '../../src/fleet/fleet-budget-object.js';
import { formatResources } from '../../src/validate/resource-lists.js';
import type { Project, ResourceList } from '../../src/validate/types.js';
import { startTestController } from '../support/controller-kit.js';
import { REPO_ROOT } from '../support/devcluster/controlplane.js';
import { serviceAccountKubeConfig } from '../support/devcluster/tenantgate.js';
import { eventually } from '../support/cluster.js';
import { aProject } from '../support/fixtures.js';
import { startFleetHub, startFleetMember, type FleetHub, type FleetMemberCluster } from '../support/fleet-hub.js';
import { metricNames, renderedRuleGroups } from '../support/monitoring.js';

const CPU = 'requests.cpu';
const log = (l: string) => {
  if (process.env.TG_FLEET_LOG === '1') process.stderr.write(`[fleet-giveback] ${l}\n`);
};

/** shop shares 6 CPUs between eu and us (us is never started: it holds nothing); each namespace takes 2. */
function shop(): Project {
  return aProject('shop', {
    owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
    quota: { hard: { [CPU]: '6' } },
    namespaceDefaults: { quota: { hard: { [CPU]: '2' } } },
    fleet: { quota: { hard: { [CPU]: '6' } }, clusters: ['eu', 'us'] },
  });
}

let hub: FleetHub;
let eu: FleetMemberCluster;
let controller: RunningController;
const lines: Array<Record<string, unknown>> = [];

const as = (user: string, args: string[], input?: string) =>
  execa(join(eu.cp.info.binDir, 'kubectl'), args, {
    env: { KUBECONFIG: eu.cp.info.kubeconfigs[user] ?? '' },
    reject: false,
    timeout: 60_000,
    ...(input ? { input } : {}),
  });

async function entry(): Promise<{ share: ResourceList; lendable: ResourceList }> {
  const e = (await hub.fleetBudget('shop'))?.status?.members?.eu;
  return { share: e?.share ?? {}, lendable: e?.lendable ?? {} };
}

async function enforced(): Promise<Record<string, string>> {
  const got = await as('admin', [
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

const checks = (fleet: string) =>
  lines.filter((l) => l.message === 'fleet checked' && l.project === 'shop' && l.fleet === fleet);

beforeAll(async () => {
  const dir = await mkdtemp(join(REPO_ROOT, '.run', 'fleet-giveback-'));
  hub = await startFleetHub(dir, ['eu', 'us'], log);
  const fleet = {
    keep: { [CPU]: '0' },
    above: { [CPU]: '1' },
    offerAfterSeconds: 2,
    giveBackAfterSeconds: 4,
    checkEverySeconds: 1,
  };
  eu = await startFleetMember('eu', dir, hub, { fleet, log });
  // The chart's controller RBAC on a fleet member (get/create/update of the ledger ConfigMaps).
  const rbac = parseAllDocuments(
    await helmTemplate(['--set', 'fleet.member.cluster=eu', '--show-only', 'templates/controller/rbac.yaml']),
  )
    .map((d) => d.toJS() as { kind: string; metadata: { name: string } })
    .filter((o) => o?.metadata?.name === 'tenantgate-controller-ledger-cleanup');
  expect(rbac.map((o) => o.kind).sort()).toEqual(['Role', 'RoleBinding']);
  const applied = await as('admin', ['apply', '-f', '-'], rbac.map((o) => JSON.stringify(o)).join('\n'));
  expect(applied.exitCode, applied.stderr).toBe(0);
  await hub.apply([fleetBudgetFor(shop(), processNow())]);
  const project = await as('admin', ['apply', '-f', '-'], JSON.stringify(shop()));
  expect(project.exitCode, project.stderr).toBe(0);
  controller = await startTestController({
    kubeConfig: await serviceAccountKubeConfig(eu.cp.info, 'tenantgate-system', 'tenantgate-controller'),
    config: {
      ...DEFAULT_CONFIG,
      clusterName: 'eu',
      resyncPeriodSeconds: 30,
      fleet: { ...DEFAULT_CONFIG.fleet, ...fleet, hubKubeconfig: await hub.memberKubeconfig('eu') },
    },
    log: (message, fields) => {
      lines.push({ message, ...fields });
      log(`controller: ${message} ${JSON.stringify(fields ?? {})}`);
    },
  });
  await eventually(async () => expect(controller.isLeader()).toBe(true), { what: 'the controller leads' });
}, 300_000);

afterAll(async () => {
  await controller?.stop();
  await eu?.stop();
  await hub?.stop();
});

describe('the give-back loop on a fleet member', () => {
  it('after transfers, unused share drifts back to the pool (offered first, then given back), never below what is allocated', async () => {
    for (const ns of ['shop-a', 'shop-b', 'shop-c']) {
      const r = await as('alice', ['create', 'namespace', ns]);
      expect(r.exitCode, r.stderr).toBe(0);
    }
    expect(await entry()).toEqual({ share: { [CPU]: '6' }, lendable: {} });
    expect(await enforced()).toEqual({ [CPU]: '6' });
    // The loop sees the three namespaces hold all 6 (their default quotas) for longer than giveBackAfter: it keeps everything.
    const before = checks('kept').length;
    await eventually(
      async () => {
        const kept = checks('kept')
          .slice(before)
          .filter((l) => (l.floor as Record<string, string>)?.[CPU] === '6');
        expect(kept.length).toBeGreaterThanOrEqual(6);
      },
      { what: 'six checks that kept the share while the namespaces hold it', timeoutMs: 60_000 },
    );
    expect(checks('returned')).toEqual([]);
    expect(await entry()).toEqual({ share: { [CPU]: '6' }, lendable: {} });

    // Two namespaces go: 4 CPUs are unused.
    const del = await as('admin', ['delete', 'namespace', 'shop-b', 'shop-c', '--wait=true', '--timeout=60s']);
    expect(del.exitCode, del.stderr).toBe(0);
    await eventually(async () => expect(await entry()).toEqual({ share: { [CPU]: '2' }, lendable: {} }), {
      what: 'the unused share given back to the pool',
      timeoutMs: 60_000,
      intervalMs: 500,
    });
    expect(await enforced()).toEqual({ [CPU]: '2' });
    // First offered (E lowered to 2, 4 lent), then given back with the offer.
    const returned = checks('returned');
    expect(returned.map((l) => l.modes)).toEqual([{ [CPU]: 'offer' }, { [CPU]: 'give-back' }]);
    expect(returned[0]).toMatchObject({ reason: 'idle', enforcedNow: { [CPU]: '2' }, lendable: { [CPU]: '4' } });
    expect(returned[1]).toMatchObject({ share: { [CPU]: '-4' }, lendable: { [CPU]: '-4' } });

    // No lower than what shop-a holds, however long it stays idle.
    const settled = checks('kept').length;
    await eventually(async () => expect(checks('kept').length - settled).toBeGreaterThanOrEqual(6), {
      what: 'six more checks',
      timeoutMs: 60_000,
    });
    expect(await entry()).toEqual({ share: { [CPU]: '2' }, lendable: {} });
    expect(checks('returned')).toHaveLength(2);

    // The pool serves the next growth.
    const again = await as('alice', ['create', 'namespace', 'shop-d']);
    expect(again.exitCode, again.stderr).toBe(0);
    expect((await entry()).share).toEqual({ [CPU]: '4' });
  });

  it('exports the fleet series every fleet alert selects: shares per member, E, allocation, hub reachable', async () => {
    await eventually(
      async () => {
        const text = await controller.metrics.registry.metrics();
        expect(text).toContain(
          'tenantgate_fleet_share{project="shop",cluster="eu",member="eu",resource="requests.cpu"} 4',
        );
        expect(text).toContain(
          'tenantgate_fleet_controller_enforced_limit{project="shop",cluster="eu",resource="requests.cpu"} 4',
        );
        expect(text).toContain('tenantgate_fleet_allocated{project="shop",cluster="eu",resource="requests.cpu"} 4');
        expect(text).toContain('tenantgate_fleet_controller_hub_reachable{cluster="eu"} 1');
        expect(text).toMatch(/tenantgate_fleet_returns_total\{cluster="eu",kind="give-back",result="stored"\} 1/);
        const fleetGroups = (
          await renderedRuleGroups(await helmBinary(), ['--set', 'prometheusRules.fleetWide=true'])
        ).filter((g) => g.name.startsWith('tenantgate.fleet'));
        const selected = new Set(fleetGroups.flatMap((g) => g.rules.flatMap((r) => [...metricNames(r.expr)])));
        expect(selected.size).toBeGreaterThan(0);
        for (const name of selected) expect(text, name).toContain(`${name}{`);
      },
      { what: 'the fleet metrics after the give-back', timeoutMs: 30_000 },
    );
  });

  it("the leader renews eu's heartbeat Lease on the hub every round (what `fleet release` reads), as member-eu", async () => {
    const lease = async () => {
      const r = await execa(
        join(hub.cp.info.binDir, 'kubectl'),
        ['-n', 'tenantgate-fleet', 'get', 'lease', 'member-eu', '-o', 'json'],
        { env: { KUBECONFIG: hub.cp.info.kubeconfigs.admin! }, reject: false },
      );
      expect(r.exitCode, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as {
        spec: { holderIdentity: string; renewTime: string };
        metadata: { managedFields?: Array<{ manager?: string }> };
      };
    };
    const first = await lease();
    expect(first.spec.holderIdentity).toBe('eu');
    await eventually(async () => expect((await lease()).spec.renewTime > first.spec.renewTime).toBe(true), {
      what: 'the heartbeat renewed',
      timeoutMs: 15_000,
    });
    expect(Date.now() - Date.parse((await lease()).spec.renewTime)).toBeLessThan(15_000);
  });

  it('with the hub down nothing is returned and the hub is reported unreachable; E stays', async () => {
    // The hub goes down first: shop-d's 2 CPUs fall unused only while it cannot be reached (a give-back
    // waits 4 s here, and the namespace takes longer than that to go once its quota is gone).
    await hub.cp.stopApiserver();
    try {
      const del = await as('admin', ['delete', 'namespace', 'shop-d', '--wait=true', '--timeout=60s']);
      expect(del.exitCode, del.stderr).toBe(0);
      const before = checks('hub-unreachable').length;
      await eventually(async () => expect(checks('hub-unreachable').length - before).toBeGreaterThanOrEqual(6), {
        what: 'six checks that could not reach the hub',
        timeoutMs: 90_000,
      });
      expect(await enforced()).toEqual({ [CPU]: '4' });
      expect(await controller.metrics.registry.metrics()).toContain(
        'tenantgate_fleet_controller_hub_reachable{cluster="eu"} 0',
      );
    } finally {
      await hub.cp.resumeApiserver();
    }
    await eventually(async () => expect(await entry()).toEqual({ share: { [CPU]: '2' }, lendable: {} }), {
      what: 'given back once the hub is back',
      timeoutMs: 60_000,
      intervalMs: 500,
    });
  });

  it("a hub restored from an older backup: the member sees E above the hub's record and re-asserts it from the pool; without room it stops growing and reports what stays above", async () => {
    const backups = await mkdtemp(join(REPO_ROOT, '.run', 'fleet-hub-backup-'));
    const metric = async () =>
      /tenantgate_fleet_enforced_above_record\{project="shop",cluster="eu",resource="requests.cpu"\} (\S+)/.exec(
        await controller.metrics.registry.metrics(),
      )?.[1];
    const setStatus = async (members: Record<string, { share: ResourceList }>) => {
      const object = (await hub.fleetBudget('shop'))!;
      const r = await execa(join(hub.cp.info.binDir, 'kubectl'), ['replace', '--subresource=status', '-f', '-'], {
        env: { KUBECONFIG: hub.cp.info.kubeconfigs.admin! },
        input: JSON.stringify({ ...object, status: { members } }),
        reject: false,
      });
      expect(r.exitCode, r.stderr).toBe(0);
    };
    expect(await entry()).toEqual({ share: { [CPU]: '2' }, lendable: {} });

    // 1. A backup while eu holds 2; eu then grows to 4 from the pool; the hub is restored: it records 2 again.
    await hub.cp.backupEtcd(join(backups, 'one'));
    expect((await as('alice', ['create', 'namespace', 'shop-e'])).exitCode).toBe(0);
    expect(await entry()).toEqual({ share: { [CPU]: '4' }, lendable: {} });
    expect(await enforced()).toEqual({ [CPU]: '4' });
    const reasserted = checks('re-asserted').length;
    await hub.cp.restoreEtcd(join(backups, 'one'));
    // The hub now records 2 for eu (the loop checks every second, so it may have mended it already); the
    // pool holds the gap: eu writes its share back up to E, and its log says what it found.
    await eventually(async () => expect(await entry()).toEqual({ share: { [CPU]: '4' }, lendable: {} }), {
      what: 'the gap re-asserted on the hub',
      timeoutMs: 60_000,
      intervalMs: 500,
    });
    expect(checks('re-asserted').length).toBeGreaterThan(reasserted);
    expect(checks('re-asserted').at(-1)).toMatchObject({ recordBelowEnforced: { [CPU]: '2' } });
    expect(await enforced()).toEqual({ [CPU]: '4' });

    // 2. A backup while us holds the rest (the pool empty); us gives it back, eu grows to 6; the hub is restored.
    await setStatus({ eu: { share: { [CPU]: '4' } }, us: { share: { [CPU]: '2' } } });
    await hub.cp.backupEtcd(join(backups, 'two'));
    await setStatus({ eu: { share: { [CPU]: '4' } } });
    expect((await as('alice', ['create', 'namespace', 'shop-f'])).exitCode).toBe(0);
    expect(await enforced()).toEqual({ [CPU]: '6' });
    await hub.cp.restoreEtcd(join(backups, 'two'));
    // No room to re-assert: E stays at what the three namespaces hold (6), 2 above the record, reported.
    await eventually(
      async () =>
        expect(checks('record-below-enforced').at(-1)).toMatchObject({
          refusal: 'no-room',
          enforcedNow: { [CPU]: '6' },
          aboveRecord: { [CPU]: '2' },
        }),
      { what: 'the gap reported', timeoutMs: 60_000 },
    );
    await eventually(async () => expect(await metric()).toBe('2'), {
      what: 'tenantgate_fleet_enforced_above_record 2',
    });
    // E is at what the namespaces hold: any growth on eu needs the hub, which has no room; the record stays.
    expect(await enforced()).toEqual({ [CPU]: '6' });
    expect(await entry()).toEqual({ share: { [CPU]: '4' }, lendable: {} });
    // shop-f goes: E follows down to the hub's record, nothing stays above it.
    expect((await as('admin', ['delete', 'namespace', 'shop-f', '--wait=true', '--timeout=60s'])).exitCode).toBe(0);
    await eventually(async () => expect(await enforced()).toEqual({ [CPU]: '4' }), {
      what: 'E down to the record',
      timeoutMs: 60_000,
      intervalMs: 500,
    });
    await eventually(async () => expect(await metric()).toBe('0'), {
      what: 'tenantgate_fleet_enforced_above_record 0',
    });
    expect(await entry()).toEqual({ share: { [CPU]: '4' }, lendable: {} });
  });
});
