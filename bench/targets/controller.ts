/**
 * P4 (docs/benchmarks.md): cascading deletion of a 50-namespace project adds < 20 % to the time
 * kube-controller-manager itself takes to delete the same namespaces.
 *
 * Starts its own control plane and the controller (in-process, as its ServiceAccount). Each round
 * creates 50 namespaces with a few ConfigMaps and Secrets, then times either
 *   direct:  deleting the 50 namespaces straight away (10 deletes in flight, like the controller)
 *            until the last one is gone (each holds a ResourceQuota too, like the project's), or
 *   cascade: deleting their Project until the Project is gone (the controller deletes the
 *            namespaces, waits for them, removes its finalizer).
 * Rounds alternate (direct, cascade, …) so drift hits both; medians are compared. Prints one JSON
 * line and writes bench/results/controller.json.
 *
 *   npx tsx bench/targets/controller.ts            (or: npm run bench -- controller)
 *   BENCH_CONTROLLER_ROUNDS=5 BENCH_CONTROLLER_NAMESPACES=50 npx tsx bench/targets/controller.ts
 */
import * as k8s from '@kubernetes/client-node';
import { execa } from 'execa';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { startController } from '../../src/controller/controller.js';
import {
  clients,
  controllerKubeconfigFile,
  createProject,
  createProjectNamespace,
  deleteProject,
  fillNamespace,
  getProject,
  installControllerRbac,
  pool,
  type Clients,
} from '../../test/support/controller-kit.js';
import { reconcileWrites } from '../../src/controller/metrics.js';
import { median } from '../lib/measure.js';
import { ControlPlane, REPO_ROOT } from '../../test/support/devcluster/controlplane.js';
import type { Project } from '../../src/validate/types.js';

/** bench/ (results go to bench/results/). */
const HERE = join(dirname(fileURLToPath(import.meta.url)), '..');
const RESULTS = join(HERE, 'results', 'controller.json');
const NAMESPACES = Number(process.env.BENCH_CONTROLLER_NAMESPACES ?? 50);
const ROUNDS = Number(process.env.BENCH_CONTROLLER_ROUNDS ?? 5);
const CONFIGMAPS = 3;
const SECRETS = 2;
const POLL_MS = 25;
const TARGET_RATIO = 1.2;

