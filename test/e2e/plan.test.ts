/**
 * `tenantgate plan` and `tenantgate snapshot` (the CLI as users run it, a process per command) against the real local control plane with
 * tenantgate's webhook and controller: examples/gitops (its projects renamed for this run) applied as
 * Argo CD would, a tenant's self-service namespace taking budget, then a git change that raises a
 * declared namespace's quota. The plan must say what the real webhook then does to that change
 * (`kubectl apply --dry-run=server` of the rendered change), live and from a snapshot file alike.
 */
import { execa } from 'execa';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { renderDirectory } from '../../src/cli/render.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { RunningController } from '../../src/controller/controller.js';
import type { Plan } from '../../src/plan/types.js';
import type { Project } from '../../src/validate/types.js';
import { cluster, eventually, kubectl, uniqueName } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';
import {
  EXAMPLE_PRICING,
  installBase,
  serviceAccountKubeConfig,
  startLocalWebhook,
  type LocalWebhook,
} from '../support/devcluster/tenantgate.js';
import { LocalGitRepo } from '../support/git-repo.js';
import { REPO_ROOT } from '../support/paths.js';
import { startTestController } from '../support/controller-kit.js';

/**
 * The CLI from its sources through tsx: dist/ is shared with the other engineers' builds on this
 * machine and may be rebuilt (deleted) while this file runs; the built CLI is tested by npm-package.test.ts.
 */
const CLI = [
  `--import=${pathToFileURL(join(REPO_ROOT, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs')).href}`,
  join(REPO_ROOT, 'src', 'cli', 'main.ts'),
];
const RUN = uniqueName('pl');
const SELECTOR = 'e2e.tenantgate.io/run';
/** The cluster's name in the plan (render's ARGOCD_ENV_CLUSTER); the projects budget it with spec.quota. */
const CLUSTER = 'local';
const T = (name: string) => `${RUN}-${name}`;

let hook: LocalWebhook;
let controller: RunningController;
let repo: LocalGitRepo;
let projects: string[] = [];
let webFile = '';
let webText = '';

/** examples/gitops with every project and namespace name prefixed by this run's, labelled for this run's controller. */
async function renamedExamples(): Promise<Record<string, string>> {
  // The example's price sheet: Project ml has a costBudget, which render refuses without one (C1).
  const files: Record<string, string> = {
    'gitops/tenantgate.yaml': stringify({ clusterName: '', namespacePrefix: '{project}-', pricing: EXAMPLE_PRICING }),
  };
  for (const file of ['acme.yaml', 'globex.yaml', 'initech.yaml']) {
    const docs = parseAllDocuments(await readFile(join(REPO_ROOT, 'examples', 'gitops', file), 'utf8')).map(
      (d) => d.toJS() as Project,
    );
    for (const p of docs) {
      projects.push(T(p.metadata.name!));
      p.metadata = { name: T(p.metadata.name!), labels: { [SELECTOR]: RUN } };
      for (const ns of p.spec.namespaces ?? []) ns.name = T(ns.name);
      for (const burst of p.spec.bursts ?? []) if (burst.namespace) burst.namespace = T(burst.namespace);
    }
    files[`gitops/${file}`] = docs.map((d) => stringify(d)).join('---\n');
  }
  return files;
}

async function tenantgate(args: string[]) {
  const result = await execa(process.execPath, [...CLI, ...args], {
    cwd: repo.dir,
    reject: false,
    env: { NO_COLOR: '1' },
    timeout: 120_000,
  });
  return { exitCode: result.exitCode, stdout: String(result.stdout), stderr: String(result.stderr) };
}

const ADMIN_KUBECONFIG = () => cluster().kubeconfigs.admin!;

async function rendered(): Promise<
  Array<Record<string, unknown> & { kind: string; metadata: { name: string; annotations?: Record<string, string> } }>
> {
  const result = await renderDirectory(join(repo.dir, 'gitops'), { ARGOCD_ENV_CLUSTER: CLUSTER });
  if (result.output === undefined) throw new Error(result.errors.join('\n'));
  return parseAllDocuments(result.output).map((d) => d.toJS());
}

