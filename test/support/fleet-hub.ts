/**
 * A fleet of local clusters sharing fleet budgets through a hub (docs/adr/0039-fleet-budgets-demarcation.md,
 * docs/adr/0044-fleet-member-wiring.md), without Argo CD: a hub control plane holding the FleetBudget
 * CRD (the chart's file) in namespace tenantgate-fleet with a ServiceAccount `member-<cluster>` per
 * member, and member control planes each running tenantgate's webhook in this process (ledger on,
 * reviews from its apiserver only, as test/support/devcluster/tenantgate.ts starts it) with
 * tenantgate.yaml `clusterName` and `fleet.hubKubeconfig` pointing at a kubeconfig of its member
 * ServiceAccount on the hub (TLS verified with the hub's CA).
 *
 * The hub RBAC is the member Role the ADR prescribes (get/list/watch fleetbudgets, update
 * fleetbudgets/status, no patch); a member writes as its ServiceAccount, never as admin.
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

export const FLEETBUDGET_CRD = new URL('../../charts/tenantgate/files/crd/fleetbudgets.tenantgate.io.yaml', import.meta.url).pathname;
/** The hub's Role for members (docs/adr/0039: no patch; every write a PUT carrying the resourceVersion read). */
export const MEMBER_ROLE = 'tenantgate-fleet-member';

export interface FleetHub {
  cp: ControlPlane;
  /** A kubeconfig file for `member-<cluster>` on the hub (bound token, the hub's CA). */
  memberKubeconfig(cluster: string): Promise<string>;
  /** The FleetBudget of a project as stored on the hub (admin read). */
  fleetBudget(project: string): Promise<FleetBudgetObject | undefined>;
  apply(objects: unknown[]): Promise<void>;
  stop(): Promise<void>;
}

export async function startFleetHub(dir: string, members: readonly string[], log: (l: string) => void = () => {}): Promise<FleetHub> {
  const cp = await ControlPlane.start({ dir: join(dir, 'hub'), log: (l) => log(`hub: ${l}`) });
  const info = cp.info;
  try {
    await kubectlAs(info, 'admin', ['apply', '--server-side', '-f', FLEETBUDGET_CRD]);
    await kubectlAs(info, 'admin', ['wait', '--for=condition=Established', '--timeout=60s', 'crd/fleetbudgets.tenantgate.io']);
    const docs: unknown[] = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: FLEET_NAMESPACE } },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: MEMBER_ROLE, namespace: FLEET_NAMESPACE },
        rules: [
          { apiGroups: ['tenantgate.io'], resources: ['fleetbudgets'], verbs: ['get', 'list', 'watch'] },
          { apiGroups: ['tenantgate.io'], resources: ['fleetbudgets/status'], verbs: ['update'] },
        ],
      },
      ...members.flatMap((m) => [
        { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: `member-${m}`, namespace: FLEET_NAMESPACE } },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: `member-${m}`, namespace: FLEET_NAMESPACE },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: MEMBER_ROLE },
          subjects: [{ kind: 'ServiceAccount', name: `member-${m}`, namespace: FLEET_NAMESPACE }],
        },
      ]),
    ];
    await kubectlAs(info, 'admin', ['apply', '-f', '-'], docs.map((d) => JSON.stringify(d)).join('\n'));
  } catch (err) {
    await cp.stop();
    throw err;
  }
  const caPem = await readFile(info.caFile, 'utf8');
  return {
    cp,
    async memberKubeconfig(cluster) {
      const token = (await kubectlAs(info, 'admin', ['-n', FLEET_NAMESPACE, 'create', 'token', `member-${cluster}`, '--duration=24h'])).stdout.trim();
      const file = join(dir, `hub-kubeconfig-${cluster}.yaml`);
      await writeFile(file, kubeconfigWithContexts([{ context: 'hub', server: info.server, caPem, user: `member-${cluster}`, token }]), { mode: 0o600 });
      return file;
    },
    async fleetBudget(project) {
      const got = await kubectlAs(info, 'admin', ['-n', FLEET_NAMESPACE, 'get', 'fleetbudget', project, '--ignore-not-found', '-o', 'json']);
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
      { ...o.config, clusterName: name, fleet: { ...DEFAULT_CONFIG.fleet, ...fleet, hubKubeconfig: await hub.memberKubeconfig(name) } },
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
