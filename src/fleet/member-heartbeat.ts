/**
 * A member's heartbeat on the fleet's hub (docs/fleet.md, "Releasing a member";
 * docs/adr/0039-fleet-budgets.md): the leader of each member's controller renews the
 * Lease `member-<cluster>` in tenantgate-fleet on every check round. `kubectl tenantgate fleet release`
 * reads it and refuses to release a member heard from recently (unless forced): a released member that
 * still runs keeps its namespaces' use outside the fleet budget while the hub grants its share again.
 *
 * Pure: the Lease object and the guard's verdict; the hub client and the plugin do the I/O.
 */
import { FLEET_NAMESPACE } from './fleet-budget-object.js';

/** A member heard from within this many seconds is alive for `fleet release` (unless --force). */
export const DEFAULT_ALIVE_WITHIN_SECONDS = 600;

export interface HeartbeatLease {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: { name: string; namespace: string; resourceVersion?: string; labels?: Record<string, string> };
  spec: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number };
}

export function heartbeatLeaseName(cluster: string): string {
  return `member-${cluster}`;
}

/** Kubernetes' MicroTime: RFC 3339 with microseconds. */
export function microTime(at: Date): string {
  return at.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/**
 * The Lease to write: `previous` renewed at `at` (its resourceVersion kept: a PUT is a compare-and-swap), or a new one.
 */
export function renewedLease(
  cluster: string,
  at: Date,
  leaseDurationSeconds: number,
  previous?: HeartbeatLease,
): HeartbeatLease {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name: heartbeatLeaseName(cluster),
      namespace: FLEET_NAMESPACE,
      ...(previous?.metadata.resourceVersion ? { resourceVersion: previous.metadata.resourceVersion } : {}),
      labels: { 'app.kubernetes.io/name': 'tenantgate', 'tenantgate.io/fleet-member': cluster },
    },
    spec: { holderIdentity: cluster, renewTime: microTime(at), leaseDurationSeconds },
  };
}

export type Liveness =
  | { readonly alive: false; readonly why: 'never-heard' | 'silent'; readonly ageSeconds?: number }
  | { readonly alive: true; readonly ageSeconds: number; readonly renewTime: string };

/**
 * Whether the member renewed its Lease within `aliveWithinSeconds` of `now` (a renewTime in the future counts as now).
 */
export function livenessOf(lease: HeartbeatLease | undefined, now: Date, aliveWithinSeconds: number): Liveness {
  const renewTime = lease?.spec.renewTime;
  const at = renewTime ? Date.parse(renewTime) : NaN;
  if (!renewTime || Number.isNaN(at)) return { alive: false, why: 'never-heard' };
  const ageSeconds = Math.max(0, Math.round((now.getTime() - at) / 1000));
  return ageSeconds <= aliveWithinSeconds
    ? { alive: true, ageSeconds, renewTime }
    : { alive: false, why: 'silent', ageSeconds };
}
