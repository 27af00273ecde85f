/**
 * The real Argo CD in the loop: Applications render git through our config-management plugin
 * (manifests/argocd/plugin.yaml, `tenantgate render`), sync into the shared control plane with the
 * tenantgate webhook and controller running, and report Project health from our Lua health check.
 * Git is a local repository read through file://; syncs are started through the Application's
 * `operation`, as Argo CD's own e2e suite does.
 */
import * as k8s from '@kubernetes/client-node';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { renderDirectory } from '../../src/cli/render.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { type RunningController } from '../../src/controller/start.js';
import type { AdmissionDecision } from '../../src/webhook/server.js';
import { ARGOCD_NAMESPACE, PLATFORM_SYNC_USER, startArgoCd, type RunningArgoCd } from '../support/argocd.js';
import {
  annotateApplication,
  comparisonError,
  createApplication,
  deleteApplication,
  getApplication,
  refreshHard,
  resourceOf,
  startSync,
  waitForApp,
  waitForCompared,
  waitForOperation,
  waitForReconcileAfter,
  type Application,
} from '../support/argocd-app.js';
import { cluster, eventually, kubeConfig, kubectl, uniqueName } from '../support/cluster.js';
import {
  EXAMPLE_NETWORK,
  installBase,
  serviceAccountKubeConfig,
  startLocalWebhook,
  type LocalWebhook,
} from '../support/devcluster/tenantgate.js';
import { LocalGitRepo } from '../support/git-repo.js';
import { REPO_ROOT } from '../support/paths.js';
import { startTestController } from '../support/controller-kit.js';
import { confirmDeletions, resumeDeletions } from '../support/leftovers.js';

const RUN = uniqueName('acd');
let argo: RunningArgoCd;
let hook: LocalWebhook;
let controller: RunningController;
let repo: LocalGitRepo;
const decisions: AdmissionDecision[] = [];
const applications: string[] = [];
const projects = new Set<string>();

interface ProjectShape {
  budgetCpu: string;
  defaultCpu: string;
  namespaces: Array<{ name: string; cpu?: string }>;
}

/** A Project declaration owned by alice, budgeting requests.cpu only. */
function projectYaml(name: string, p: ProjectShape): string {
  return stringify({
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name },
    spec: {
      tenant: 'acme',
      owners: [{ kind: 'User', name: 'alice' }],
      quota: { hard: { 'requests.cpu': p.budgetCpu } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': p.defaultCpu } } },
      namespaces: p.namespaces.map((ns) =>
        ns.cpu ? { name: ns.name, quota: { hard: { 'requests.cpu': ns.cpu } } } : { name: ns.name },
      ),
    },
  });
}

async function newApplication(
  prefix: string,
  path: string,
  extra: { pluginName?: false; compareOptions?: string; env?: Record<string, string>; project?: string } = {},
): Promise<string> {
  const name = uniqueName(prefix);
  applications.push(name);
  await createApplication({ name, repoURL: repo.url, path, ...extra });
  return name;
}

async function syncAndWait(app: string, revision: string, options: { prune?: boolean } = {}) {
  await refreshHard(app);
  await waitForCompared(app, revision);
  await startSync(app, revision, options);
  return waitForOperation(app, revision);
}

const get = async (args: string[]) => {
  const r = await kubectl('admin', ['get', ...args, '-o', 'json'], { reject: false });
  return r.exitCode === 0
    ? (JSON.parse(r.stdout) as {
        metadata: { resourceVersion: string; name: string; deletionTimestamp?: string };
        spec?: { hard?: Record<string, string> };
        status?: { conditions?: Array<{ type: string; status?: string; reason?: string; message?: string }> };
      })
    : undefined;
};

async function waitGone(args: string[], timeoutMs = 180_000): Promise<void> {
  await eventually(
    async () => {
      if (await get(args)) throw new Error(`${args.join(' ')} still there`);
    },
    { timeoutMs, intervalMs: 500, what: `${args.join(' ')} gone` },
  );
}

