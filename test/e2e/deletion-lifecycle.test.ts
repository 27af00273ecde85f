/**
 * A deletion by mistake loses no data (docs/adr/0096-deletion-loses-no-data.md), on the real control
 * plane with the controller in-process as its ServiceAccount (the shipped RBAC) and the shipped
 * ValidatingAdmissionPolicies D1 and D3. No admission webhook runs: the tests label and annotate
 * namespaces as the mutating webhook would.
 *
 * - a Project whose namespace holds a PVC and a pod deletes nothing of it until a platform admin
 *   confirms (its empty namespace goes at once), says so (condition, Event, gauge), then cascades;
 * - a tenant whom RBAC lets edit Projects still cannot confirm (D1); a subject bound to
 *   tenantgate-deletion-confirmer can;
 * - an empty Project cascades at once; but while an API group cannot be discovered, even an empty namespace
 *   waits (the inventory fails closed);
 * - an orphaning Project leaves its namespaces, their data and quotas, released;
 * - five Projects deleted at once trip the breaker: nothing is deleted until it is resumed; deleting the
 *   Project CRD is refused while Projects exist (D3, asked as a server-side dry run);
 * - a controller restarted while a deletion waits keeps waiting;
 * - last, an operator lifts D3 and deletes the Project CRD: the breaker trips on it and nothing is deleted
 *   until resumed; the CRD is put back for the files after this one.
 *
 * It installs what every install has (installBase: the AllowList CRD and the allow-list policies), so the
 * AllowList of each namespace is judged as shipped: it is held until nothing it judges is left
 * (src/controller/allow-list-finalizer.ts), else the PVC's protection finalizer could not be taken off.
 */
import * as k8s from '@kubernetes/client-node';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningController } from '../../src/controller/controller.js';
import { installBase } from '../support/devcluster/tenantgate.js';
import {
  clients,
  controllerKubeconfigFile,
  createProject,
  createProjectNamespace,
  deleteProject,
  getProject,
  installControllerRbac,
  namespaceExists,
  type Clients,
  startTestController,
} from '../support/controller-kit.js';
import { LABEL_PROJECT, type Project, type ProjectCondition } from '../../src/validate/types.js';
import { cluster, ensureProjectCrd, eventually, kubeConfig, kubectl, uniqueName } from '../support/cluster.js';
import { projectsLabelled, removeProjects, resumeDeletions } from '../support/leftovers.js';
import { BREAKER_CONFIGMAP } from '../../src/controller/deletion/names.js';
import { Kubectl } from '../../src/kubectl/kubectl.js';
import { deletionRows } from '../../src/kubectl/deletions.js';
import { resumeDeletions as resumeWithPlugin, resumeText } from '../../src/kubectl/resume-deletions.js';

const RUN = uniqueName('del');
const SELECTOR_LABEL = 'e2e.tenantgate.io/run';
const SYSTEM = 'tenantgate-system';

let c: Clients;
let controllerKc: k8s.KubeConfig;
let controller: RunningController;

const spec = (extra: Record<string, unknown> = {}): Project['spec'] =>
  ({
    tenant: 'acme',
    owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
    quota: { hard: { 'requests.cpu': '20', pods: '100', persistentvolumeclaims: '10' } },
    namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', pods: '10', persistentvolumeclaims: '5' } } },
    ...extra,
  }) as Project['spec'];

const condition = (p: Project | undefined, type: string): ProjectCondition | undefined =>
  p?.status?.conditions?.find((x) => x.type === type);

const admin = (args: string[]) => kubectl('admin', args);

const start = () =>
  startTestController({
    kubeConfig: controllerKc,
    projectSelector: `${SELECTOR_LABEL}=${RUN}`,
    deletionRecheckMs: 1000,
    discoveryTtlMs: 2000,
    log: (m) => {
      if (process.env.TG_DEBUG) process.stderr.write(`[controller] ${m}\n`);
    },
  });

