/**
 * `tenantgate render --app-projects` (ARGOCD_ENV_APP_PROJECTS=true in the plugin): one Argo CD AppProject
 * per tenant, against a reviewed golden file (test/golden/render/gitops-app-projects.yaml; UPDATE_GOLDEN=1
 * rewrites it), and checked field by field against the declarations of examples/gitops. Off by default:
 * then the output is the golden render of test/render-golden.test.ts byte for byte.
 */
import { execa } from 'execa';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { APP_PROJECTS_ENV, renderDirectory } from '../../src/cli/render.js';
import { DEFAULT_CONFIG, parseConfig } from '../../src/config/config.js';
import { appProjectsFor, destinationOf, TENANT_BLACKLIST } from '../../src/render/app-projects.js';
import type { Project } from '../../src/validate/types.js';

const ROOT = join(import.meta.dirname, '..', '..');
const GITOPS = join(ROOT, 'examples', 'gitops');
const GOLDEN = join(ROOT, 'test', 'golden', 'render');
const BIN = join(ROOT, 'dist', 'cli', 'main.js');
const UPDATE = process.env.UPDATE_GOLDEN === '1';

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
}
interface AppProjectSpec {
  sourceRepos: string[];
  destinations: Array<{ server?: string; name?: string; namespace: string }>;
  clusterResourceWhitelist: unknown[];
  namespaceResourceBlacklist: Array<{ group: string; kind: string }>;
}

const docs = (stream: string): string[] => stream.split(/^---\n/m).filter((d) => d.trim() !== '');
const objects = (stream: string): Obj[] => parseAllDocuments(stream).map((d) => d.toJS() as Obj);

async function render(
  env: Record<string, string> = {},
  flags: { appProjects?: boolean } = {},
  dir = GITOPS,
): Promise<string> {
  const result = await renderDirectory(dir, env, 'yaml', flags);
  expect(result.errors).toEqual([]);
  return result.output!;
}

const declarations = (): Project[] =>
  readdirSync(GITOPS)
    .filter((f) => f !== 'tenantgate.yaml' && f.endsWith('.yaml'))
    .flatMap((f) => parseAllDocuments(readFileSync(join(GITOPS, f), 'utf8')).map((d) => d.toJS() as Project));

let scratch: string;
beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'tenantgate-appprojects-'));
});
afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** examples/gitops with another tenantgate.yaml. */
function gitopsWithConfig(name: string, config: string): string {
  const dir = join(scratch, name);
  mkdirSync(dir, { recursive: true });
  cpSync(GITOPS, dir, { recursive: true });
  // The example's price sheet stays: its Project ml has a costBudget, which render refuses without one (C1).
  const pricing = readFileSync(join(GITOPS, 'tenantgate.yaml'), 'utf8').split(/^(?=pricing:)/m)[1] ?? '';
  writeFileSync(join(dir, 'tenantgate.yaml'), `${config}\n${pricing}`);
  return dir;
}

