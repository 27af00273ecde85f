/**
 * An API server restart under a running controller (its own control plane, so the shared one is not
 * disturbed): the informers' watches break, are restarted with backoff, and a change made after
 * the restart is reconciled.
 */
import * as k8s from '@kubernetes/client-node';
import { execa } from 'execa';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { RunningController } from '../../src/controller/controller.js';
import {
  clients,
  createProject,
  createProjectNamespace,
  getProject,
  type Clients,
  startTestController,
} from '../support/controller-kit.js';
import { ControlPlane, REPO_ROOT } from '../support/devcluster/controlplane.js';
import { eventually } from '../support/cluster.js';

let cp: ControlPlane;
let controller: RunningController;
let c: Clients;
const logs: string[] = [];

beforeAll(async () => {
  cp = await ControlPlane.start();
  const kubectl = (args: string[]) =>
    execa(join(cp.info.binDir, 'kubectl'), args, { env: { KUBECONFIG: cp.info.kubeconfigs.admin ?? '' } });
  await kubectl([
    'apply',
    '--server-side',
    '-f',
    join(REPO_ROOT, 'manifests', 'crd', 'projects.tenantgate.io.yaml'),
    '-f',
    join(REPO_ROOT, 'manifests', 'crd', 'allowlists.tenantgate.io.yaml'),
  ]);
  await kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/projects.tenantgate.io',
    'crd/allowlists.tenantgate.io',
  ]);
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(cp.info.kubeconfigs.admin!);
  c = clients(kc);
  controller = await startTestController({
    kubeConfig: kc,
    config: { ...DEFAULT_CONFIG, resyncPeriodSeconds: 300 }, // no resync during the test: events must do it
    leaderElection: { namespace: 'kube-system', name: 'tenantgate-controller', identity: 'restart-test' },
    log: (m) => logs.push(`${new Date().toISOString()} ${m}`),
  });
  await eventually(
    async () => {
      if (!controller.isLeader()) throw new Error('not leading yet');
    },
    { what: 'controller leading', timeoutMs: 60_000 },
  );
});

afterAll(async () => {
  await controller?.stop();
  await cp?.stop();
  if (process.env.TG_DEBUG) process.stderr.write(logs.join('\n') + '\n');
});

it('reconnects its informers after an API server restart and reconciles a change made afterwards', async () => {
  const spec = {
    tenant: 'acme',
    quota: { hard: { 'requests.cpu': '20', pods: '100' } },
    namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', pods: '10' } } },
  };
  const project = await createProject(c, 'restart', spec);
  await eventually(
    async () => {
      const p = await getProject(c, 'restart');
      expect(p?.metadata.finalizers).toContain('tenantgate.io/cascade-delete');
      expect(p?.status?.phase).toBe('Active');
    },
    { what: 'project reconciled before the restart' },
  );
  await createProjectNamespace(c, project, 'restart-a');
  await eventually(async () => expect((await getProject(c, 'restart'))?.status?.namespaceCount).toBe(1));

  const restartsBefore = (await controller.metrics.informerRestarts.get()).values.reduce((a, v) => a + v.value, 0);
  const startedAt = Date.now();
  await cp.restartApiserver();
  const downMs = Date.now() - startedAt;

  // A change after the restart: a new self-service namespace (needs a default quota and a status update).
  await createProjectNamespace(c, project, 'restart-b');
  const p = await eventually(
    async () => {
      const got = await getProject(c, 'restart');
      expect(got?.status?.namespaceCount).toBe(2);
      expect(got?.status?.namespaces?.map((n) => [n.name, n.health])).toEqual([
        ['restart-a', 'Healthy'],
        ['restart-b', 'Healthy'],
      ]);
      return got!;
    },
    { what: 'change after the restart reconciled', timeoutMs: 90_000 },
  );
  const reconciledMs = Date.now() - startedAt;
  expect(p.status?.allocated).toEqual({ pods: '20', 'requests.cpu': '4' });
  const quota = await c.core.readNamespacedResourceQuota({ name: 'tenantgate-quota', namespace: 'restart-b' });
  expect(quota.spec?.hard).toEqual({ 'requests.cpu': '2', pods: '10' });

  const restarts =
    (await controller.metrics.informerRestarts.get()).values.reduce((a, v) => a + v.value, 0) - restartsBefore;
  console.log(
    `[controller-apiserver-restart] apiserver down+up ${downMs} ms; change reconciled ${reconciledMs} ms after the restart began; ${restarts} informer restarts`,
  );
  expect(restarts).toBeGreaterThan(0);
  expect(controller.synced()).toBe(true);
  expect(controller.isLeader()).toBe(true);

  // And a deletion still cascades through the restarted watches.
  await c.custom.deleteClusterCustomObject({
    group: 'tenantgate.io',
    version: 'v1alpha1',
    plural: 'projects',
    name: 'restart',
  });
  await eventually(
    async () => {
      if (await getProject(c, 'restart')) throw new Error('project still there');
    },
    { what: 'cascade after the restart', timeoutMs: 90_000 },
  );
  for (const ns of ['restart-a', 'restart-b']) {
    await expect(c.core.readNamespace({ name: ns })).rejects.toMatchObject({ code: 404 });
  }
});
