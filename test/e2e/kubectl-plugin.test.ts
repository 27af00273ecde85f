/**
 * `kubectl tenantgate` on the real control plane with tenantgate's webhook and controller: the projects
 * of examples/gitops (renamed with a suffix unique to the run, owners too, so other files' projects on the
 * shared control plane never count), and each of their tenant users impersonated through kubectl's
 * own --as/--as-group (and once through a kubeconfig whose user impersonates). The plugin runs from
 * source (tsx) with the harness's kubectl; the tmux test runs it as kubectl runs plugins, from PATH;
 * the krew test builds the release archive from `npm pack` (dist/ must be built: `make build`).
 */
import { processNow } from '../../src/clock.js';
import { execa } from 'execa';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, writeFile, chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { buildKrewRelease } from '../../hack/krew-manifest.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { startController, type RunningController } from '../../src/controller/controller.js';
import { renderProjectsLazily } from '../../src/render/render.js';
import { isProjectObject, parseSource } from '../../src/validate/source.js';
import type { Project, Subject } from '../../src/validate/types.js';
import type { ProjectBudgetJson } from '../../src/validate/budget.js';
import {
  installBase,
  serviceAccountKubeConfig,
  startLocalWebhook,
  type LocalWebhook,
} from '../support/devcluster/tenantgate.js';
import { cluster, eventually, kubectl } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';
import { REPO_ROOT } from '../support/paths.js';
import { applyChartTemplates, startControllerWithView, type LocalView } from '../support/view.js';

const SFX = `kp${process.pid.toString(36).slice(-3)}${Math.floor(Math.random() * 46656).toString(36)}`;
const p = (name: string) => `${name}${SFX}`; // payments → paymentskp…; its namespaces paymentskp…-batch
const who = (name: string) => `${name}-${SFX}`;
const TSX = join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
const PLUGIN = join(REPO_ROOT, 'src', 'cli', 'kubectl-plugin.ts');

/** The tenant users of examples/gitops (their identities renamed for this run) and the projects each owns. */
const TENANTS: Record<string, { as: string; groups: string[]; owns: string[] }> = {
  alice: { as: who('alice@acme.example'), groups: [], owns: ['payments'] },
  deployer: {
    as: `system:serviceaccount:ci:${who('deployer')}`,
    groups: ['system:serviceaccounts'],
    owns: ['payments'],
  },
  webAdmin: { as: who('wendy'), groups: [who('acme:web-admins')], owns: ['web'] },
  bob: { as: who('bob'), groups: [who('globex:admins')], owns: ['data', 'ml'] },
  globexAdmin: { as: who('gina'), groups: [who('globex:admins')], owns: ['data', 'ml'] },
  initechDev: { as: who('ivan'), groups: [who('initech:devs')], owns: ['tools'] },
  carol: { as: who('carol'), groups: [], owns: ['reports'] },
  dave: { as: who('dave'), groups: [], owns: [] },
};
const asFlags = (t: keyof typeof TENANTS) => [
  '--as',
  TENANTS[t]!.as,
  ...[...TENANTS[t]!.groups, 'tenants'].flatMap((g) => ['--as-group', g]),
];

let hook: LocalWebhook;
let controller: RunningController;
let projects: Project[];
let view: LocalView | undefined;

async function plugin(args: string[], options: { input?: string } = {}) {
  const info = cluster();
  const result = await execa(TSX, [PLUGIN, ...args, '--kubeconfig', info.kubeconfigs.admin!], {
    env: { TENANTGATE_KUBECTL: join(info.binDir, 'kubectl') },
    reject: false,
    timeout: 60_000,
    stripFinalNewline: false,
    ...(options.input !== undefined ? { input: options.input } : {}),
  });
  return { stdout: String(result.stdout), stderr: String(result.stderr), exitCode: result.exitCode };
}
async function as(t: keyof typeof TENANTS, args: string[]) {
  return plugin([...args, ...asFlags(t)]);
}