async function newProject(prefix: string, extra: Record<string, unknown> = {}): Promise<Project> {
  const name = uniqueName(prefix);
  await createProject(c, name, spec(extra), { [SELECTOR_LABEL]: RUN });
  return eventually(
    async () => {
      const p = await getProject(c, name);
      if (!p?.metadata.finalizers?.includes('tenantgate.io/cascade-delete')) throw new Error('no finalizer yet');
      return p;
    },
    { what: `finalizer on ${name}` },
  );
}

/** A namespace of the project holding what a tenant makes: a PersistentVolumeClaim and a pod. */
async function withData(project: Project, name: string): Promise<void> {
  await createProjectNamespace(c, project, name);
  // Admitted once the controller has written what the namespace's admission needs: the default quota, enforced
  // by the quota controller, and (where an earlier file installed the allow-list policies) its AllowList.
  await eventually(
    async () => {
      const quota = await c.core.readNamespacedResourceQuota({ namespace: name, name: 'tenantgate-quota' });
      if (!quota.status?.hard?.['requests.cpu']) throw new Error('no status.hard yet');
      await c.core.createNamespacedPersistentVolumeClaim({
        namespace: name,
        body: {
          metadata: { name: 'data' },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
        },
      });
    },
    { what: `${name}: the PersistentVolumeClaim admitted` },
  );
  await eventually(
    async () =>
      c.core.createNamespacedPod({
        namespace: name,
        body: {
          metadata: { name: 'app' },
          spec: {
            containers: [{ name: 'app', image: 'registry.example/app:1', resources: { requests: { cpu: '100m' } } }],
          },
        },
      }),
    { what: `${name}: the pod admitted` },
  );
}

async function namespaceDeleting(name: string): Promise<boolean> {
  const ns = await c.core.readNamespace({ name });
  return Boolean(ns.metadata?.deletionTimestamp);
}

async function waitingCondition(name: string): Promise<{ project: Project; condition: ProjectCondition }> {
  return eventually(
    async () => {
      const project = await getProject(c, name);
      const waiting = condition(project, 'DeletionConfirmed');
      if (waiting?.status !== 'False') throw new Error(`DeletionConfirmed is ${JSON.stringify(waiting)}`);
      return { project: project!, condition: waiting };
    },
    { what: `${name}: DeletionConfirmed False`, timeoutMs: 60_000 },
  );
}

async function gone(name: string, timeoutMs = 90_000): Promise<void> {
  await eventually(
    async () => {
      const project = await getProject(c, name);
      if (!project) return;
      // What holds it, for a failure's message: the Project's conditions and its namespaces' own.
      const held = (project.status?.conditions ?? []).map((x) => `${x.type}=${x.status}: ${x.message ?? ''}`);
      const namespaces = (await admin(['get', 'namespaces', '-l', `${LABEL_PROJECT}=${name}`, '-o', 'json'])).stdout;
      const terminating = (
        JSON.parse(namespaces || '{"items":[]}') as {
          items: Array<{
            metadata: { name: string };
            status?: { conditions?: Array<{ type: string; message?: string }> };
          }>;
        }
      ).items.map((n) => `${n.metadata.name}: ${(n.status?.conditions ?? []).map((x) => x.message).join('; ')}`);
      throw new Error(`${name} still there (${held.join(' | ')}) namespaces [${terminating.join(' | ')}]`);
    },
    { what: `${name} gone`, timeoutMs },
  );
}

async function confirm(user: string, project: Project) {
  return kubectl(
    user,
    [
      'annotate',
      '--overwrite',
      'project',
      project.metadata.name!,
      `tenantgate.io/deletion-confirmed=${project.metadata.uid}`,
    ],
    { reject: false },
  );
}

