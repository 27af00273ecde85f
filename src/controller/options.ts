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
