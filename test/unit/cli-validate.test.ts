/**
 * `tenantgate validate` as users and git run it: the BUILT CLI (dist/cli/main.js) through execa, on
 * examples/invalid (one file per rule), examples/gitops, `--output json`, and as a git pre-commit
 * hook generated from .pre-commit-hooks.yaml in a scratch repository.
 */
import { execa } from 'execa';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'dist', 'cli', 'main.js');
const INVALID = 'examples/invalid';
const FIXTURES = join(ROOT, 'test', 'fixtures', 'cli');

function requireBuild(): void {
  if (!existsSync(BIN))
    throw new Error(`${BIN} is missing: run \`make build\` first (the CLI tests run the built tenantgate)`);
}

async function tenantgate(args: string[], cwd = ROOT) {
  return execa(process.execPath, [BIN, ...args], { cwd, reject: false, env: { NO_COLOR: '1' } });
}

const FINDING = /^(?<file>[^:]+):(?<line>\d+):(?<col>\d+): \[(?<rule>[A-Z]\d)\] (?<message>.+)$/;

function findings(stderr: string): Array<{ file: string; line: number; col: number; rule: string; message: string }> {
  return stderr
    .split('\n')
    .filter((l) => l !== '')
    .map((line) => {
      const m = FINDING.exec(line);
      if (!m) throw new Error(`not a file:line:col: [ID] finding: ${JSON.stringify(line)}`);
      const g = m.groups!;
      return { file: g.file!, line: Number(g.line), col: Number(g.col), rule: g.rule!, message: g.message! };
    });
}

/** Where each example's findings are: reviewed against the files (the offending value's position). */
const EXPECTED: Record<string, Array<[string, number, number]>> = {
  'B1-burst-window.yaml': [['B1', 13, 14]],
  'C1-cost-budget-without-pricing.yaml': [['C1', 9, 25]],
  'H3-hostname-overlap.yaml': [['H3', 18, 46]],
  'N1-project-name.yaml': [['N1', 5, 9]],
  'N2-namespace-prefix.yaml': [['N2', 9, 13]],
  'N3-namespace-twice.yaml': [['N3', 10, 13]],
  'N4-prefix-overlap.yaml': [
    ['N4', 5, 9],
    ['N4', 12, 9],
  ],
  'Q1-over-budget.yaml': [['Q1', 9, 26]],
  'Q2-uncovered.yaml': [['Q2', 12, 14]],
  'S1-quota-key.yaml': [['S1', 11, 30]],
  'S1-schema.yaml': [
    ['S1', 9, 14],
    ['S1', 11, 26],
  ],
};

beforeAll(requireBuild);

