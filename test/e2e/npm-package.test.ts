/**
 * The CLI as an npm package: `npm pack`, installed into an empty folder with production
 * dependencies only, runs `tenantgate validate` and `tenantgate render` on the examples.
 */
import { execa } from 'execa';
import { mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_VERSION } from '../support/package-version.js';
import { REPO_ROOT } from '../support/paths.js';

let bin: string;
let tarballPath: string;

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'tenantgate-npm-'));
  // The checkout is built (make build; a fresh clone builds in postinstall), so the package has dist/.
  await execa('npm', ['pack', '--pack-destination', dir], { cwd: REPO_ROOT, timeout: 180_000 });
  const tarball = (await readdir(dir)).find((f) => f.endsWith('.tgz'))!;
  tarballPath = join(dir, tarball);
  const app = join(dir, 'app');
  await execa('mkdir', ['-p', app]);
  await execa('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', '--prefix', app, tarballPath], {
    timeout: 300_000,
  });
  bin = join(app, 'node_modules', '.bin', 'tenantgate');
}, 480_000);

describe('tenantgate from its npm package', () => {
  it('holds only the built CLI, and no devDependencies get installed', async () => {
    const { stdout } = await execa('tar', ['-tzf', tarballPath]);
    const files = stdout.split('\n').filter(Boolean);
    expect(files).toContain('package/dist/cli/main.js');
    expect(files.some((f) => f.startsWith('package/src/') || f.startsWith('package/test/'))).toBe(false);
    const installed = await readdir(join(bin, '..', '..'));
    for (const dev of ['vitest', 'typescript', 'tsx', 'eslint']) expect(installed).not.toContain(dev);
  });

  it('validates: the valid examples pass, an invalid one fails with file:line:col and its rule', async () => {
    expect((await execa(bin, ['validate', join(REPO_ROOT, 'examples', 'gitops')], { reject: false })).exitCode).toBe(0);
    const bad = await execa(bin, ['validate', join(REPO_ROOT, 'examples', 'invalid', 'N2-namespace-prefix.yaml')], {
      reject: false,
    });
    expect(bad.exitCode).toBe(1);
    expect(bad.stderr).toMatch(/N2-namespace-prefix\.yaml:\d+:\d+: \[N2\] namespace "checkout" is not allowed/);
  });

  it('renders examples/gitops as the Argo CD plugin does', async () => {
    const out = await execa(bin, ['render', '--format', 'json', join(REPO_ROOT, 'examples', 'gitops')], {
      env: { ARGOCD_ENV_CLUSTER: 'prod-eu' },
    });
    const docs = out.stdout
      .split('\n---\n')
      .map((d) => d.replace(/^---\n/, '').trim())
      .filter(Boolean)
      .map((d) => JSON.parse(d) as { kind: string });
    expect(docs.filter((d) => d.kind === 'Project').length).toBeGreaterThan(0);
    expect(docs.filter((d) => d.kind === 'Namespace').length).toBeGreaterThan(0);
    expect((await execa(bin, ['--version'])).stdout.trim()).toBe(PACKAGE_VERSION);
  });
});