beforeAll(async () => {
  await ensureProjectCrd();
  await installBase(cluster()); // with D1, D3 and the confirmer ClusterRole (manifests/policies/deletion.yaml)
  c = clients(kubeConfig('admin'));
  await installControllerRbac(admin);
  // Alice owns the project's namespaces and RBAC lets her edit Projects (as a platform might, for GitOps
  // by hand): only D1 stands between her and a confirmation. Carol is a platform admin who may confirm.
  await admin([
    'create',
    'clusterrole',
    `e2e-${RUN}-project-editor`,
    '--verb=get,list,patch,update',
    '--resource=projects.tenantgate.io',
  ]);
  await admin([
    'create',
    'clusterrolebinding',
    `e2e-${RUN}-project-editor`,
    `--clusterrole=e2e-${RUN}-project-editor`,
    '--user=alice',
    '--user=carol',
  ]);
  await admin([
    'create',
    'clusterrolebinding',
    `e2e-${RUN}-confirmer`,
    '--clusterrole=tenantgate-deletion-confirmer',
    '--user=carol',
  ]);
  const info = cluster();
  controllerKc = new k8s.KubeConfig();
  controllerKc.loadFromFile(
    await controllerKubeconfigFile(admin, info.server, info.caFile, join(info.dir, `controller-${RUN}.kubeconfig`)),
  );
  controller = await start();
  await eventually(async () => {
    if (!controller.isLeader()) throw new Error('controller not reconciling yet');
  });
});

afterAll(async () => {
  await removeProjects(await projectsLabelled(`${SELECTOR_LABEL}=${RUN}`));
  await controller?.stop();
  await admin([
    'delete',
    'clusterrolebinding',
    `e2e-${RUN}-project-editor`,
    `e2e-${RUN}-confirmer`,
    '--ignore-not-found',
  ]);
  await admin(['delete', 'clusterrole', `e2e-${RUN}-project-editor`, '--ignore-not-found']);
  await resumeDeletions(SYSTEM);
}, 180_000);

describe('confirmation before data goes (ADR 0096 steps 3-5, D1)', () => {
  it('a Project whose namespace holds a PVC and a pod deletes nothing of it until a platform admin confirms, then cascades', async () => {
    const project = await newProject('data');
    const name = project.metadata.name!;
    const data = `${name}-data`;
    const empty = `${name}-empty`;
    await withData(project, data);
    await createProjectNamespace(c, project, empty);
    await deleteProject(c, name);

    const { project: waiting, condition: cond } = await waitingCondition(name);
    expect(cond.reason).toBe('AwaitingConfirmation');
    expect(cond.message).toContain(`${data}: 1 PersistentVolumeClaim, 1 Pod`);
    expect(cond.message).toContain(`tenantgate.io/deletion-confirmed: ${project.metadata.uid}`);
    expect(cond.message).not.toContain(empty);
    // The empty namespace goes at once; the one with data is not even being deleted.
    await eventually(async () => expect(await namespaceExists(c, empty)).toBe(false), { what: `${empty} deleted` });
    expect(await namespaceDeleting(data)).toBe(false);
    expect((await c.core.readNamespacedPersistentVolumeClaim({ namespace: data, name: 'data' })).metadata?.name).toBe(
      'data',
    );
    expect(waiting.status?.phase).toBe('Terminating');
    // The Event, and the gauge.
    await eventually(
      async () => {
        const described = (await admin(['describe', 'project', name])).stdout;
        expect(described).toMatch(/DeletionAwaitingConfirmation/);
      },
      { what: 'the DeletionAwaitingConfirmation Event' },
    );
    await eventually(
      async () => {
        const text = await controller.metrics.registry.getSingleMetricAsString('tenantgate_project_deletion_waiting');
        expect(text).toContain(
          `tenantgate_project_deletion_waiting{project="${name}",reason="AwaitingConfirmation"} 1`,
        );
      },
      { what: 'the waiting gauge' },
    );

    // kubectl tenantgate deletions says what waits and how to confirm.
    const info = cluster();
    const listed = await new Kubectl({ kubeconfig: info.kubeconfigs.admin! }, join(info.binDir, 'kubectl')).json<{
      items: Project[];
    }>(['get', 'projects.tenantgate.io']);
    const row = deletionRows(listed.items).find((r) => r.project === name);
    expect(row).toMatchObject({
      state: 'AwaitingConfirmation',
      confirm: `kubectl annotate project ${name} tenantgate.io/deletion-confirmed=${project.metadata.uid}`,
    });
    expect(row?.message).toContain(`${data}: 1 PersistentVolumeClaim, 1 Pod`);

    // A tenant whom RBAC lets patch Projects cannot confirm: D1 refuses, nothing is stored.
    const refused = await confirm('alice', waiting);
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toMatch(
      new RegExp(`\\[D1\\] Project ${name}: user "alice" may not set the annotation tenantgate.io/deletion-confirmed`),
    );
    expect((await getProject(c, name))?.metadata.annotations?.['tenantgate.io/deletion-confirmed']).toBeUndefined();
    expect(await namespaceDeleting(data)).toBe(false);

    // Carol, bound to tenantgate-deletion-confirmer, confirms: the cascade runs as before.
    const confirmed = await confirm('carol', waiting);
    expect(confirmed.exitCode, confirmed.stderr).toBe(0);
    await gone(name);
    expect(await namespaceExists(c, data)).toBe(false);
  });

  it('an empty Project (only what Kubernetes and tenantgate made) cascades at once', async () => {
    const project = await newProject('empty');
    const name = project.metadata.name!;
    const ns = `${name}-a`;
    await createProjectNamespace(c, project, ns);
    // kube-root-ca.crt and the default ServiceAccount, and tenantgate's default quota, are in it.
    await eventually(
      async () => {
        await c.core.readNamespacedConfigMap({ namespace: ns, name: 'kube-root-ca.crt' });
        await c.core.readNamespacedServiceAccount({ namespace: ns, name: 'default' });
        await c.core.readNamespacedResourceQuota({ namespace: ns, name: 'tenantgate-quota' });
      },
      { what: `${ns}: the root CA, the default ServiceAccount and the default quota` },
    );
    await deleteProject(c, name);
    await gone(name);
    expect(await namespaceExists(c, ns)).toBe(false);
  });
});