/** Deletes Projects (the controller cascades to their namespaces) and waits until they are gone. */
async function deleteProjects(names: string[]): Promise<void> {
  if (names.length === 0) return;
  // What the synced namespaces hold goes too: confirmed as a platform admin would (ADR 0096).
  await confirmDeletions(names);
  await kubectl('admin', ['delete', 'project', ...names, '--ignore-not-found', '--wait=false']);
  await eventually(
    async () => {
      // As many Projects at once trip the deletion breaker (D2): resumed, as an operator would.
      await resumeDeletions();
      for (const name of names) if (await get(['project', name])) throw new Error(`project ${name} still there`);
    },
    { timeoutMs: 180_000, intervalMs: 500, what: 'the Projects gone' },
  );
}

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  // Argo CD runs unprivileged: its application controller under its own ServiceAccount, every sync
  // impersonating the identity its AppProject names. The platform's AppProject syncs as
  // PLATFORM_SYNC_USER, which tenantgate lists as privileged (ADR 0007): it may write Projects; quotas are
  // still checked against the budget (Q1) for everybody.
  hook = await startLocalWebhook(
    info,
    {
      privileged: {
        users: [...DEFAULT_CONFIG.privileged.users, PLATFORM_SYNC_USER],
        groups: DEFAULT_CONFIG.privileged.groups,
      },
    },
    { onDecision: (d) => decisions.push(d) },
  );
  // The cluster's configuration shares the examples' network baseline with their render: the controller
  // sets the isolation policy back to what it computes, so with another baseline it and Argo CD would
  // write two different policies, and the Application would never be Synced (docs/network.md).
  controller = await startTestController({
    kubeConfig: await serviceAccountKubeConfig(info, DEFAULT_CONFIG.systemNamespace, 'tenantgate-controller'),
    config: { ...DEFAULT_CONFIG, resyncPeriodSeconds: 30, network: EXAMPLE_NETWORK },
  });
  argo = await startArgoCd(info, {
    unprivileged: true,
    dir: join(info.dir, `argocd-${RUN}`),
    log: (m) => process.env.TG_DEBUG && process.stderr.write(`[argocd] ${m}\n`),
  });
  repo = await LocalGitRepo.init(join(info.dir, `git-${RUN}`));
  await repo.commit('empty start');
}, 300_000);

afterAll(async () => {
  for (const app of applications) await deleteApplication(app).catch(() => {});
  await deleteProjects([...projects]).catch(() => {});
  await argo?.stop();
  await controller?.stop();
  await hook?.stop();
}, 300_000);

