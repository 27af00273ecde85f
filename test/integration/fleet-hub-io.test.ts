/**
 * The member's fleet I/O against a real apiserver (the shared control plane plays the hub):
 * src/fleet/hub-client.ts (GET a FleetBudget, 404 → undefined, PUT its status with the
 * resourceVersion read, 409 → HubConflict), src/fleet/hub-transaction.ts (a growth moved in the hub;
 * a conflict recomputed), and src/fleet/enforced-limit.ts in the headroom-ledger ConfigMap (the
 * `fleet` key survives reservation writes; a reservation batch read before a raise conflicts; the
 * ledger is not released while E is nonzero).
 */
import { processNow } from '../../src/clock.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import {
  fleetBudgetFor,
  parseFleetBudget,
  withShareRecordStatus,
  FLEET_NAMESPACE,
} from '../../src/fleet/fleet-budget-object.js';
import { HubConflict, LeanHubClient, loadHubKubeConfig } from '../../src/fleet/hub-client.js';
import { applyOnHub, surelyGranted } from '../../src/fleet/hub-transaction.js';
import { memberShare, requestGrowth, type Granted } from '../../src/fleet/shares.js';
import { raiseEnforced, lowerEnforced } from '../../src/fleet/enforced-limit.js';
import { decodeRecord } from '../../src/fleet/enforced-record.js';
import { formatResources, parseResources } from '../../src/validate/resource-lists.js';
import type { Project } from '../../src/validate/types.js';
import { ConfigMapLedger, LedgerConflict } from '../../src/ledger/ledger.js';
import { installBase, serviceAccountKubeConfig } from '../support/devcluster/tenantgate.js';
import { dropLedger } from '../support/ledger-reset.js';
import { cluster, kubectl, uniqueName } from '../support/cluster.js';

const CPU = 'requests.cpu';
const CRD = new URL('../../charts/tenantgate/files/crd/fleetbudgets.tenantgate.io.yaml', import.meta.url).pathname;
const r = (list: Record<string, string>) => parseResources({ ...list });

function projectNamed(name: string): Project {
  return {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name },
    spec: {
      owners: [{ kind: 'User', name: 'alice' }],
      quota: { hard: { [CPU]: '8' } },
      fleet: { quota: { hard: { [CPU]: '10' } }, clusters: ['eu', 'us'] },
    },
  } as unknown as Project;
}

/** The admin kubeconfig of the shared control plane as the file a member mounts (TLS verified). */
function hubKubeconfigFile(): string {
  const file = join(cluster().dir, `hub-${process.pid}.kubeconfig`);
  const kc = loadHubKubeConfig(cluster().kubeconfigs.admin!);
  writeFileSync(file, kc.exportConfig());
  return file;
}

beforeAll(async () => {
  await installBase(cluster());
  await kubectl('admin', ['apply', '--server-side', '--force-conflicts', '-f', CRD]);
  await kubectl('admin', ['wait', '--for=condition=Established', '--timeout=60s', 'crd/fleetbudgets.tenantgate.io']);
  await kubectl('admin', ['create', 'namespace', FLEET_NAMESPACE], { reject: false });
}, 180_000);

async function createFleetBudget(name: string): Promise<void> {
  const object = fleetBudgetFor(projectNamed(name), processNow())!;
  await kubectl('admin', ['apply', '-f', '-'], { input: stringify(object) });
}

describe('the hub client', () => {
  it('reads a FleetBudget (undefined when there is none) and writes its status with the version read; a stale write is a HubConflict', async () => {
    const name = uniqueName('fb');
    const hub = new LeanHubClient(loadHubKubeConfig(hubKubeconfigFile()));
    try {
      expect(await hub.read(name)).toBeUndefined();
      await createFleetBudget(name);
      const read = (await hub.read(name))!;
      const parsed = parseFleetBudget(read);
      expect(parsed.ok).toBe(true);
      if (!parsed.ok) return;
      const grown = requestGrowth(parsed.record, 'eu', { id: 'eu-1', need: r({ [CPU]: '2' }) });
      if (!grown.ok) throw new Error('refused');
      const stored = await hub.writeStatus(withShareRecordStatus(read, grown.record));
      expect(stored.status?.members?.eu).toEqual({ share: { [CPU]: '2' }, lendable: {}, lastRequest: 'eu-1' });
      expect(stored.metadata.resourceVersion).not.toBe(read.metadata.resourceVersion);
      // The same write computed from the old version: refused by the apiserver's precondition.
      const stale = await hub.writeStatus(withShareRecordStatus(read, grown.record)).catch((e: unknown) => e);
      expect(stale).toBeInstanceOf(HubConflict);
      const onHub = JSON.parse(
        (await kubectl('admin', ['-n', FLEET_NAMESPACE, 'get', 'fleetbudget', name, '-o', 'json'])).stdout,
      ) as { status: unknown };
      expect(onHub.status).toEqual({ members: { eu: { share: { [CPU]: '2' }, lendable: {}, lastRequest: 'eu-1' } } });
    } finally {
      hub.close();
      await kubectl('admin', ['-n', FLEET_NAMESPACE, 'delete', 'fleetbudget', name, '--ignore-not-found']);
    }
  });

  it('refuses a hub kubeconfig that does not verify TLS', () => {
    const file = join(cluster().dir, `insecure-${process.pid}.kubeconfig`);
    const kc = loadHubKubeConfig(cluster().kubeconfigs.admin!);
    const doc = JSON.parse(kc.exportConfig()) as { clusters: Array<{ cluster: Record<string, unknown> }> };
    for (const c of doc.clusters) {
      delete c.cluster['certificate-authority-data'];
      delete c.cluster['certificate-authority'];
      c.cluster['insecure-skip-tls-verify'] = true;
    }
    writeFileSync(file, stringify(doc));
    expect(() => loadHubKubeConfig(file)).toThrow(/insecure-skip-tls-verify/);
  });
});

