/**
 * Development helpers for the controller against a local control plane (test/support/devcluster): seed
 * Projects with namespaces full of objects, and run the controller as a separate OS process. Used
 * by the e2e tests and bench/targets/controller.ts; not used by the controller itself.
 */
import * as k8s from '@kubernetes/client-node';
import pLimit from 'p-limit';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { kubeconfigYaml } from './devcluster/controlplane.js';
import { httpsCall } from './devcluster/https-get.js';
import { startProcess, type Managed } from './devcluster/processes.js';
import { REPO_ROOT } from './paths.js';
import {
  ANNOTATION_PROJECT_UID,
  API_GROUP,
  LABEL_PROJECT,
  LABEL_TENANT,
  type Project,
  type ProjectSpec,
} from '../../src/validate/types.js';
import { isConflict, isNotFound } from '../../src/kube/errors.js';
import { PROJECT_PLURAL, PROJECT_VERSION } from '../../src/kube/lists.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { startController, type ControllerOptions, type RunningController } from '../../src/controller/start.js';

/**
 * The controller in the test process, as the e2e tests run it: no lease, /metrics (HTTPS, its own
 * certificate: metricsTarget) on a free loopback port, the default configuration with a 30 s resync,
 * quiet. `options` overrides any of it.
 */
export function startTestController(
  options: Pick<ControllerOptions, 'kubeConfig'> & Partial<ControllerOptions>,
): Promise<RunningController> {
  return startController({
    config: { ...DEFAULT_CONFIG, resyncPeriodSeconds: 30 },
    leaderElection: false,
    metricsPort: 0,
    metricsHost: '127.0.0.1',
    log: () => {},
    ...options,
  });
}

export interface Clients {
  core: k8s.CoreV1Api;
  custom: k8s.CustomObjectsApi;
}

export function clients(kc: k8s.KubeConfig): Clients {
  return { core: kc.makeApiClient(k8s.CoreV1Api), custom: kc.makeApiClient(k8s.CustomObjectsApi) };
}

export async function createProject(
  c: Clients,
  name: string,
  spec: ProjectSpec,
  labels: Record<string, string> = {},
): Promise<Project> {
  return (await c.custom.createClusterCustomObject({
    group: API_GROUP,
    version: PROJECT_VERSION,
    plural: PROJECT_PLURAL,
    body: { apiVersion: `${API_GROUP}/${PROJECT_VERSION}`, kind: 'Project', metadata: { name, labels }, spec },
  })) as Project;
}

