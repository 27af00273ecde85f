/**
 * The render tests run the kustomize hack/install-kustomize.sh pins, not whatever is on PATH: vitest.config.ts
 * sets $TENANTGATE_KUSTOMIZE, which `tenantgate render` runs (kustomizeBinary, src/cli/render.ts).
 */
import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { kustomizeBinary } from '../../src/cli/render.js';
import { REPO_ROOT } from '../support/paths.js';
import { pinnedKustomizeVersion } from '../support/tools.js';

describe('the kustomize the tests render with', () => {
  it('is the pinned build: $TENANTGATE_KUSTOMIZE names it, render would run it, and it reports the pinned version', async () => {
    const version = pinnedKustomizeVersion();
    expect(version).toMatch(/^v\d+\.\d+\.\d+$/);
    const pinned = join(REPO_ROOT, '.cache', 'tools', `kustomize-${version}`, 'kustomize');
    expect(process.env.TENANTGATE_KUSTOMIZE, 'vitest.config.ts must set TENANTGATE_KUSTOMIZE for this project').toBe(
      pinned,
    );
    expect(kustomizeBinary()).toBe(pinned);
    if (!existsSync(pinned)) throw new Error(`${pinned} is missing: run make kustomize`);
    const { stdout } = await execa(kustomizeBinary(), ['version']);
    expect(stdout.trim()).toBe(version);
  });
});
