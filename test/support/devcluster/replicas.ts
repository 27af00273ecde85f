/**
 * Webhook replicas as production runs them: each its own `tenantgate webhook` process (from dist/),
 * under the webhook's ServiceAccount, behind a round-robin proxy registered with the apiserver, the
 * way two pods behind a Service share the apiserver's calls.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { WebhookCertFiles } from '../../../src/certs/files.js';
import { DEFAULT_CONFIG, type TenantgateConfig } from '../../../src/config/config.js';
import { kubeconfigYaml, REPO_ROOT, sleep, type ClusterInfo } from './controlplane.js';
import { httpsGet } from './https-get.js';
import { freePort } from './ports.js';
import { startProcess, type Managed } from './processes.js';
import { startRoundRobinProxy, type RoundRobinProxy } from './proxy.js';
import { kubectlAs, registerWebhooks, unregisterWebhooks } from './tenantgate.js';

/**
 * dist/ of this tree, or TG_WEBHOOK_DIST (another build's dist/, e.g. of one commit from `git archive`:
 * several people sharing one working tree rebuild dist/ from whatever it holds at the moment).
 */
const DIST_CLI = join(process.env.TG_WEBHOOK_DIST ?? join(REPO_ROOT, 'dist'), 'cli', 'main.js');

interface WebhookReplica {
  port: number;
  process: Managed;
}