describe('tenantgate validate (built CLI)', () => {
  const files = readdirSync(join(ROOT, INVALID))
    .filter((f) => f.endsWith('.yaml'))
    .sort();

  it('has an example for every offline rule', () => {
    expect(files).toEqual(Object.keys(EXPECTED).sort());
  });

  it.each(files)('examples/invalid/%s: exit 1, only its rule, as file:line:col: [ID] message', async (name) => {
    const file = `${INVALID}/${name}`;
    const rule = name.slice(0, 2);
    const result = await tenantgate(['validate', file]);
    expect(result.exitCode, result.stderr).toBe(1);
    expect(result.stdout).toBe('');
    const found = findings(result.stderr);
    expect(found.length).toBeGreaterThan(0);
    for (const f of found) {
      expect(f.file).toBe(file);
      expect(f.rule).toBe(rule);
    }
    expect(found.map((f) => [f.rule, f.line, f.col])).toEqual(EXPECTED[name]);
  });

  it('messages name the object, the values and what is allowed', async () => {
    const q1 = findings((await tenantgate(['validate', `${INVALID}/Q1-over-budget.yaml`])).stderr)[0]!;
    expect(q1.message).toBe(
      'project shop: namespaces allocate requests.cpu 4500m but the budget is 4 (shop-api 3500m, shop-web 1 (defaults)): 500m over',
    );
    const n2 = findings((await tenantgate(['validate', `${INVALID}/N2-namespace-prefix.yaml`])).stderr)[0]!;
    expect(n2.message).toContain(
      'namespace "checkout" is not allowed: a namespace of project shop must start with "shop-"',
    );
    const s1 = findings((await tenantgate(['validate', `${INVALID}/S1-schema.yaml`])).stderr);
    expect(s1.map((f) => f.message)).toEqual([
      'Project shop: spec.owners[0].kind is "Robot", must be one of User, Group, ServiceAccount',
      'Project shop: spec.quota.hard[requests.cpu] is "lots", must be a Kubernetes quantity such as 500m, 2, 1.5Gi',
    ]);
  });

  it('T1 with --previous: exit 1 and only [T1], at spec.tenant', async () => {
    const before = `${INVALID}/T1-tenant-changed/before.yaml`;
    const after = `${INVALID}/T1-tenant-changed/after.yaml`;
    const result = await tenantgate(['validate', '--previous', before, after]);
    expect(result.exitCode).toBe(1);
    const found = findings(result.stderr);
    expect(found).toEqual([
      {
        file: after,
        line: 7,
        col: 11,
        rule: 'T1',
        message:
          'Project shop: spec.tenant is immutable (was "acme", now "globex"); create a new project for another tenant',
      },
    ]);
    // without the previous version there is nothing to compare with
    expect((await tenantgate(['validate', after])).exitCode).toBe(0);
  });

  it('several files at once: every finding of every file, sorted by file', async () => {
    const result = await tenantgate(['validate', ...files.map((f) => `${INVALID}/${f}`)]);
    expect(result.exitCode).toBe(1);
    const found = findings(result.stderr);
    expect(found.map((f) => f.file)).toEqual([...found.map((f) => f.file)].sort());
    // N3 also fires across files (shop is declared in several), so check inclusion per rule
    expect(new Set(found.map((f) => f.rule))).toEqual(
      new Set(['B1', 'C1', 'H3', 'N1', 'N2', 'N3', 'N4', 'Q1', 'Q2', 'S1']),
    );
  });

  it('examples/gitops is valid: exit 0', async () => {
    const result = await tenantgate(['validate', 'examples/gitops']);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stderr.trim()).toBe('7 project(s) valid');
  });

  it('--output json: parses, lists the findings with file, line, col, rule and message', async () => {
    const bad = await tenantgate(['validate', '--output', 'json', `${INVALID}/N4-prefix-overlap.yaml`]);
    expect(bad.exitCode).toBe(1);
    const report = JSON.parse(bad.stdout) as { projects: number; findings: unknown[] };
    expect(report.projects).toBe(2);
    expect(report.findings).toEqual([
      {
        file: `${INVALID}/N4-prefix-overlap.yaml`,
        line: 5,
        col: 9,
        rule: 'N4',
        message: expect.stringContaining('"pay-" overlaps the prefix "pay-eu-"'),
      },
      {
        file: `${INVALID}/N4-prefix-overlap.yaml`,
        line: 12,
        col: 9,
        rule: 'N4',
        message: expect.stringContaining('"pay-eu-" overlaps the prefix "pay-"'),
      },
    ]);
    const good = await tenantgate(['validate', '--output', 'json', 'examples/gitops']);
    expect(good.exitCode).toBe(0);
    expect(JSON.parse(good.stdout)).toEqual({ projects: 7, findings: [] });
  });

  it('reports YAML syntax errors as S1 with their position', async () => {
    const result = await tenantgate(['validate', join('test', 'fixtures', 'cli', 'broken.yaml')]);
    expect(result.exitCode).toBe(1);
    const found = findings(result.stderr);
    expect(found.map((f) => [f.rule, f.line])).toEqual([['S1', 7]]); // the library reports the unterminated map at the end of input
    expect(found[0]!.message).toMatch(/^YAML: /);
  });

  it('usage errors exit 2', async () => {
    expect((await tenantgate(['validate'])).exitCode).toBe(2);
    expect((await tenantgate(['validate', '--output', 'xml', 'examples/gitops'])).exitCode).toBe(2);
  });
});

