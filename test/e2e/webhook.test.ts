/**
 * The admission webhook end to end: registered with the real apiserver, driven by real users'
 * tokens through the real kubectl.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { httpsGet } from '../support/devcluster/https-get.js';
import {
  applyAllowListParams,
  applyOwnerBindings,
  installBase,
  startLocalWebhook,
  type LocalWebhook,
} from '../support/devcluster/tenantgate.js';
import type { Project } from '../../src/validate/types.js';
import { cluster, eventually, kubectl } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';

let hook: LocalWebhook;

const project = (name: string, tenant: string, group: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: { name },
  spec: {
    tenant,
    owners: [{ kind: 'Group', name: group }],
    quota: { hard: { 'requests.cpu': '10', pods: '50' } },
    namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', pods: '5' } } },
    ...extra,
  },
});

const namespace = (name: string, labels: Record<string, string> = {}) =>
  JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
const quota = (ns: string, name: string, hard: Record<string, string>) =>
  JSON.stringify({ apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name, namespace: ns }, spec: { hard } });

async function apply(user: string, manifest: string, extra: string[] = []) {
  return kubectl(user, ['apply', '-f', '-', ...extra], { input: manifest, reject: false });
}

/** A denial, with the same verdict from `kubectl apply --dry-run=server`, which must persist nothing. */
/** The object a manifest names, as stored (its whole JSON, '' when absent), read as admin. */
async function storedObject(manifest: string): Promise<string> {
  const { kind, metadata } = JSON.parse(manifest) as { kind: string; metadata: { name: string; namespace?: string } };
  return (
    await kubectl('admin', [
      'get',
      kind,
      metadata.name,
      ...(metadata.namespace ? ['-n', metadata.namespace] : []),
      '--ignore-not-found',
      '-o',
      'json',
    ])
  ).stdout;
}

async function expectDenied(user: string, manifest: string, rule: string, pattern?: RegExp, exists?: string[]) {
  const before = await storedObject(manifest);
  const dry = await apply(user, manifest, ['--dry-run=server']);
  expect(dry.exitCode, dry.stdout).not.toBe(0);
  expect(dry.stderr).toContain(`[${rule}]`);
  const real = await apply(user, manifest);
  expect(real.exitCode, real.stdout).not.toBe(0);
  expect(real.stderr).toContain('denied the request');
  expect(real.stderr).toContain(`[${rule}]`);
  if (pattern) expect(real.stderr).toMatch(pattern);
  if (exists) {
    const get = await kubectl('admin', ['get', ...exists], { reject: false });
    expect(get.exitCode).not.toBe(0);
  }
  // Nothing changed: the stored object (or its absence) is what it was before both attempts.
  expect(await storedObject(manifest)).toBe(before);
  return real.stderr;
}

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  hook = await startLocalWebhook(info, { headroomWarningThreshold: 0.2 });
  await kubectl('admin', ['apply', '-f', '-'], {
    input: JSON.stringify(project('payments', 'acme', 'acme:payments-admins')),
  });
  await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(project('web', 'acme', 'acme:web-admins')) });
  // The webhook decides from its watch cache: wait until it has seen both projects.
  await eventually(async () => {
    if (!hook.webhook.cache.snapshot.project('payments') || !hook.webhook.cache.snapshot.project('web'))
      throw new Error('projects not in cache');
  });
});

afterAll(async () => {
  // No controller here: its finalizer (if any) is removed and the namespaces are deleted after the Projects.
  await removeProjects(['payments', 'web'], { cascadeMs: 0 });
  await hook?.stop();
});