describe('the inventory fails closed', () => {
  const BROKEN = 'v1alpha1.deletion-e2e.tenantgate.io';
  afterAll(async () => {
    await admin(['delete', 'apiservice', BROKEN, '--ignore-not-found']);
  });

  it('a group whose discovery fails (an aggregated API that is down): even an empty namespace waits, until it answers again', async () => {
    // Registered, never served: discovery of deletion-e2e.tenantgate.io answers 503.
    await kubectl('admin', ['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'apiregistration.k8s.io/v1',
        kind: 'APIService',
        metadata: { name: BROKEN },
        spec: {
          group: 'deletion-e2e.tenantgate.io',
          version: 'v1alpha1',
          groupPriorityMinimum: 1000,
          versionPriority: 15,
          insecureSkipTLSVerify: true,
          service: { name: 'no-such-service', namespace: 'default', port: 443 },
        },
      }),
    });
    const project = await newProject('blind');
    const name = project.metadata.name!;
    const ns = `${name}-a`;
    await createProjectNamespace(c, project, ns); // empty: with every list answered it would go at once
    await deleteProject(c, name);
    // The controller reads discovery again (every 2 s here, a minute by default): it cannot tell what the namespace holds.
    const waiting = await eventually(
      async () => {
        const got = condition(await getProject(c, name), 'DeletionConfirmed');
        if (got?.status !== 'False') throw new Error(JSON.stringify(got));
        return got;
      },
      { what: `${name} waiting on unknown contents`, timeoutMs: 120_000 },
    );
    expect(waiting.message).toContain(`${ns}: unknown contents (could not list *.deletion-e2e.tenantgate.io (`);
    expect(await namespaceDeleting(ns)).toBe(false);

    // The API answers again (here: it is gone): the next look finds the namespace empty, and it goes.
    await admin(['delete', 'apiservice', BROKEN]);
    await gone(name, 150_000);
    expect(await namespaceExists(c, ns)).toBe(false);
  }, 300_000); // its two waits (120 s, 150 s) are longer than the default test timeout
});

