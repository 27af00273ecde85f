/**
 * The previous release, checked out and built apart from the working tree, for the upgrade test
 * (test/e2e/upgrade.test.ts, docs/releasing.md "Upgrading"): its chart and its `tenantgate` CLI.
 *
 * The release is the tag `v0.2.0` when the clone has it, else its commit by hash: a clone of a branch
 * fetches only the tags that point into it and a CI checkout may fetch none, but the release commit is
 * an ancestor of main, so its hash is always there. When both are there they must agree.
 */
import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT } from './paths.js';

export const PREVIOUS_RELEASE = {
  version: '0.2.0',
  tag: 'v0.2.0',
  commit: '76113bccfd0b2e08bdceae66f59d2c4827a85154',
} as const;

export interface PreviousRelease {
  version: string;
  /** The commit it was built from. */
  commit: string;
  /** How it was found: 'tag' or 'pinned commit'. */
  foundBy: string;
  /** Its Helm chart (charts/tenantgate of that commit). */
  chartDir: string;
  /** Its CLI, built from that commit's src/ (dist/cli/main.js). */
  cli: string;
}

const git = (args: string[]) => execa('git', ['-C', REPO_ROOT, ...args], { reject: false });

async function releaseCommit(): Promise<{ commit: string; foundBy: string }> {
  const tagged = await git(['rev-parse', '--verify', '--quiet', `refs/tags/${PREVIOUS_RELEASE.tag}^{commit}`]);
  if (tagged.exitCode === 0) {
    const commit = tagged.stdout.trim();
    if (commit !== PREVIOUS_RELEASE.commit)
      throw new Error(
        `tag ${PREVIOUS_RELEASE.tag} points at ${commit}, but test/support/previous-release.ts pins ${PREVIOUS_RELEASE.commit}: update the pin when a release is re-tagged (docs/releasing.md)`,
      );
    return { commit, foundBy: 'tag' };
  }
  const pinned = await git(['cat-file', '-e', `${PREVIOUS_RELEASE.commit}^{commit}`]);
  if (pinned.exitCode !== 0)
    throw new Error(
      `neither tag ${PREVIOUS_RELEASE.tag} nor commit ${PREVIOUS_RELEASE.commit} is in ${REPO_ROOT}: a shallow clone? fetch the history (git fetch --unshallow) or the tag`,
    );
  return { commit: PREVIOUS_RELEASE.commit, foundBy: 'pinned commit' };
}

/**
 * Extracts the release with `git archive` under .run/ and builds its dist/ with the working tree's
 * TypeScript. It runs on the working tree's node_modules (Node finds them walking up from .run/) when
 * package-lock.json is the same in both; otherwise the release's own lock is installed beside it
 * (`npm ci`, dev dependencies included), which shadows the working tree's.
 */
export async function buildPreviousRelease(): Promise<PreviousRelease> {
  const { commit, foundBy } = await releaseCommit();
  await mkdir(join(REPO_ROOT, '.run'), { recursive: true });
  const dir = await mkdtemp(join(REPO_ROOT, '.run', `release-${PREVIOUS_RELEASE.version}-`));
  await execa('bash', ['-c', `git -C "${REPO_ROOT}" archive --format=tar ${commit} | tar -x -C "${dir}"`]);
  const lockThen = await readFile(join(dir, 'package-lock.json'), 'utf8');
  const lockNow = await readFile(join(REPO_ROOT, 'package-lock.json'), 'utf8');
  // With its dev dependencies: the type packages it compiles against (node-forge's, which the working
  // tree no longer has since ADR 0034) are dev dependencies. About 30 s with npm's cache warm.
  if (lockThen !== lockNow)
    await execa('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, timeout: 600_000 });
  await execa(
    process.execPath,
    [join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir, 'tsconfig.json')],
    { timeout: 600_000 },
  );
  const cli = join(dir, 'dist', 'cli', 'main.js');
  if (!existsSync(cli)) throw new Error(`building ${PREVIOUS_RELEASE.tag} (${commit}) in ${dir} made no ${cli}`);
  const { stdout } = await execa(process.execPath, [cli, '--version']);
  if (stdout.trim() !== PREVIOUS_RELEASE.version)
    throw new Error(`the CLI built from ${commit} says version ${stdout.trim()}, expected ${PREVIOUS_RELEASE.version}`);
  return { version: PREVIOUS_RELEASE.version, commit, foundBy, chartDir: join(dir, 'charts', 'tenantgate'), cli };
}