describe('namespaces (T2–T6, N2)', () => {
  it('admits alice creating payments-dev and labels it for the project', async () => {
    const created = await apply('alice', namespace('payments-dev'));
    expect(created.exitCode, created.stderr).toBe(0);
    const ns = JSON.parse((await kubectl('admin', ['get', 'namespace', 'payments-dev', '-o', 'json'])).stdout);
    const uid = (await kubectl('admin', ['get', 'project', 'payments', '-o', 'jsonpath={.metadata.uid}'])).stdout;
    expect(ns.metadata.labels['tenantgate.io/project']).toBe('payments');
    expect(ns.metadata.labels['tenantgate.io/tenant']).toBe('acme');
    expect(ns.metadata.annotations['tenantgate.io/project-uid']).toBe(uid);
    const finalizers = (await kubectl('admin', ['get', 'project', 'payments', '-o', 'jsonpath={.metadata.finalizers}']))
      .stdout;
    expect(finalizers).toContain('tenantgate.io/cascade-delete');
    // The controller gives a self-service namespace its owners' RoleBinding; this file runs without it.
    await applyOwnerBindings(cluster(), project('payments', 'acme', 'acme:payments-admins') as unknown as Project, [
      'payments-dev',
    ]);
  });

  it('denies bob (another tenant) creating payments-x with T4', async () => {
    await expectDenied(
      'bob',
      namespace('payments-x'),
      'T4',
      /user "bob" may not create namespace payments-x: it belongs to project payments/,
      ['namespace', 'payments-x'],
    );
  });

  it('denies bob creating foo outside any project with T6', async () => {
    await expectDenied('bob', namespace('foo'), 'T6', /Namespace foo belongs to no project/, ['namespace', 'foo']);
  });

  it('denies a reserved name with N2 and a foreign prefix with T4', async () => {
    await expectDenied('alice', namespace('kube-evil'), 'N2', /the prefix "kube-" is reserved/, [
      'namespace',
      'kube-evil',
    ]);
    await expectDenied('alice', namespace('web-shadow'), 'T4', /belongs to project web/, ['namespace', 'web-shadow']);
    await expectDenied(
      'alice',
      namespace('elsewhere', { 'tenantgate.io/project': 'payments' }),
      'N2',
      /must start with "payments-"/,
      ['namespace', 'elsewhere'],
    );
  });

  it('denies relabelling a namespace to another project with T3', async () => {
    const dry = await kubectl(
      'alice',
      ['label', 'namespace', 'payments-dev', 'tenantgate.io/project=web', '--overwrite', '--dry-run=server'],
      { reject: false },
    );
    expect(dry.exitCode).not.toBe(0);
    expect(dry.stderr).toContain('[T3]');
    const result = await kubectl(
      'alice',
      ['label', 'namespace', 'payments-dev', 'tenantgate.io/project=web', '--overwrite'],
      { reject: false },
    );
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toContain('[T3]');
    expect(result.stderr).toMatch(/tenantgate\.io\/project \("payments" → "web"\)/);
    expect(
      (
        await kubectl('admin', [
          'get',
          'namespace',
          'payments-dev',
          '-o',
          'jsonpath={.metadata.labels.tenantgate\\.io/project}',
        ])
      ).stdout,
    ).toBe('payments');
  });
});