describe('orphaning (deletionPolicy: Orphan)', () => {
  it('leaves the namespaces, their data and quotas, released from the Project', async () => {
    const project = await newProject('orphan', { deletionPolicy: 'Orphan' });
    const name = project.metadata.name!;
    const ns = `${name}-keep`;
    await withData(project, ns);
    await eventually(async () => c.core.readNamespacedResourceQuota({ namespace: ns, name: 'tenantgate-quota' }), {
      what: `${ns}: the default quota`,
    });
    await deleteProject(c, name);
    await gone(name);

    const released = await c.core.readNamespace({ name: ns });
    expect(released.metadata?.deletionTimestamp).toBeUndefined();
    expect(released.metadata?.labels?.['tenantgate.io/project']).toBeUndefined();
    expect(released.metadata?.labels?.['tenantgate.io/released-from']).toBe(name);
    expect(released.metadata?.annotations?.['tenantgate.io/project-uid']).toBeUndefined();
    expect(released.metadata?.annotations?.['tenantgate.io/released-at']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect((await c.core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: 'data' })).metadata?.name).toBe(
      'data',
    );
    expect((await c.core.readNamespacedPod({ namespace: ns, name: 'app' })).metadata?.name).toBe('app');
    expect(
      (await c.core.readNamespacedResourceQuota({ namespace: ns, name: 'tenantgate-quota' })).spec?.hard,
    ).toMatchObject({
      pods: '10',
    });
    await c.core.deleteNamespace({ name: ns });
  });
});

describe('the breaker (D2) and the CRD (D3)', () => {
  it('five Projects deleted at once trip the breaker: nothing is deleted until an operator resumes', async () => {
    await admin(['-n', SYSTEM, 'delete', 'configmap', BREAKER_CONFIGMAP, '--ignore-not-found']);
    const projects = await Promise.all(Array.from({ length: 5 }, () => newProject('mass')));
    const names = projects.map((p) => p.metadata.name!);
    // Empty namespaces: without the breaker they would go at once.
    for (const p of projects) await createProjectNamespace(c, p, `${p.metadata.name}-a`);

    // D3: the CRD, whose deletion would delete every Project, is not deleted while Projects exist.
    const refusal = await kubectl('admin', ['delete', 'crd', 'projects.tenantgate.io', '--dry-run=server'], {
      reject: false,
    });
    expect(refusal.exitCode).not.toBe(0);
    expect(refusal.stderr).toMatch(
      /\[D3\] CustomResourceDefinition projects\.tenantgate\.io: user "admin" may not delete it while Project /,
    );

    await admin(['delete', 'project', ...names, '--wait=false']);
    const tripped = await eventually(
      async () => {
        const got = JSON.parse(
          (await admin(['-n', SYSTEM, 'get', 'configmap', BREAKER_CONFIGMAP, '-o', 'json'])).stdout,
        ) as {
          data: Record<string, string>;
        };
        return got.data;
      },
      { what: 'the breaker ConfigMap', timeoutMs: 60_000 },
    );
    expect(tripped.trippedAt).toMatch(/^\d{4}-/);
    expect(tripped.reason).toMatch(/^[45] Projects began their deletion within 600s, more than 3$/);
    expect(tripped.projects!.split(',').every((n) => names.includes(n))).toBe(true);
    for (const p of projects) {
      const paused = await eventually(
        async () => {
          const got = condition(await getProject(c, p.metadata.name!), 'DeletionPaused');
          if (got?.status !== 'True') throw new Error(JSON.stringify(got));
          return got;
        },
        { what: `${p.metadata.name}: DeletionPaused` },
      );
      expect(paused.reason).toBe('BreakerTripped');
      expect(paused.message).toMatch(/^\[D2\] the deletion breaker tripped at /);
    }
    await eventually(
      async () => {
        const text = await controller.metrics.registry.getSingleMetricAsString('tenantgate_deletion_breaker_tripped');
        expect(text).toMatch(/^tenantgate_deletion_breaker_tripped 1$/m);
      },
      { what: 'the breaker gauge' },
    );
    // Every Project has been looked at while tripped (each says so): not one namespace is being deleted.
    for (const p of projects) {
      expect(await namespaceExists(c, `${p.metadata.name}-a`)).toBe(true);
      expect(await namespaceDeleting(`${p.metadata.name}-a`)).toBe(false);
    }

    // Resumed by an operator (kubectl tenantgate resume-deletions): the deletions that began before go on.
    const info = cluster();
    const plugin = new Kubectl({ kubeconfig: info.kubeconfigs.admin! }, join(info.binDir, 'kubectl'));
    const resumed = await resumeWithPlugin(plugin, SYSTEM);
    expect(resumed.resumed).toBe(true);
    expect(resumeText(SYSTEM, resumed)).toContain(
      `The deletions that began before go on: ${tripped.projects!.split(',').join(', ')}`,
    );
    expect((await resumeWithPlugin(plugin, SYSTEM)).resumed).toBe(false); // nothing left to resume
    for (const n of names) await gone(n);
    for (const n of names) expect(await namespaceExists(c, `${n}-a`)).toBe(false);
  });
});