/** Applies the render wave by wave as Argo CD does, each wave once the webhook's cache has the one before. */
async function syncAsArgoCd(): Promise<void> {
  const objects = await rendered();
  for (const wave of ['-2', '-1', '0']) {
    const docs = objects.filter((o) => (o.metadata.annotations?.['argocd.argoproj.io/sync-wave'] ?? '0') === wave);
    await eventually(
      async () => {
        const r = await kubectl('admin', ['apply', '-f', '-'], {
          input: docs.map((d) => JSON.stringify(d)).join('\n'),
          reject: false,
        });
        if (r.exitCode !== 0) throw new Error(r.stderr);
      },
      { what: `wave ${wave} applied`, timeoutMs: 60_000, intervalMs: 500 },
    );
  }
}

/** acme.yaml with web-frontend's requests.cpu quota (3 in git) set to `cpu`. */
function withFrontendCpu(cpu: string): string {
  const changed = webText.replace(
    /(name: \S+-web-frontend\n\s+quota:\n\s+hard:\n(?:\s+\S+: \S+\n)*?\s+requests\.cpu: )"3"/,
    (_, head: string) => `${head}"${cpu}"`,
  );
  if (changed === webText) throw new Error(`web-frontend's requests.cpu not found in:\n${webText}`);
  return changed;
}

/** `[Q1] ResourceQuota ns/name` of every refusal kubectl printed. */
function refusals(stderr: string): string[] {
  return [...stderr.matchAll(/\[([A-Z]\d)\] (ResourceQuota \S+|Namespace \S+|project \S+)/g)]
    .map((m) => `${m[1]} ${m[2]}`)
    .sort();
}

function planRefusals(plan: Plan): string[] {
  return plan.entries
    .flatMap((e) => e.findings.filter((f) => f.by === 'webhook').map((f) => `${f.rule} ${f.object}`))
    .sort();
}

/** The plan's JSON without the times the live state was read at. */
function timeless(plan: Plan): Plan {
  return { ...plan, clusters: plan.clusters.map(({ name }) => ({ name })) };
}

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  hook = await startLocalWebhook(info);
  controller = await startTestController({
    kubeConfig: await serviceAccountKubeConfig(info, DEFAULT_CONFIG.systemNamespace, 'tenantgate-controller'),
    projectSelector: `${SELECTOR}=${RUN}`,
  });
  repo = await LocalGitRepo.init(join(info.dir, `git-${RUN}`));
  const files = await renamedExamples();
  webFile = join(repo.dir, 'gitops', 'acme.yaml');
  await repo.commit('examples/gitops', files);
  webText = files['gitops/acme.yaml']!;
  await syncAsArgoCd();
  // carol (acme:web-admins) makes a namespace of her own; the controller gives it namespaceDefaults.quota (1 CPU).
  await kubectl('carol', ['create', 'namespace', T('web-extra')]);
  await eventually(
    async () => {
      const q = JSON.parse(
        (await kubectl('admin', ['-n', T('web-extra'), 'get', 'quota', 'tenantgate-quota', '-o', 'json'])).stdout,
      ) as { status?: { used?: Record<string, string> } };
      expect(q.status?.used?.['requests.cpu']).toBeDefined();
    },
    { what: 'the self-service namespace has its default quota, counted by the quota controller' },
  );
}, 300_000);

afterAll(async () => {
  // While the controller runs: its finalizer takes the namespaces, then lets the Projects go.
  await removeProjects(projects);
  await eventually(
    async () => {
      const left = (await kubectl('admin', ['get', 'namespaces', '-l', 'tenantgate.io/project', '-o', 'name'])).stdout
        .split('\n')
        .filter((n) => n.includes(RUN));
      expect(left).toEqual([]);
    },
    { what: "the run's namespaces cascaded away", timeoutMs: 120_000 },
  ).catch((err: unknown) => process.stderr.write(`[plan] cleanup: ${String(err)}\n`));
  await controller?.stop();
  await hook?.stop();
}, 300_000);

