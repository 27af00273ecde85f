import { defineConfig } from 'vitest/config';
import { pinnedKustomizePath } from './test/support/tools.js';
import { WeightedShardSequencer } from './test/support/e2e-shards.js';

// The product runs $TENANTGATE_KUSTOMIZE, else the kustomize on PATH; the tests always point it at the
// pinned one `make kustomize` builds — also when it is not built yet, so render tests fail with "run
// make kustomize" instead of using whatever kustomize is on PATH. Vitest 4 hands the root `test.env` to
// the workers of every project, inline ones included (without `extends: true`);
// test/unit/kustomize-pin.test.ts fails if that stops being so.
export default defineConfig({
  test: {
    env: { TENANTGATE_KUSTOMIZE: pinnedKustomizePath() },
    // `--shard=i/n` splits the files by measured wall time, not by count (hack/test.sh runs the
    // integration shards side by side, each with its own control plane).
    sequence: { sequencer: WeightedShardSequencer },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          environment: 'node',
          // A guard against hangs, not a speed target: on an empty machine make test runs the unit
          // files beside seven Go builds (load 20 on two cores), and a test that starts the built CLI a
          // few times took over vitest's default 5 s there (7 of 1,739 timed out).
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/support/global-setup.ts'],
          // Fails a file that leaves Projects or project namespaces on the shared control plane.
          setupFiles: ['test/support/leftover-check.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // One control plane per vitest process is shared; its files run one at a time so
          // timing-sensitive e2e tests (leader election, cascades) do not starve each other. make test
          // runs two such processes side by side (`--shard`, hack/test.sh), each on its own control plane.
          fileParallelism: false,
        },
      },
    ],
  },
});