function renamed(project: Project): Project {
  const rename = (s: Subject): Subject =>
    s.kind === 'ServiceAccount' ? { ...s, name: who(s.name) } : { ...s, name: who(s.name) };
  const old = project.metadata.name!;
  const renameNamespace = (name: string) => name.replace(`${old}-`, `${p(old)}-`);
  return {
    ...project,
    metadata: { name: p(old) },
    spec: {
      ...project.spec,
      owners: (project.spec.owners ?? []).map(rename),
      namespaces: (project.spec.namespaces ?? []).map((n) => ({ ...n, name: renameNamespace(n.name) })),
      // A burst names a declared namespace: renamed with it.
      ...(project.spec.bursts
        ? {
            bursts: project.spec.bursts.map((b) =>
              b.namespace ? { ...b, namespace: renameNamespace(b.namespace) } : b,
            ),
          }
        : {}),
    },
  };
}

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  hook = await startLocalWebhook(info);
  // The direct path first: no APIService yet (discovery answers 404). The last describe restarts the
  // controller serving the budget view behind its APIService (test/support/view.ts).
  controller = await startController({
    kubeConfig: await serviceAccountKubeConfig(info, 'tenantgate-system', 'tenantgate-controller'),
    config: DEFAULT_CONFIG,
    leaderElection: false,
    log: () => {},
  });
  projects = [];
  for (const f of ['acme.yaml', 'globex.yaml', 'initech.yaml']) {
    const file = join(REPO_ROOT, 'examples', 'gitops', f);
    projects.push(
      ...parseSource(file, await readFile(file, 'utf8'))
        .documents.map((d) => d.object)
        .filter(isProjectObject)
        .map(renamed),
    );
  }
  // What Argo CD would apply for this (unnamed) cluster: Projects, namespaces, quotas, limit ranges, owners' bindings.
  const objects = [...renderProjectsLazily(projects, DEFAULT_CONFIG, { at: processNow(), cluster: '' })];
  await kubectl('admin', ['apply', '-f', '-'], { input: objects.map((o) => JSON.stringify(o)).join('\n') });
  // One pod uses 500m of payments-batch's requests.cpu (counted at creation; no scheduler needed).
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'work', namespace: `${p('payments')}-batch` },
    spec: {
      containers: [
        {
          name: 'pause',
          image: 'registry.k8s.io/pause:3.10',
          resources: { requests: { cpu: '500m', memory: '128Mi' }, limits: { cpu: '1', memory: '128Mi' } },
        },
      ],
    },
  };
  await eventually(
    async () =>
      void (await kubectl('admin', ['create', '-f', '-', ...asFlags('alice')], { input: JSON.stringify(pod) })),
    { what: 'the pod created by its owner' },
  );
  await eventually(
    async () => {
      const status = JSON.parse(
        (await kubectl('admin', ['get', 'project', p('payments'), '-o', 'json'])).stdout,
      ) as Project;
      expect(status.status?.used?.['requests.cpu']).toBe('500m');
      expect(status.status?.phase).toBe('Active');
    },
    { what: 'the controller counts the pod in the Project status', timeoutMs: 90_000 },
  );
}, 300_000);

afterAll(async () => {
  await view?.stop(); // the APIService first: one that does not answer stalls namespace deletion
  // While the direct-path controller runs, its finalizer takes the namespaces with the Projects; once the
  // view's controller has stopped with it, the finalizers are removed and the namespaces deleted after.
  if (projects)
    await removeProjects(
      projects.map((x) => x.metadata.name!),
      { cascadeMs: view ? 0 : 60_000 },
    );
  if (!view) await controller?.stop();
  await hook?.stop();
});

describe('kubectl tenantgate projects', () => {
  it('lists, as each tenant user of examples/gitops, exactly the projects it owns', async () => {
    for (const t of Object.keys(TENANTS) as Array<keyof typeof TENANTS>) {
      const out = await as(t, ['projects', '-o', 'json']);
      expect(out.exitCode, `${t}: ${out.stderr}`).toBe(0);
      const rows = (
        JSON.parse(out.stdout) as { projects: Array<{ name: string; tenant: string; namespaces: string[] }> }
      ).projects;
      expect(
        rows.map((r) => r.name),
        t,
      ).toEqual(TENANTS[t]!.owns.map(p));
    }
  });

  it("as a table: name, tenant, namespace count, phase and the controller's budget use", async () => {
    const out = await as('alice', ['projects']);
    expect(out.exitCode, out.stderr).toBe(0);
    const lines = out.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+TENANT\s+NAMESPACES\s+PHASE\s+BUDGET USE$/);
    expect(lines[1]).toMatch(new RegExp(`^${p('payments')}\\s+acme\\s+2\\s+Active\\s+\\S+`));
    expect(lines).toHaveLength(2);
    expect(lines[1]!.indexOf('acme')).toBe(lines[0]!.indexOf('TENANT'));
  });
});