describe('the tenantgate plugin in the real Argo CD', () => {
  it('is discovered for an Application that names no plugin (discover: sh, grep, xargs, head)', async () => {
    const project = uniqueName('disc');
    const sha = await repo.commit('discovery', {
      'discovery/team.yaml': projectYaml(project, {
        budgetCpu: '4',
        defaultCpu: '1',
        namespaces: [{ name: `${project}-a` }],
      }),
    });
    const app = await newApplication('disc', 'discovery', { pluginName: false });
    const compared = await waitForCompared(app, sha);
    expect(comparisonError(compared)).toBeUndefined();
    expect(compared.status?.sync?.status).toBe('OutOfSync');
    expect(resourceOf(compared, 'Project', project)).toMatchObject({ group: 'tenantgate.io', status: 'OutOfSync' });
    expect(resourceOf(compared, 'ResourceQuota', 'tenantgate-quota', `${project}-a`)).toBeDefined();
    expect((compared.status as { sourceType?: string }).sourceType).toBe('Plugin');
  });

  it('syncs examples/gitops for CLUSTER=prod-eu in sync-wave order; Project health comes from our Lua check', async () => {
    const rendered = await renderDirectory(join(REPO_ROOT, 'examples', 'gitops'), { ARGOCD_ENV_CLUSTER: 'prod-eu' });
    expect(rendered.errors).toEqual([]);
    const objects = parseAllDocuments(rendered.output!).map(
      (d) => d.toJS() as { kind: string; metadata: { name: string; namespace?: string } },
    );
    const exampleProjects = objects.filter((o) => o.kind === 'Project').map((o) => o.metadata.name);
    const exampleNamespaces = objects.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name);
    // The examples have fixed names: clear what other test files may have left behind.
    await deleteProjects(exampleProjects);
    if (exampleNamespaces.length)
      await kubectl('admin', [
        'delete',
        'namespace',
        ...exampleNamespaces,
        '--ignore-not-found',
        '--wait=true',
        '--timeout=120s',
      ]);
    exampleProjects.forEach((p) => projects.add(p));

    // The revision at which Argo CD first wrote each object (its tracking annotation appears), from watches
    // opened before the sync. Not the creation: the controller may create a namespace's default quota first.
    const created = new Map<string, number>();
    const watch = new k8s.Watch(kubeConfig('admin'));
    const aborts = await Promise.all(
      [
        ['/apis/tenantgate.io/v1alpha1/projects', 'Project'],
        ['/api/v1/namespaces', 'Namespace'],
        ['/api/v1/resourcequotas', 'ResourceQuota'],
      ].map(([path, kind]) =>
        watch.watch(
          path!,
          {},
          (type, obj: k8s.KubernetesObject) => {
            const key = `${kind}/${obj.metadata?.namespace ?? ''}/${obj.metadata?.name}`;
            const applied = obj.metadata?.annotations?.['argocd.argoproj.io/tracking-id'] !== undefined;
            if ((type === 'ADDED' || type === 'MODIFIED') && applied && !created.has(key))
              created.set(key, Number(obj.metadata?.resourceVersion));
          },
          () => {},
        ),
      ),
    );
    try {
      await repo.copyIn(join(REPO_ROOT, 'examples', 'gitops'), 'gitops');
      const sha = await repo.commit('examples/gitops');
      const app = await newApplication('examples', 'gitops', { env: { CLUSTER: 'prod-eu' } });
      const op = await syncAndWait(app, sha);
      expect(op.phase, op.message).toBe('Succeeded');

      const synced = await waitForApp(app, 'Synced and Healthy', (a) =>
        a.status?.sync?.status === 'Synced' && a.status?.health?.status === 'Healthy' ? a : undefined,
      );
      for (const o of objects) {
        const args = o.metadata.namespace
          ? ['-n', o.metadata.namespace, o.kind, o.metadata.name]
          : [o.kind, o.metadata.name];
        expect(await get(args), `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name} exists`).toBeDefined();
        expect(
          resourceOf(synced, o.kind, o.metadata.name, o.metadata.namespace),
          `${o.kind} ${o.metadata.name} in the Application`,
        ).toMatchObject({ status: 'Synced' });
      }

      // Waves: Projects (-2), then Namespaces (-1), then quotas (0).
      await eventually(async () =>
        expect(created.size).toBeGreaterThanOrEqual(
          objects.filter((o) => ['Project', 'Namespace', 'ResourceQuota'].includes(o.kind)).length,
        ),
      );
      const revisions = (kind: string) =>
        objects
          .filter((o) => o.kind === kind)
          .map((o) => created.get(`${kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`)!);
      const [p, n, q] = [revisions('Project'), revisions('Namespace'), revisions('ResourceQuota')];
      for (const list of [p, n, q]) expect(list.every((r) => Number.isFinite(r))).toBe(true);
      const order = [...created]
        .sort(([, a], [, b]) => a - b)
        .map(([k, v]) => `${v} ${k}`)
        .join('\n');
      expect(Math.max(...p), order).toBeLessThan(Math.min(...n));
      expect(Math.max(...n), order).toBeLessThan(Math.min(...q));

      // Healthy with the message of the controller's Ready condition: our Lua check, run by Argo CD.
      for (const name of exampleProjects) {
        const live = await get(['project', name]);
        const ready = live?.status?.conditions?.find((c) => c.type === 'Ready');
        expect(ready, `${name}'s Ready condition`).toMatchObject({
          status: 'True',
          reason: 'Ready',
          message: 'the project is ready',
        });
        expect(resourceOf(synced, 'Project', name)?.health).toEqual({
          status: 'Healthy',
          message: 'the project is ready',
        });
      }
    } finally {
      aborts.forEach((a) => a.abort());
    }
  });
});

