/**
 * The Argo CD config-management plugin contract, exercised as argocd-cmp-server does it:
 * the BUILT CLI (`node dist/cli/main.js render .`) with the application's source directory as cwd
 * and the ARGOCD_* environment. Valid input: a YAML stream of objects on stdout, exit 0. Anything
 * wrong: nothing on stdout, `file:line:col: [ID] message` on stderr, exit 1 — never an empty success.
 */
import { execa } from 'execa';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { kustomizeBinary } from '../../src/cli/render.js';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'dist', 'cli', 'main.js');
const EXAMPLES = join(ROOT, 'examples');
const GOLDEN = join(ROOT, 'test', 'golden', 'render');

let scratch: string;

beforeAll(() => {
  if (!existsSync(BIN))
    throw new Error(`${BIN} is missing: run \`make build\` first (the plugin tests run the built tenantgate)`);
  scratch = mkdtempSync(join(tmpdir(), 'tenantgate-cmp-'));
});

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** A fresh application source directory, as the repo-server checks it out. */
function appDir(name: string, ...sources: string[]): string {
  const dir = join(scratch, name);
  mkdirSync(dir, { recursive: true });
  for (const source of sources) cpSync(source, join(dir, basename(source)), { recursive: true });
  return dir;
}

function copyContents(from: string, name: string): string {
  const dir = appDir(name);
  for (const entry of readdirSync(from)) cpSync(join(from, entry), join(dir, entry), { recursive: true });
  return dir;
}

/** The plugin's `generate.command` from manifests/argocd/plugin.yaml, `tenantgate` replaced by the built CLI. */
const GENERATE_ARGS: string[] = (() => {
  const command = (
    parse(readFileSync(join(ROOT, 'manifests', 'argocd', 'plugin.yaml'), 'utf8')) as {
      spec: { generate: { command: string[] } };
    }
  ).spec.generate.command;
  expect(command[0]).toBe('tenantgate');
  return command.slice(1);
})();

/** The golden render, as objects (the golden file is YAML; the plugin prints JSON documents). */
function goldenObjects(name: string): unknown[] {
  return parseAllDocuments(readFileSync(join(GOLDEN, name), 'utf8')).map((d) => d.toJS());
}

/** `generate` of plugin.yaml, run in the app directory with Argo CD's variables set. */
async function generate(cwd: string, env: Record<string, string> = {}) {
  return execa(process.execPath, [BIN, ...GENERATE_ARGS], {
    cwd,
    reject: false,
    stripFinalNewline: false, // the stream exactly as Argo CD reads it
    extendEnv: false,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: scratch,
      ...(process.env.TENANTGATE_KUSTOMIZE ? { TENANTGATE_KUSTOMIZE: process.env.TENANTGATE_KUSTOMIZE } : {}),
      ARGOCD_APP_NAME: 'tenants',
      ARGOCD_APP_NAMESPACE: 'argocd',
      ARGOCD_APP_SOURCE_PATH: 'tenants/prod',
      ARGOCD_APP_SOURCE_REPO_URL: 'https://git.example.com/platform/tenants.git',
      ARGOCD_APP_REVISION: '0123456789abcdef0123456789abcdef01234567',
      ...env,
    },
  });
}

/** What Argo CD does with the output: a stream of objects, each with apiVersion, kind and metadata.name. */
function manifests(
  stdout: string,
): Array<
  { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } } & Record<string, unknown>
> {
  const docs = parseAllDocuments(stdout);
  const list = Array.isArray(docs) ? docs : [docs];
  expect(list.length).toBeGreaterThan(0);
  return list.map((d) => {
    expect(d.errors).toEqual([]);
    const o = d.toJS() as { apiVersion: string; kind: string; metadata: { name: string } };
    expect(typeof o.apiVersion).toBe('string');
    expect(typeof o.kind).toBe('string');
    expect(typeof o.metadata?.name).toBe('string');
    return o;
  });
}

const FINDING = /^(?<file>[^:]+):(?<line>\d+):(?<col>\d+): \[(?<rule>[A-Z]\d)\] .+$/;