describe('kubectl tenantgate headroom', () => {
  it("gives the numbers of the budget and the controller's status: allocated 4/20 CPUs, 500m used, 16 left", async () => {
    const out = await as('alice', ['headroom', p('payments'), '-o', 'json']);
    expect(out.exitCode, out.stderr).toBe(0);
    const b = JSON.parse(out.stdout) as ProjectBudgetJson;
    expect(b).toMatchObject({ project: p('payments'), tenant: 'acme', cluster: '' });
    expect(b.resources).toEqual([
      { resource: 'limits.cpu', budget: '40', allocated: '8', used: '1', headroom: '32' },
      { resource: 'pods', budget: '200', allocated: '50', used: '1', headroom: '150' },
      { resource: 'requests.cpu', budget: '20', allocated: '4', used: '500m', headroom: '16' },
      { resource: 'requests.memory', budget: '64Gi', allocated: '12Gi', used: '128Mi', headroom: '52Gi' },
    ]);
    expect(b.namespaces.map((n) => [n.namespace, n.hard['requests.cpu'], n.used['requests.cpu']])).toEqual([
      [`${p('payments')}-batch`, '2', '500m'],
      [`${p('payments')}-ledger`, '2', '0'],
    ]);
    // The controller's status reads the same objects with the same function.
    const status = (
      JSON.parse((await kubectl('admin', ['get', 'project', p('payments'), '-o', 'json'])).stdout) as Project
    ).status!;
    for (const r of b.resources) {
      expect(status.allocated?.[r.resource], r.resource).toBe(r.allocated);
      expect(status.headroom?.[r.resource], r.resource).toBe(r.headroom);
    }
  });

  it('as a table with bars; -o yaml is the same document; without a name, every project of the caller', async () => {
    const text = await as('alice', ['headroom', p('payments')]);
    expect(text.exitCode, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/\nrequests\.cpu\s+████░{16} 4\/20\s+500m\s+16\n/);
    expect(text.stdout).toMatch(new RegExp(`\\n${p('payments')}-batch\\s+limits\\.cpu\\s+█+░+ 1/4\\s+4\\n`));
    const yaml = await as('alice', ['headroom', p('payments'), '-o', 'yaml']);
    const json = await as('alice', ['headroom', p('payments'), '-o', 'json']);
    expect(parse(yaml.stdout)).toEqual(JSON.parse(json.stdout));
    const all = await as('bob', ['headroom', '-o', 'json']);
    expect(all.exitCode, all.stderr).toBe(0);
    expect((JSON.parse(all.stdout) as { budgets: ProjectBudgetJson[] }).budgets.map((x) => x.project)).toEqual([
      p('data'),
      p('ml'),
    ]);
  });

  it("another tenant's project: its quotas are not readable, and the error says so", async () => {
    const out = await as('carol', ['headroom', p('payments')]);
    expect(out.exitCode).toBe(1);
    expect(out.stderr).toMatch(/^error: .*forbidden.*resourcequotas/);
  });
});

describe('kubectl tenantgate namespaces', () => {
  it("lists the namespaces of the caller's projects with their project and tenant", async () => {
    const out = await as('bob', ['namespaces', '-o', 'json']);
    expect(out.exitCode, out.stderr).toBe(0);
    expect((JSON.parse(out.stdout) as { namespaces: unknown[] }).namespaces).toEqual([
      { name: `${p('data')}-warehouse`, project: p('data'), tenant: 'globex', phase: 'Active' },
      { name: `${p('ml')}-serving`, project: p('ml'), tenant: 'globex', phase: 'Active' },
      { name: `${p('ml')}-training`, project: p('ml'), tenant: 'globex', phase: 'Active' },
    ]);
    const text = await as('dave', ['namespaces']);
    expect(text.stdout).toBe('No namespaces in your projects.\n');
  });
});

