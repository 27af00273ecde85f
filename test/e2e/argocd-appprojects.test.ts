/**
 * The tenants' AppProjects of `tenantgate render --app-projects` in the real Argo CD. The platform's
 * Application renders examples/gitops through our plugin with APP_PROJECTS=true and syncs the Projects,
 * Namespaces and one AppProject per tenant. Then Applications of tenant acme, in its AppProject
 * `tenant-acme`, sync plain manifests from the tenant's own repository: Argo CD itself must refuse a
 * Namespace, a Project, a ResourceQuota in acme's own namespace and objects in another tenant's
 * namespace, and let a ConfigMap into acme's namespace.
 *
 * No tenantgate webhook runs and Argo CD's application controller runs as the cluster admin, so the
 * AppProject is the only thing between a tenant's Application and the cluster: whatever it lets
 * through would be created. The tenantgate controller runs only so the Projects become Healthy and the
 * platform's sync can pass its waves.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { renderDirectory } from '../../src/cli/render.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { type RunningController } from '../../src/controller/start.js';
import { applicationObject, ARGOCD_NAMESPACE, startArgoCd, type RunningArgoCd } from '../support/argocd.js';
import {
  deleteApplication,
  refreshHard,
  startSync,
  waitForApp,
  waitForCompared,
  waitForOperation,
} from '../support/argocd-app.js';
import { cluster, eventually, kubectl, uniqueName } from '../support/cluster.js';
import { installBase, serviceAccountKubeConfig } from '../support/devcluster/tenantgate.js';
import { LocalGitRepo } from '../support/git-repo.js';
import { REPO_ROOT } from '../support/paths.js';
import { startTestController } from '../support/controller-kit.js';
import { confirmDeletions, resumeDeletions } from '../support/leftovers.js';

const RUN = uniqueName('acdp');
const GITOPS = join(REPO_ROOT, 'examples', 'gitops');
const IN_CLUSTER = 'https://kubernetes.default.svc';
let argo: RunningArgoCd;
let controller: RunningController;
let platformRepo: LocalGitRepo;
/** Tenant acme's own repository, at <base>/acme: argocd.sourceRepos is `file://<base>/{tenant}`. */
let acmeRepo: LocalGitRepo;
let rendered: Array<{ kind: string; metadata: { name: string; namespace?: string }; spec?: Record<string, unknown> }>;
const applications: string[] = [];

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [k: string]: unknown;
}

const exists = async (kind: string, name: string, namespace?: string): Promise<boolean> => {
  const r = await kubectl('admin', [
    'get',
    kind,
    name,
    ...(namespace ? ['-n', namespace] : []),
    '-o',
    'name',
    '--ignore-not-found',
  ]);
  return r.stdout.trim() !== '';
};

/** Removes examples/gitops' Projects and namespaces (fixed names: other test files use them too). */
async function clearExamples(): Promise<void> {
  const projects = rendered.filter((o) => o.kind === 'Project').map((o) => o.metadata.name);
  const namespaces = rendered.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name);
  await confirmDeletions(projects); // what the namespaces hold goes too (ADR 0096)
  await kubectl('admin', ['delete', 'project', ...projects, '--ignore-not-found', '--wait=false']);
  await eventually(
    async () => {
      // As many Projects at once trip the deletion breaker (D2): resumed, as an operator would.
      await resumeDeletions();
      for (const p of projects) if (await exists('project', p)) throw new Error(`Project ${p} still there`);
    },
    { timeoutMs: 180_000, intervalMs: 500, what: 'the example Projects gone' },
  );
  await kubectl('admin', ['delete', 'namespace', ...namespaces, '--ignore-not-found', '--wait=true', '--timeout=120s']);
  await kubectl('admin', [
    '-n',
    ARGOCD_NAMESPACE,
    'delete',
    'appprojects',
    '-l',
    'app.kubernetes.io/managed-by=tenantgate',
    '--ignore-not-found',
  ]);
}