export interface WebhookReplicas {
  replicas: WebhookReplica[];
  proxy: RoundRobinProxy;
  /** The sum over every series of a metric that matches, per replica. */
  scrape(metric: RegExp): Promise<number[]>;
  /** Each of `metrics` summed over every series that matches it and over the replicas: one read of each replica's /metrics. */
  scrapeSums<K extends string>(metrics: Readonly<Record<K, RegExp>>): Promise<Record<K, number>>;
  /** Starts replica `index` again on its port (after it was killed) and resolves once it is ready. */
  restart(index: number): Promise<void>;
  /**
   * Replaces replica `index` as a Deployment's rolling update does: a new process on a new port, once
   * ready, takes the old one's place among the proxy's targets (new connections go to it; the old one's
   * stay open), then the old one is sent SIGTERM. Resolves with how the old process exited.
   */
  roll(index: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Unregisters the webhooks and stops the replicas. */
  stop(): Promise<void>;
}

export async function startWebhookReplicas(
  info: ClusterInfo,
  certs: WebhookCertFiles,
  config: Partial<TenantgateConfig>,
  options: {
    count?: number;
    name?: string;
    clientAuth?: boolean;
    shutdownDelaySeconds?: number;
    nodeArgs?: string[];
    cgroupOf?: (index: number) => string | undefined;
    cli?: string;
    configOf?: (index: number) => Partial<TenantgateConfig>;
  } = {},
): Promise<WebhookReplicas> {
  const name = options.name ?? 'webhook';
  const count = options.count ?? 2;
  const token = (
    await kubectlAs(info, 'admin', [
      '-n',
      DEFAULT_CONFIG.systemNamespace,
      'create',
      'token',
      'tenantgate-webhook',
      '--duration=2h',
    ])
  ).stdout.trim();
  const kubeconfig = join(info.dir, `${name}.kubeconfig`);
  await writeFile(
    kubeconfig,
    kubeconfigYaml(
      info.server,
      await readFile(info.caFile, 'utf8'),
      'system:serviceaccount:tenantgate-system:tenantgate-webhook',
      token,
    ),
    { mode: 0o600 },
  );
  // configOf: a replica's own settings over `config` (replicas of one rollout step that differ).
  const configFile = (i: number) =>
    join(info.dir, options.configOf ? `${name}-${i}-tenantgate.yaml` : `${name}-tenantgate.yaml`);
  for (let i = 0; i < (options.configOf ? count : 1); i++)
    await writeFile(configFile(i), stringify({ ...config, ...options.configOf?.(i) }));
  // Reviews only from this cluster's apiserver (its client certificate), unless the test says otherwise.
  const clientAuth =
    options.clientAuth === false
      ? []
      : [`--client-ca=${info.webhookClient.caFile}`, `--client-allowed-names=${info.webhookClient.name}`];
  // cli: another build's cli/main.js (bench/targets/shipped.ts's paired A/B); default dist/ or TG_WEBHOOK_DIST.
  // nodeArgs: Node flags before the script (bench/targets/soak.ts opens the inspector with them to read the heap after a GC).
  // No drain on SIGTERM unless asked (the chart's is 5 s): nothing routes by readiness here but roll().
  const shutdownDelay = `--shutdown-delay=${options.shutdownDelaySeconds ?? 0}`;
  let generation = 0;
  const spawnReplica = (i: number, port: number) => {
    const argv = [
      ...(options.nodeArgs ?? []),
      options.cli ?? DIST_CLI,
      'webhook',
      `--config=${configFile(i)}`,
      `--kubeconfig=${kubeconfig}`,
      `--cert=${certs.cert}`,
      `--key=${certs.key}`,
      ...clientAuth,
      shutdownDelay,
      `--port=${port}`,
      '--host=127.0.0.1',
    ];
    const logFile = join(info.dir, `${name}-${i}${generation ? `-${generation}` : ''}.log`);
    // cgroupOf: a (v1 memory) cgroup directory the replica starts in, so every page it ever touches is charged there ("exec" keeps the pid).
    const cgroup = options.cgroupOf?.(i);
    return cgroup
      ? startProcess(
          `${name}-${i}`,
          'sh',
          ['-c', `echo $$ > ${cgroup}/cgroup.procs && exec "$0" "$@"`, process.execPath, ...argv],
          logFile,
        )
      : startProcess(`${name}-${i}`, process.execPath, argv, logFile);
  };
  const replicas: WebhookReplica[] = [];
  for (let i = 0; i < count; i++) {
    const port = await freePort();
    replicas.push({ port, process: spawnReplica(i, port) });
  }
  const ca = await readFile(certs.caCert);
  const readMetrics = async (r: WebhookReplica): Promise<string> =>
    (await httpsGet(`https://127.0.0.1:${r.port}/metrics`, { ca })).body;
  const stopAll = async () => {
    for (const r of replicas) await r.process.stop();
  };
  const waitReady = async (r: WebhookReplica, deadline: number) => {
    while ((await httpsGet(`https://127.0.0.1:${r.port}/readyz`, { ca }).catch(() => ({ status: 0 }))).status !== 200) {
      if (Date.now() > deadline)
        throw new Error(`webhook replica on port ${r.port} not ready after 60 s (log: ${r.process.logFile})`);
      await sleep(200);
    }
  };
  try {
    const deadline = Date.now() + 60_000;
    for (const r of replicas) await waitReady(r, deadline);
  } catch (err) {
    await stopAll();
    throw err;
  }
  const proxy = await startRoundRobinProxy(replicas.map((r) => r.port));
  await registerWebhooks(info, `https://127.0.0.1:${proxy.port}`, certs.caBundle);
  return {
    replicas,
    proxy,
    scrape: async (metric) => (await Promise.all(replicas.map(readMetrics))).map((body) => sumMatching(body, metric)),
    async scrapeSums(metrics) {
      const bodies = await Promise.all(replicas.map(readMetrics));
      const sums = {} as Record<keyof typeof metrics, number>;
      for (const key of Object.keys(metrics) as Array<keyof typeof metrics>)
        sums[key] = bodies.reduce<number>((a, body) => a + sumMatching(body, metrics[key]), 0);
      return sums;
    },
    async restart(index) {
      const r = replicas[index];
      if (!r) throw new Error(`no webhook replica ${index}: there are ${replicas.length}`);
      await r.process.stop();
      r.process = spawnReplica(index, r.port);
      await waitReady(r, Date.now() + 60_000);
    },
    async roll(index) {
      const old = replicas[index];
      if (!old) throw new Error(`no webhook replica ${index}: there are ${replicas.length}`);
      generation += 1;
      const port = await freePort();
      const fresh: WebhookReplica = { port, process: spawnReplica(index, port) };
      await waitReady(fresh, Date.now() + 60_000);
      const others = replicas.filter((r) => r !== old).map((r) => r.port);
      proxy.setTargets([...others, fresh.port]);
      replicas[index] = fresh;
      old.process.kill('SIGTERM');
      return old.process.exited;
    },
    async stop() {
      await unregisterWebhooks(info).catch(() => {});
      await proxy.close();
      await stopAll();
    },
  };
}

/** The sum over every series in a /metrics body whose line matches `metric`. */
function sumMatching(body: string, metric: RegExp): number {
  let sum = 0;
  for (const line of body.split('\n')) if (metric.test(line)) sum += Number(line.split(' ').pop());
  return sum;
}