describe('kubectl tenantgate why', () => {
  it('an over-budget quota file: refused by [Q1], with what fits and what to change; nothing is stored', async () => {
    // The namespace's quota raised to 30 CPUs (a second, looser quota would change nothing: the tightest counts).
    const dir = await mkdtemp(join(cluster().dir, 'why-'));
    const file = join(dir, 'quota.yaml');
    const ns = `${p('payments')}-batch`;
    await writeFile(
      file,
      stringify({
        apiVersion: 'v1',
        kind: 'ResourceQuota',
        metadata: { name: 'tenantgate-quota', namespace: ns },
        spec: { hard: { 'requests.cpu': '30', 'requests.memory': '4Gi', 'limits.cpu': '4', pods: '20' } },
      }) +
        '---\n' +
        stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fine', namespace: ns }, data: { a: 'b' } }),
    );
    const out = await as('alice', ['why', '-f', file]);
    expect(out.exitCode, out.stdout + out.stderr).toBe(1);
    expect(out.stdout).toContain(
      `ResourceQuota ${ns}/tenantgate-quota: refused\n  [Q1] the namespaces' quotas fit the budget\n`,
    );
    expect(out.stdout).toContain('fits: requests.cpu at most 18\n');
    expect(out.stdout).toContain(`ConfigMap ${ns}/fine: admitted`);
    expect(out.stdout).toContain('1 of 2 objects would be refused.');
    const json = await as('alice', ['why', '-f', file, '-o', 'json']);
    const verdicts = (
      JSON.parse(json.stdout) as {
        objects: Array<{ admitted: boolean; denials: Array<{ rule: string; fits?: unknown }> }>;
      }
    ).objects;
    expect(verdicts[0]!.denials.map((d) => d.rule)).toEqual(['Q1']);
    expect(verdicts[0]!.denials[0]!.fits).toEqual({ resource: 'requests.cpu', atMost: '18' });
    expect(verdicts[1]!.admitted).toBe(true);
    expect(
      (await kubectl('admin', ['-n', ns, 'get', 'configmap/fine', '--ignore-not-found', '-o', 'name'])).stdout,
    ).toBe('');
    expect(
      (
        await kubectl('admin', [
          '-n',
          ns,
          'get',
          'quota/tenantgate-quota',
          '-o',
          'jsonpath={.spec.hard.requests\\.cpu}',
        ])
      ).stdout,
    ).toBe('2');
  });
});

describe('kubectl tenantgate create namespace', () => {
  it('creates a namespace labelled for its project and tenant, which the webhook admits and the controller equips', async () => {
    const name = `${p('payments')}-new`;
    const out = await as('alice', ['create', 'namespace', name, '--project', p('payments')]);
    expect(out.exitCode, out.stderr).toBe(0);
    expect(out.stdout).toBe(`namespace/${name} created\n`);
    const ns = JSON.parse((await kubectl('admin', ['get', 'namespace', name, '-o', 'json'])).stdout) as {
      metadata: { labels: Record<string, string> };
    };
    expect(ns.metadata.labels).toMatchObject({
      'tenantgate.io/project': p('payments'),
      'tenantgate.io/tenant': 'acme',
    });
    await eventually(async () => void (await kubectl('admin', ['-n', name, 'get', 'quota', 'tenantgate-quota'])), {
      what: "the controller's default quota",
    });
    const listed = await as('alice', ['namespaces', '-o', 'json']);
    expect(
      (JSON.parse(listed.stdout) as { namespaces: Array<{ name: string }> }).namespaces.map((n) => n.name),
    ).toContain(name);
  });

  it("in another tenant's project: refused by [T4], explained", async () => {
    const out = await as('carol', ['create', 'namespace', `${p('payments')}-stolen`, '--project', p('payments')]);
    expect(out.exitCode).toBe(1);
    expect(out.stderr).toContain('[T4]');
    expect(out.stderr).toContain(
      "[T4] only a project's owners manage its namespaces and quotas: act in a project you own",
    );
    expect(
      (await kubectl('admin', ['get', 'namespace', `${p('payments')}-stolen`, '--ignore-not-found', '-o', 'name']))
        .stdout,
    ).toBe('');
  });
});