describe('nothing is kept in memory', () => {
  it('a controller restarted while a deletion waits keeps waiting, and cascades once confirmed', async () => {
    const project = await newProject('restart');
    const name = project.metadata.name!;
    const data = `${name}-data`;
    await withData(project, data);
    await deleteProject(c, name);
    const { project: waiting } = await waitingCondition(name);

    await controller.stop();
    controller = await start();
    // The new controller has looked at the Project (a reconcile that requeues: the deletion waits).
    await eventually(
      async () => {
        if (!controller.isLeader()) throw new Error('not leading yet');
        expect((await controller.metrics.reconciles()).requeue ?? 0).toBeGreaterThan(0);
      },
      { what: 'the restarted controller reconciled the waiting Project' },
    );
    expect(await namespaceDeleting(data)).toBe(false);
    expect(condition(await getProject(c, name), 'DeletionConfirmed')?.status).toBe('False');

    expect((await confirm('admin', waiting)).exitCode).toBe(0);
    await gone(name);
    expect(await namespaceExists(c, data)).toBe(false);
  });
});

describe('the CRD deleted anyway (D3 lifted by an operator): the breaker holds', () => {
  it('an operator marks and deletes the Project CRD: every Project is deleted, the breaker trips, nothing is deleted until resumed', async () => {
    await admin(['-n', SYSTEM, 'delete', 'configmap', BREAKER_CONFIGMAP, '--ignore-not-found']);
    const project = await newProject('crd');
    const name = project.metadata.name!;
    const ns = `${name}-a`;
    await createProjectNamespace(c, project, ns); // empty: without the breaker it would go at once

    await admin(['annotate', 'crd', 'projects.tenantgate.io', 'tenantgate.io/allow-deletion=true']);
    await admin(['delete', 'crd', 'projects.tenantgate.io', '--wait=false']);
    const tripped = await eventually(
      async () => {
        const got = JSON.parse(
          (await admin(['-n', SYSTEM, 'get', 'configmap', BREAKER_CONFIGMAP, '-o', 'json'])).stdout,
        ) as { data: Record<string, string> };
        return got.data;
      },
      { what: 'the breaker tripped by the CRD deletion', timeoutMs: 60_000 },
    );
    expect(tripped.reason).toBe('the CustomResourceDefinition projects.tenantgate.io is being deleted');
    expect(tripped.projects).toBe(name);
    const paused = await eventually(
      async () => {
        const got = condition(await getProject(c, name), 'DeletionPaused');
        if (got?.status !== 'True') throw new Error(JSON.stringify(got));
        return got;
      },
      { what: `${name}: DeletionPaused while its CRD is being deleted` },
    );
    expect(paused.reason).toBe('BreakerTripped');
    expect(await namespaceDeleting(ns)).toBe(false);

    // Resumed: the deletion the CRD began goes on, and the CRD goes once its last Project is gone.
    const info = cluster();
    const plugin = new Kubectl({ kubeconfig: info.kubeconfigs.admin! }, join(info.binDir, 'kubectl'));
    expect((await resumeWithPlugin(plugin, SYSTEM)).resumed).toBe(true);
    await eventually(async () => expect(await namespaceExists(c, ns)).toBe(false), { what: `${ns} deleted` });
    await eventually(
      async () => {
        const crd = await kubectl('admin', [
          'get',
          'crd',
          'projects.tenantgate.io',
          '--ignore-not-found',
          '-o',
          'name',
        ]);
        if (crd.stdout.trim() !== '') throw new Error('the CRD is still there');
      },
      { what: 'the Project CRD gone', timeoutMs: 90_000 },
    );
    // Put back for the files after this one.
    await ensureProjectCrd();
    await eventually(async () => admin(['get', 'projects']), { what: 'Projects served again' });
  });
});
