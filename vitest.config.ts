import { defineConfig } from 'vitest/config';
import { cachedKustomize } from './test/support/tools.js';

// The product runs the kustomize on PATH; the tests use the pinned one `make kustomize` built.
const kustomize = cachedKustomize();

export default defineConfig({
  test: {
    env: kustomize ? { TENANTGATE_KUSTOMIZE: kustomize } : {},
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          environment: 'node',
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // One control plane is shared; files run one at a time so timing-sensitive e2e tests
          // (leader election, cascades) do not starve each other on a 2-core machine.
          fileParallelism: false,
        },
      },
    ],
  },
});
