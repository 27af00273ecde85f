/**
 * The reviews a growth costs: a tenant creates a namespace in a project, and the controller then writes the
 * objects it keeps there (ResourceQuota, AllowList, RoleBinding tenantgate-owners, LimitRange
 * tenantgate-limits, NetworkPolicy tenantgate-isolation). objects.tenantgate.io's matchCondition leaves
 * out the controller's own writes of the last three (its ServiceAccount, their names, their managed-by
 * label): the webhook admits every write of a privileged subject there, so the review could only admit
 * (docs/adr/0004-webhook.md). The ResourceQuota stays reviewed: Q1 may refuse it and the headroom guard
 * records it. Measured against the registration without that matchCondition, with the real controller;
 * then a tenant's writes of the same objects, names and labels untouched (its own ServiceAccount named
 * like the controller's included), are still reviewed and refused [T7], and a tenant cannot impersonate
 * the controller.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { parseAllDocuments, stringify } from 'yaml';
import { startController, type RunningController } from '../../src/controller/controller.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import {
  installBase,
  localWebhookConfigurations,
  MANIFESTS,
  serviceAccountKubeConfig,
  serviceAccountKubeconfigFile,
  startLocalWebhook,
  type LocalWebhook,
} from '../support/devcluster/tenantgate.js';
import { LIMITRANGE_NAME, NETWORK_POLICY_NAME, OWNERS_BINDING_NAME } from '../../src/validate/managed-names.js';
import { DEFAULT_QUOTA_NAME, LABEL_MANAGED_BY, MANAGED_BY } from '../../src/validate/types.js';
import type { AdmissionDecision } from '../../src/webhook/server.js';
import { cluster, eventually, kubectl } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';

const PROJECT = 'cwr';
const CONTROLLER = `system:serviceaccount:${DEFAULT_CONFIG.systemNamespace}:tenantgate-controller`;
/** A tenant's own ServiceAccount, named like the controller's, in a namespace of the project. */
const LOOKALIKE_NS = `${PROJECT}-shipped`;
const LOOKALIKE = `system:serviceaccount:${LOOKALIKE_NS}:tenantgate-controller`;
const MANAGED = ['RoleBinding', 'LimitRange', 'NetworkPolicy'];

const decisions: AdmissionDecision[] = [];
let hook: LocalWebhook;
let controller: RunningController;
/** kubeconfig files: the controller's ServiceAccount, and the tenant's lookalike one. */
let controllerKubeconfig: string;
let lookalikeKubeconfig: string;

async function kubectlWith(kubeconfig: string, args: string[], input?: string) {
  return execa(join(cluster().binDir, 'kubectl'), args, {
    env: { KUBECONFIG: kubeconfig },
    ...(input !== undefined ? { input } : {}),
    reject: false,
    timeout: 60_000,
    encoding: 'utf8',
  });
}

/** The webhook registration from manifests/, or as it was before: objects.tenantgate.io without matchConditions. */
async function register(shipped: boolean): Promise<void> {
  let text = await readFile(join(MANIFESTS, 'webhook', 'webhook-configurations.yaml'), 'utf8');
  if (!shipped) {
    const docs = parseAllDocuments(text).map(
      (d) => d.toJS() as { kind: string; webhooks: Array<{ name: string; matchConditions?: unknown }> },
    );
    const objects = docs
      .find((d) => d.kind === 'ValidatingWebhookConfiguration')!
      .webhooks.find((w) => w.name === 'objects.tenantgate.io')!;
    expect(objects.matchConditions, 'the shipped registration has the matchCondition this test removes').toBeDefined();
    delete objects.matchConditions;
    text = docs.map((d) => `---\n${stringify(d)}`).join('');
  }
  const configurations = await localWebhookConfigurations(hook.url, hook.certs.caBundle, text);
  await kubectl('admin', ['apply', '-f', '-'], { input: configurations });
}

/**
 * Whether the apiserver sends the controller's update of its RoleBinding in `namespace` to the webhook: a
 * dry run of it as the controller (a dry run is sent like the write, sideEffects None). The webhook is in
 * this process and records a decision before it answers, so once kubectl returns the decision is here.
 */