describe('quota headroom (Q1–Q4)', () => {
  it('runs the whole budget story with real kubectl', async () => {
    // Budget: requests.cpu 10, pods 50. payments-dev counts with the defaults (2, 5) until it has a quota.
    const first = await apply('alice', quota('payments-dev', 'main', { 'requests.cpu': '6', pods: '20' }));
    expect(first.exitCode, first.stderr).toBe(0);
    expect(
      (
        await kubectl('admin', [
          '-n',
          'payments-dev',
          'get',
          'quota',
          'main',
          '-o',
          'jsonpath={.metadata.labels.tenantgate\\.io/project}',
        ])
      ).stdout,
    ).toBe('payments');

    // Over the headroom: 10 − 6 (payments-dev) = 4 fits.
    const overMsg = await expectDenied(
      'alice',
      quota('payments-dev', 'main', { 'requests.cpu': '11', pods: '20' }),
      'Q1',
    );
    expect(overMsg).toMatch(
      /ResourceQuota payments-dev\/main asks requests\.cpu 11, project payments has 10 of which 0 are allocated to other namespaces: at most 10 fits/,
    );

    // A second namespace takes the defaults (2): 6 + 2 = 8.
    expect((await apply('alice', namespace('payments-a'))).exitCode).toBe(0);
    // A third would need 2 more: 10 − 8 = 2 fits. A fourth does not.
    expect((await apply('alice', namespace('payments-b'))).exitCode).toBe(0);
    await applyOwnerBindings(cluster(), project('payments', 'acme', 'acme:payments-admins') as unknown as Project, [
      'payments-a',
      'payments-b',
    ]);
    // No controller here: the allow-list policies' parameters as it writes them (without them no pod is admitted).
    const payments = project('payments', 'acme', 'acme:payments-admins') as unknown as Project;
    await applyAllowListParams(cluster(), payments, ['payments-a', 'payments-b']);
    const nsMsg = await expectDenied('alice', namespace('payments-c'), 'Q1', undefined, ['namespace', 'payments-c']);
    expect(nsMsg).toMatch(
      /Namespace payments-c asks requests\.cpu 2 \(namespaceDefaults\), project payments has 10 of which 10 are allocated to other namespaces: nothing fits/,
    );

    // payments-a has no quota yet, so a pod asking for cpu is refused by the apiserver itself.
    await eventually(async () => kubectl('admin', ['-n', 'payments-a', 'get', 'serviceaccount', 'default']));
    const pod = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'payments-a' },
      spec: { containers: [{ name: 'c', image: 'registry.invalid/x', resources: { requests: { cpu: '100m' } } }] },
    });
    const podResult = await kubectl('admin', ['apply', '-f', '-'], { input: pod, reject: false });
    expect(podResult.exitCode).not.toBe(0);
    expect(podResult.stderr).toContain('pods "p" is forbidden: insufficient quota to consume: requests.cpu');

    // Growing payments-dev from 6 to 7 leaves 10 − 7 − 2 − 2 < 0: denied, at most 6 fits.
    const growMsg = await expectDenied(
      'alice',
      quota('payments-dev', 'main', { 'requests.cpu': '7', pods: '20' }),
      'Q1',
    );
    expect(growMsg).toMatch(
      /asks requests\.cpu 7, project payments has 10 of which 4 are allocated to other namespaces: at most 6 fits/,
    );

    // Q2: dropping pods from the only quota leaves a budget resource uncovered.
    const q2 = await expectDenied('alice', quota('payments-dev', 'main', { 'requests.cpu': '6' }), 'Q2');
    expect(q2).toMatch(/leaves pods without a quota/);

    // Q4: an admitted change near the limit prints a warning (threshold 20 % in this test: 2 of 10).
    const q4 = await apply('alice', quota('payments-a', 'main', { 'requests.cpu': '1', pods: '5' }));
    expect(q4.exitCode, q4.stderr).toBe(0);
    expect(q4.stderr).toMatch(/Warning: \[Q4\] project payments: requests\.cpu headroom 1 of 10 left/);
    // A delete warns too (docs/rules.md Q4): a second quota in payments-a, then deleting it, leaves 1 of 10.
    expect((await apply('alice', quota('payments-a', 'extra', { 'requests.cpu': '1', pods: '5' }))).exitCode).toBe(0);
    const q4delete = await kubectl('alice', ['-n', 'payments-a', 'delete', 'quota', 'extra'], { reject: false });
    expect(q4delete.exitCode, q4delete.stderr).toBe(0);
    expect(q4delete.stderr).toMatch(/Warning: \[Q4\] project payments: requests\.cpu headroom 1 of 10 left/);

    // Q3: alice may not delete the quota that covers payments-dev; the admin may.
    const q3dry = await kubectl('alice', ['-n', 'payments-dev', 'delete', 'quota', 'main', '--dry-run=server'], {
      reject: false,
    });
    expect(q3dry.stderr).toContain('[Q3]');
    const q3 = await kubectl('alice', ['-n', 'payments-dev', 'delete', 'quota', 'main'], { reject: false });
    expect(q3.exitCode).not.toBe(0);
    expect(q3.stderr).toMatch(
      /\[Q3\] ResourceQuota payments-dev\/main provides the only coverage of pods, requests\.cpu/,
    );
    expect((await kubectl('admin', ['-n', 'payments-dev', 'get', 'quota', 'main'], { reject: false })).exitCode).toBe(
      0,
    );

    // Q1 on the Project: lowering the budget below the allocation (6 + 1 + 2 = 9) as admin.
    const lowered = project('payments', 'acme', 'acme:payments-admins');
    lowered.spec.quota.hard['requests.cpu'] = '8';
    const p1 = await expectDenied('admin', JSON.stringify(lowered), 'Q1');
    expect(p1).toMatch(
      /namespaces allocate requests\.cpu 9 but the budget is 8 \(payments-a 1, payments-b 2 \(defaults\), payments-dev 6\): 1 over/,
    );

    // T5: a tenant editing a Project. RBAC refuses first (tenants only read Projects); the webhook's T5
    // stands behind it for anyone RBAC lets through (checked in the tenancy-boundary test).
    const raised = project('payments', 'acme', 'acme:payments-admins');
    raised.spec.quota.hard['requests.cpu'] = '100';
    const t5 = await apply('alice', JSON.stringify(raised));
    expect(t5.exitCode).not.toBe(0);
    expect(t5.stderr).toMatch(
      /projects.tenantgate.io "payments" is forbidden: User "alice" cannot patch resource "projects"/,
    );
    expect(
      (await kubectl('admin', ['get', 'project', 'payments', '-o', 'jsonpath={.spec.quota.hard.requests\\.cpu}']))
        .stdout,
    ).toBe('10');
  });
});

describe('webhook readiness and metrics', () => {
  it('serves /readyz once synced and counts requests in /metrics', async () => {
    const ca = await readFile(hook.certs.caCert);
    const get = (path: string) => httpsGet(`${hook.url}${path}`, { ca });
    expect((await get('/readyz')).status).toBe(200);
    const metrics = await get('/metrics');
    expect(metrics.body).toMatch(
      /tenantgate_webhook_requests_total\{path="validate",operation="CREATE",kind="Namespace",verdict="denied"\} [1-9]/,
    );
    expect(metrics.body).toMatch(/tenantgate_webhook_cache_objects\{kind="Project"\} [1-9]/);
  });
});