describe('in a terminal (tmux), as kubectl runs plugins', () => {
  it('`kubectl tenantgate projects` and `headroom` print aligned columns and bars that fit 80 columns', async () => {
    const info = cluster();
    const dir = await mkdtemp(join(info.dir, 'kubectl-plugin-'));
    // The plugin on PATH as kubectl looks for it, and a kubeconfig whose user impersonates alice.
    const shim = join(dir, 'kubectl-tenantgate');
    await writeFile(shim, `#!/bin/sh\nexec ${TSX} ${PLUGIN} "$@"\n`);
    await chmod(shim, 0o755);
    const kubeconfig = parse(await readFile(info.kubeconfigs.admin!, 'utf8')) as {
      users: Array<{ user: Record<string, unknown> }>;
    };
    for (const u of kubeconfig.users) Object.assign(u.user, { as: TENANTS.alice!.as, 'as-groups': ['tenants'] });
    const kcFile = join(dir, 'kubeconfig');
    await writeFile(kcFile, stringify(kubeconfig), { mode: 0o600 });
    const socket = `tg-kp-${process.pid}`;
    const script = join(dir, 'run.sh');
    await writeFile(
      script,
      `#!/bin/sh\nexport PATH=${dir}:${info.binDir}:$PATH KUBECONFIG=${kcFile}\nkubectl tenantgate projects\necho ===\nkubectl tenantgate headroom ${p('payments')}\necho END\nsleep 600\n`,
    );
    await chmod(script, 0o755);
    await execa('tmux', ['-L', socket, 'new-session', '-d', '-s', 'plugin', '-x', '80', '-y', '50', script]);
    try {
      const screen = await eventually(
        async () => {
          // -J joins the rows a line wrapped onto: a line the plugin printed wider than the pane comes back whole.
          const out = String((await execa('tmux', ['-L', socket, 'capture-pane', '-p', '-J', '-t', 'plugin'])).stdout);
          if (!out.includes('END')) throw new Error(`not done:\n${out}`);
          return out;
        },
        { timeoutMs: 60_000, what: 'the plugin in tmux' },
      );
      process.stderr.write(`[kubectl-plugin] tmux screen:\n${screen}\n`);
      const lines = screen.split('\n').map((l) => l.trimEnd()); // -J keeps the pane's trailing blanks
      for (const line of lines) expect([...line].length, line).toBeLessThanOrEqual(80);
      // Each row is found whole, columns aligned under their headers.
      expect(lines[0]).toMatch(/^NAME\s+TENANT\s+NAMESPACES\s+PHASE\s+BUDGET USE$/);
      expect(lines[1]).toMatch(new RegExp(`^${p('payments')}\\s+acme\\s+\\d\\s+Active`));
      const header = lines.find((l) => l.startsWith('RESOURCE'))!;
      const cpu = lines.find((l) => l.startsWith('requests.cpu'))!;
      expect(cpu).toMatch(/^requests\.cpu\s+█+░+ \d+\/20\s+500m\s+\d+$/);
      expect(cpu.search(/[█░]/)).toBe(header.indexOf('ALLOCATED/BUDGET'));
      expect(lines.find((l) => l.startsWith(`${p('payments')}-batch`))).toMatch(/limits\.cpu\s+█+░+ 1\/4\s+4$/);
      expect(screen).toMatch(/NAMESPACE\s+RESOURCE\s+USED\/HARD\s+ALLOCATED/);
    } finally {
      await execa('tmux', ['-L', socket, 'kill-server'], { reject: false });
    }
  });
});