describe('tenantgate render as an Argo CD CMP (built CLI)', () => {
  it('renders examples/gitops: exit 0, the golden stream on stdout, nothing on stderr', async () => {
    const dir = copyContents(join(EXAMPLES, 'gitops'), 'gitops');
    const result = await generate(dir);
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    expect(manifests(result.stdout)).toEqual(goldenObjects('gitops.yaml'));
    expect(result.stdout.startsWith('---\n') && result.stdout.endsWith('\n')).toBe(true);
    const objects = manifests(result.stdout);
    expect(objects[0]!.kind).toBe('Project');
    expect(objects.filter((o) => o.kind === 'Namespace').length).toBe(13);
  });

  it('ARGOCD_ENV_CLUSTER=prod-eu selects that cluster', async () => {
    const dir = copyContents(join(EXAMPLES, 'gitops'), 'gitops-eu');
    const result = await generate(dir, { ARGOCD_ENV_CLUSTER: 'prod-eu' });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(manifests(result.stdout)).toEqual(goldenObjects('gitops-prod-eu.yaml'));
    expect(manifests(result.stdout).some((o) => o.kind === 'Namespace' && o.metadata.name === 'payments-api')).toBe(
      true,
    );
  });

  it('is byte-identical across runs and working directories', async () => {
    const a = await generate(copyContents(join(EXAMPLES, 'gitops'), 'gitops-a'));
    const b = await generate(copyContents(join(EXAMPLES, 'gitops'), 'gitops-b'));
    expect(a.stdout).toBe(b.stdout);
  });

  const invalid = readdirSync(join(EXAMPLES, 'invalid')).filter((f) => f.endsWith('.yaml'));
  it.each(invalid)('invalid input %s: nothing on stdout, exit 1, file:line:col: [ID] on stderr', async (file) => {
    const dir = appDir(`invalid-${file}`, join(EXAMPLES, 'invalid', file));
    const result = await generate(dir);
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trim().split('\n');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      const m = FINDING.exec(line);
      expect(m, line).not.toBeNull();
      expect(m!.groups!.file).toBe(file);
      expect(m!.groups!.rule).toBe(file.slice(0, 2));
    }
  });

  it('one invalid file among valid ones: nothing at all on stdout (Argo CD never syncs half a render)', async () => {
    const dir = copyContents(join(EXAMPLES, 'gitops'), 'mixed');
    cpSync(join(EXAMPLES, 'invalid', 'Q1-over-budget.yaml'), join(dir, 'zz-shop.yaml'));
    const result = await generate(dir);
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      /^zz-shop\.yaml:9:26: \[Q1\] project shop: namespaces allocate requests\.cpu 4500m but the budget is 4/m,
    );
  });

  it('a YAML syntax error: nothing on stdout, exit 1, its position on stderr', async () => {
    const dir = appDir('broken', join(ROOT, 'test', 'fixtures', 'cli', 'broken.yaml'));
    const result = await generate(dir);
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^broken\.yaml:7:1: \[S1\] YAML: /);
  });

  it('an empty directory, or one with only tenantgate.yaml, fails: never an empty success', async () => {
    const empty = appDir('empty');
    const result = await generate(empty);
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('no Project declarations found');
    const configOnly = appDir('config-only', join(EXAMPLES, 'gitops', 'tenantgate.yaml'));
    const again = await generate(configOnly);
    expect(again.exitCode).toBe(1);
    expect(again.stdout).toBe('');
  });

  it('a broken tenantgate.yaml fails with its message', async () => {
    const dir = copyContents(join(EXAMPLES, 'gitops'), 'bad-config');
    writeFileSync(join(dir, 'tenantgate.yaml'), 'namespacePrefx: "{project}-"\n');
    const result = await generate(dir);
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('tenantgate.yaml: namespacePrefx is not a known key; allowed: ');
  });
});

describe('kustomize directories (R1)', () => {
  function requireKustomize(): string {
    const bin = kustomizeBinary();
    if (
      bin === 'kustomize'
        ? !process.env.PATH?.split(':').some((p) => existsSync(join(p, 'kustomize')))
        : !existsSync(bin)
    ) {
      throw new Error(
        'kustomize is not installed (render runs `kustomize build` for kustomization.yaml): run `make kustomize` first',
      );
    }
    return bin;
  }

  it('builds examples/kustomize: the Project rendered, the ConfigMap passed through unchanged', async () => {
    requireKustomize();
    const dir = copyContents(join(EXAMPLES, 'kustomize'), 'kustomize');
    const result = await generate(dir);
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    const objects = manifests(result.stdout);
    expect(objects.map((o) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`)).toEqual([
      'Project//docs',
      'Namespace//docs-site',
      'ResourceQuota/docs-site/tenantgate-quota',
      'RoleBinding/docs-site/tenantgate-owners',
      'AllowList/docs-site/tenantgate-allow',
      'ConfigMap/tenantgate-system/docs-team',
    ]);
    const declared = parse(readFileSync(join(EXAMPLES, 'kustomize', 'projects.yaml'), 'utf8')) as { spec: unknown };
    expect(objects[0]!.spec).toEqual(declared.spec);
    expect(objects[5]).toEqual(parse(readFileSync(join(EXAMPLES, 'kustomize', 'team-configmap.yaml'), 'utf8')));
  });

  it('a failing kustomize build fails the render', async () => {
    requireKustomize();
    const dir = copyContents(join(EXAMPLES, 'kustomize'), 'kustomize-broken');
    writeFileSync(join(dir, 'kustomization.yaml'), 'resources:\n  - missing.yaml\n');
    const result = await generate(dir);
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('kustomize build failed');
  });
});