describe('render --app-projects on examples/gitops', () => {
  it('matches test/golden/render/gitops-app-projects.yaml', async () => {
    const appProjects = docs(await render({}, { appProjects: true })).filter((d) => /^kind: AppProject$/m.test(d));
    const actual = appProjects.map((d) => `---\n${d}`).join('');
    const file = join(GOLDEN, 'gitops-app-projects.yaml');
    if (UPDATE) writeFileSync(file, actual);
    if (!existsSync(file))
      throw new Error(
        `${file} is missing: UPDATE_GOLDEN=1 npx vitest run --project unit render-app-projects, and review it`,
      );
    expect(actual, `AppProjects differ from ${file} (UPDATE_GOLDEN=1 rewrites it)`).toBe(readFileSync(file, 'utf8'));
  });

  it.each(['', 'prod-eu', 'prod-us'])(
    'for cluster %j: the default render with the AppProjects inserted after the Projects, nothing else changed',
    async (cluster) => {
      const env: Record<string, string> = cluster ? { ARGOCD_ENV_CLUSTER: cluster } : {};
      const off = docs(await render(env));
      const on = docs(await render(env, { appProjects: true }));
      const projects = off.filter((d) => /^kind: Project$/m.test(d)).length;
      expect(projects).toBe(7);
      const inserted = on.slice(projects, projects + 3);
      expect(inserted.every((d) => /^kind: AppProject$/m.test(d))).toBe(true);
      expect([...on.slice(0, projects), ...on.slice(projects + 3)]).toEqual(off);
      // The AppProjects cover every cluster, whichever cluster is rendered for.
      expect(inserted).toEqual(docs(await render({}, { appProjects: true })).slice(projects, projects + 3));
      expect(
        objects(inserted.join('---\n')).map((o) => o.metadata.annotations?.['argocd.argoproj.io/sync-wave']),
      ).toEqual(['-2', '-2', '-2']);
    },
  );

  it('one per tenant, named tenant-<tenant> in argocd: destinations are exactly the declared namespaces on their clusters', async () => {
    const appProjects = objects(await render({}, { appProjects: true })).filter((o) => o.kind === 'AppProject');
    const projects = declarations();
    const tenants = [...new Set(projects.map((p) => p.spec.tenant))].sort();
    expect(tenants).toEqual(['acme', 'globex', 'initech']);
    expect(appProjects.map((a) => a.metadata.name)).toEqual(tenants.map((t) => `tenant-${t}`));
    for (const a of appProjects) {
      const tenant = a.metadata.labels!['tenantgate.io/tenant']!;
      expect(a).toMatchObject({
        apiVersion: 'argoproj.io/v1alpha1',
        metadata: { namespace: 'argocd', labels: { 'app.kubernetes.io/managed-by': 'tenantgate' } },
      });
      const spec = a.spec as unknown as AppProjectSpec;
      const expected = projects
        .filter((p) => p.spec.tenant === tenant)
        .flatMap((p) => p.spec.namespaces ?? [])
        .map((ns) =>
          ns.cluster ? `name=${ns.cluster} ${ns.name}` : `server=https://kubernetes.default.svc ${ns.name}`,
        )
        .sort();
      expect(
        spec.destinations
          .map((d) => (d.name ? `name=${d.name} ${d.namespace}` : `server=${d.server} ${d.namespace}`))
          .sort(),
      ).toEqual(expected);
      for (const d of spec.destinations) expect(`${d.server ?? ''}${d.name ?? ''}${d.namespace}`).not.toContain('*');
      expect(spec.clusterResourceWhitelist).toEqual([]);
      expect(spec.namespaceResourceBlacklist).toEqual([
        { group: '', kind: 'LimitRange' },
        { group: '', kind: 'ResourceQuota' },
        { group: 'networking.k8s.io', kind: 'NetworkPolicy' },
        { group: 'rbac.authorization.k8s.io', kind: 'RoleBinding' },
        { group: 'tenantgate.io', kind: 'AllowList' },
      ]);
      // examples/gitops/tenantgate.yaml: https://git.example.com/{tenant}/*
      expect(spec.sourceRepos).toEqual([`https://git.example.com/${tenant}/*`]);
    }
    // Every kind render puts into a tenant namespace is blacklisted.
    const rendered = new Set(
      objects(await render({ ARGOCD_ENV_CLUSTER: 'prod-eu' }))
        .filter((o) => o.metadata.namespace)
        .map((o) => o.kind),
    );
    expect([...rendered].sort()).toEqual(TENANT_BLACKLIST.map((k) => k.kind).sort());
  });

  it('ARGOCD_ENV_APP_PROJECTS=true (any case) turns it on, false or empty leaves the default render; anything else is an error naming the variable', async () => {
    expect(await render({ [APP_PROJECTS_ENV]: 'TRUE' })).toBe(await render({}, { appProjects: true }));
    expect(await render({ [APP_PROJECTS_ENV]: 'false' })).toBe(await render());
    expect(await render({ [APP_PROJECTS_ENV]: '' })).toBe(await render());
    expect(await render()).toBe(readFileSync(join(GOLDEN, 'gitops.yaml'), 'utf8'));
    const bad = await renderDirectory(GITOPS, { [APP_PROJECTS_ENV]: 'yes' });
    expect(bad.output).toBeUndefined();
    expect(bad.errors).toEqual([
      `ARGOCD_ENV_APP_PROJECTS is "yes"; allowed: "true" or "false" (the Application's plugin env APP_PROJECTS)`,
    ]);
  });

  it('refuses to emit AppProjects while argocd.sourceRepos is empty (the default), naming the key and what is allowed', async () => {
    const dir = gitopsWithConfig('no-repos', 'clusterName: ""\n');
    expect((await renderDirectory(dir, {})).errors).toEqual([]);
    const result = await renderDirectory(dir, {}, 'yaml', { appProjects: true });
    expect(result.output).toBeUndefined();
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]).toContain('tenantgate.yaml: argocd.sourceRepos is empty');
    expect(result.errors[0]).toContain('allowed: a list of repository URLs or globs');
  });

  it('takes argocd.namespace, defaultServer and clusterServers from tenantgate.yaml; {tenant} in sourceRepos; repositories deduplicated and sorted', async () => {
    const dir = gitopsWithConfig(
      'configured',
      stringify({
        argocd: {
          namespace: 'gitops',
          sourceRepos: [
            'https://git.example.com/{tenant}/apps.git',
            'https://git.example.com/shared/*',
            'https://git.example.com/shared/*',
          ],
          defaultServer: 'https://hub.example.com:6443',
          clusterServers: { 'prod-eu': 'https://eu.example.com:6443' },
        },
      }),
    );
    const globex = objects(await render({}, { appProjects: true }, dir)).find(
      (o) => o.kind === 'AppProject' && o.metadata.name === 'tenant-globex',
    )!;
    expect(globex.metadata.namespace).toBe('gitops');
    const spec = globex.spec as unknown as AppProjectSpec;
    expect(spec.sourceRepos).toEqual(['https://git.example.com/globex/apps.git', 'https://git.example.com/shared/*']);
    expect(spec.destinations).toEqual([
      { server: 'https://eu.example.com:6443', namespace: 'data-ingest-eu' },
      { name: 'prod-us', namespace: 'data-ingest-us' },
      { server: 'https://hub.example.com:6443', namespace: 'data-warehouse' },
      { server: 'https://hub.example.com:6443', namespace: 'ml-serving' },
      { server: 'https://hub.example.com:6443', namespace: 'ml-training' },
    ]);
  });
});

