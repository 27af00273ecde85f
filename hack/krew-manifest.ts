/**
 * The krew manifest of `kubectl tenantgate`, generated from a release archive so it never carries a
 * placeholder: `npm pack` of this checkout (dist/ must be built), installed with its production
 * dependencies into a folder with a `kubectl-tenantgate` launcher, packed as a .tar.gz; the manifest
 * names that archive's URI and sha256. docs/kubectl-plugin.md (Install with krew).
 *
 *   npx tsx hack/krew-manifest.ts --uri-base https://example.org/releases/v0.1.0 [--out-dir .run/krew]
 *
 * writes <out-dir>/kubectl-tenantgate-v<version>.tar.gz (upload it to --uri-base) and
 * <out-dir>/tenantgate.yaml (submit to a krew index, or `kubectl krew install --manifest=… --archive=…`).
 */
import { execa } from 'execa';
import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { stringify } from 'yaml';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface KrewRelease {
  version: string;
  uri: string;
  sha256: string;
}

/** Node runs the plugin: krew's platform selectors name the systems that have it (the archive is the same for all). */
const PLATFORMS = [
  ['linux', 'amd64'],
  ['linux', 'arm64'],
  ['darwin', 'amd64'],
  ['darwin', 'arm64'],
] as const;

/** The manifest (krew.googlecontainertools.github.com/v1alpha2 Plugin). Pure. */
export function krewManifest(release: KrewRelease): Record<string, unknown> {
  if (!/^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$/.test(release.version))
    throw new Error(`version is ${JSON.stringify(release.version)}: krew needs a semantic version (e.g. 0.1.0)`);
  if (!/^[0-9a-f]{64}$/.test(release.sha256))
    throw new Error(`sha256 is ${JSON.stringify(release.sha256)}: 64 lowercase hex digits expected`);
  if (!/^(https?|file):\/\//.test(release.uri))
    throw new Error(
      `uri is ${JSON.stringify(release.uri)}: an https:// (or file:// for a local test) address expected`,
    );
  return {
    apiVersion: 'krew.googlecontainertools.github.com/v1alpha2',
    kind: 'Plugin',
    metadata: { name: 'tenantgate' },
    spec: {
      version: `v${release.version}`,
      homepage: 'https://www.npmjs.com/package/tenantgate',
      shortDescription: 'Your tenantgate projects, budgets and namespaces',
      description: [
        'kubectl tenantgate shows a tenant the tenantgate projects it owns, their budget',
        'headroom per resource and namespace, its namespaces, and why the admission webhook',
        'would refuse a file (the rule ids of the denials, what fits, what to change).',
        'It creates namespaces labelled for a project.',
      ].join('\n'),
      caveats: 'Needs Node.js 22.19 or newer on PATH (the plugin is JavaScript).',
      platforms: PLATFORMS.map(([os, arch]) => ({
        selector: { matchLabels: { os, arch } },
        uri: release.uri,
        sha256: release.sha256,
        bin: 'kubectl-tenantgate',
      })),
    },
  };
}

export const LAUNCHER =
  '#!/bin/sh\n# kubectl-tenantgate from krew: the npm package and its dependencies are next to this file.\nexec node "$(dirname "$0")/node_modules/tenantgate/dist/cli/kubectl-plugin.js" "$@"\n';

/** Packs the checkout, installs it with production dependencies, adds the launcher and writes archive and manifest. */
export async function buildKrewRelease(options: {
  uriBase: string;
  outDir: string;
}): Promise<{ archive: string; manifest: string; release: KrewRelease }> {
  const { version } = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
  const work = await mkdtemp(join(tmpdir(), 'tenantgate-krew-'));
  try {
    await execa('npm', ['pack', '--pack-destination', work], { cwd: REPO_ROOT, timeout: 180_000 });
    const tarball = (await readdir(work)).find((f) => f.endsWith('.tgz'));
    if (!tarball) throw new Error(`npm pack wrote no .tgz into ${work}`);
    const stage = join(work, 'stage');
    await mkdir(stage);
    await execa(
      'npm',
      ['install', '--omit=dev', '--no-audit', '--no-fund', '--ignore-scripts', '--prefix', stage, join(work, tarball)],
      { timeout: 300_000 },
    );
    await rm(join(stage, 'package.json'), { force: true });
    await rm(join(stage, 'package-lock.json'), { force: true });
    await writeFile(join(stage, 'kubectl-tenantgate'), LAUNCHER);
    await chmod(join(stage, 'kubectl-tenantgate'), 0o755);
    await mkdir(options.outDir, { recursive: true });
    const name = `kubectl-tenantgate-v${version}.tar.gz`;
    const archive = join(options.outDir, name);
    await execa('tar', [
      '-czf',
      archive,
      '--sort=name',
      '--owner=0',
      '--group=0',
      '--numeric-owner',
      '--mtime=@499162500',
      '-C',
      stage,
      '.',
    ]);
    const sha256 = createHash('sha256')
      .update(await readFile(archive))
      .digest('hex');
    const release = { version, uri: `${options.uriBase.replace(/\/+$/, '')}/${name}`, sha256 };
    const manifest = join(options.outDir, 'tenantgate.yaml');
    await writeFile(
      manifest,
      `# Generated by hack/krew-manifest.ts from ${name}: regenerate, do not edit.\n${stringify(krewManifest(release))}`,
    );
    return { archive, manifest, release };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const args = process.argv.slice(2);
  const flag = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const uriBase = flag('--uri-base');
  if (!uriBase) {
    process.stderr.write(
      'usage: tsx hack/krew-manifest.ts --uri-base URL [--out-dir DIR]  (--uri-base: where the archive will be downloaded from)\n',
    );
    process.exit(2);
  }
  const out = await buildKrewRelease({
    uriBase,
    outDir: resolve(flag('--out-dir') ?? join(REPO_ROOT, '.run', 'krew')),
  });
  process.stderr.write(`wrote ${out.archive} (sha256 ${out.release.sha256}) and ${out.manifest}\n`);
}
