/**
 * The options `tenantgate webhook` and `tenantgate controller` take, as commander hands them over. Here,
 * not in main.ts, so the commands' entry points (src/webhook/main.ts, src/controller/main.ts) depend on
 * the CLI's types without importing the CLI that imports them.
 */
import type { LogFormat, LogLevel } from '../log.js';

/** Options every long-running command takes. */
export interface RuntimeOptions {
  config?: string;
  configOptional?: boolean;
  kubeconfig?: string;
  logLevel: LogLevel;
  logFormat: LogFormat;
}

export interface WebhookCliOptions {
  port: number;
  host: string;
  cert: string;
  key: string;
}

export interface ControllerCliOptions {
  metricsPort: number;
  metricsHost: string;
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