describe('Argo CD unprivileged: each AppProject syncs as its own identity', () => {
  it("a tenant's AppProject that tries to sync a Project is refused by the webhook with [T5], even where RBAC would let it", async () => {
    const tenant = 'tenant-acme-deployer';
    // A tenant's sync identity that RBAC lets write Projects by mistake: the webhook is the layer that holds.
    await kubectl('admin', ['apply', '-f', '-'], {
      input: [
        { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: tenant, namespace: ARGOCD_NAMESPACE } },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRole',
          metadata: { name: `e2e-${tenant}` },
          rules: [
            {
              apiGroups: ['tenantgate.io'],
              resources: ['projects'],
              verbs: ['get', 'list', 'watch', 'create', 'update', 'patch'],
            },
            { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch', 'create'] },
          ],
        },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRoleBinding',
          metadata: { name: `e2e-${tenant}` },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `e2e-${tenant}` },
          subjects: [{ kind: 'ServiceAccount', name: tenant, namespace: ARGOCD_NAMESPACE }],
        },
        {
          apiVersion: 'argoproj.io/v1alpha1',
          kind: 'AppProject',
          metadata: { name: 'tenant-acme', namespace: ARGOCD_NAMESPACE },
          spec: {
            sourceRepos: ['*'],
            destinations: [{ server: '*', namespace: '*' }],
            clusterResourceWhitelist: [{ group: '*', kind: '*' }],
            destinationServiceAccounts: [
              { server: '*', namespace: '*', defaultServiceAccount: `${ARGOCD_NAMESPACE}:${tenant}` },
            ],
          },
        },
      ]
        .map((o) => JSON.stringify(o))
        .join('\n'),
    });
    const project = uniqueName('forged');
    projects.add(project);
    const sha = await repo.commit('tenant: a forged Project', {
      'tenant/projects.yaml': projectYaml(project, { budgetCpu: '100', defaultCpu: '1', namespaces: [] }),
    });
    const app = await newApplication('tenant', 'tenant', { project: 'tenant-acme' });
    const op = await syncAndWait(app, sha);
    expect(op.phase, op.message).toBe('Failed');
    const said = `${op.message ?? ''} ${JSON.stringify(op.syncResult?.resources ?? [])}`;
    expect(said).toContain('[T5]');
    expect(said).toContain(`system:serviceaccount:argocd:${tenant}`);
    expect(said).toContain(`may not create Project ${project}`);
    expect((await kubectl('admin', ['get', 'project', project, '--ignore-not-found', '-o', 'name'])).stdout).toBe('');
    await deleteApplication(app);
  });
});

describe('a large project through Argo CD', () => {
  it('one sync creates a project with 100 namespaces and their quotas: Succeeded, no [Q5] from the headroom ledger, every quota as declared', async () => {
    const project = uniqueName('big');
    projects.add(project);
    const namespaces = Array.from({ length: 100 }, (_, i) => ({
      name: `${project}-${String(i).padStart(3, '0')}`,
      cpu: '100m',
    }));
    const sha = await repo.commit('big: 100 namespaces', {
      'big/projects.yaml': projectYaml(project, { budgetCpu: '12', defaultCpu: '100m', namespaces }),
    });
    const app = await newApplication('big', 'big');
    const from = decisions.length;
    const started = Date.now();
    const op = await syncAndWait(app, sha);
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    const ours = decisions
      .slice(from)
      .filter(
        (d) => d.path === 'validate' && !d.dryRun && (d.namespace?.startsWith(project) || d.name?.startsWith(project)),
      );
    const q5 = ours.filter((d) => d.rules.includes('Q5'));
    process.stderr.write(
      `[argocd] 100-namespace sync: ${op.phase} in ${seconds} s, ${ours.length} webhook decisions, ${q5.length} Q5\n`,
    );
    expect(op.phase, op.message).toBe('Succeeded');
    expect(JSON.stringify(op)).not.toContain('[Q5]');
    expect(q5).toEqual([]);
    const quotas = JSON.parse(
      (await kubectl('admin', ['get', 'resourcequotas', '-A', '-l', `tenantgate.io/project=${project}`, '-o', 'json']))
        .stdout,
    ) as { items: Array<{ metadata: { namespace: string }; spec: { hard: Record<string, string> } }> };
    expect(quotas.items.map((q) => q.metadata.namespace).sort()).toEqual(namespaces.map((n) => n.name));
    expect(new Set(quotas.items.map((q) => q.spec.hard['requests.cpu']))).toEqual(new Set(['100m']));
    await deleteApplication(app);
    await deleteProjects([project]);
  }, 600_000);
});

