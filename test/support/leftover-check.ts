/**
 * A setup file of the integration project: fails a test file that leaves Projects, or namespaces
 * labelled as a project's, on the shared control plane (test/support/global-setup.ts). Its beforeAll
 * runs before the file's own and records what is there; its afterAll runs after the file's own (after
 * hooks run in reverse order of registration, vitest's default `sequence.hooks: 'stack'`) and throws
 * naming what the file added and did not remove, after giving deletions under way a while to finish.
 * Only the shared control plane is looked at: files that start control planes of their own are
 * checked on it too, where they leave nothing.
 */
import { afterAll, beforeAll, expect } from 'vitest';
import { relative } from 'node:path';
import { kubeConfig } from './cluster.js';
import {
  leftoverMessage,
  leftoversSince,
  noLeftovers,
  tenancyState,
  type Leftovers,
  type TenancyState,
} from './leftovers.js';
import { REPO_ROOT } from './paths.js';

/** How long a file's deletions under way (finalizers, cascades) may take after its afterAll. */
const SETTLE_MS = 30_000;

let before: TenancyState | undefined;
let file = '';

beforeAll(async () => {
  file = relative(REPO_ROOT, expect.getState().testPath ?? 'this test file');
  before = await tenancyState(kubeConfig('admin'));
});

afterAll(async () => {
  if (!before) return; // the recording failed: that failure is the file's report
  const kc = kubeConfig('admin');
  const deadline = Date.now() + SETTLE_MS;
  let left: Leftovers;
  for (;;) {
    left = leftoversSince(before, await tenancyState(kc));
    if (noLeftovers(left) || Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  if (!noLeftovers(left)) throw new Error(leftoverMessage(file, left));
}, SETTLE_MS + 30_000);