describe('appProjectsFor (pure)', () => {
  const project = (name: string, tenant: string, namespaces: Array<{ name: string; cluster?: string }>): Project =>
    ({
      apiVersion: 'tenantgate.io/v1alpha1',
      kind: 'Project',
      metadata: { name },
      spec: { tenant, owners: [], namespaces },
    }) as unknown as Project;
  const argocd = { ...DEFAULT_CONFIG.argocd, sourceRepos: ['*'] };

  it('is the same whatever the order of the Projects and their namespaces', () => {
    const a = project('a', 't1', [{ name: 'a-2' }, { name: 'a-1', cluster: 'east' }]);
    const b = project('b', 't2', [{ name: 'b-1' }]);
    const c = project('c', 't1', [{ name: 'c-1' }]);
    const one = JSON.stringify(appProjectsFor([a, b, c], argocd, '-2'));
    expect(JSON.stringify(appProjectsFor([c, b, a], argocd, '-2'))).toBe(one);
    expect(
      JSON.stringify(
        appProjectsFor(
          [b, { ...a, spec: { ...a.spec, namespaces: [...a.spec.namespaces!].reverse() } }, c],
          argocd,
          '-2',
        ),
      ),
    ).toBe(one);
    expect(
      appProjectsFor([a, b, c], argocd, '-2').map((p) => [
        p.metadata.name,
        p.spec.destinations.map((d) => d.namespace),
      ]),
    ).toEqual([
      ['tenant-t1', ['a-1', 'a-2', 'c-1']],
      ['tenant-t2', ['b-1']],
    ]);
  });

  it('no destinationServiceAccounts unless syncServiceAccount is set; then one for every destination, {tenant} replaced', () => {
    const p = project('p', 'acme', [{ name: 'p-1' }]);
    expect(appProjectsFor([p], argocd, '-2')[0]!.spec).not.toHaveProperty('destinationServiceAccounts');
    const [withSa] = appProjectsFor([p], { ...argocd, syncServiceAccount: 'argocd:tenant-{tenant}' }, '-2');
    expect(withSa!.spec.destinationServiceAccounts).toEqual([
      { server: '*', namespace: '*', defaultServiceAccount: 'argocd:tenant-acme' },
    ]);
  });

  it('a tenant without declared namespaces gets an AppProject with no destination (it permits nothing)', () => {
    const [only] = appProjectsFor([project('p', 'lonely', [])], argocd, '-2');
    expect(only!.spec.destinations).toEqual([]);
  });

  it('destinationOf: no cluster → defaultServer; a listed cluster → its server; any other → the Argo CD cluster name', () => {
    const config = { ...argocd, clusterServers: { east: 'https://east:6443' } };
    expect(destinationOf(config, undefined, 'n')).toEqual({ server: 'https://kubernetes.default.svc', namespace: 'n' });
    expect(destinationOf(config, 'east', 'n')).toEqual({ server: 'https://east:6443', namespace: 'n' });
    expect(destinationOf(config, 'west', 'n')).toEqual({ name: 'west', namespace: 'n' });
  });
});

