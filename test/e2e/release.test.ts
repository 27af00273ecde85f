/**
 * `make release` (hack/release.sh, docs/releasing.md, ADR 0010) for package.json's version, into a
 * folder of its own: the artefacts it promises and nothing else, SHA256SUMS that match them, the chart,
 * npm package and krew manifest carrying the version, and an SBOM of the image (SPDX JSON, by the
 * pinned syft) that lists the Node runtime with the version hack/build-image.sh installs and every
 * production package of package-lock.json with its version. No cluster is used.
 */
import { execa } from 'execa';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/paths.js';

const RELEASE_TIMEOUT = 900_000;
let work: string;
let out: string;
let version: string;

interface SpdxPackage {
  name: string;
  versionInfo?: string;
  externalRefs?: Array<{ referenceType: string; referenceLocator: string }>;
}

beforeAll(async () => {
  version = (JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  work = await mkdtemp(join(tmpdir(), 'tenantgate-release-'));
  out = join(work, 'release');
  const result = await execa(join(REPO_ROOT, 'hack', 'release.sh'), [version], {
    cwd: REPO_ROOT,
    env: {
      RELEASE_DIR: out,
      RELEASE_URI_BASE: `https://example.org/releases/v${version}`,
      SOURCE_DATE_EPOCH: '1767225600',
    },
    timeout: RELEASE_TIMEOUT,
  });
  expect(result.stdout.trim().split('\n').at(-1)).toBe(out);
}, RELEASE_TIMEOUT);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

const sha256 = async (file: string) =>
  createHash('sha256')
    .update(await readFile(file))
    .digest('hex');

describe('make release', () => {
  it('writes the image, its SBOM, the chart, the npm package, the krew archive and manifest, and SHA256SUMS: nothing else', async () => {
    expect((await readdir(out)).sort()).toEqual(
      [
        `tenantgate-${version}.oci.tar`,
        `tenantgate-${version}.spdx.json`,
        `tenantgate-${version}.debian-packages.txt`,
        `tenantgate-${version}.tgz`,
        `tenantgate-npm-${version}.tgz`,
        `kubectl-tenantgate-v${version}.tar.gz`,
        'tenantgate.yaml',
        'SHA256SUMS',
      ].sort(),
    );
  });

  it('SHA256SUMS has one line per artefact, each with its sha256', async () => {
    const lines = (await readFile(join(out, 'SHA256SUMS'), 'utf8')).trim().split('\n');
    const sums = new Map(
      lines.map((line) => {
        const m = /^([0-9a-f]{64}) {2}(\S+)$/.exec(line);
        expect(m, `SHA256SUMS line ${JSON.stringify(line)}`).not.toBeNull();
        return [m![2]!, m![1]!] as const;
      }),
    );
    const artefacts = (await readdir(out)).filter((f) => f !== 'SHA256SUMS').sort();
    expect([...sums.keys()].sort()).toEqual(artefacts);
    for (const file of artefacts) expect(sums.get(file), file).toBe(await sha256(join(out, file)));
    // And the tool people will use agrees.
    expect((await execa('sha256sum', ['-c', 'SHA256SUMS'], { cwd: out })).stdout).not.toMatch(/FAILED/);
  });

  it('the image archive is tagged with the version; the chart, the npm package and the krew manifest carry it', async () => {
    const index = JSON.parse(
      (await execa('tar', ['-xOf', join(out, `tenantgate-${version}.oci.tar`), 'index.json'])).stdout,
    ) as { manifests: Array<{ annotations: Record<string, string> }> };
    expect(index.manifests[0]!.annotations['io.containerd.image.name']).toBe(
      `ghcr.io/tenantgate/tenantgate:${version}`,
    );
    // The Debian packages the image was built from: those the lock pins (the build fails on any other set).
    const lock = (await readFile(join(REPO_ROOT, 'image', 'debian-packages.lock'), 'utf8'))
      .split('\n')
      .filter((l) => l && !l.startsWith('#'));
    expect((await readFile(join(out, `tenantgate-${version}.debian-packages.txt`), 'utf8')).trim().split('\n')).toEqual(
      lock,
    );

    const chart = parse(
      (await execa('tar', ['-xOzf', join(out, `tenantgate-${version}.tgz`), 'tenantgate/Chart.yaml'])).stdout,
    ) as { name: string; version: string; appVersion: string };
    expect(chart).toMatchObject({ name: 'tenantgate', version, appVersion: version });

    const pkg = JSON.parse(
      (await execa('tar', ['-xOzf', join(out, `tenantgate-npm-${version}.tgz`), 'package/package.json'])).stdout,
    ) as { name: string; version: string };
    expect(pkg).toMatchObject({ name: 'tenantgate', version });

    const krew = parse(await readFile(join(out, 'tenantgate.yaml'), 'utf8')) as {
      spec: { version: string; platforms: Array<{ uri: string; sha256: string }> };
    };
    expect(krew.spec.version).toBe(`v${version}`);
    const archiveSha = await sha256(join(out, `kubectl-tenantgate-v${version}.tar.gz`));
    for (const platform of krew.spec.platforms) {
      expect(platform.uri).toBe(`https://example.org/releases/v${version}/kubectl-tenantgate-v${version}.tar.gz`);
      expect(platform.sha256).toBe(archiveSha);
    }
  });

  describe('the SBOM of the image', () => {
    let packages: SpdxPackage[];
    beforeAll(async () => {
      const sbom = JSON.parse(await readFile(join(out, `tenantgate-${version}.spdx.json`), 'utf8')) as {
        spdxVersion: string;
        packages: SpdxPackage[];
        creationInfo: { creators: string[] };
      };
      expect(sbom.spdxVersion).toBe('SPDX-2.3');
      const syftVersion = /^require github\.com\/anchore\/syft (v\S+)$/m.exec(
        await readFile(join(REPO_ROOT, 'hack', 'syft', 'go.mod'), 'utf8'),
      )![1]!;
      // hack/build-go-tool.sh stamps the module version (v-prefixed) into syft's main.version.
      expect(sbom.creationInfo.creators).toContain(`Tool: syft-${syftVersion}`);
      packages = sbom.packages;
    });
    const has = (name: string, versionInfo: string) =>
      packages.some((p) => p.name === name && p.versionInfo === versionInfo);

    it('lists the Node runtime with the version hack/build-image.sh installs', async () => {
      const nodeVersion = /^NODE_VERSION=(\S+)$/m.exec(
        await readFile(join(REPO_ROOT, 'hack', 'build-image.sh'), 'utf8'),
      )![1]!;
      const node = packages.filter((p) => p.name === 'node');
      expect(
        node.map((p) => p.versionInfo),
        'the node packages in the SBOM',
      ).toContain(nodeVersion);
    });

    it('lists every production package of package-lock.json with its version (npm ci --omit=dev installs them all)', async () => {
      const lock = JSON.parse(await readFile(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as {
        packages: Record<string, { version?: string; name?: string; dev?: boolean; link?: boolean }>;
      };
      const production = Object.entries(lock.packages)
        .filter(([path, entry]) => path.startsWith('node_modules/') && !entry.dev && !entry.link)
        .map(([path, entry]) => ({
          name: entry.name ?? path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length),
          version: entry.version!,
        }));
      // The runtime dependencies of package.json are among them, so an empty list cannot pass.
      const direct = Object.keys(
        (
          JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as {
            dependencies: Record<string, string>;
          }
        ).dependencies,
      );
      expect(direct.every((name) => production.some((p) => p.name === name))).toBe(true);
      const missing = production.filter((p) => !has(p.name, p.version)).map((p) => `${p.name}@${p.version}`);
      expect(missing, 'production packages of package-lock.json missing from the SBOM').toEqual([]);
    });
  });

  it('refuses a version that is not package.json’s, or not a semantic version, before building anything', async () => {
    const other = await execa(join(REPO_ROOT, 'hack', 'release.sh'), ['9.9.9'], {
      cwd: REPO_ROOT,
      reject: false,
      env: { RELEASE_DIR: join(work, 'refused') },
    });
    expect(other.exitCode).not.toBe(0);
    expect(other.stderr).toContain(
      `release: VERSION is 9.9.9 but package.json's version is ${version}: they must be equal`,
    );
    const vPrefixed = await execa(join(REPO_ROOT, 'hack', 'release.sh'), [`v${version}`], {
      cwd: REPO_ROOT,
      reject: false,
      env: { RELEASE_DIR: join(work, 'refused') },
    });
    expect(vPrefixed.exitCode).not.toBe(0);
    expect(vPrefixed.stderr).toContain(
      `release: VERSION is "v${version}": a semantic version without a leading v is expected`,
    );
    const none = await execa(join(REPO_ROOT, 'hack', 'release.sh'), [], {
      cwd: REPO_ROOT,
      reject: false,
      env: { RELEASE_DIR: join(work, 'refused'), VERSION: '' },
    });
    expect(none.stderr).toContain('release: no version: run make release VERSION=x.y.z');
    await expect(readdir(join(work, 'refused'))).rejects.toThrow(/ENOENT/);
  });
});