describe('the krew release (hack/krew-manifest.ts)', () => {
  it('packs the npm package with its dependencies; the manifest names the archive by its sha256; the unpacked plugin answers', async () => {
    const info = cluster();
    const out = await mkdtemp(join(info.dir, 'krew-'));
    const started = Date.now();
    const { archive, manifest, release } = await buildKrewRelease({ uriBase: pathToFileURL(out).href, outDir: out });
    process.stderr.write(`[kubectl-plugin] krew archive built in ${Date.now() - started} ms\n`);
    const m = parse(await readFile(manifest, 'utf8')) as {
      spec: { version: string; platforms: Array<{ uri: string; sha256: string; bin: string }> };
    };
    const sha256 = createHash('sha256')
      .update(await readFile(archive))
      .digest('hex');
    expect(m.spec.platforms[0]).toMatchObject({ uri: pathToFileURL(archive).href, sha256, bin: 'kubectl-tenantgate' });
    expect(release.sha256).toBe(sha256);
    // Unpacked as krew does, run from PATH by the real kubectl, as alice.
    const unpacked = join(out, 'unpacked');
    await execa('mkdir', ['-p', unpacked]);
    await execa('tar', ['-xzf', archive, '-C', unpacked]);
    expect(
      (
        await readFile(join(unpacked, 'node_modules', 'tenantgate', 'dist', 'cli', 'kubectl-plugin.js'), 'utf8')
      ).startsWith('#!/usr/bin/env node\n'),
    ).toBe(true);
    const pkg = JSON.parse(await readFile(join(unpacked, 'node_modules', 'tenantgate', 'package.json'), 'utf8')) as {
      bin: Record<string, string>;
    };
    expect(pkg.bin['kubectl-tenantgate']).toBe('dist/cli/kubectl-plugin.js');
    const run = await execa(
      join(info.binDir, 'kubectl'),
      ['tenantgate', 'projects', '-o', 'json', ...asFlags('alice')],
      {
        env: { PATH: `${unpacked}:${info.binDir}:${process.env.PATH ?? ''}`, KUBECONFIG: info.kubeconfigs.admin! },
        reject: false,
      },
    );
    expect(run.exitCode, String(run.stderr)).toBe(0);
    expect(
      (JSON.parse(String(run.stdout)) as { projects: Array<{ name: string }> }).projects.map((x) => x.name),
    ).toEqual([p('payments')]);
  }, 600_000);
});

describe('the budget view API (view.tenantgate.io) as the data source', () => {
  beforeAll(async () => {
    const info = cluster();
    // The chart's view RBAC: Budgets aggregated to admin (so to project owners), ownedprojects for tenants.
    await applyChartTemplates(info, ['view/rbac.yaml', 'rbac/self-service.yaml'], ['view.enabled=true']);
    await controller.stop();
    view = await startControllerWithView(info);
    controller = view.controller;
    await eventually(
      async () => {
        const budget = await plugin(['headroom', p('payments'), '--source=view', '-o', 'json', ...asFlags('alice')]);
        expect(budget.exitCode, budget.stderr).toBe(0);
      },
      { timeoutMs: 90_000, what: 'owners read Budgets through the apiserver' },
    );
  }, 180_000);

  it('gives, for every tenant user, the same projects and the same budgets as the direct path; auto takes the view once served', async () => {
    /** OwnedProjects lists the view answered for the tenant (discovery, which auto asks first either way, not counted). */
    const served = view!;
    const ownedProjectsLists = (t: keyof typeof TENANTS) =>
      served.requests.filter((r) => r.user === TENANTS[t]!.as && r.path.endsWith('/ownedprojects') && r.status === 200)
        .length;
    for (const t of Object.keys(TENANTS) as Array<keyof typeof TENANTS>) {
      const [view, direct] = await Promise.all(
        ['view', 'direct'].map((source) => as(t, ['projects', `--source=${source}`, '-o', 'json'])),
      );
      // auto alone, so that the lists the view answers meanwhile are its own.
      const listedBefore = ownedProjectsLists(t);
      const auto = await as(t, ['projects', '--source=auto', '-o', 'json']);
      expect(
        ownedProjectsLists(t) - listedBefore,
        `${t}: OwnedProjects lists the view answered for --source=auto`,
      ).toBe(1);
      for (const r of [view, direct, auto]) expect(r!.exitCode, `${t}: ${r!.stderr}`).toBe(0);
      const names = (out: string) =>
        (JSON.parse(out) as { projects: Array<{ name: string; tenant: string; namespaces: string[] }> }).projects.map(
          (x) => [x.name, x.tenant, x.namespaces],
        );
      expect(names(view!.stdout), t).toEqual(names(direct!.stdout));
      expect(names(auto!.stdout), t).toEqual(names(view!.stdout));
      expect(
        names(view!.stdout).map((x) => x[0]),
        t,
      ).toEqual(TENANTS[t]!.owns.map(p));
      for (const project of TENANTS[t]!.owns.map(p)) {
        const [v, d] = await Promise.all(
          ['view', 'direct'].map((source) => as(t, ['headroom', project, `--source=${source}`, '-o', 'json'])),
        );
        expect(v!.exitCode, `${t} ${project}: ${v!.stderr}`).toBe(0);
        expect(JSON.parse(v!.stdout), `${t} ${project}`).toEqual(JSON.parse(d!.stdout));
      }
    }
  });
});
