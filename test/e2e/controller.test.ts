/**
 * The controller in-process against the shared real control plane: cascading deletion
 * (CR2), status (CR3), default quotas (CR4). No admission webhook runs here, so the tests label and
 * annotate namespaces themselves, as the mutating webhook would.
 */
import * as k8s from '@kubernetes/client-node';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningController } from '../../src/controller/controller.js';
import {
  clients,
  controllerKubeconfigFile,
  createProject,
  installControllerRbac,
  createProjectNamespace,
  deleteProject,
  fillNamespace,
  getProject,
  namespaceExists,
  pool,
  setQuota,
  type Clients,
  startTestController,
} from '../support/controller-kit.js';
import { reconcileWrites } from '../../src/controller/metrics.js';
import type { Project, ProjectCondition } from '../../src/validate/types.js';
import { cluster, ensureProjectCrd, eventually, kubeConfig, kubectl, uniqueName } from '../support/cluster.js';
import { confirmDeletions, projectsLabelled, removeProjects } from '../support/leftovers.js';
import { LEDGER_FINALIZER } from '../../src/ledger/ledger.js';

const RUN = uniqueName('ctl');
const SELECTOR_LABEL = 'e2e.tenantgate.io/run';
const HOLD = 'e2e.tenantgate.io/hold';

let c: Clients;
let controller: RunningController;
/** The controller's log lines, each with when it was logged. */
const logged: Array<{ message: string; fields?: Record<string, unknown>; at: number }> = [];

const spec = (extra: Partial<Project['spec']> = {}): Project['spec'] => ({
  tenant: 'acme',
  quota: { hard: { 'requests.cpu': '20', pods: '100' } },
  namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', pods: '10' } } },
  ...extra,
});

const condition = (p: Project | undefined, type: string): ProjectCondition | undefined =>
  p?.status?.conditions?.find((x) => x.type === type);

async function newProject(prefix: string, extra: Partial<Project['spec']> = {}): Promise<Project> {
  const name = uniqueName(prefix);
  await createProject(c, name, spec(extra), { [SELECTOR_LABEL]: RUN });
  // The controller adds its finalizer to every live Project.
  return eventually(
    async () => {
      const p = await getProject(c, name);
      if (!p?.metadata.finalizers?.includes('tenantgate.io/cascade-delete')) throw new Error('no finalizer yet');
      return p;
    },
    { what: `finalizer on ${name}` },
  );
}

/**
 * Every version of a Project the API server reports from now on, in order (a watch misses no write).
 * Resolves once the watch is established, so nothing written after the call can be missed.
 */
async function recordHistory(name: string): Promise<{
  versions: Project[];
  stop: () => void;
  waitFor: (
    pred: (p: Project) => boolean,
    what: string,
    options?: { timeoutMs?: number; after?: Project },
  ) => Promise<Project>;
}> {
  const versions: Project[] = [];
  const watch = new k8s.Watch(kubeConfig('admin'));
  const abort = await watch.watch(
    '/apis/tenantgate.io/v1alpha1/projects',
    { fieldSelector: `metadata.name=${name}` },
    (type, obj: Project) => {
      if (type === 'ADDED' || type === 'MODIFIED') versions.push(obj);
    },
    () => {},
  );
  // The first event is the current state (ADDED): from then on the watch is live.
  await eventually(async () => expect(versions.length).toBeGreaterThan(0), {
    what: `watch on ${name} live`,
    intervalMs: 20,
  });
  return {
    versions,
    stop: () => abort.abort(),
    waitFor: (pred, what, { timeoutMs = 60_000, after } = {}) =>
      eventually(
        async () => {
          const start = after ? versions.indexOf(after) + 1 : 0;
          const hit = versions.slice(start).find(pred);
          if (!hit) throw new Error(`${versions.length} versions seen`);
          return hit;
        },
        { what, timeoutMs, intervalMs: 100 },
      ),
  };
}

beforeAll(async () => {
  await ensureProjectCrd();
  c = clients(kubeConfig('admin'));
  // The controller runs as its ServiceAccount with the shipped RBAC (manifests/controller/rbac.yaml).
  const admin = (args: string[]) => kubectl('admin', args);
  await installControllerRbac(admin);
  const info = cluster();
  const controllerKc = new k8s.KubeConfig();
  controllerKc.loadFromFile(
    await controllerKubeconfigFile(admin, info.server, info.caFile, join(info.dir, `controller-${RUN}.kubeconfig`)),
  );
  controller = await startTestController({
    kubeConfig: controllerKc,
    projectSelector: `${SELECTOR_LABEL}=${RUN}`,
    log: (m, fields) => {
      logged.push({ message: m, ...(fields ? { fields } : {}), at: Date.now() });
      if (process.env.TG_DEBUG) process.stderr.write(`[controller] ${m}\n`);
    },
  });
  await eventually(async () => {
    if (!controller.isLeader()) throw new Error('controller not reconciling yet');
  });
});

