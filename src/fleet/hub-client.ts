/**
 * The member's client of the fleet's hub (docs/adr/0039-fleet-budgets.md):
 * read a Project's FleetBudget, and PUT its status carrying the
 * resourceVersion it was read at, so a write computed from an older record never lands. The member's
 * Role on the hub allows get/list/watch on fleetbudgets and update on fleetbudgets/status only: no
 * patch, no last-writer-wins; and its heartbeat Lease member-<cluster> (get/update of that name, create).
 *
 * Through the lean client (src/kube/lean-client.ts): one keep-alive connection, plain JSON, TLS verified
 * with the CA of the hub kubeconfig, credentials asked again every minute (rotated tokens keep working).
 * Used by the webhook's growth transfers (src/fleet/hub-transaction.ts).
 */
import * as k8s from '@kubernetes/client-node';
import { LeanApiClient } from '../kube/lean-client.js';
import { statusCode } from '../kube/errors.js';
import { FLEET_NAMESPACE, FLEET_PLURAL, type FleetBudgetObject } from './fleet-budget-object.js';
import { heartbeatLeaseName, renewedLease, type HeartbeatLease } from './member-heartbeat.js';

/** The hub stored a newer version than the one the write was computed from (HTTP 409). */
export class HubConflict extends Error {
  constructor(readonly project: string) {
    super(`FleetBudget ${FLEET_NAMESPACE}/${project} changed on the hub since it was read`);
  }
}

export interface HubClient {
  /** The Project's FleetBudget, or undefined when the hub has none (404). Other failures throw. */
  read(project: string): Promise<FleetBudgetObject | undefined>;
  /**
   * PUT `object` (its status) to fleetbudgets/status with `object.metadata.resourceVersion` as
   * precondition; resolves with what the hub stored. A 409 rejects with HubConflict; anything else
   * (a 404, a refusal by the hub's admission policy, no answer) with the error.
   */
  writeStatus(object: FleetBudgetObject): Promise<FleetBudgetObject>;
  /**
   * Renews this member's heartbeat Lease (src/fleet/member-heartbeat.ts): creates it when absent, else
   * a PUT with the resourceVersion read. A conflict (another replica renewed it meanwhile) is no error.
   */
  renewHeartbeat(cluster: string, at: Date, leaseDurationSeconds: number): Promise<void>;
  close(): void;
}

const path = (project: string, sub = ''): string =>
  `/apis/tenantgate.io/v1alpha1/namespaces/${FLEET_NAMESPACE}/${FLEET_PLURAL}/${encodeURIComponent(project)}${sub}`;

export class LeanHubClient implements HubClient {
  private readonly api: LeanApiClient;
  constructor(kubeConfig: k8s.KubeConfig, options: { timeoutMs?: number } = {}) {
    this.api = new LeanApiClient(kubeConfig, options);
  }

  async read(project: string): Promise<FleetBudgetObject | undefined> {
    try {
      return await this.api.call<FleetBudgetObject>('GET', path(project));
    } catch (err) {
      if (statusCode(err) === 404) return undefined;
      throw err;
    }
  }

  async writeStatus(object: FleetBudgetObject): Promise<FleetBudgetObject> {
    const project = object.metadata.name ?? '';
    if (!object.metadata.resourceVersion)
      throw new Error(
        `FleetBudget ${FLEET_NAMESPACE}/${project}: a status write needs the resourceVersion it was read at`,
      );
    try {
      return await this.api.call<FleetBudgetObject>('PUT', path(project, '/status'), object);
    } catch (err) {
      if (statusCode(err) === 409) throw new HubConflict(project);
      throw err;
    }
  }

  async renewHeartbeat(cluster: string, at: Date, leaseDurationSeconds: number): Promise<void> {
    const leases = `/apis/coordination.k8s.io/v1/namespaces/${FLEET_NAMESPACE}/leases`;
    const name = heartbeatLeaseName(cluster);
    let previous: HeartbeatLease | undefined;
    try {
      previous = await this.api.call<HeartbeatLease>('GET', `${leases}/${encodeURIComponent(name)}`);
    } catch (err) {
      if (statusCode(err) !== 404) throw err;
    }
    try {
      if (previous)
        await this.api.call(
          'PUT',
          `${leases}/${encodeURIComponent(name)}`,
          renewedLease(cluster, at, leaseDurationSeconds, previous),
        );
      else await this.api.call('POST', leases, renewedLease(cluster, at, leaseDurationSeconds));
    } catch (err) {
      if (statusCode(err) !== 409) throw err;
    }
  }

  close(): void {
    this.api.close();
  }
}

/**
 * The hub's kubeconfig from a file (the Secret `tenantgate-fleet-hub` mounted into the member's pods).
 * Refused unless it names an https server and verifies its certificate: a member must not grant room
 * on the word of a hub it did not authenticate.
 */
export function loadHubKubeConfig(file: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  try {
    kc.loadFromFile(file);
  } catch (err) {
    throw new Error(`the fleet hub kubeconfig ${file} cannot be read: ${(err as Error).message}`);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error(`the fleet hub kubeconfig ${file} has no current context naming a cluster`);
  if (!cluster.server.startsWith('https://'))
    throw new Error(
      `the fleet hub kubeconfig ${file} names the server ${cluster.server}; allowed: an https:// URL (TLS verified)`,
    );
  if (cluster.skipTLSVerify)
    throw new Error(
      `the fleet hub kubeconfig ${file} sets insecure-skip-tls-verify for ${cluster.server}; allowed: the hub's ` +
        `CA (certificate-authority or certificate-authority-data)`,
    );
  return kc;
}