async function controllerWriteIsSent(namespace: string): Promise<boolean> {
  const got = await kubectlWith(controllerKubeconfig, [
    '-n',
    namespace,
    'get',
    'rolebinding',
    OWNERS_BINDING_NAME,
    '-o',
    'json',
  ]);
  expect(got.exitCode, got.stderr).toBe(0);
  const binding = JSON.parse(got.stdout) as { metadata: { labels: Record<string, string> } };
  binding.metadata.labels['e2e-probe'] = String(Date.now());
  const from = decisions.length;
  const replaced = await kubectlWith(
    controllerKubeconfig,
    ['replace', '--dry-run=server', '-f', '-'],
    JSON.stringify(binding),
  );
  expect(replaced.exitCode, replaced.stderr).toBe(0);
  return decisions
    .slice(from)
    .some((d) => d.user === CONTROLLER && d.kind === 'RoleBinding' && d.namespace === namespace && d.dryRun);
}

/** A tenant grows the project by one namespace and waits for the controller's objects there; the reviews it took. */
async function growth(namespace: string): Promise<AdmissionDecision[]> {
  const from = decisions.length;
  await kubectl('alice', ['create', 'namespace', namespace]);
  await eventually(
    async () => {
      await kubectl('admin', ['-n', namespace, 'get', 'quota', DEFAULT_QUOTA_NAME]);
      await kubectl('admin', ['-n', namespace, 'get', 'rolebinding', OWNERS_BINDING_NAME]);
      await kubectl('admin', ['-n', namespace, 'get', 'limitrange', LIMITRANGE_NAME]);
      await kubectl('admin', ['-n', namespace, 'get', 'networkpolicy', NETWORK_POLICY_NAME]);
    },
    { what: `the controller's quota, RoleBinding, LimitRange and NetworkPolicy in ${namespace}` },
  );
  return decisions
    .slice(from)
    .filter((d) => d.namespace === namespace || (d.kind === 'Namespace' && d.name === namespace));
}

const validating = (seen: AdmissionDecision[]) =>
  seen
    .filter((d) => d.path === 'validate')
    .map(
      (d) =>
        `${d.operation} ${d.kind} ${d.name ?? ''} by ${d.user === CONTROLLER ? 'controller' : d.user}: ${d.verdict}`,
    )
    .sort();

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  hook = await startLocalWebhook(info, {}, { onDecision: (d) => decisions.push(d) });
  controller = await startController({
    kubeConfig: await serviceAccountKubeConfig(info, DEFAULT_CONFIG.systemNamespace, 'tenantgate-controller'),
    config: DEFAULT_CONFIG,
    leaderElection: false,
    log: () => {},
  });
  controllerKubeconfig = await serviceAccountKubeconfigFile(
    info,
    DEFAULT_CONFIG.systemNamespace,
    'tenantgate-controller',
  );
  const project = {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: PROJECT },
    spec: {
      tenant: 'acme',
      owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
      quota: { hard: { 'requests.cpu': '20', pods: '100' } },
      namespaceDefaults: {
        quota: { hard: { 'requests.cpu': '2', pods: '20' } },
        limitRange: { default: { cpu: '500m' }, defaultRequest: { cpu: '100m' } },
      },
      networkIsolation: true,
    },
  };
  await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(project) });
  await eventually(async () => {
    if (!hook.webhook.cache.snapshot.project(PROJECT)) throw new Error(`${PROJECT} not in the webhook's cache`);
  });
}, 300_000);

afterAll(async () => {
  // While the controller runs, so that its finalizer takes the namespaces with them.
  await removeProjects([PROJECT]);
  await controller?.stop();
  await hook?.stop();
}, 180_000);

describe("the controller's writes for a new namespace", () => {
  it('as shipped: a growth is reviewed twice (the namespace, its quota); the RoleBinding, LimitRange and NetworkPolicy are not sent', async () => {
    const seen = await growth(LOOKALIKE_NS);
    expect(validating(seen)).toEqual([
      `CREATE Namespace ${LOOKALIKE_NS} by alice: allowed`,
      `CREATE ResourceQuota ${DEFAULT_QUOTA_NAME} by controller: allowed`,
    ]);
    expect(seen.filter((d) => MANAGED.includes(d.kind))).toEqual([]);
    expect(await controllerWriteIsSent(LOOKALIKE_NS)).toBe(false);
  }, 120_000);

  it('as registered before (no matchCondition): the same growth is reviewed five times, each controller write admitted', async () => {
    try {
      await register(false);
      await eventually(async () => expect(await controllerWriteIsSent(LOOKALIKE_NS)).toBe(true), {
        what: 'the registration without the matchCondition in effect',
      });
      const namespace = `${PROJECT}-before`;
      expect(validating(await growth(namespace))).toEqual([
        `CREATE LimitRange ${LIMITRANGE_NAME} by controller: allowed`,
        `CREATE Namespace ${namespace} by alice: allowed`,
        `CREATE NetworkPolicy ${NETWORK_POLICY_NAME} by controller: allowed`,
        `CREATE ResourceQuota ${DEFAULT_QUOTA_NAME} by controller: allowed`,
        `CREATE RoleBinding ${OWNERS_BINDING_NAME} by controller: allowed`,
      ]);
    } finally {
      await register(true);
    }
    await eventually(async () => expect(await controllerWriteIsSent(LOOKALIKE_NS)).toBe(false), {
      what: 'the shipped registration in effect again',
    });
  }, 180_000);
});