describe('rules and budgets through Argo CD', () => {
  it('a commit that breaks a rule: ComparisonError with the rule id and file:line:col, and nothing in the cluster changes', async () => {
    const project = uniqueName('rule');
    projects.add(project);
    const [a, b] = [`${project}-a`, `${project}-b`];
    const good = await repo.commit('rules: good', {
      'rules/projects.yaml': projectYaml(project, {
        budgetCpu: '6',
        defaultCpu: '1',
        namespaces: [{ name: a, cpu: '2' }, { name: b }],
      }),
    });
    const app = await newApplication('rule', 'rules');
    expect((await syncAndWait(app, good)).phase).toBe('Succeeded');
    const before = {
      project: await get(['project', project]),
      a: await get(['namespace', a]),
      b: await get(['namespace', b]),
      quota: await get(['-n', a, 'resourcequota', 'tenantgate-quota']),
    };

    // Drops namespace b (a partial sync with prune would delete it) and asks for more than the budget.
    const bad = await repo.commit('rules: over budget', {
      'rules/projects.yaml': projectYaml(project, {
        budgetCpu: '6',
        defaultCpu: '1',
        namespaces: [{ name: a, cpu: '9' }],
      }),
    });
    await refreshHard(app);
    const failed = await waitForApp(app, 'ComparisonError', (x) => comparisonError(x));
    expect(failed).toMatch(/\[Q1\]/);
    expect(failed).toMatch(/projects\.yaml:\d+:\d+/);

    // Even an explicit sync with prune changes nothing.
    await startSync(app, bad, { prune: true });
    const op = await waitForOperation(app, bad);
    // The render fails (the plugin runs the same rules), so the operation errors before applying anything.
    expect(op.phase).toBe('Error');
    expect(op.message).toMatch(
      new RegExp(
        `ComparisonError: .*projects\\.yaml:\\d+:\\d+: \\[Q1\\] project ${project}: namespaces allocate requests\\.cpu 9 but the budget is 6`,
      ),
    );
    const after = {
      project: await get(['project', project]),
      a: await get(['namespace', a]),
      b: await get(['namespace', b]),
      quota: await get(['-n', a, 'resourcequota', 'tenantgate-quota']),
    };
    expect(after.b?.metadata.deletionTimestamp).toBeUndefined();
    expect(after.b?.metadata.resourceVersion).toBe(before.b?.metadata.resourceVersion);
    expect(after.a?.metadata.resourceVersion).toBe(before.a?.metadata.resourceVersion);
    expect(after.quota?.metadata.resourceVersion).toBe(before.quota?.metadata.resourceVersion);
    expect(after.quota?.spec?.hard?.['requests.cpu']).toBe('2');
    expect((after.project as { metadata: { generation?: number } }).metadata.generation).toBe(
      (before.project as { metadata: { generation?: number } }).metadata.generation,
    );
  });

  it('a commit that fits offline but not on the live cluster (a self-service namespace meanwhile): the webhook denies the sync [Q1], the next good commit syncs', async () => {
    const project = uniqueName('live');
    projects.add(project);
    const [a, self] = [`${project}-a`, `${project}-self`];
    const first = await repo.commit('live: start', {
      'live/projects.yaml': projectYaml(project, {
        budgetCpu: '10',
        defaultCpu: '4',
        namespaces: [{ name: a, cpu: '4' }],
      }),
    });
    const app = await newApplication('live', 'live');
    expect((await syncAndWait(app, first)).phase).toBe('Succeeded');

    // alice grows the project by a self-service namespace: the controller gives it the default quota (4).
    await kubectl('alice', ['create', 'namespace', self]);
    await eventually(
      async () =>
        expect((await get(['-n', self, 'resourcequota', 'tenantgate-quota']))?.spec?.hard?.['requests.cpu']).toBe('4'),
      { what: `default quota in ${self}` },
    );

    // 8 + 4 > 10 on the cluster, while git alone (8 <= 10) renders fine.
    const grow = await repo.commit('live: grow a to 8', {
      'live/projects.yaml': projectYaml(project, {
        budgetCpu: '10',
        defaultCpu: '4',
        namespaces: [{ name: a, cpu: '8' }],
      }),
    });
    const op = await syncAndWait(app, grow);
    expect(op.phase).toBe('Failed');
    const quotaResult = op.syncResult?.resources?.find((r) => r.kind === 'ResourceQuota' && r.namespace === a);
    expect(quotaResult?.status).toBe('SyncFailed');
    expect(quotaResult?.message).toMatch(/denied the request: .*\[Q1\]/s);
    expect(op.message).toMatch(/denied the request: .*\[Q1\]/s);
    const shown = await getApplication(app);
    expect(comparisonError(shown)).toBeUndefined();
    expect((await get(['-n', a, 'resourcequota', 'tenantgate-quota']))?.spec?.hard?.['requests.cpu']).toBe('4');

    // Nothing half-applied stands in the way: 6 + 4 fits, and syncs.
    const fit = await repo.commit('live: grow a to 6', {
      'live/projects.yaml': projectYaml(project, {
        budgetCpu: '10',
        defaultCpu: '4',
        namespaces: [{ name: a, cpu: '6' }],
      }),
    });
    const ok = await syncAndWait(app, fit);
    expect(ok.phase, ok.message).toBe('Succeeded');
    expect((await get(['-n', a, 'resourcequota', 'tenantgate-quota']))?.spec?.hard?.['requests.cpu']).toBe('6');
    await waitForApp(app, 'Synced', (x: Application) => x.status?.sync?.status === 'Synced');
  });

  it('ServerSideDiff=true: Argo CD dry-runs through the webhook, and dry runs reserve nothing (ledger unchanged) until the real sync', async () => {
    const project = uniqueName('ssd');
    projects.add(project);
    const a = `${project}-a`;
    const ledger = ['-n', DEFAULT_CONFIG.systemNamespace, 'configmap', `tenantgate-ledger-${project}`];
    const first = await repo.commit('ssd: start', {
      'ssd/projects.yaml': projectYaml(project, {
        budgetCpu: '10',
        defaultCpu: '1',
        namespaces: [{ name: a, cpu: '4' }],
      }),
    });
    const app = await newApplication('ssd', 'ssd', { compareOptions: 'ServerSideDiff=true' });
    expect((await syncAndWait(app, first)).phase).toBe('Succeeded');
    const ledgerBefore = (await get(ledger))?.metadata.resourceVersion;
    expect(ledgerBefore, 'the first sync created a quota, a reservation in the ledger').toBeDefined();

    const seen = decisions.length;
    const grow = await repo.commit('ssd: grow a to 6', {
      'ssd/projects.yaml': projectYaml(project, {
        budgetCpu: '10',
        defaultCpu: '1',
        namespaces: [{ name: a, cpu: '6' }],
      }),
    });
    await refreshHard(app);
    const compared = await waitForApp(app, `OutOfSync at ${grow.slice(0, 8)}`, (x) =>
      x.status?.sync?.revision === grow && x.status.sync.status === 'OutOfSync' ? x : undefined,
    );
    expect(comparisonError(compared)).toBeUndefined();
    expect(resourceOf(compared, 'ResourceQuota', 'tenantgate-quota', a)?.status).toBe('OutOfSync');
    await waitForReconcileAfter(app, Date.now());
    const dryRuns = decisions.slice(seen).filter((d) => d.kind === 'ResourceQuota' && d.namespace === a && d.dryRun);
    expect(dryRuns.length, 'server-side diff sent dry-run requests for the quota through the webhook').toBeGreaterThan(
      0,
    );
    // Server-side diff runs under the AppProject's sync identity too (impersonation), not the controller's.
    expect(dryRuns.map((d) => d.user)).toEqual(dryRuns.map(() => PLATFORM_SYNC_USER));
    expect(dryRuns.filter((d) => d.verdict === 'denied')).toEqual([]);
    expect((await get(ledger))?.metadata.resourceVersion).toBe(ledgerBefore);
    expect((await get(['-n', a, 'resourcequota', 'tenantgate-quota']))?.spec?.hard?.['requests.cpu']).toBe('4');

    // The real sync reserves: the ledger moves.
    await startSync(app, grow);
    expect((await waitForOperation(app, grow)).phase).toBe('Succeeded');
    expect((await get(ledger))?.metadata.resourceVersion).not.toBe(ledgerBefore);
  });
});

