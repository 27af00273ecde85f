/**
 * `tenantgate controller` replicas as separate OS processes against the e2e control plane, as the chart
 * runs them: the controller's ServiceAccount with the shipped RBAC, /metrics over HTTPS with its own
 * certificate, /readyz on a probe port, leader election on tenantgate-system/tenantgate-controller;
 * and a Project with owned namespaces for them to cascade-delete. Used by the e2e tests (it reads the
 * shared cluster, so not by bench/, which has controller-kit.ts).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateWebhookCerts, type WebhookCertFiles } from '../../src/certs/files.js';
import { cluster, eventually, kubectl } from './cluster.js';
import { FINALIZER_CASCADE, type Project, type ProjectSpec } from '../../src/validate/types.js';
import {
  controllerKubeconfigFile,
  createProject,
  createProjectNamespace,
  getProject,
  installControllerRbac,
  pool,
  scrape,
  spawnController,
  type Clients,
  type ControllerProcess,
  type MetricsTarget,
} from './controller-kit.js';
import { freePort } from './devcluster/ports.js';

/** The lease every replica competes for (the chart's default). */
export const CONTROLLER_LEASE = { namespace: 'tenantgate-system', name: 'tenantgate-controller' };

/** What the replicas of one test file share: their kubeconfig, the /metrics serving pair, and the processes still running. */
export interface ReplicaSetup {
  /** Names the kubeconfig, certificate directory and log files (e.g. "controller-failover"). */
  name: string;
  kubeconfigFile: string;
  metricsCerts: WebhookCertFiles;
  /** The CA that verifies /metrics. */
  metricsCa: string;
  running: ControllerProcess[];
}

export interface Replica {
  proc: ControllerProcess;
  /** /metrics over HTTPS, scraped as the control plane's admin. */
  metrics: MetricsTarget;
  identity: string;
  logFile: string;
}

/** Applies the controller's RBAC, writes its ServiceAccount kubeconfig and a /metrics serving pair. For beforeAll. */
export async function setUpReplicas(name: string): Promise<ReplicaSetup> {
  const admin = (args: string[]) => kubectl('admin', args);
  await installControllerRbac(admin);
  const info = cluster();
  const kubeconfigFile = await controllerKubeconfigFile(
    admin,
    info.server,
    info.caFile,
    join(info.dir, `${name}-${process.pid}.kubeconfig`),
  );
  const metricsCerts = await generateWebhookCerts(join(info.dir, `${name}-${process.pid}-metrics`), {
    service: 'tenantgate-controller-metrics',
  });
  return { name, kubeconfigFile, metricsCerts, metricsCa: await readFile(metricsCerts.caCert, 'utf8'), running: [] };
}

/** Starts one replica reconciling the Projects matching `projectSelector` ("label=value") and waits until its /readyz says ready. */
export async function startReplica(
  setup: ReplicaSetup,
  identity: string,
  projectSelector: string,
  extraArgs: string[] = [],
): Promise<Replica> {
  const port = await freePort();
  const probePort = await freePort();
  const logFile = join(cluster().dir, `${setup.name}-${identity}.log`);
  const proc = spawnController(
    [
      `--kubeconfig=${setup.kubeconfigFile}`,
      `--metrics-port=${port}`,
      '--metrics-host=127.0.0.1',
      `--metrics-cert=${setup.metricsCerts.cert}`,
      `--metrics-key=${setup.metricsCerts.key}`,
      `--probe-port=${probePort}`,
      '--probe-host=127.0.0.1',
      `--lease-namespace=${CONTROLLER_LEASE.namespace}`,
      `--lease-name=${CONTROLLER_LEASE.name}`,
      `--identity=${identity}`,
      `--project-selector=${projectSelector}`,
      ...extraArgs,
    ],
    logFile,
  );
  setup.running.push(proc);
  await eventually(
    async () => {
      if (proc.child.exitCode !== null) throw new Error(`controller ${identity} exited with ${proc.child.exitCode}`);
      const res = await fetch(`http://127.0.0.1:${probePort}/readyz`);
      if (res.status !== 200) throw new Error(`readyz ${res.status}`);
    },
    { what: `controller ${identity} ready`, timeoutMs: 30_000, intervalMs: 100 },
  );
  return { proc, metrics: { port, token: cluster().tokens.admin!, ca: setup.metricsCa }, identity, logFile };
}

/** Whether the replica's /metrics says it leads; false while it cannot be scraped. */
export async function isLeader(r: Replica): Promise<boolean> {
  try {
    return (await scrape(r.metrics, 'tenantgate_controller_leader')) === 1;
  } catch {
    return false;
  }
}

/** Waits until the replica leads; returns how long that took (ms). */
export async function waitLeader(r: Replica, timeoutMs = 30_000): Promise<number> {
  const started = Date.now();
  await eventually(
    async () => {
      if (!(await isLeader(r))) throw new Error(`${r.identity} is not leader`);
    },
    { what: `${r.identity} leading`, timeoutMs, intervalMs: 100 },
  );
  return Date.now() - started;
}

/** Stops every replica still running with SIGTERM (SIGKILL after 10 s), so the lease is released for the next test. For afterEach. */
export async function stopReplicas(setup: ReplicaSetup): Promise<void> {
  for (const p of setup.running.splice(0)) await p.stop(10_000);
}

/**
 * Creates the Project `name` (with `labels`, so the replicas' selector picks it), waits until a leader
 * put the cascade finalizer on it, and creates `count` namespaces it owns, `<name>-ns00`, `<name>-ns01`, ….
 */
export async function projectWithOwnedNamespaces(
  c: Clients,
  name: string,
  spec: ProjectSpec,
  labels: Record<string, string>,
  count: number,
): Promise<{ project: Project; owned: string[] }> {
  await createProject(c, name, spec, labels);
  const project = await eventually(
    async () => {
      const p = await getProject(c, name);
      if (!p?.metadata.finalizers?.includes(FINALIZER_CASCADE)) throw new Error('no finalizer');
      return p;
    },
    { what: `${name} has the cascade finalizer` },
  );
  const owned = Array.from({ length: count }, (_, i) => `${name}-ns${String(i).padStart(2, '0')}`);
  await pool(owned, 5, (ns) => createProjectNamespace(c, project, ns));
  return { project, owned };
}
