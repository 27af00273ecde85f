/**
 * The version a release says it is, in every file that names it apart from package.json: the chart,
 * and the Dockerfile's labels and tag (docs/releasing.md, "Cutting a release"). The Argo CD repo-server
 * patch's image is checked by argocd-lua.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { PACKAGE_VERSION } from '../support/package-version.js';
import { REPO_ROOT } from '../support/paths.js';

const read = (path: string) => readFileSync(join(REPO_ROOT, path), 'utf8');

describe(`every file naming the release says package.json's version (${PACKAGE_VERSION})`, () => {
  it('the chart: version and appVersion', () => {
    const chart = parse(read('charts/tenantgate/Chart.yaml')) as { version: string; appVersion: string };
    expect([chart.version, chart.appVersion]).toEqual([PACKAGE_VERSION, PACKAGE_VERSION]);
  });

  it('the Dockerfile: its example tag, its version label and its description', () => {
    const dockerfile = read('Dockerfile');
    const named = [
      ...dockerfile.matchAll(/tenantgate:(\d+\.\d+\.\d+)|image\.version=(\d+\.\d+\.\d+)|tenantgate (\d+\.\d+\.\d+):/g),
    ].map((m) => m[1] ?? m[2] ?? m[3]);
    expect(named.length).toBe(3);
    expect(new Set(named)).toEqual(new Set([PACKAGE_VERSION]));
  });
});
