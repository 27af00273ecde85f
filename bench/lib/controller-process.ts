/** `tenantgate controller` from dist/ (or TG_WEBHOOK_DIST) as the chart runs it, for the benches on a local control plane (bench/targets/shipped.ts, bench/targets/soak.ts). */
import { join } from 'node:path';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { ControlPlane } from '../../test/support/devcluster/controlplane.js';
import { freePort } from '../../test/support/devcluster/ports.js';
import { startProcess, type Managed } from '../../test/support/devcluster/processes.js';
import { serviceAccountKubeconfigFile } from '../../test/support/devcluster/tenantgate.js';
import { ROOT, sleep } from './measure.js';

/**
 * Its ServiceAccount with the shipped RBAC, leader election on the chart's Lease, /metrics over HTTPS
 * (a self-signed certificate made at start), the probes on plain HTTP; resolves once /readyz is 200.
 * `nodeArgs` go before the script (the soak's inspector); `launch` wraps the command (a memory cgroup).
 */
export async function startShippedController(
  cp: ControlPlane,
  options: {
    name?: string;
    nodeArgs?: string[];
    launch?: (command: string, args: string[]) => [string, string[]];
  } = {},
): Promise<{ process: Managed; probePort: number }> {
  const name = options.name ?? 'controller';
  const kubeconfig = await serviceAccountKubeconfigFile(
    cp.info,
    DEFAULT_CONFIG.systemNamespace,
    'tenantgate-controller',
  );
  const probePort = await freePort();
  const args = [
    ...(options.nodeArgs ?? []),
    join(process.env.TG_WEBHOOK_DIST ?? join(ROOT, 'dist'), 'cli', 'main.js'),
    'controller',
    `--kubeconfig=${kubeconfig}`,
    '--metrics-port=0',
    '--metrics-host=127.0.0.1',
    `--probe-port=${probePort}`,
    '--probe-host=127.0.0.1',
    `--lease-namespace=${DEFAULT_CONFIG.systemNamespace}`,
    `--identity=bench-${name}`,
  ];
  const [command, argv] = options.launch ? options.launch(process.execPath, args) : [process.execPath, args];
  const proc = startProcess(name, command, argv, join(cp.info.dir, `${name}.log`));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const status = await fetch(`http://127.0.0.1:${probePort}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) break;
    if (proc.child.exitCode !== null)
      throw new Error(`controller exited with ${proc.child.exitCode} (log: ${proc.logFile})`);
    if (Date.now() > deadline) throw new Error(`controller not ready after 60 s (log: ${proc.logFile})`);
    await sleep(250);
  }
  return { process: proc, probePort };
}