describe('a tenant cannot use that path', () => {
  beforeAll(async () => {
    // The tenant makes its own ServiceAccount named like the controller's and makes it an owner of the namespace.
    await kubectl('alice', ['-n', LOOKALIKE_NS, 'create', 'serviceaccount', 'tenantgate-controller']);
    await kubectl('alice', [
      '-n',
      LOOKALIKE_NS,
      'create',
      'rolebinding',
      'lookalike',
      '--clusterrole=tenantgate-project-owner',
      `--serviceaccount=${LOOKALIKE_NS}:tenantgate-controller`,
    ]);
    lookalikeKubeconfig = await serviceAccountKubeconfigFile(cluster(), LOOKALIKE_NS, 'tenantgate-controller');
  }, 120_000);

  const hold = JSON.stringify({ metadata: { finalizers: ['e2e.example.com/hold'] } });

  it.each([
    ['alice', 'rolebinding', OWNERS_BINDING_NAME, 'RoleBinding'],
    ['alice', 'networkpolicy', NETWORK_POLICY_NAME, 'NetworkPolicy'],
    [LOOKALIKE, 'rolebinding', OWNERS_BINDING_NAME, 'RoleBinding'],
    [LOOKALIKE, 'networkpolicy', NETWORK_POLICY_NAME, 'NetworkPolicy'],
  ])(
    '%s adding a finalizer to %s %s (its name and managed-by label kept) is reviewed and refused [T7]',
    async (user, resource, name, kind) => {
      const before = JSON.parse(
        (await kubectl('admin', ['-n', LOOKALIKE_NS, 'get', resource, name, '-o', 'json'])).stdout,
      );
      expect(before.metadata.labels[LABEL_MANAGED_BY]).toBe(MANAGED_BY);
      const from = decisions.length;
      const args = ['-n', LOOKALIKE_NS, 'patch', resource, name, '--type=merge', '-p', hold];
      const result =
        user === 'alice'
          ? await kubectl('alice', args, { reject: false })
          : await kubectlWith(lookalikeKubeconfig, args);
      expect(result.exitCode, result.stdout).not.toBe(0);
      expect(result.stderr).toContain('[T7]');
      const seen = decisions.slice(from).filter((d) => d.kind === kind && d.namespace === LOOKALIKE_NS);
      expect(seen.map((d) => [d.user, d.operation, d.verdict, d.rules])).toEqual([
        [user === 'alice' ? expect.stringMatching(/^alice/) : LOOKALIKE, 'UPDATE', 'denied', ['T7']],
      ]);
      const after = JSON.parse(
        (await kubectl('admin', ['-n', LOOKALIKE_NS, 'get', resource, name, '-o', 'json'])).stdout,
      );
      expect(after.metadata.finalizers).toBeUndefined();
      expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    },
    60_000,
  );

  it("cannot impersonate the controller's ServiceAccount (RBAC: 403, nothing sent)", async () => {
    const from = decisions.length;
    const result = await kubectl(
      'alice',
      ['--as', CONTROLLER, '-n', LOOKALIKE_NS, 'patch', 'rolebinding', OWNERS_BINDING_NAME, '--type=merge', '-p', hold],
      { reject: false },
    );
    expect(result.exitCode).not.toBe(0);
    // The authorizer's refusal (under constrained impersonation it names the verb: impersonate-on:…).
    expect(result.stderr).toMatch(/Forbidden.*User "alice" cannot impersonate/);
    expect(decisions.slice(from)).toEqual([]);
  }, 60_000);
});
