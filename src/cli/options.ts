/**
 * The options `tenantgate webhook` and `tenantgate controller` take, as commander hands them over, and
 * the flag helpers both commands use. The composition roots (src/webhook/start.ts,
 * src/controller/start.ts) import these types without importing the commands that import them.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from '../log.js';

/** One integer parser for every numeric flag: the flag, the value and the allowed range in the error. */
export function integerIn(min: number, max: number) {
  return (raw: string): number => {
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`${JSON.stringify(raw)} is not allowed: an integer from ${min} to ${max}`);
    return n;
  };
}

/** The options every long-running command shares. */
export function withRuntimeOptions(cmd: Command): Command {
  return cmd
    .option('--config <file>', 'tenantgate.yaml (without it: the built-in defaults)')
    .option('--config-optional', 'a --config file that does not exist means the built-in defaults')
    .option('--kubeconfig <file>', 'else KUBECONFIG, ~/.kube/config, or the in-cluster service account')
    .addOption(new Option('--log-level <level>', 'least severe level logged').choices(LOG_LEVELS).default('info'))
    .addOption(new Option('--log-format <format>', 'json in the cluster, pretty at a terminal').choices(LOG_FORMATS).default('auto'));
}

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
  clientCa?: string;
  clientAllowedNames?: string;
  /** Seconds to keep serving after SIGTERM with /readyz failing (docs/adr/0041-graceful-shutdown.md). */
  shutdownDelay?: number;
  /** Records of allowed decisions: each its own (all) or summarised (src/webhook/decision-records.ts). */
  allowedDecisions?: 'all' | 'summary';
  /** With `summary`: allowed decisions at least this slow keep their own record. */
  slowDecisionMs?: number;
}

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
