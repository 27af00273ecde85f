/** The krew manifest hack/krew-manifest.ts writes: valid YAML with every field krew requires, no placeholder. */
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { krewManifest, LAUNCHER } from '../../hack/krew-manifest.js';

const release = {
  version: '0.1.0',
  uri: 'https://example.org/r/kubectl-tenantgate-v0.1.0.tar.gz',
  sha256: 'a'.repeat(64),
};

describe('krew manifest', () => {
  it("has krew's required fields: apiVersion, kind, metadata.name, a v-prefixed semver, shortDescription, platforms with selector, uri, sha256, bin", () => {
    const m = parse(stringify(krewManifest(release))) as {
      apiVersion: string;
      kind: string;
      metadata: { name: string };
      spec: {
        version: string;
        shortDescription: string;
        platforms: Array<{
          selector: { matchLabels: Record<string, string> };
          uri: string;
          sha256: string;
          bin: string;
        }>;
      };
    };
    expect(m.apiVersion).toBe('krew.googlecontainertools.github.com/v1alpha2');
    expect(m.kind).toBe('Plugin');
    expect(m.metadata.name).toBe('tenantgate'); // krew: the plugin name, `kubectl tenantgate`
    expect(m.spec.version).toMatch(/^v\d+\.\d+\.\d+/);
    expect(m.spec.shortDescription.length).toBeGreaterThan(0);
    expect(m.spec.shortDescription.length).toBeLessThanOrEqual(50);
    expect(m.spec.platforms.length).toBeGreaterThan(0);
    for (const pl of m.spec.platforms) {
      expect(Object.keys(pl.selector.matchLabels).sort()).toEqual(['arch', 'os']);
      expect(pl).toMatchObject({ uri: release.uri, sha256: release.sha256, bin: 'kubectl-tenantgate' });
    }
    expect(JSON.stringify(m)).not.toMatch(/TODO|PLACEHOLDER|<[a-z-]+>/i);
  });

  it('refuses what krew would refuse, naming the field and the value', () => {
    expect(() => krewManifest({ ...release, sha256: 'abc' })).toThrow(
      'sha256 is "abc": 64 lowercase hex digits expected',
    );
    expect(() => krewManifest({ ...release, version: 'v0.1' })).toThrow(
      'version is "v0.1": krew needs a semantic version',
    );
    expect(() => krewManifest({ ...release, uri: 'ftp://x' })).toThrow('uri is "ftp://x"');
  });

  it("the launcher runs the package's plugin with node from where krew unpacked it", () => {
    expect(LAUNCHER.startsWith('#!/bin/sh\n')).toBe(true);
    expect(LAUNCHER).toContain('exec node "$(dirname "$0")/node_modules/tenantgate/dist/cli/kubectl-plugin.js" "$@"');
  });
});
