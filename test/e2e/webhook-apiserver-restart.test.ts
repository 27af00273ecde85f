/**
 * An API server restart under a registered webhook (its own control plane, so the shared one is not
 * disturbed): the webhook's watches break and are restarted with backoff, and a Project created after
 * the restart reaches its cache and its decisions.
 */
import { execa } from 'execa';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ControlPlane } from '../support/devcluster/controlplane.js';
import { installBase, startLocalWebhook, type LocalWebhook } from '../support/devcluster/tenantgate.js';
import { eventually } from '../support/cluster.js';

let cp: ControlPlane;
let hook: LocalWebhook;
const as = (user: string, args: string[], input?: string) =>
  execa(join(cp.info.binDir, 'kubectl'), args, {
    env: { KUBECONFIG: cp.info.kubeconfigs[user] ?? '' },
    reject: false,
    ...(input ? { input } : {}),
  });

beforeAll(async () => {
  cp = await ControlPlane.start();
  await installBase(cp.info);
  hook = await startLocalWebhook(cp.info);
});

afterAll(async () => {
  await hook?.stop();
  await cp?.stop();
});

it('keeps deciding from fresh caches after an API server restart', async () => {
  const restarts = async () =>
    (await hook.webhook.metrics.informerRestarts.get()).values.reduce((sum, v) => sum + v.value, 0);
  const before = await restarts();
  await cp.restartApiserver();

  // A Project made after the restart: the webhook must know it to let its owner in and keep others out.
  const project = {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: 'after' },
    spec: { tenant: 'acme', owners: [{ kind: 'Group', name: 'acme:payments-admins' }] },
  };
  expect((await as('admin', ['apply', '-f', '-'], JSON.stringify(project))).exitCode).toBe(0);
  await eventually(async () => expect(hook.webhook.cache.snapshot.project('after')).toBeDefined(), {
    what: 'project in the cache after the restart',
    timeoutMs: 90_000,
  });
  const alice = await as('alice', ['create', 'namespace', 'after-dev']);
  expect(alice.exitCode, alice.stderr).toBe(0);
  expect(
    JSON.parse((await as('admin', ['get', 'namespace', 'after-dev', '-o', 'json'])).stdout).metadata.labels,
  ).toMatchObject({ 'tenantgate.io/project': 'after', 'tenantgate.io/tenant': 'acme' });
  const bob = await as('bob', ['create', 'namespace', 'after-x']);
  expect(bob.exitCode).not.toBe(0);
  expect(bob.stderr).toMatch(/\[T4\] user "bob" may not create namespace after-x: it belongs to project after/);
  expect((await as('admin', ['get', 'namespace', 'after-x', '--ignore-not-found', '-o', 'name'])).stdout.trim()).toBe(
    '',
  );
  expect(await restarts()).toBeGreaterThan(before);
  expect(hook.webhook.cache.synced).toBe(true);
});
