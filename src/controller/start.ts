/** `tenantgate controller`: configuration, kubeconfig, logger, signals. The work is in controller.ts. */
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../config/load.js';
import type { RuntimeOptions } from '../runtime-options.js';
import { CONTROLLER_DEFAULTS, type ControllerCliOptions } from './options.js';
import { createLogger, logFunction } from '../log.js';
import { startController, type ControllerOptions, type RunningController } from './controller.js';
import { loadKubeConfig } from '../kube/kubeconfig.js';

export { startController, type ControllerOptions, type RunningController };

const IN_CLUSTER_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';
export const DEFAULT_LEASE_NAME = CONTROLLER_DEFAULTS.leaseName;

/** `tenantgate controller` (flags in src/cli/controller.ts). */
export async function runController(o: RuntimeOptions & ControllerCliOptions): Promise<number> {
  const logger = createLogger({ name: 'controller', level: o.logLevel, format: o.logFormat });
  const config = await loadConfig(o.config, { optional: o.configOptional === true, log: logFunction(logger) });
  const kubeConfig = loadKubeConfig(o.kubeconfig);

  const leaseNamespace =
    o.leaseNamespace ??
    (existsSync(IN_CLUSTER_NAMESPACE) ? readFileSync(IN_CLUSTER_NAMESPACE, 'utf8').trim() : config.systemNamespace);
  const identity = o.identity ?? `${hostname()}_${randomUUID()}`;
  const log = logFunction(logger.child({ identity }));

  if ((o.metricsCert === undefined) !== (o.metricsKey === undefined))
    throw new Error(
      `--metrics-cert and --metrics-key go together (given: ` +
        `${o.metricsCert ? `--metrics-cert ${o.metricsCert}` : `--metrics-key ${o.metricsKey}`})`,
    );
  // Files, not their text: both servers reload a renewed certificate without a restart (ADR 0034).
  const metricsTls = o.metricsCert && o.metricsKey ? { certFile: o.metricsCert, keyFile: o.metricsKey } : undefined;
  const controller = await startController({
    kubeConfig,
    config,
    workers: o.workers,
    deleteConcurrency: o.deleteConcurrency,
    metricsPort: o.metricsPort,
    metricsHost: o.metricsHost,
    ...(metricsTls ? { metricsTls } : {}),
    probePort: o.probePort,
    probeHost: o.probeHost,
    leaderElection: o.leaderElection ? { namespace: leaseNamespace, name: o.leaseName, identity } : false,
    ...(o.projectSelector ? { projectSelector: o.projectSelector } : {}),
    ...(o.viewPort !== undefined
      ? { view: { port: o.viewPort, host: o.viewHost, certFile: o.viewCert, keyFile: o.viewKey } }
      : {}),
    log,
  });
  log(
    `started; metrics (HTTPS, bearer token) on :${controller.port ?? '-'}; probes on :` +
      `${controller.probePort ?? '-'}; budget view on :${controller.viewPort ?? '-'}; ` +
      `${o.leaderElection ? `lease ${leaseNamespace}/${o.leaseName}` : 'no leader election'}`,
  );

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  log(`${signal}: finishing the work in hand, releasing the lease`);
  // A second signal, or a stop that hangs, ends the process anyway.
  const force = () => {
    log('forced exit');
    process.exit(1);
  };
  process.once('SIGTERM', force);
  process.once('SIGINT', force);
  const deadline = setTimeout(force, 25_000);
  deadline.unref();
  await controller.stop();
  clearTimeout(deadline);
  // Anything left holding the event loop (keep-alive sockets) must not keep a stopped controller alive.
  setTimeout(() => process.exit(0), 2_000).unref();
  return 0;
}