describe('tenantgate plan against the live cluster', () => {
  it('a raised quota the self-service namespace left no room for: plan says Q1 and exits 1, the webhook refuses the same object, and a snapshot plans the same', async () => {
    // The change in the working tree, not committed: web-frontend 3 → 4500m CPU (offline it fits: 4500m + 1 ≤ 6).
    await writeFile(webFile, withFrontendCpu('4500m'));
    expect(await readFile(webFile, 'utf8')).toContain('4500m');
    const validated = await tenantgate(['validate', 'gitops', '--base', 'HEAD']);
    expect(validated.exitCode, validated.stderr).toBe(0);

    const flags = ['gitops', '--base', 'HEAD', '--cluster', `${CLUSTER}=admin`, '--kubeconfig', ADMIN_KUBECONFIG()];
    const started = Date.now();
    const live = await tenantgate(['plan', ...flags, '--output', 'json']);
    const liveMs = Date.now() - started;
    expect(live.exitCode, live.stderr).toBe(1);
    const plan = JSON.parse(live.stdout) as Plan;
    expect(plan.entries.map((e) => `${e.project}@${e.cluster}`)).toEqual([`${T('web')}@${CLUSTER}`]);
    const web = plan.entries[0]!;
    expect(web.namespaces).toMatchObject({
      changed: [T('web-frontend')],
      selfService: [T('web-extra')],
      countBefore: 3,
      countAfter: 3,
    });
    expect(web.resources.find((r) => r.resource === 'requests.cpu')).toMatchObject({
      budgetAfter: '6',
      allocatedBefore: '5',
      allocatedAfter: '6500m',
      headroomAfter: '-500m',
    });
    expect(planRefusals(plan)).toEqual([`Q1 ResourceQuota ${T('web-frontend')}/tenantgate-quota`]);

    // The real webhook on the rendered change.
    const change = await rendered();
    const dryRun = await kubectl('admin', ['apply', '--dry-run=server', '-f', '-'], {
      input: change.map((d) => JSON.stringify(d)).join('\n'),
      reject: false,
    });
    expect(dryRun.exitCode).not.toBe(0);
    expect(refusals(dryRun.stderr)).toEqual(planRefusals(plan));

    // Offline: the snapshot, then the plan from it, say the same.
    const file = join(repo.dir, '..', `${RUN}-snapshot.yaml`);
    const snap = await tenantgate([
      'snapshot',
      '--context',
      'admin',
      '--kubeconfig',
      ADMIN_KUBECONFIG(),
      '--cluster',
      CLUSTER,
      '-o',
      file,
    ]);
    expect(snap.exitCode, snap.stderr).toBe(0);
    const fromFile = await tenantgate(['plan', 'gitops', '--base', 'HEAD', '--snapshot', file, '--output', 'json']);
    expect(fromFile.exitCode, fromFile.stderr).toBe(1);
    expect(timeless(JSON.parse(fromFile.stdout) as Plan)).toEqual(timeless(plan));
    const snapshotText = await readFile(file, 'utf8');
    expect(snapshotText).not.toContain('managedFields');

    const table = await tenantgate(['plan', ...flags]);
    const markdown = await tenantgate(['plan', 'gitops', '--base', 'HEAD', '--snapshot', file, '--output', 'markdown']);
    expect(table.exitCode).toBe(1);
    expect(markdown.stdout).toContain(`### ❌ ${T('web')} on ${CLUSTER} (tenant acme) — changed`);
    process.stderr.write(
      `[plan] live plan in ${liveMs} ms\n[plan] table:\n${table.stdout}\n[plan] markdown:\n${markdown.stdout}\n`,
    );
  });

  it('a change that fits (web-frontend to 4 CPU, the headroom exactly): plan exits 0 and the webhook admits the dry run', async () => {
    await writeFile(webFile, withFrontendCpu('4'));
    const result = await tenantgate([
      'plan',
      'gitops',
      '--base',
      'HEAD',
      '--cluster',
      `${CLUSTER}=admin`,
      '--kubeconfig',
      ADMIN_KUBECONFIG(),
      '--output',
      'json',
    ]);
    expect(result.exitCode, result.stderr + result.stdout).toBe(0);
    const plan = JSON.parse(result.stdout) as Plan;
    expect(plan.findings).toBe(0);
    expect(plan.entries[0]!.resources.find((r) => r.resource === 'requests.cpu')).toMatchObject({
      allocatedAfter: '6',
      headroomAfter: '0',
    });
    const dryRun = await kubectl('admin', ['apply', '--dry-run=server', '-f', '-'], {
      input: (await rendered()).map((d) => JSON.stringify(d)).join('\n'),
      reject: false,
    });
    expect(dryRun.exitCode, dryRun.stderr).toBe(0);
  });

  it('a narrowed allow-list: plan reads the live claims and lists the one the new StorageClass list strands (X5), live and from a snapshot', async () => {
    const claim = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'fast-data' },
      spec: {
        storageClassName: 'fast-ssd',
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '1Gi' } },
      },
    };
    await kubectl('admin', ['-n', T('web-frontend'), 'create', '-f', '-'], { input: JSON.stringify(claim) });
    const docs = parseAllDocuments(webText).map((d) => d.toJS() as Project);
    const web = docs.find((p) => p.metadata.name === T('web'));
    if (!web) throw new Error(`no project ${T('web')} in acme.yaml`);
    web.spec.allow = { storageClasses: ['standard'] };
    await writeFile(webFile, docs.map((d) => stringify(d)).join('---\n'));
    const stranded = `X5 PersistentVolumeClaim ${T('web-frontend')}/fast-data`;
    const findings = (plan: Plan) =>
      plan.entries.flatMap((e) => e.findings.filter((f) => f.by === 'plan').map((f) => `${f.rule} ${f.object}`));
    const live = await tenantgate([
      'plan',
      'gitops',
      '--base',
      'HEAD',
      '--cluster',
      `${CLUSTER}=admin`,
      '--kubeconfig',
      ADMIN_KUBECONFIG(),
      '--output',
      'json',
    ]);
    expect(live.exitCode, live.stderr).toBe(1);
    const plan = JSON.parse(live.stdout) as Plan;
    expect(findings(plan)).toEqual([stranded]);
    expect(plan.entries.flatMap((e) => e.findings).find((f) => f.rule === 'X5')?.message).toBe(
      `PersistentVolumeClaim ${T('web-frontend')}/fast-data: storageClassName "fast-ssd" is not allowed for project ${T('web')}; allowed: standard (it runs now: it keeps running, but could not be created again)`,
    );
    const file = join(repo.dir, '..', `${RUN}-allow-snapshot.yaml`);
    const snap = await tenantgate([
      'snapshot',
      '--context',
      'admin',
      '--kubeconfig',
      ADMIN_KUBECONFIG(),
      '--cluster',
      CLUSTER,
      '-o',
      file,
    ]);
    expect(snap.exitCode, snap.stderr).toBe(0);
    const fromFile = await tenantgate(['plan', 'gitops', '--base', 'HEAD', '--snapshot', file, '--output', 'json']);
    expect(findings(JSON.parse(fromFile.stdout) as Plan)).toEqual([stranded]);
    await writeFile(webFile, webText);
  });

  it('usage errors exit 2 naming the flag and the value', async () => {
    const noContext = await tenantgate([
      'plan',
      'gitops',
      '--cluster',
      `${CLUSTER}=nosuch`,
      '--kubeconfig',
      ADMIN_KUBECONFIG(),
    ]);
    expect(noContext.exitCode).toBe(2);
    expect(noContext.stderr).toContain(`--cluster "${CLUSTER}=nosuch": no such context "nosuch"`);
    const badFlag = await tenantgate(['plan', 'gitops', '--cluster', 'admin']);
    expect(badFlag.exitCode).toBe(2);
    expect(badFlag.stderr).toContain('--cluster "admin" is not allowed: NAME=CONTEXT');
    const badRef = await tenantgate(['plan', 'gitops', '--base', 'no-such-ref', '--snapshot', 'x.yaml']);
    expect(badRef.exitCode).toBe(2);
    expect(badRef.stderr).toContain('--base "no-such-ref": not a commit');
    const noFile = await tenantgate(['plan', 'gitops', '--snapshot', 'missing.yaml']);
    expect(noFile.exitCode).toBe(2);
    expect(noFile.stderr).toContain('--snapshot "missing.yaml": no such file');
    const none = await tenantgate(['plan', 'gitops']);
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toContain('give --cluster NAME=CONTEXT or --snapshot FILE');
  });
});