export async function getProject(c: Clients, name: string): Promise<Project | undefined> {
  try {
    return (await c.custom.getClusterCustomObject({
      group: API_GROUP,
      version: PROJECT_VERSION,
      plural: PROJECT_PLURAL,
      name,
    })) as Project;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export async function deleteProject(c: Clients, name: string): Promise<void> {
  await c.custom.deleteClusterCustomObject({
    group: API_GROUP,
    version: PROJECT_VERSION,
    plural: PROJECT_PLURAL,
    name,
    propagationPolicy: 'Background',
  });
}

/** A namespace of the project as the mutating webhook would label and annotate it. `uid: null` leaves the annotation out. */
export async function createProjectNamespace(
  c: Clients,
  project: Project,
  name: string,
  options: { uid?: string | null; labels?: Record<string, string> } = {},
): Promise<k8s.V1Namespace> {
  const uid = options.uid === undefined ? project.metadata.uid : options.uid;
  return c.core.createNamespace({
    body: {
      metadata: {
        name,
        labels: {
          [LABEL_PROJECT]: project.metadata.name ?? '',
          [LABEL_TENANT]: project.spec.tenant,
          ...options.labels,
        },
        ...(uid ? { annotations: { [ANNOTATION_PROJECT_UID]: uid } } : {}),
      },
    },
  });
}

/** Creates or replaces a ResourceQuota (the controller may have created the default one first). */
export async function setQuota(
  c: Clients,
  namespace: string,
  hard: Record<string, string>,
  name = 'tenantgate-quota',
): Promise<k8s.V1ResourceQuota> {
  for (let attempt = 0; ; attempt++) {
    try {
      const existing = await c.core.readNamespacedResourceQuota({ name, namespace }).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
      if (!existing)
        return await c.core.createNamespacedResourceQuota({ namespace, body: { metadata: { name }, spec: { hard } } });
      return await c.core.replaceNamespacedResourceQuota({
        name,
        namespace,
        body: { metadata: { name, resourceVersion: existing.metadata?.resourceVersion }, spec: { hard } },
      });
    } catch (err) {
      if (attempt < 5 && isConflict(err)) continue;
      throw err;
    }
  }
}

/** Fills a namespace with ConfigMaps and Secrets (so the namespace controller has content to delete). */
export async function fillNamespace(
  c: Clients,
  namespace: string,
  configMaps: number,
  secrets: number,
  finalizers: string[] = [],
): Promise<void> {
  const jobs: Promise<unknown>[] = [];
  for (let i = 0; i < configMaps; i++) {
    jobs.push(
      c.core.createNamespacedConfigMap({
        namespace,
        body: {
          metadata: { name: `cm-${i}`, ...(finalizers.length > 0 && i === 0 ? { finalizers } : {}) },
          data: { key: 'x'.repeat(64), index: String(i) },
        },
      }),
    );
  }
  for (let i = 0; i < secrets; i++) {
    jobs.push(
      c.core.createNamespacedSecret({
        namespace,
        body: { metadata: { name: `secret-${i}` }, stringData: { password: `p${i}` } },
      }),
    );
  }
  await Promise.all(jobs);
}

export async function namespaceExists(c: Clients, name: string): Promise<boolean> {
  try {
    await c.core.readNamespace({ name });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/** `fn` over every item, at most `concurrency` at a time (p-limit, as the cascade uses). */
export async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  const limit = pLimit(concurrency);
  await Promise.all(items.map((item) => limit(() => fn(item))));
}

export type ControllerProcess = Managed;

/** Runs `tenantgate controller ARGS` as its own OS process (node with tsx, straight from the sources), output appended to logFile. */
export function spawnController(
  args: string[],
  logFile: string,
  env: NodeJS.ProcessEnv = process.env,
): ControllerProcess {
  return startProcess(
    'controller',
    process.execPath,
    ['--import', 'tsx', join(REPO_ROOT, 'src', 'cli', 'main.ts'), 'controller', ...args],
    logFile,
    env,
    { cwd: REPO_ROOT },
  );
}

/**
 * A controller's /metrics as Prometheus reaches it: HTTPS, with the bearer token of a subject allowed to
 * get the non-resource URL /metrics (the control plane's admin, system:masters, or a ServiceAccount
 * bound to tenantgate-metrics-reader). `ca` verifies the serving certificate; without it (a controller
 * process that made its own) the certificate is not verified.
 */
export interface MetricsTarget {
  port: number;
  token: string;
  ca?: string;
}

/** An in-process controller's target, scraped with `token` (the admin's of the control plane, normally). */
export function metricsTarget(controller: RunningController, token: string): MetricsTarget {
  if (controller.port === undefined) throw new Error('the controller serves no /metrics (metricsPort unset)');
  return { port: controller.port, token, ...(controller.metricsCa ? { ca: controller.metricsCa } : {}) };
}

/** GET /metrics: status and body, whatever the status. */
export function getMetrics(
  target: Pick<MetricsTarget, 'port' | 'ca'> & { token?: string },
): Promise<{ status: number; body: string }> {
  return httpsCall(`https://127.0.0.1:${target.port}/metrics`, {
    ca: target.ca,
    token: target.token,
    timeoutMs: 10_000,
  });
}

/** The /metrics text; throws on any answer but 200. */
export async function metricsText(target: MetricsTarget): Promise<string> {
  const { status, body } = await getMetrics(target);
  if (status !== 200) throw new Error(`GET /metrics on port ${target.port}: ${status} ${body.trim()}`);
  return body;
}

/** Reads the controller's /metrics text and returns the value of one series (labels as given, exact). */
export async function scrape(target: MetricsTarget, series: string): Promise<number | undefined> {
  const text = await metricsText(target);
  for (const line of text.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return undefined;
}

/** All series of a metric family as "name{labels}" → value. */
export async function scrapeAll(target: MetricsTarget, family: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const line of (await metricsText(target)).split('\n')) {
    if (line.startsWith('#') || !line.startsWith(family)) continue;
    const i = line.lastIndexOf(' ');
    out[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return out;
}

/** Applies manifests/controller (namespace, ServiceAccount, least-privilege RBAC), not the Deployment. */
export async function installControllerRbac(kubectl: (args: string[]) => Promise<unknown>): Promise<void> {
  const dir = join(REPO_ROOT, 'manifests', 'controller');
  await kubectl(['apply', '-f', join(dir, '00-namespace.yaml'), '-f', join(dir, 'rbac.yaml')]);
}

/** A kubeconfig file for the controller's ServiceAccount (TokenRequest), so it runs with exactly the shipped RBAC. */
export async function controllerKubeconfigFile(
  kubectl: (args: string[]) => Promise<{ stdout?: unknown }>,
  server: string,
  caFile: string,
  file: string,
): Promise<string> {
  const token = String(
    (await kubectl(['-n', 'tenantgate-system', 'create', 'token', 'tenantgate-controller', '--duration=24h'])).stdout ??
      '',
  ).trim();
  const user = 'system:serviceaccount:tenantgate-system:tenantgate-controller';
  await writeFile(file, kubeconfigYaml(server, await readFile(caFile, 'utf8'), user, token), { mode: 0o600 });
  return file;
}