afterAll(async () => {
  // While the controller runs, so that its finalizer takes their namespaces with the Projects.
  await removeProjects(await projectsLabelled(`${SELECTOR_LABEL}=${RUN}`));
  await controller?.stop();
}, 180_000);

describe('cascading deletion (CR2)', () => {
  it('deletes a Project with 5 namespaces full of objects: Terminating and NamespacesRemaining while they go, then every namespace, then the Project', async () => {
    const project = await newProject('casc');
    const name = project.metadata.name!;
    const namespaces = Array.from({ length: 5 }, (_, i) => `${name}-ns${i}`);
    for (const ns of namespaces) await createProjectNamespace(c, project, ns);
    // Content: 20 ConfigMaps and 10 Secrets each; one ConfigMap in the last namespace holds a finalizer,
    // so the test sees the cascade in progress before letting it finish.
    await pool(namespaces, 5, (ns) => fillNamespace(c, ns, 20, 10, ns === namespaces[4] ? [HOLD] : []));
    const bystander = uniqueName('bystander');
    await c.core.createNamespace({ body: { metadata: { name: bystander } } });

    const history = await recordHistory(name);
    // The namespaces hold what tenants make: a platform admin confirms the deletion (ADR 0096).
    await confirmDeletions([name]);
    await deleteProject(c, name);

    const terminating = await history.waitFor(
      (p) => p.status?.phase === 'Terminating' && condition(p, 'NamespacesRemaining')?.status === 'True',
      'phase Terminating with NamespacesRemaining',
    );
    expect(condition(terminating, 'NamespacesRemaining')?.message).toMatch(
      /^waiting for \d namespaces? to be deleted: /,
    );

    // The first four go; the held one reports the namespace controller's own conditions.
    const held = namespaces[4]!;
    const reported = await history.waitFor(
      (p) =>
        /NamespaceFinalizersRemaining/.test(condition(p, 'NamespacesRemaining')?.message ?? '') &&
        (p.status?.namespaces ?? []).length === 1,
      'NamespacesRemaining naming the held namespace with NamespaceFinalizersRemaining',
    );
    const message = condition(reported, 'NamespacesRemaining')!.message;
    expect(message).toContain(`waiting for 1 namespace to be deleted: ${held} (`);
    expect(message).toContain(HOLD);
    expect(reported.status?.namespaces).toEqual([
      expect.objectContaining({ name: held, health: 'Terminating', phase: 'Terminating' }),
    ]);
    expect(reported.status?.phase).toBe('Terminating');
    for (const ns of namespaces.slice(0, 4)) expect(await namespaceExists(c, ns)).toBe(false);
    expect(await getProject(c, name)).toBeDefined(); // the finalizer holds it

    // Let the last one go: the namespace, then the Project, disappear.
    await c.core.patchNamespacedConfigMap(
      { name: 'cm-0', namespace: held, body: { metadata: { finalizers: null } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    await eventually(
      async () => {
        if (await namespaceExists(c, held)) throw new Error(`${held} still there`);
      },
      { what: `${held} deleted`, timeoutMs: 90_000 },
    );
    await eventually(
      async () => {
        if (await getProject(c, name)) throw new Error('project still there');
      },
      { what: 'project gone' },
    );
    history.stop();
    expect(await namespaceExists(c, bystander)).toBe(true);
  });

  it('never deletes a namespace labelled for the Project with another or no project-uid: it survives and is named in the status', async () => {
    const project = await newProject('foreign');
    const name = project.metadata.name!;
    const owned = `${name}-owned`;
    const otherUid = `${name}-olduid`;
    const noUid = `${name}-nouid`;
    await createProjectNamespace(c, project, owned);
    await createProjectNamespace(c, project, otherUid, { uid: '00000000-0000-0000-0000-000000000000' });
    await createProjectNamespace(c, project, noUid, { uid: null });
    await fillNamespace(c, owned, 2, 0, [HOLD]);

    const history = await recordHistory(name);
    // The namespaces hold what tenants make: a platform admin confirms the deletion (ADR 0096).
    await confirmDeletions([name]);
    await deleteProject(c, name);
    const seen = await history.waitFor(
      (p) =>
        (condition(p, 'NamespacesRemaining')?.message ?? '').includes(noUid) &&
        (p.status?.namespaces ?? []).some((n) => n.name === otherUid),
      'status naming the namespaces left in place',
    );
    const message = condition(seen, 'NamespacesRemaining')!.message;
    expect(message).toContain(`waiting for 1 namespace to be deleted: ${owned}`);
    expect(message).toContain(
      `not deleted: ${noUid} (no tenantgate.io/project-uid annotation); ${otherUid} (tenantgate.io/project-uid is 00000000-0000-0000-0000-000000000000, not ${project.metadata.uid})`,
    );
    expect(seen.status?.namespaces).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: otherUid,
          health: 'LabelMismatch',
          message: expect.stringContaining('not deleted with the project'),
        }),
        expect.objectContaining({
          name: noUid,
          health: 'LabelMismatch',
          message: expect.stringContaining('not deleted with the project'),
        }),
      ]),
    );

    await c.core.patchNamespacedConfigMap(
      { name: 'cm-0', namespace: owned, body: { metadata: { finalizers: null } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    // They do not hold the finalizer: the Project goes once its own namespace is gone.
    await eventually(
      async () => {
        if (await getProject(c, name)) throw new Error('project still there');
      },
      { what: 'project gone', timeoutMs: 90_000 },
    );
    history.stop();
    expect(await namespaceExists(c, owned)).toBe(false);
    expect(await namespaceExists(c, otherUid)).toBe(true);
    expect(await namespaceExists(c, noUid)).toBe(true);
    // They stay without the Project: clean up.
    await c.core.deleteNamespace({ name: otherUid });
    await c.core.deleteNamespace({ name: noUid });
  });

  it("removes the webhook's headroom ledger of a deleted Project with it", async () => {
    const project = await newProject('ledger');
    const name = project.metadata.name!;
    const ledger = `tenantgate-ledger-${name}`;
    // As the webhook writes it: with its finalizer (src/ledger/ledger.ts), which the controller removes first.
    await c.core.createNamespacedConfigMap({
      namespace: 'tenantgate-system',
      body: { metadata: { name: ledger, finalizers: [LEDGER_FINALIZER] }, data: { reservations: '[]' } },
    });
    const other = await c.core.createNamespacedConfigMap({
      namespace: 'tenantgate-system',
      body: { metadata: { name: `tenantgate-ledger-${name}x` }, data: { reservations: '[]' } },
    });
    await deleteProject(c, name);
    await eventually(async () => expect(await getProject(c, name)).toBeUndefined(), { what: 'project gone' });
    await expect(
      c.core.readNamespacedConfigMap({ namespace: 'tenantgate-system', name: ledger }),
    ).rejects.toMatchObject({ code: 404 });
    expect(
      (await c.core.readNamespacedConfigMap({ namespace: 'tenantgate-system', name: other.metadata!.name! })).metadata
        ?.name,
    ).toBe(`tenantgate-ledger-${name}x`);
    await c.core.deleteNamespacedConfigMap({ namespace: 'tenantgate-system', name: other.metadata!.name! });
  });

  it('a re-created Project (same name, new uid) never deletes the namespaces of the one before it', async () => {
    // The old Project is one this controller never manages (no finalizer): it goes without a cascade,
    // as one deleted while no controller ran, or whose finalizer an administrator removed, would.
    const name = uniqueName('again');
    const old = await createProject(c, name, spec());
    const oldUid = old.metadata.uid!;
    const survivor = `${name}-old`;
    await createProjectNamespace(c, old, survivor); // annotated with the old Project's real uid
    await deleteProject(c, name);
    await eventually(async () => expect(await getProject(c, name)).toBeUndefined(), { what: 'old project gone' });
    expect(await namespaceExists(c, survivor)).toBe(true);

    await createProject(c, name, spec(), { [SELECTOR_LABEL]: RUN });
    const reborn = await eventually(
      async () => {
        const p = await getProject(c, name);
        if (!p?.metadata.finalizers?.includes('tenantgate.io/cascade-delete')) throw new Error('no finalizer yet');
        return p;
      },
      { what: 're-created project reconciled' },
    );
    expect(reborn.metadata.uid).not.toBe(oldUid);
    const own = `${name}-new`;
    await createProjectNamespace(c, reborn, own);

    await deleteProject(c, name);
    await eventually(async () => expect(await getProject(c, name)).toBeUndefined(), {
      what: 're-created project gone',
      timeoutMs: 90_000,
    });
    expect(await namespaceExists(c, own)).toBe(false);
    expect(await namespaceExists(c, survivor)).toBe(true);
    const annotation = (await c.core.readNamespace({ name: survivor })).metadata?.annotations?.[
      'tenantgate.io/project-uid'
    ];
    expect(annotation).toBe(oldUid);
    await c.core.deleteNamespace({ name: survivor });
  });
});

describe('status (CR3) and default quotas (CR4)', () => {
  it('reports a healthy project: Active, Ready, allocation and usage, budget use, observedGeneration', async () => {
    const project = await newProject('healthy');
    const name = project.metadata.name!;
    await createProjectNamespace(c, project, `${name}-a`);
    await setQuota(c, `${name}-a`, { 'requests.cpu': '8', pods: '50' });
    await createProjectNamespace(c, project, `${name}-b`); // self-service, no quota: gets the default
    const p = await eventually(
      async () => {
        const got = await getProject(c, name);
        expect(got?.status?.phase).toBe('Active');
        expect(got?.status?.allocated).toEqual({ pods: '60', 'requests.cpu': '10' });
        expect(got?.status?.used).toEqual({ pods: '0', 'requests.cpu': '0' });
        return got!;
      },
      { what: 'healthy status' },
    );
    expect(p.status).toMatchObject({
      observedGeneration: p.metadata.generation,
      headroom: { pods: '40', 'requests.cpu': '10' },
      namespaceCount: 2,
      budgetUse: 'pods 60/100', // the tightest: 60 % of pods, 50 % of cpu
      namespaces: [
        { name: `${name}-a`, health: 'Healthy', phase: 'Active' },
        { name: `${name}-b`, health: 'Healthy', phase: 'Active' },
      ],
    });
    for (const t of ['Ready', 'QuotaWithinBudget', 'NamespacesHealthy']) expect(condition(p, t)?.status).toBe('True');
    const q = await c.core.readNamespacedResourceQuota({ name: 'tenantgate-quota', namespace: `${name}-b` });
    expect(q.spec?.hard).toEqual({ 'requests.cpu': '2', pods: '10' });
    expect(q.metadata?.labels?.['tenantgate.io/project']).toBe(name);
  });

  it('a quota deleted by hand: QuotaMissing and NamespacesHealthy False, then a default quota is created and the namespace is Healthy again', async () => {
    const project = await newProject('qmiss');
    const name = project.metadata.name!;
    const ns = `${name}-api`;
    await createProjectNamespace(c, project, ns);
    await setQuota(c, ns, { 'requests.cpu': '4', pods: '20' });
    await eventually(
      async () => {
        const p = await getProject(c, name);
        expect(p?.status?.namespaces).toEqual([{ name: ns, health: 'Healthy', phase: 'Active' }]);
        expect(p?.status?.allocated).toEqual({ pods: '20', 'requests.cpu': '4' });
      },
      { what: 'healthy first' },
    );

    const history = await recordHistory(name);
    await c.core.deleteNamespacedResourceQuota({ name: 'tenantgate-quota', namespace: ns });
    const missing = await history.waitFor((p) => p.status?.namespaces?.[0]?.health === 'QuotaMissing', 'QuotaMissing');
    expect(missing.status?.namespaces?.[0]?.message).toContain('no unscoped ResourceQuota covers pods, requests.cpu');
    expect(condition(missing, 'NamespacesHealthy')).toMatchObject({ status: 'False', reason: 'QuotaMissing' });
    expect(missing.status?.phase).toBe('Degraded');

    expect(missing.status?.namespaces?.[0]?.message).toContain('a default quota is being created');
    const healed = await history.waitFor(
      (p) => p.status?.namespaces?.[0]?.health === 'Healthy' && p.status?.phase === 'Active',
      'Healthy again',
      { after: missing },
    );
    expect(healed.status?.allocated).toEqual({ pods: '10', 'requests.cpu': '2' });
    expect(condition(healed, 'NamespacesHealthy')?.status).toBe('True');
    expect(history.versions.indexOf(healed)).toBeGreaterThan(history.versions.indexOf(missing));
    history.stop();
    const q = await c.core.readNamespacedResourceQuota({ name: 'tenantgate-quota', namespace: ns });
    expect(q.spec?.hard).toEqual({ 'requests.cpu': '2', pods: '10' });
  });

  it('tells the story in Events: kubectl describe project shows what the controller did', async () => {
    const project = await newProject('story', {
      quota: { hard: { 'requests.cpu': '4', pods: '20' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', pods: '10' } } },
    });
    const name = project.metadata.name!;
    await createProjectNamespace(c, project, `${name}-a`); // self-service: default quota
    await createProjectNamespace(c, project, `${name}-kept`, { uid: '00000000-0000-0000-0000-00000000beef' });
    await eventually(
      async () => c.core.readNamespacedResourceQuota({ name: 'tenantgate-quota', namespace: `${name}-a` }),
      { what: 'default quota' },
    );
    // The reconcile's own log lines carry its project and reconcile id, like its final "reconciled" line.
    // (The quota is visible before that reconcile ends and logs its "reconciled" line: wait for it.)
    await eventually(
      async () => {
        const created = logged.find(
          (l) => l.message === `project ${name}: created ResourceQuota ${name}-a/tenantgate-quota`,
        );
        expect(created?.fields).toMatchObject({ project: name, reconcileId: expect.stringMatching(/^[0-9a-f]{8}$/) });
        expect(
          logged.some((l) => l.message === 'reconciled' && l.fields?.reconcileId === created?.fields?.reconcileId),
        ).toBe(true);
      },
      { what: 'the log lines of the reconcile that created the quota' },
    );
    // Out of band, over the budget (4): the project reports it once.
    await setQuota(c, `${name}-a`, { 'requests.cpu': '9', pods: '10' });
    await eventually(
      async () => expect(condition((await getProject(c, name))!, 'QuotaWithinBudget')?.status).toBe('False'),
      { what: 'over budget reported' },
    );
    await eventually(
      async () => {
        const described = (await kubectl('admin', ['describe', 'project', name])).stdout;
        expect(described).toMatch(/Events:[\s\S]*DefaultQuotaCreated/);
        expect(described).toMatch(/Warning\s+OverBudget/);
      },
      { what: 'kubectl describe project shows the events' },
    );
    // The quota replaced by hand is no longer tenantgate's: a platform admin confirms the deletion (ADR 0096).
    await confirmDeletions([name]);
    await deleteProject(c, name);
    await eventually(async () => expect(await getProject(c, name)).toBeUndefined(), {
      what: 'project gone',
      timeoutMs: 90_000,
    });
    const reasons = async () => {
      const out = (
        await kubectl('admin', [
          'get',
          'events',
          '-n',
          'default',
          '--field-selector',
          `involvedObject.name=${name}`,
          '-o',
          'json',
        ])
      ).stdout;
      return (JSON.parse(out) as { items: Array<{ reason: string; message: string; type: string }> }).items;
    };
    const events = await eventually(
      async () => {
        const got = await reasons();
        for (const r of ['DefaultQuotaCreated', 'OverBudget', 'CascadeStarted', 'NamespacesKept', 'CascadeFinished'])
          expect(got.map((e) => e.reason)).toContain(r);
        return got;
      },
      { what: 'events recorded' },
    );
    expect(events.find((e) => e.reason === 'OverBudget')).toMatchObject({
      type: 'Warning',
      message: expect.stringContaining('requests.cpu'),
    });
    expect(events.find((e) => e.reason === 'NamespacesKept')?.message).toContain(`${name}-kept`);
    // Once per transition, not once per reconcile.
    expect(events.filter((e) => e.reason === 'OverBudget')).toHaveLength(1);
    await c.core.deleteNamespace({ name: `${name}-kept` });
  });

  it('no default quota when the headroom does not allow it: the Project says why; one is created once room is freed', async () => {
    const project = await newProject('qfull', {
      quota: { hard: { 'requests.cpu': '4', pods: '100' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', pods: '10' } } },
    });
    const name = project.metadata.name!;
    await createProjectNamespace(c, project, `${name}-big`);
    await setQuota(c, `${name}-big`, { 'requests.cpu': '3', pods: '10' });
    await eventually(async () => expect((await getProject(c, name))?.status?.allocated?.['requests.cpu']).toBe('3'));
    await createProjectNamespace(c, project, `${name}-small`);
    const blocked = await eventually(
      async () => {
        const p = await getProject(c, name);
        const entry = p?.status?.namespaces?.find((n) => n.name === `${name}-small`);
        expect(entry?.health).toBe('QuotaMissing');
        return p!;
      },
      { what: 'QuotaMissing for the namespace that does not fit' },
    );
    expect(condition(blocked, 'NamespacesHealthy')?.message).toContain(`${name}-small: QuotaMissing`);
    expect(condition(blocked, 'NamespacesHealthy')?.message).toContain(
      'quota tenantgate-quota does not fit the project budget: requests.cpu 2 asked, 1 of 4 left',
    );
    expect(await c.core.listNamespacedResourceQuota({ namespace: `${name}-small` }).then((l) => l.items.length)).toBe(
      0,
    );

    // Free room: the default quota appears and the project is healthy.
    await setQuota(c, `${name}-big`, { 'requests.cpu': '2', pods: '10' });
    await eventually(
      async () => {
        const p = await getProject(c, name);
        expect(p?.status?.phase).toBe('Active');
        expect(p?.status?.allocated?.['requests.cpu']).toBe('4');
      },
      { what: 'default quota created once the room is there' },
    );
    const q = await c.core.readNamespacedResourceQuota({ name: 'tenantgate-quota', namespace: `${name}-small` });
    expect(q.spec?.hard).toEqual({ 'requests.cpu': '2', pods: '10' });
  });

  it('a quota raised out of band beyond the budget: QuotaWithinBudget False with the numbers', async () => {
    const project = await newProject('overb', { quota: { hard: { 'requests.cpu': '10', pods: '100' } } });
    const name = project.metadata.name!;
    await createProjectNamespace(c, project, `${name}-a`);
    await createProjectNamespace(c, project, `${name}-b`);
    await setQuota(c, `${name}-a`, { 'requests.cpu': '6', pods: '10' });
    await setQuota(c, `${name}-b`, { 'requests.cpu': '4', pods: '10' });
    await eventually(async () => {
      const p = await getProject(c, name);
      expect(condition(p, 'QuotaWithinBudget')?.status).toBe('True');
      expect(p?.status?.allocated?.['requests.cpu']).toBe('10');
    });

    await c.core.patchNamespacedResourceQuota(
      { name: 'tenantgate-quota', namespace: `${name}-a`, body: { spec: { hard: { 'requests.cpu': '12' } } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    const p = await eventually(
      async () => {
        const got = await getProject(c, name);
        expect(condition(got, 'QuotaWithinBudget')?.status).toBe('False');
        return got!;
      },
      { what: 'QuotaWithinBudget False' },
    );
    expect(condition(p, 'QuotaWithinBudget')).toMatchObject({
      reason: 'OverBudget',
      message: `requests.cpu: 16 allocated, budget 10 (${name}-a 12, ${name}-b 4)`,
    });
    expect(p.status?.headroom?.['requests.cpu']).toBe('-6');
    expect(p.status?.budgetUse).toBe('requests.cpu 16/10');
    expect(p.status?.phase).toBe('Degraded');
    expect(condition(p, 'Ready')).toMatchObject({ status: 'False', reason: 'OverBudget' });
  });

  it('counts its writes: a reconcile that changes nothing writes nothing', async () => {
    const project = await newProject('quiet');
    await createProjectNamespace(c, project, `${project.metadata.name}-a`);
    await eventually(async () =>
      expect((await getProject(c, project.metadata.name!))?.status?.namespaces?.[0]?.health).toBe('Healthy'),
    );
    await new Promise((r) => setTimeout(r, 1000));
    const before = reconcileWrites(await controller.metrics.writes());
    const touchedAt = Date.now();
    // Touch the project without changing anything the status depends on.
    await c.custom.patchClusterCustomObject(
      {
        group: 'tenantgate.io',
        version: 'v1alpha1',
        plural: 'projects',
        name: project.metadata.name!,
        body: { metadata: { annotations: { touched: 'yes' } } },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    // A reconcile of this project (not just any) that started after the touch; its writes are counted before it logs.
    const touchedReconcile = (l: (typeof logged)[number]) =>
      l.message === 'reconciled' &&
      l.fields?.project === project.metadata.name &&
      l.fields?.result === 'done' &&
      l.at - Number(l.fields?.ms) >= touchedAt;
    await eventually(async () =>
      expect(
        logged.some(touchedReconcile),
        `a reconcile of ${project.metadata.name} that started after the touch`,
      ).toBe(true),
    );
    expect(reconcileWrites(await controller.metrics.writes())).toBe(before);
  });
});