/** An Application of tenant acme: plain manifests (a directory source) from acme's repository. */
async function acmeApplication(prefix: string, path: string, namespace: string): Promise<string> {
  const name = uniqueName(prefix);
  applications.push(name);
  const base = applicationObject({ name, repoURL: acmeRepo.url, path, project: 'tenant-acme' });
  const app = {
    ...base,
    spec: {
      project: 'tenant-acme',
      source: { repoURL: acmeRepo.url, targetRevision: 'main', path },
      destination: { server: IN_CLUSTER, namespace },
    },
  };
  await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(app) });
  return name;
}

async function syncAndWait(app: string, revision: string) {
  await refreshHard(app);
  await waitForCompared(app, revision);
  await startSync(app, revision);
  return waitForOperation(app, revision);
}

const configMap = (name: string, namespace: string): Obj => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data: { from: 'tenant acme' },
});
const manifests = (...objects: Obj[]) => objects.map((o) => stringify(o)).join('---\n');

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  controller = await startTestController({
    kubeConfig: await serviceAccountKubeConfig(info, DEFAULT_CONFIG.systemNamespace, 'tenantgate-controller'),
  });
  argo = await startArgoCd(info, {
    dir: join(info.dir, `argocd-${RUN}`),
    log: (m) => process.env.TG_DEBUG && process.stderr.write(`[argocd] ${m}\n`),
  });
  const repos = join(info.dir, `git-${RUN}`);
  acmeRepo = await LocalGitRepo.init(join(repos, 'acme'));
  await acmeRepo.commit('empty start');
  platformRepo = await LocalGitRepo.init(join(repos, 'platform'));
  await platformRepo.copyIn(GITOPS, 'gitops');
  const config = parse(await readFile(join(GITOPS, 'tenantgate.yaml'), 'utf8')) as Record<string, unknown>;
  const platformConfig = stringify({
    ...config,
    argocd: { namespace: ARGOCD_NAMESPACE, sourceRepos: [`file://${repos}/{tenant}`] },
  });
  await platformRepo.commit('examples/gitops, tenants may use file://…/{tenant}', {
    'gitops/tenantgate.yaml': platformConfig,
  });
  const local = await renderDirectory(join(platformRepo.dir, 'gitops'), {}, 'yaml', { appProjects: true });
  expect(local.errors).toEqual([]);
  rendered = parseAllDocuments(local.output!).map((d) => d.toJS() as (typeof rendered)[number]);
  await clearExamples();
}, 300_000);

afterAll(async () => {
  for (const app of applications) await deleteApplication(app).catch(() => {});
  if (rendered) await clearExamples().catch(() => {});
  await argo?.stop();
  await controller?.stop();
}, 300_000);