const log = (m: string) => process.stderr.write(`[bench/controller] ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => Promise<boolean>, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(POLL_MS);
  }
}

async function fill(c: Clients, names: string[]): Promise<void> {
  await pool(names, 10, (ns) => fillNamespace(c, ns, CONFIGMAPS, SECRETS));
}

/** Direct: the namespaces alone, deleted by the client; time until the namespace controller has removed the last. */
async function directRound(c: Clients, round: number): Promise<number> {
  const label = `bench-direct-${round}`;
  const names = Array.from({ length: NAMESPACES }, (_, i) => `direct${round}-ns${String(i).padStart(2, '0')}`);
  await pool(names, 10, (name) =>
    c.core.createNamespace({ body: { metadata: { name, labels: { 'bench.tenantgate.io/set': label } } } }),
  );
  await fill(c, names);
  // The same content as the cascade's namespaces, which also hold the controller's default quota.
  await pool(names, 10, (namespace) =>
    c.core.createNamespacedResourceQuota({
      namespace,
      body: { metadata: { name: 'tenantgate-quota' }, spec: { hard: { 'requests.cpu': '2', pods: '10' } } },
    }),
  );
  await sleep(1000);
  const started = performance.now();
  await pool(names, 10, (name) => c.core.deleteNamespace({ name, propagationPolicy: 'Background' }));
  await until(
    async () => (await c.core.listNamespace({ labelSelector: `bench.tenantgate.io/set=${label}` })).items.length === 0,
  );
  return performance.now() - started;
}

/** Cascade: the same through a Project; time until the Project is gone. */
async function cascadeRound(
  c: Clients,
  round: number,
  writes: () => Promise<number>,
): Promise<{ ms: number; namespacesGoneMs: number; writes: number }> {
  const name = `casc${round}`;
  await createProject(c, name, {
    tenant: 'bench',
    quota: { hard: { 'requests.cpu': '1000', pods: '10000' } },
    namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', pods: '10' } } },
  });
  let project: Project | undefined;
  await until(async () =>
    Boolean((project = await getProject(c, name))?.metadata.finalizers?.includes('tenantgate.io/cascade-delete')),
  );
  const names = Array.from({ length: NAMESPACES }, (_, i) => `${name}-ns${String(i).padStart(2, '0')}`);
  await pool(names, 10, (ns) => createProjectNamespace(c, project!, ns));
  await fill(c, names);
  // Settled: every namespace counted in the status (the controller created their default quotas).
  await until(async () => (await getProject(c, name))?.status?.namespaceCount === NAMESPACES);
  await sleep(1000);
  const writesBefore = await writes();
  const started = performance.now();
  await deleteProject(c, name);
  let namespacesGoneMs = 0;
  await until(async () => {
    if (
      !namespacesGoneMs &&
      (await c.core.listNamespace({ labelSelector: `tenantgate.io/project=${name}` })).items.length === 0
    )
      namespacesGoneMs = performance.now() - started;
    return (await getProject(c, name)) === undefined;
  });
  const ms = performance.now() - started;
  return { ms, namespacesGoneMs: namespacesGoneMs || ms, writes: (await writes()) - writesBefore };
}

export async function main(): Promise<string[]> {
  log(`starting a control plane (${cpus().length} CPUs)`);
  const cp = await ControlPlane.start();
  const kubectl = (args: string[]) =>
    execa(join(cp.info.binDir, 'kubectl'), args, { env: { KUBECONFIG: cp.info.kubeconfigs.admin ?? '' } });
  let stopController: (() => Promise<void>) | undefined;
  try {
    await kubectl(['apply', '--server-side', '-f', join(REPO_ROOT, 'manifests', 'crd', 'projects.tenantgate.io.yaml')]);
    await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/projects.tenantgate.io']);
    await installControllerRbac(kubectl);
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(
      await controllerKubeconfigFile(
        kubectl,
        cp.info.server,
        cp.info.caFile,
        join(cp.info.dir, 'controller.kubeconfig'),
      ),
    );
    const admin = new k8s.KubeConfig();
    admin.loadFromFile(cp.info.kubeconfigs.admin!);
    const c = clients(admin);
    const controller = await startController({
      kubeConfig: kc,
      config: DEFAULT_CONFIG,
      leaderElection: false,
      log: () => {},
    });
    stopController = () => controller.stop();
    await until(async () => controller.isLeader(), 60_000);

    const direct: number[] = [];
    const cascade: number[] = [];
    const cascadeNamespaces: number[] = [];
    const cascadeWrites: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const d = await directRound(c, round);
      direct.push(d);
      log(`round ${round + 1}/${ROUNDS}: direct deletion of ${NAMESPACES} namespaces ${Math.round(d)} ms`);
      const k = await cascadeRound(c, round, async () => reconcileWrites(await controller.metrics.writes()));
      cascade.push(k.ms);
      cascadeNamespaces.push(k.namespacesGoneMs);
      cascadeWrites.push(k.writes);
      log(
        `round ${round + 1}/${ROUNDS}: cascade ${Math.round(k.ms)} ms (namespaces gone after ${Math.round(k.namespacesGoneMs)} ms)`,
      );
    }
    const directMs = median(direct);
    const cascadeMs = median(cascade);
    const ratio = cascadeMs / directMs;
    const result = {
      benchmark: 'controller-cascade',
      namespaces: NAMESPACES,
      objectsPerNamespace: CONFIGMAPS + SECRETS,
      rounds: ROUNDS,
      directMs: Math.round(directMs),
      cascadeMs: Math.round(cascadeMs),
      ratio: Number(ratio.toFixed(3)),
      target: TARGET_RATIO,
      pass: ratio < TARGET_RATIO,
      // cascadeWrites: the controller's API writes from the Project's deletion to its disappearance
      // (namespace deletes, status updates at most once a second, the finalizer removal).
      runs: {
        direct: direct.map(Math.round),
        cascade: cascade.map(Math.round),
        cascadeNamespacesGone: cascadeNamespaces.map(Math.round),
        cascadeWrites,
      },
      cpus: cpus().length,
      node: process.version,
      date: new Date().toISOString(),
    };
    mkdirSync(dirname(RESULTS), { recursive: true });
    writeFileSync(RESULTS, JSON.stringify(result, null, 2) + '\n');
    process.stdout.write(`${JSON.stringify(result)}\n`);
    log(
      `P4: cascade ${result.cascadeMs} ms vs direct ${result.directMs} ms = ${result.ratio}× (target < ${TARGET_RATIO}×) ${result.pass ? 'PASS' : 'FAIL'}; results: ${RESULTS}`,
    );
    return result.pass ? [] : [`P4 cascade/direct ${result.ratio} not < ${TARGET_RATIO}`];
  } finally {
    await stopController?.();
    await cp.stop();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    (missed) => process.exit(process.argv.includes('--check') && missed.length ? 1 : 0),
    (err: unknown) => {
      process.stderr.write(`bench/controller: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}
