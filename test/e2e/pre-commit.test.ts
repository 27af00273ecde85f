/**
 * The pre-commit hook as users consume it: a GitOps repository whose .pre-commit-config.yaml
 * names a local clone of this repository by `repo:` and `rev:`; pre-commit (Debian's package) installs
 * the hook as an npm package (`language: node`, its `prepare` builds dist/) and runs it on `git commit`.
 * A valid Project commits; an invalid one is refused with file:line:col and its rule, and nothing is committed.
 */
import { execa } from 'execa';
import { copyFile, mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/paths.js';

let gitops: string;
let env: NodeJS.ProcessEnv;
const git = (args: string[]) => execa('git', args, { cwd: gitops, env, reject: false });

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'tenantgate-pre-commit-'));
  // The hook's repository: a clone of this one, at the commit under test.
  const rev = (await execa('git', ['rev-parse', 'HEAD'], { cwd: REPO_ROOT })).stdout.trim();
  const hookRepo = join(dir, 'tenantgate.git');
  await execa('git', ['clone', '--quiet', '--bare', REPO_ROOT, hookRepo]);
  gitops = join(dir, 'gitops');
  // pre-commit's "system" node environment (nodeenv) runs the `nodejs` it finds on PATH; on these machines
  // that is Debian's Node 20, older than the 22.19 tenantgate needs, so this run's Node goes first as `nodejs`.
  const bin = join(dir, 'bin');
  await mkdir(bin);
  await symlink(process.execPath, join(bin, 'nodejs'));
  await symlink(process.execPath, join(bin, 'node'));
  env = {
    ...process.env,
    PATH: `${bin}:${process.env.PATH ?? ''}`,
    PRE_COMMIT_HOME: join(dir, 'pre-commit-home'),
    GIT_AUTHOR_NAME: 'alice',
    GIT_AUTHOR_EMAIL: 'alice@acme.example',
    GIT_COMMITTER_NAME: 'alice',
    GIT_COMMITTER_EMAIL: 'alice@acme.example',
  };
  await execa('git', ['init', '--quiet', '-b', 'main', gitops]);
  await writeFile(
    join(gitops, '.pre-commit-config.yaml'),
    `repos:\n  - repo: ${hookRepo}\n    rev: ${rev}\n    hooks: [{id: tenantgate-validate}]\n`,
  );
  await execa('pre-commit', ['install'], { cwd: gitops, env });
  // pre-commit clones the hook repository and installs it once (npm install + prepare + pack): minutes on a cold cache.
  const installed = await execa('pre-commit', ['install-hooks'], { cwd: gitops, env, reject: false, timeout: 600_000 });
  expect(installed.exitCode, installed.stderr + installed.stdout).toBe(0);
}, 660_000);

describe('tenantgate-validate from repo: + rev:', () => {
  it('lets a valid Project be committed', async () => {
    await copyFile(join(REPO_ROOT, 'examples', 'gitops', 'acme.yaml'), join(gitops, 'acme.yaml'));
    await git(['add', '.']);
    const commit = await git(['commit', '-m', 'acme projects']);
    expect(commit.exitCode, commit.stdout + commit.stderr).toBe(0);
    expect(commit.stdout + commit.stderr).toMatch(/tenantgate validate\.+Passed/);
  });

  it('refuses an invalid one with file:line:col and its rule; nothing is committed', async () => {
    const head = (await git(['rev-parse', 'HEAD'])).stdout.trim();
    await copyFile(join(REPO_ROOT, 'examples', 'invalid', 'N2-namespace-prefix.yaml'), join(gitops, 'shop.yaml'));
    await git(['add', 'shop.yaml']);
    const commit = await git(['commit', '-m', 'shop']);
    expect(commit.exitCode).not.toBe(0);
    expect(commit.stdout + commit.stderr).toMatch(/shop\.yaml:\d+:\d+: \[N2\] namespace "checkout" is not allowed/);
    expect((await git(['rev-parse', 'HEAD'])).stdout.trim()).toBe(head);
  });
});
