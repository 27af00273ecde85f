/**
 * A fleet of local clusters sharing fleet budgets through a hub (docs/adr/0039-fleet-budgets.md),
 * without Argo CD: a hub control plane with the chart's hub mode
 * (test/support/fleet-hub-install.ts: the FleetBudget CRD, namespace tenantgate-fleet, a ServiceAccount
 * `member-<cluster>` per member bound to the member Role, the admission policy tenantgate-fleet-shares),
 * and member control planes each running tenantgate's webhook in this process (ledger on,
 * reviews from its apiserver only, as test/support/devcluster/tenantgate.ts starts it) with
 * tenantgate.yaml `clusterName` and `fleet.hubKubeconfig` pointing at a kubeconfig of its member
 * ServiceAccount on the hub (TLS verified with the hub's CA).
 * A member writes as its ServiceAccount (get/list/watch fleetbudgets, update fleetbudgets/status, no
 * patch), never as admin.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { DEFAULT_CONFIG, type TenantgateConfig } from '../../src/config/config.js';
import { FLEET_NAMESPACE, type FleetBudgetObject } from '../../src/fleet/fleet-budget-object.js';
import type { AdmissionDecision } from '../../src/webhook/server.js';
import { ControlPlane } from './devcluster/controlplane.js';
import { installBase, kubectlAs, startLocalWebhook, type LocalWebhook } from './devcluster/tenantgate.js';
import { kubeconfigWithContexts } from './fleet.js';
import { installFleetHub } from './fleet-hub-install.js';

export interface FleetHub {
  cp: ControlPlane;
  /** A kubeconfig file for `member-<cluster>` on the hub (bound token, the hub's CA). */
  memberKubeconfig(cluster: string): Promise<string>;
  /** The FleetBudget of a project as stored on the hub (admin read). */
  fleetBudget(project: string): Promise<FleetBudgetObject | undefined>;
  apply(objects: unknown[]): Promise<void>;
  stop(): Promise<void>;
}

export async function startFleetHub(
  dir: string,
  members: readonly string[],
  log: (l: string) => void = () => {},
): Promise<FleetHub> {
  const cp = await ControlPlane.start({ dir: join(dir, 'hub'), log: (l) => log(`hub: ${l}`) });
  const info = cp.info;
  try {
    // The chart's hub mode as helm renders it: CRD, namespace, member-<cluster> ServiceAccounts bound to
    // the member Role, and the admission policy tenantgate-fleet-shares re-checking every member write.
    await installFleetHub(info, members);
  } catch (err) {
    await cp.stop();
    throw err;
  }
  const caPem = await readFile(info.caFile, 'utf8');
  return {
    cp,
    async memberKubeconfig(cluster) {
      const token = (
        await kubectlAs(info, 'admin', [
          '-n',
          FLEET_NAMESPACE,
          'create',
          'token',
          `member-${cluster}`,
          '--duration=24h',
        ])
      ).stdout.trim();
      const file = join(dir, `hub-kubeconfig-${cluster}.yaml`);
      await writeFile(
        file,
        kubeconfigWithContexts([{ context: 'hub', server: info.server, caPem, user: `member-${cluster}`, token }]),
        { mode: 0o600 },
      );
      return file;
    },
    async fleetBudget(project) {
      const got = await kubectlAs(info, 'admin', [
        '-n',
        FLEET_NAMESPACE,
        'get',
        'fleetbudget',
        project,
        '--ignore-not-found',
        '-o',
        'json',
      ]);
      return got.stdout.trim() ? (JSON.parse(got.stdout) as FleetBudgetObject) : undefined;
    },
    async apply(objects) {
      await kubectlAs(info, 'admin', ['apply', '-f', '-'], objects.map((o) => stringify(o)).join('---\n'));
    },
    stop: () => cp.stop({ keepData: process.env.TG_KEEP_CLUSTER === '1' }),
  };
}

export interface FleetMemberCluster {
  name: string;
  cp: ControlPlane;
  webhook: LocalWebhook;
  /** Every admission decision of its webhook, in order. */
  decisions: AdmissionDecision[];
  stop(): Promise<void>;
}

/** A member control plane with tenantgate's webhook configured as a member of the hub's fleet (no Argo CD, no controller). */
export async function startFleetMember(
  name: string,
  dir: string,
  hub: FleetHub,
  o: { fleet?: Partial<TenantgateConfig['fleet']>; config?: Partial<TenantgateConfig>; log?: (l: string) => void } = {},
): Promise<FleetMemberCluster> {
  const log = o.log ?? (() => {});
  const fleet = o.fleet ?? {};
  const cp = await ControlPlane.start({ dir: join(dir, name), log: (l) => log(`${name}: ${l}`) });
  try {
    await installBase(cp.info);
    const decisions: AdmissionDecision[] = [];
    const webhook = await startLocalWebhook(
      cp.info,
      {
        ...o.config,
        clusterName: name,
        fleet: { ...DEFAULT_CONFIG.fleet, ...fleet, hubKubeconfig: await hub.memberKubeconfig(name) },
      },
      { log: (l) => log(`${name}: webhook: ${l}`), onDecision: (d) => decisions.push(d) },
    );
    return {
      name,
      cp,
      webhook,
      decisions,
      async stop() {
        await webhook.stop().catch(() => {});
        await cp.stop({ keepData: process.env.TG_KEEP_CLUSTER === '1' });
      },
    };
  } catch (err) {
    await cp.stop();
    throw err;
  }
}