describe('prune', () => {
  it('removing a Project from git with prune: Argo CD asks first (Prune=confirm), the controller deletes nothing that holds data until a platform admin confirms, health is Progressing with the remaining namespaces, then it is gone', async () => {
    const [keep, gone] = [uniqueName('keep'), uniqueName('gone')];
    projects.add(keep).add(gone);
    const [declared, self] = [`${gone}-a`, `${gone}-self`];
    const both = await repo.commit('prune: two projects', {
      'prune/keep.yaml': projectYaml(keep, { budgetCpu: '2', defaultCpu: '1', namespaces: [{ name: `${keep}-a` }] }),
      'prune/gone.yaml': projectYaml(gone, { budgetCpu: '4', defaultCpu: '1', namespaces: [{ name: declared }] }),
    });
    const app = await newApplication('prune', 'prune');
    expect((await syncAndWait(app, both)).phase).toBe('Succeeded');
    // Argo CD prunes the namespaces it synced itself (reverse wave order, before the Project); the
    // controller's cascade deletes the rest: alice's self-service namespace, held by a ConfigMap with a
    // finalizer so the cascade can be watched.
    await kubectl('alice', ['create', 'namespace', self]);
    const hold = 'e2e.tenantgate.io/hold';
    await kubectl('admin', ['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'held', namespace: self, finalizers: [hold] },
      }),
    });
    await waitForApp(app, 'Healthy', (x) => x.status?.health?.status === 'Healthy');

    const removed = await repo.commit('prune: remove a project', { 'prune/gone.yaml': null });
    await refreshHard(app);
    await waitForCompared(app, removed);
    await startSync(app, removed, { prune: true });
    // render marks Projects Prune=confirm (D4): Argo CD prunes the declared namespace but not the Project
    // until the Application carries a deletion approval newer than the operation.
    await waitForApp(app, `the prune of ${gone} waiting for its confirmation`, (x) =>
      /confirm/i.test(x.status?.operationState?.message ?? '') ? x : undefined,
    );
    expect((await get(['project', gone]))?.metadata.deletionTimestamp).toBeUndefined();
    await annotateApplication(
      app,
      `argocd.argoproj.io/deletion-approved=${new Date().toISOString().replace(/\.\d{3}Z$/, 'Z')}`,
    );
    // Pruned now; the self-service namespace holds what a tenant made (a ConfigMap): nothing of it goes
    // until a platform admin confirms (ADR 0096).
    const waiting = await eventually(
      async () => {
        const p = await get(['project', gone]);
        const c = p?.status?.conditions?.find((x: { type: string }) => x.type === 'DeletionConfirmed');
        if (c?.status !== 'False') throw new Error(`DeletionConfirmed ${JSON.stringify(c)}`);
        return c as { message: string };
      },
      { what: `${gone} waiting for a confirmation`, timeoutMs: 120_000 },
    );
    expect(waiting.message).toContain(`${self}: 1 ConfigMap`);
    expect((await get(['namespace', self]))?.metadata.deletionTimestamp).toBeUndefined();
    // Argo CD shows why: the Project is Suspended with the condition's message (health-project.lua).
    await waitForApp(app, `${gone} Suspended, waiting for a confirmation`, (x) => {
      const health = resourceOf(x, 'Project', gone)?.health;
      return health?.status === 'Suspended' && health.message?.includes(`${self}: 1 ConfigMap`) ? x : undefined;
    });
    await confirmDeletions([gone]);
    const progressing = await waitForApp(app, `${gone} Progressing with ${self} remaining`, (x) => {
      const health = resourceOf(x, 'Project', gone)?.health;
      return health?.status === 'Progressing' && health.message?.includes(self) ? x : undefined;
    });
    expect(progressing.status?.health?.status).toBe('Progressing');
    expect(resourceOf(progressing, 'Project', gone)?.health?.message).toMatch(
      /^waiting for 1 namespace to be deleted: /,
    );
    expect((await get(['project', gone]))?.metadata.deletionTimestamp).toBeDefined();
    expect(await get(['namespace', declared])).toBeUndefined();

    await kubectl('admin', [
      '-n',
      self,
      'patch',
      'configmap',
      'held',
      '--type=json',
      '-p',
      '[{"op":"remove","path":"/metadata/finalizers"}]',
    ]);
    await waitGone(['project', gone]);
    expect(await get(['namespace', self])).toBeUndefined();
    expect((await waitForOperation(app, removed)).phase).toBe('Succeeded');
    const after = await waitForApp(app, 'Synced and Healthy without the pruned Project', (x) =>
      x.status?.sync?.status === 'Synced' && x.status.health?.status === 'Healthy' && !resourceOf(x, 'Project', gone)
        ? x
        : undefined,
    );
    expect(resourceOf(after, 'Project', keep)?.health?.status).toBe('Healthy');
  });
});