describe('as a git pre-commit hook (from .pre-commit-hooks.yaml)', () => {
  let repo: string;
  const git = (...args: string[]) =>
    execa('git', args, { cwd: repo, reject: false, env: { GIT_CONFIG_NOSYSTEM: '1', HOME: repo } });
  const commits = async () => Number((await git('rev-list', '--count', 'HEAD')).stdout || '0');

  beforeAll(async () => {
    repo = mkdtempSync(join(tmpdir(), 'tenantgate-precommit-'));
    await git('init', '-q', '-b', 'main');
    await git('config', 'user.name', 'Test');
    await git('config', 'user.email', 'test@example.com');
    await git('config', 'commit.gpgsign', 'false');
    await git('config', 'core.hooksPath', '.git/hooks');
    // The hook as pre-commit would run it: staged files matching `files`, entry + args + filenames,
    // with `tenantgate` being the built CLI.
    const [hook] = parse(readFileSync(join(ROOT, '.pre-commit-hooks.yaml'), 'utf8')) as Array<{
      id: string;
      entry: string;
      args?: string[];
      files: string;
      pass_filenames: boolean;
      language: string;
    }>;
    expect(hook).toMatchObject({
      id: 'tenantgate-validate',
      entry: 'tenantgate validate',
      language: 'node',
      files: '\\.ya?ml$',
      pass_filenames: true,
    });
    const command = hook!.entry.replace(/^tenantgate\b/, `"${process.execPath}" "${BIN}"`);
    const script = [
      '#!/bin/sh',
      `files=$(git diff --cached --name-only --diff-filter=ACM | grep -E '${hook!.files}' || true)`,
      '[ -z "$files" ] && exit 0',
      `exec ${command} ${(hook!.args ?? []).join(' ')} $files`,
      '',
    ].join('\n');
    writeFileSync(join(repo, '.git', 'hooks', 'pre-commit'), script);
    chmodSync(join(repo, '.git', 'hooks', 'pre-commit'), 0o755);
  });

  afterAll(() => {
    if (repo) rmSync(repo, { recursive: true, force: true });
  });

  const fixture = (name: string) => readFileSync(join(FIXTURES, name), 'utf8');

  it('commits a valid project', async () => {
    writeFileSync(join(repo, 'shop.yaml'), fixture('shop.yaml'));
    writeFileSync(join(repo, 'README.md'), 'not yaml\n');
    await git('add', '.');
    const result = await git('commit', '-q', '-m', 'shop');
    expect(result.exitCode, result.stderr).toBe(0);
    expect(await commits()).toBe(1);
  });

  it('refuses a change of spec.tenant (T1 against HEAD); the commit does not happen', async () => {
    writeFileSync(join(repo, 'shop.yaml'), fixture('shop.yaml').replace('tenant: acme', 'tenant: globex'));
    await git('add', 'shop.yaml');
    const result = await git('commit', '-q', '-m', 'move shop to globex');
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toMatch(
      /^shop\.yaml:\d+:\d+: \[T1\] Project shop: spec\.tenant is immutable \(was "acme", now "globex"\)/m,
    );
    expect(await commits()).toBe(1);
    await git('reset', '-q', '--hard', 'HEAD');
  });

  it('refuses an over-budget change (Q1); the commit does not happen', async () => {
    writeFileSync(join(repo, 'shop.yaml'), fixture('shop.yaml').replace('requests.cpu: "3"', 'requests.cpu: "5"'));
    await git('add', 'shop.yaml');
    const result = await git('commit', '-q', '-m', 'more cpu for shop-api');
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toMatch(
      /^shop\.yaml:\d+:\d+: \[Q1\] project shop: namespaces allocate requests\.cpu 6 but the budget is 4/m,
    );
    expect(await commits()).toBe(1);
    await git('reset', '-q', '--hard', 'HEAD');
  });

  it('commits a valid change (a raised budget with it), and files that are not YAML pass untouched', async () => {
    writeFileSync(
      join(repo, 'shop.yaml'),
      fixture('shop.yaml')
        .replace('requests.cpu: "3"', 'requests.cpu: "5"')
        .replace('requests.cpu: "4"', 'requests.cpu: "6"'),
    );
    writeFileSync(join(repo, 'README.md'), 'still not yaml\n');
    await git('add', '.');
    const result = await git('commit', '-q', '-m', 'bigger shop');
    expect(result.exitCode, result.stderr).toBe(0);
    expect(await commits()).toBe(2);
  });
});
