/**
 * The defaults of `tenantgate controller`'s flags (src/cli/controller.ts), declared once: what starts the
 * controller without a flag (tests, tools: controller.ts, runnables.ts, cascade.ts) falls back to the same.
 */
export const CONTROLLER_DEFAULTS = {
  metricsPort: 8080,
  probePort: 8081,
  /** The address every server listens on. */
  host: '0.0.0.0',
  workers: 4,
  deleteConcurrency: 10,
  leaseName: 'tenantgate-controller',
  viewCert: '/certs/tls.crt',
  viewKey: '/certs/tls.key',
} as const;

/** What `tenantgate controller` runs with (its flags: src/cli/controller.ts). */
export interface ControllerCliOptions {
  metricsPort: number;
  metricsHost: string;
  /** PEM files serving /metrics; both or neither (neither: self-signed at start). */
  metricsCert?: string;
  metricsKey?: string;
  probePort: number;
  probeHost: string;
  workers: number;
  deleteConcurrency: number;
  leaseNamespace?: string;
  leaseName: string;
  identity?: string;
  leaderElection: boolean;
  projectSelector?: string;
  /** The budget view (view.tenantgate.io) over HTTPS on this port; absent: not served. */
  viewPort?: number;
  viewHost: string;
  viewCert: string;
  viewKey: string;
}