describe("tenants' AppProjects from render --app-projects, enforced by the real Argo CD", () => {
  it('the platform Application (plugin env APP_PROJECTS=true) syncs one AppProject per tenant, as render printed them', async () => {
    const sha = await platformRepo.commit('sync');
    const name = uniqueName('platform');
    applications.push(name);
    await kubectl('admin', ['apply', '-f', '-'], {
      input: JSON.stringify(
        applicationObject({ name, repoURL: platformRepo.url, path: 'gitops', env: { APP_PROJECTS: 'true' } }),
      ),
    });
    const op = await syncAndWait(name, sha);
    expect(op.phase, op.message).toBe('Succeeded');
    const expected = rendered.filter((o) => o.kind === 'AppProject');
    expect(expected.map((o) => o.metadata.name)).toEqual(['tenant-acme', 'tenant-globex', 'tenant-initech']);
    for (const want of expected) {
      const live = JSON.parse(
        (await kubectl('admin', ['-n', ARGOCD_NAMESPACE, 'get', 'appproject', want.metadata.name, '-o', 'json']))
          .stdout,
      ) as { spec: Record<string, unknown> };
      expect(live.spec).toEqual(want.spec);
    }
    const acme = expected.find((o) => o.metadata.name === 'tenant-acme')!.spec as {
      sourceRepos: string[];
      destinations: unknown[];
    };
    expect(acme.sourceRepos).toEqual([acmeRepo.url]);
    expect(acme.destinations).toContainEqual({ server: IN_CLUSTER, namespace: 'payments-batch' });
    expect(await exists('namespace', 'payments-batch')).toBe(true);
    expect(await exists('namespace', 'ml-training')).toBe(true);
  }, 300_000);

  const refusals: Array<[string, () => { objects: Obj[]; messages: string[] }]> = [
    [
      '(a) a Namespace',
      () => {
        const ns = uniqueName('acme-extra');
        return {
          objects: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }],
          messages: ['resource :Namespace is not permitted in project tenant-acme'],
        };
      },
    ],
    [
      '(b) a tenantgate Project',
      () => {
        const project = uniqueName('acme-forged');
        return {
          objects: [
            {
              apiVersion: 'tenantgate.io/v1alpha1',
              kind: 'Project',
              metadata: { name: project },
              spec: {
                tenant: 'acme',
                owners: [{ kind: 'User', name: 'mallory' }],
                quota: { hard: { 'requests.cpu': '1000' } },
              },
            },
          ],
          messages: ['resource tenantgate.io:Project is not permitted in project tenant-acme'],
        };
      },
    ],
    [
      "(c) a ResourceQuota in acme's own namespace",
      () => ({
        objects: [
          {
            apiVersion: 'v1',
            kind: 'ResourceQuota',
            metadata: { name: uniqueName('more'), namespace: 'payments-batch' },
            spec: { hard: { 'requests.cpu': '1000' } },
          },
        ],
        messages: ['resource :ResourceQuota is not permitted in project tenant-acme'],
      }),
    ],
    [
      "(d) a Deployment and a ConfigMap in globex's namespace ml-training",
      () => ({
        objects: [
          {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            metadata: { name: uniqueName('intruder'), namespace: 'ml-training' },
            spec: {
              replicas: 0,
              selector: { matchLabels: { app: 'intruder' } },
              template: {
                metadata: { labels: { app: 'intruder' } },
                spec: { containers: [{ name: 'c', image: 'registry.invalid/none:1' }] },
              },
            },
          },
          configMap(uniqueName('intruder'), 'ml-training'),
        ],
        messages: ["namespace ml-training is not permitted in project 'tenant-acme'"],
      }),
    ],
  ];

  it.each(refusals)(
    "refuses %s: the sync fails with Argo CD's own message and nothing is created",
    async (label, make) => {
      const { objects, messages } = make();
      const path = `refuse-${uniqueName('p')}`;
      const sha = await acmeRepo.commit(label, { [`${path}/objects.yaml`]: manifests(...objects) });
      const app = await acmeApplication('acme', path, 'payments-batch');
      const op = await syncAndWait(app, sha);
      expect(op.phase, op.message).toBe('Failed');
      const said = `${op.message ?? ''} ${JSON.stringify(op.syncResult?.resources ?? [])}`;
      for (const m of messages) expect(said, said).toContain(m);
      for (const o of objects) {
        const own = op.syncResult?.resources?.find((r) => r.kind === o.kind && r.name === o.metadata.name);
        expect(own, `${o.kind} ${o.metadata.name} in the sync result: ${said}`).toMatchObject({ status: 'SyncFailed' });
        expect(
          await exists(o.kind, o.metadata.name, o.metadata.namespace),
          `${o.kind} ${o.metadata.name} was created`,
        ).toBe(false);
      }
      await deleteApplication(app);
    },
    300_000,
  );

  it("lets a ConfigMap into acme's own namespace: Synced, and it is in the cluster", async () => {
    const name = uniqueName('settings');
    const path = `allowed-${uniqueName('p')}`;
    const sha = await acmeRepo.commit('a ConfigMap of our own', {
      [`${path}/cm.yaml`]: manifests(configMap(name, 'payments-batch')),
    });
    const app = await acmeApplication('acme', path, 'payments-batch');
    const op = await syncAndWait(app, sha);
    expect(op.phase, op.message).toBe('Succeeded');
    await waitForApp(app, 'Synced', (a) => (a.status?.sync?.status === 'Synced' ? a : undefined));
    const live = JSON.parse(
      (await kubectl('admin', ['-n', 'payments-batch', 'get', 'configmap', name, '-o', 'json'])).stdout,
    ) as { data: Record<string, string> };
    expect(live.data).toEqual({ from: 'tenant acme' });
    await deleteApplication(app);
  }, 300_000);
});
