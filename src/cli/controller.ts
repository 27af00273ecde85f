/**
 * `tenantgate controller`: its flags; the work starts in src/controller/start.ts (loaded only when the command runs).
 */
import type { Command } from 'commander';
import { integerIn, withRuntimeOptions, type ControllerCliOptions, type RuntimeOptions } from './options.js';
import { CONTROLLER_DEFAULTS as D } from '../controller/options.js';

export function registerControllerCommand(root: Command): void {
  withRuntimeOptions(
    root.command('controller').description("cascading deletion, default quotas, owners' RoleBindings, project status"),
  )
    .option(
      '--metrics-port <port>',
      '/metrics over HTTPS, for a bearer token allowed to get /metrics (0 = any free port)',
      integerIn(0, 65535),
      D.metricsPort,
    )
    .option('--metrics-host <address>', 'address /metrics listens on', D.host)
    .option('--metrics-cert <file>', "/metrics' serving certificate (PEM); absent: a self-signed one made at start")
    .option('--metrics-key <file>', 'its private key')
    .option(
      '--probe-port <port>',
      '/healthz and /readyz over plain HTTP, for the kubelet (0 = any free port)',
      integerIn(0, 65535),
      D.probePort,
    )
    .option('--probe-host <address>', 'address the probes listen on', D.host)
    .option('--workers <n>', 'concurrent reconciles', integerIn(1, 64), D.workers)
    .option(
      '--delete-concurrency <n>',
      'namespace deletes a cascade sends at once',
      integerIn(1, 100),
      D.deleteConcurrency,
    )
    .option(
      '--lease-namespace <namespace>',
      "leader election Lease namespace (default: the pod's, else systemNamespace)",
    )
    .option('--lease-name <name>', 'Lease name', D.leaseName)
    .option('--identity <id>', "this replica's holder identity (use the pod name; default hostname_uuid)")
    .option('--no-leader-election', 'reconcile without a lease (one replica only)')
    .option('--project-selector <selector>', 'reconcile only Projects matching this label selector')
    .option(
      '--view-port <port>',
      'serve the budget view API (view.tenantgate.io, an APIService) over HTTPS on this port (0 = any free ' +
        'port); absent: not served',
      integerIn(0, 65535),
    )
    .option('--view-host <address>', 'address the budget view listens on', D.host)
    .option('--view-cert <file>', "the budget view's serving certificate (PEM)", D.viewCert)
    .option('--view-key <file>', 'its private key', D.viewKey)
    .action(async (o: RuntimeOptions & ControllerCliOptions) => {
      const { runController } = await import('../controller/start.js');
      process.exitCode = await runController(o);
    });
}