describe('tenantgate.yaml argocd', () => {
  const errorOf = (text: string): string => {
    try {
      parseConfig(text);
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error(`${text} was accepted`);
  };

  it('defaults: namespace argocd, no repositories, the in-cluster server, no cluster servers, no sync ServiceAccount', () => {
    expect(parseConfig('').argocd).toEqual({
      namespace: 'argocd',
      sourceRepos: [],
      defaultServer: 'https://kubernetes.default.svc',
      clusterServers: {},
      syncServiceAccount: '',
    });
  });

  it('syncServiceAccount: [namespace:]name with {tenant}, anything else refused with what is allowed', () => {
    expect(parseConfig('argocd: {syncServiceAccount: "argocd:tenant-{tenant}"}').argocd.syncServiceAccount).toBe(
      'argocd:tenant-{tenant}',
    );
    expect(parseConfig('argocd: {syncServiceAccount: "{tenant}-deployer"}').argocd.syncServiceAccount).toBe(
      '{tenant}-deployer',
    );
    for (const bad of ['argocd:Deployer', 'a::b', '{tenant', 'argocd:']) {
      expect(errorOf(`argocd: {syncServiceAccount: "${bad}"}`)).toBe(
        `tenantgate.yaml: argocd.syncServiceAccount is "${bad}"; allowed: "" or a ServiceAccount as namespace:name or name, {tenant} allowed, such as argocd:tenant-{tenant}`,
      );
    }
  });

  it('refuses unknown keys, a namespace that is no DNS label, an empty repository and a cluster name that is no DNS label', () => {
    expect(errorOf('argocd: {sourcerepos: []}')).toBe(
      'tenantgate.yaml: argocd.sourcerepos is not a known key; allowed: namespace, sourceRepos, defaultServer, clusterServers, syncServiceAccount',
    );
    expect(errorOf('argocd: {namespace: Argo_CD}')).toContain(
      'argocd.namespace is "Argo_CD"; allowed: a DNS-1123 label',
    );
    expect(errorOf('argocd: {sourceRepos: [""]}')).toContain(
      'argocd.sourceRepos[0] is ""; allowed: a non-empty string',
    );
    expect(errorOf('argocd: {clusterServers: {Prod_EU: https://x}}')).toBe(
      'tenantgate.yaml: argocd.clusterServers.Prod_EU is not an allowed key; allowed: a DNS-1123 label (lowercase letters, digits and "-", at most 63 characters)',
    );
    expect(errorOf('argocd: {clusterServers: {prod-eu: 6443}}')).toContain(
      'argocd.clusterServers.prod-eu is 6443; allowed: a string',
    );
  });
});

describe('the plugin (built CLI, generate command of manifests/argocd/plugin.yaml)', () => {
  const generate = (
    parse(readFileSync(join(ROOT, 'manifests', 'argocd', 'plugin.yaml'), 'utf8')) as {
      spec: { generate: { command: string[] } };
    }
  ).spec.generate.command.slice(1);
  const run = (args: string[], env: Record<string, string>) =>
    execa(process.execPath, [BIN, ...args], {
      cwd: GITOPS,
      reject: false,
      extendEnv: false,
      env: { PATH: process.env.PATH ?? '', ...env },
    });

  it('ARGOCD_ENV_APP_PROJECTS=true and --app-projects print the AppProjects; without either, none', async () => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`make build\``);
    const kinds = (stdout: string) => objects(stdout).map((o) => o.kind);
    const withEnv = await run(generate, { ARGOCD_ENV_APP_PROJECTS: 'true' });
    expect(withEnv.exitCode, withEnv.stderr).toBe(0);
    expect(kinds(withEnv.stdout).filter((k) => k === 'AppProject')).toHaveLength(3);
    const withFlag = await run(['render', '--app-projects', '.'], {});
    expect(withFlag.exitCode, withFlag.stderr).toBe(0);
    expect(objects(withFlag.stdout).filter((o) => o.kind === 'AppProject')).toEqual(
      objects(withEnv.stdout).filter((o) => o.kind === 'AppProject'),
    );
    const without = await run(generate, {});
    expect(without.exitCode, without.stderr).toBe(0);
    expect(kinds(without.stdout)).not.toContain('AppProject');
    const bad = await run(generate, { ARGOCD_ENV_APP_PROJECTS: '1' });
    expect(bad.exitCode).toBe(1);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toContain('ARGOCD_ENV_APP_PROJECTS is "1"; allowed: "true" or "false"');
  });
});
