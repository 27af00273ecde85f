/** `tenantgate controller`: argument parsing, kubeconfig, signals. The work is in controller.ts. */
import * as k8s from '@kubernetes/client-node';
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/load.js';
import { startController, type ControllerOptions, type RunningController } from './controller.js';

export { startController, type ControllerOptions, type RunningController };

const IN_CLUSTER_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';
export const DEFAULT_LEASE_NAME = 'tenantgate-controller';

export const CONTROLLER_USAGE = `usage: tenantgate controller [options]
  --config F              tenantgate.yaml (defaults built in)
  --config-optional       a --config file that does not exist means the defaults (a ConfigMap
                          mounted with optional: true)
  --kubeconfig F          else KUBECONFIG, ~/.kube/config, or the in-cluster service account
  --metrics-port N        /healthz, /readyz, /metrics (default 8080; 0 = any free port)
  --metrics-host H        address to listen on (default 0.0.0.0)
  --workers N             concurrent reconciles (default 4)
  --delete-concurrency N  namespace deletes a cascade sends at once (default 10)
  --lease-namespace NS    leader election Lease namespace (default: the pod's namespace in-cluster,
                          else config.systemNamespace, tenantgate-system); it must exist
  --lease-name NAME       Lease name (default ${DEFAULT_LEASE_NAME})
  --identity ID           this replica's holder identity (default hostname_uuid; use the pod name)
  --no-leader-election    reconcile without a lease (one replica only)
  --project-selector SEL  reconcile only Projects matching this label selector
`;

export async function runController(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    allowPositionals: false,
    options: {
      config: { type: 'string' },
      'config-optional': { type: 'boolean', default: false },
      kubeconfig: { type: 'string' },
      'metrics-port': { type: 'string', default: '8080' },
      'metrics-host': { type: 'string', default: '0.0.0.0' },
      workers: { type: 'string', default: '4' },
      'delete-concurrency': { type: 'string', default: '10' },
      'lease-namespace': { type: 'string' },
      'lease-name': { type: 'string', default: DEFAULT_LEASE_NAME },
      identity: { type: 'string' },
      'no-leader-election': { type: 'boolean', default: false },
      'project-selector': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(CONTROLLER_USAGE);
    return 0;
  }
  const metricsPort = integer(values['metrics-port'], '--metrics-port', 0, 65535);
  const workers = integer(values.workers, '--workers', 1, 64);
  const deleteConcurrency = integer(values['delete-concurrency'], '--delete-concurrency', 1, 100);
  const config = await loadConfig(values.config, { optional: values['config-optional'], log: (m) => process.stderr.write(`${m}\n`) });

  const kubeConfig = new k8s.KubeConfig();
  if (values.kubeconfig) kubeConfig.loadFromFile(values.kubeconfig);
  else kubeConfig.loadFromDefault();

  const leaseNamespace = values['lease-namespace'] ?? (existsSync(IN_CLUSTER_NAMESPACE) ? readFileSync(IN_CLUSTER_NAMESPACE, 'utf8').trim() : config.systemNamespace);
  const identity = values.identity ?? `${hostname()}_${randomUUID()}`;
  const log = (m: string) => process.stderr.write(`${new Date().toISOString()} controller[${identity}]: ${m}\n`);

  const controller = await startController({
    kubeConfig,
    config,
    workers,
    deleteConcurrency,
    metricsPort,
    metricsHost: values['metrics-host'],
    leaderElection: values['no-leader-election'] ? false : { namespace: leaseNamespace, name: values['lease-name'], identity },
    ...(values['project-selector'] ? { projectSelector: values['project-selector'] } : {}),
    log,
  });
  log(`started; metrics on :${controller.port ?? '-'}; ${values['no-leader-election'] ? 'no leader election' : `lease ${leaseNamespace}/${values['lease-name']}`}`);

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

function integer(raw: string | undefined, flag: string, min: number, max: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${flag} is ${JSON.stringify(raw)}; it must be an integer from ${min} to ${max}`);
  return n;
}