describe('a transfer through the hub', () => {
  it('moves share to the member; two members racing for the pool both end stored or refused, never above the budget', async () => {
    const name = uniqueName('fb');
    await createFleetBudget(name);
    const hubs = [
      new LeanHubClient(loadHubKubeConfig(hubKubeconfigFile())),
      new LeanHubClient(loadHubKubeConfig(hubKubeconfigFile())),
    ];
    try {
      const [eu, us] = await Promise.all(
        (['eu', 'us'] as const).map((member, i) =>
          applyOnHub(hubs[i]!, name, (l) => requestGrowth(l, member, { id: `${member}-1`, need: r({ [CPU]: '6' }) }), {
            member,
            key: `${member}-1`,
            deadlineMs: 10_000,
          }),
        ),
      );
      const kinds = [eu!.kind, us!.kind].sort();
      // 10 in the fleet: one gets 6, the other is refused (4 left), whoever wins the CAS.
      expect(kinds).toEqual(['refused', 'stored']);
      const winner = eu!.kind === 'stored' ? eu! : us!;
      if (winner.kind !== 'stored') return;
      expect(formatResources(surelyGranted(winner.results as readonly Granted[]))).toEqual({ [CPU]: '6' });
      const onHub = parseFleetBudget((await hubs[0]!.read(name))!);
      if (!onHub.ok) throw new Error(onHub.problems.join());
      const shares = ['eu', 'us'].map((m) => formatResources(memberShare(onHub.record, m).share)[CPU] ?? '0').sort();
      expect(shares).toEqual(['0', '6']);
    } finally {
      hubs.forEach((h) => h.close());
      await kubectl('admin', ['-n', FLEET_NAMESPACE, 'delete', 'fleetbudget', name, '--ignore-not-found']);
    }
  });
});

describe('the enforced limit in the headroom-ledger ConfigMap, as the webhook ServiceAccount', () => {
  it('survives reservation writes, is raised once per grant key, conflicts with a reservation batch read before it, and keeps a deleted ledger from being released', async () => {
    const project = uniqueName('fleetlim');
    const ledger = new ConfigMapLedger(
      await serviceAccountKubeConfig(cluster(), 'tenantgate-system', 'tenantgate-webhook'),
      'tenantgate-system',
    );
    const cm = `tenantgate-ledger-${project}`;
    try {
      const entry = {
        namespace: `${project}-a`,
        allocation: { [CPU]: '1' },
        created: Date.now(),
        expires: Date.now() + 60_000,
      };
      const beforeRaise = await ledger.write(project, { entries: [] }, [entry]);
      await raiseEnforced(ledger, project, 'eu-1', r({ [CPU]: '3' }));
      await raiseEnforced(ledger, project, 'eu-1', r({ [CPU]: '3' }));
      // A reservation batch computed from the state before the raise (another replica's, in flight)
      // conflicts at the apiserver: the raise and the batch are serialised, E is not written over.
      const stale = await ledger
        .write(project, beforeRaise, [entry, { ...entry, namespace: `${project}-stale` }])
        .catch((e: unknown) => e);
      expect(stale).toBeInstanceOf(LedgerConflict);
      const state = await ledger.read(project);
      expect(state.entries.map((e) => e.namespace)).toEqual([`${project}-a`]);
      const rec = decodeRecord(state.fleet, project);
      expect(rec.ok && formatResources(rec.record.enforced)).toEqual({ [CPU]: '3' });
      // A Q5 batch writes its reservations from that state: E stays.
      await ledger.write(project, state, [...state.entries, { ...entry, namespace: `${project}-b` }]);
      const data = JSON.parse(
        (await kubectl('admin', ['-n', 'tenantgate-system', 'get', 'configmap', cm, '-o', 'jsonpath={.data}'])).stdout,
      ) as Record<string, string>;
      expect(JSON.parse(data.fleet!)).toEqual({ enforced: { [CPU]: '3' }, grants: ['eu-1'] });
      expect(JSON.parse(data.reservations!)).toHaveLength(2);
      // Deleted: a release while E is nonzero does nothing; the ConfigMap stays, marked.
      await kubectl('admin', ['-n', 'tenantgate-system', 'delete', 'configmap', cm, '--wait=false']);
      const marked = await ledger.read(project);
      expect(marked.deleting).toBe(true);
      await ledger.release(project, marked);
      expect((await ledger.read(project)).deleting).toBe(true);
      // E lowered to 0: now it may go.
      const lowered = await lowerEnforced(ledger, project, () => r({ [CPU]: '0' }));
      expect(decodeRecord(lowered.state.fleet, project).ok && lowered.record.enforced.size).toBe(0);
      await ledger.release(project, lowered.state);
      expect(await ledger.read(project)).toEqual({ entries: [] });
    } finally {
      ledger.close();
      await dropLedger(cm);
    }
  });
});
