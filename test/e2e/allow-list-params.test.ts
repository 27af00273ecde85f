/**
 * The allow-list policies' parameters on the real control plane (docs/adr/0095-allow-lists-in-the-api-server.md,
 * T9): the controller, under its ServiceAccount with the chart's RBAC, writes the AllowList tenantgate-allow
 * into every project namespace (self-service and declared) with the Project's lists resolved over
 * tenantgate.yaml's, follows the Project, puts it back when an administrator deletes or edits it, and once
 * converged writes nothing. A tenant cannot write it: RBAC refuses her, and with a Role granting her `*` on
 * `*` in her namespace the policy tenantgate-allow-lists-params refuses her with [T9]. Her namespace still
 * goes away when she deletes it (the namespace controller empties it), also when a claim in it is finalized
 * last: the AllowList waits for it (its finalizer, src/controller/allow-list-finalizer.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startController, type RunningController } from '../../src/controller/controller.js';
import { reconcileWrites } from '../../src/controller/metrics.js';
import { DEFAULT_CONFIG, type TenantgateConfig } from '../../src/config/config.js';
import {
  installBase,
  serviceAccountKubeConfig,
  startLocalWebhook,
  type LocalWebhook,
} from '../support/devcluster/tenantgate.js';
import { cluster, eventually, kubectl, uniqueName } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';

const PROJECT = uniqueName('alp').replace(/[^a-z0-9-]/g, '');
const SELF = `${PROJECT}-self`;
const DECLARED = `${PROJECT}-declared`;
const GONE = `${PROJECT}-gone`;
const HELD = `${PROJECT}-held`;
const NAME = 'tenantgate-allow';
/** The Project's registries, then after its change. */
const FIRST = ['registry.example.com/'];
const SECOND = ['registry.example.com/', `ghcr.io/${PROJECT}`];

/** tenantgate.yaml of this test: defaults for two lists the Project leaves unset. */
const CONFIG: TenantgateConfig = {
  ...DEFAULT_CONFIG,
  allow: { ingressClasses: ['nginx'], hostnames: { suffixes: ['{project}.apps.example.com'] } },
};

const projectSpec = (registries: string[]) => ({
  tenant: 'acme',
  owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
  quota: { hard: { 'requests.cpu': '4', pods: '20' } },
  namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', pods: '5' } } },
  namespaces: [{ name: DECLARED }],
  allow: {
    registries,
    storageClasses: ['standard'],
    priorityClasses: ['batch-low', 'system-cluster-critical'],
    nodePlacement: { nodeSelector: { pool: PROJECT }, tolerations: [{ key: 'dedicated', value: PROJECT }] },
  },
});

/** What the AllowList must say, written out from the ADR ("The parameters") for projectSpec and CONFIG. */
const expectedSpec = (registries: string[]) => ({
  project: PROJECT,
  tenant: 'acme',
  priorityClasses: { any: false, names: ['batch-low', 'system-cluster-critical'] },
  systemPriorityClasses: ['system-cluster-critical'],
  services: { types: [], externalIPs: [], loadBalancerSourceRanges: { any: true, cidrs: [] } },
  hostnames: { suffixes: [`${PROJECT}.apps.example.com`], wildcards: false },
  ingressClasses: { any: false, names: ['nginx'] },
  gatewayClasses: { any: true, names: [] },
  storageClasses: { any: false, names: ['standard'] },
  runtimeClasses: { any: true, names: [] },
  deviceClasses: { any: true, names: [] },
  nodeSelector: { pool: PROJECT },
  tolerations: [{ key: 'dedicated', operator: 'Equal', value: PROJECT, effect: '' }],
  registries: { any: false, prefixes: registries },
  persistentVolumes: { unowned: false },
});

interface Stored {
  metadata: {
    uid: string;
    labels?: Record<string, string>;
    deletionTimestamp?: string;
    finalizers?: string[];
    managedFields?: unknown[];
  };
  spec: Record<string, unknown>;
}

let hook: LocalWebhook;
let controller: RunningController;
/** The controller's "reconciled" log lines, with when each reconcile started (its end less its `ms`). */
const reconciled: Array<{ project: string; result: string; startedAt: number }> = [];

async function allowList(namespace: string): Promise<Stored | undefined> {
  const got = await kubectl('admin', ['-n', namespace, 'get', 'allowlist', NAME, '--ignore-not-found', '-o', 'json']);
  return got.stdout.trim() ? (JSON.parse(got.stdout) as Stored) : undefined;
}

/** Waits until the namespace's AllowList says `spec` and carries our labels; returns it. */
async function converged(namespace: string, spec: Record<string, unknown>, what: string): Promise<Stored> {
  return eventually(
    async () => {
      const found = await allowList(namespace);
      expect(found?.spec).toEqual(spec);
      const labels = { 'app.kubernetes.io/managed-by': 'tenantgate', 'tenantgate.io/project': PROJECT };
      expect(found!.metadata.labels).toMatchObject(labels);
      return found!;
    },
    { timeoutMs: 30_000, what },
  );
}

async function applyProject(registries: string[]): Promise<void> {
  const project = {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: PROJECT },
    spec: projectSpec(registries),
  };
  const applied = await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(project), reject: false });
  expect(applied.exitCode, applied.stderr).toBe(0);
}

/** alice's write of an AllowList: refused, with `fragment` in the error; the stored one is unchanged. */
async function aliceRefused(args: string[], fragment: string, input?: string): Promise<void> {
  const before = await allowList(SELF);
  const result = await kubectl('alice', ['-n', SELF, ...args], { reject: false, ...(input ? { input } : {}) });
  expect(result.exitCode, `alice ${args.join(' ')} must be refused`).not.toBe(0);
  expect(result.stderr).toContain(fragment);
  const after = await allowList(SELF);
  expect(after?.metadata.uid).toBe(before?.metadata.uid);
  expect(after?.spec).toEqual(before?.spec);
  const created = await kubectl('admin', ['-n', SELF, 'get', 'allowlist', 'mine', '--ignore-not-found', '-o', 'name']);
  expect(created.stdout.trim()).toBe('');
}

/** An AllowList of alice's own that lets every image in. */
const mine = () =>
  JSON.stringify({
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'AllowList',
    metadata: { name: 'mine' },
    spec: { ...expectedSpec([]), registries: { any: true, prefixes: [] } },
  });
/** A JSON patch letting every image in. */
const WIDEN = JSON.stringify([{ op: 'replace', path: '/spec/registries', value: { any: true, prefixes: [] } }]);

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  hook = await startLocalWebhook(info, CONFIG);
  controller = await startController({
    kubeConfig: await serviceAccountKubeConfig(info, 'tenantgate-system', 'tenantgate-controller'),
    config: CONFIG,
    leaderElection: false,
    log: (message, fields) => {
      if (message !== 'reconciled' || typeof fields?.ms !== 'number') return;
      const startedAt = Date.now() - fields.ms;
      reconciled.push({ project: String(fields.project), result: String(fields.result), startedAt });
    },
  });
  await applyProject(FIRST);
}, 300_000);

afterAll(async () => {
  // While the controller runs, so that its finalizer takes the namespaces with the Project.
  await removeProjects([PROJECT]);
  await controller?.stop();
  await hook?.stop();
});

describe('the controller writes and repairs tenantgate-allow', () => {
  it("alice's self-service namespace and the declared one get the Project's lists over tenantgate.yaml's", async () => {
    const created = await kubectl('alice', ['create', 'namespace', SELF], { reject: false });
    expect(created.exitCode, created.stderr).toBe(0);
    const declared = await kubectl('admin', ['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: DECLARED, labels: { 'tenantgate.io/project': PROJECT, 'tenantgate.io/tenant': 'acme' } },
      }),
      reject: false,
    });
    expect(declared.exitCode, declared.stderr).toBe(0);
    for (const ns of [SELF, DECLARED]) await converged(ns, expectedSpec(FIRST), `AllowList in ${ns}`);
    // Without managedFields (the API server converts the parameters on every judged request).
    for (const ns of [SELF, DECLARED]) {
      const shown = await kubectl('admin', ['-n', ns, 'get', 'allowlist', NAME, '-o', 'json', '--show-managed-fields']);
      expect((JSON.parse(shown.stdout) as Stored).metadata.managedFields, `AllowList in ${ns}`).toBeUndefined();
    }
  });

  it('follows the Project: a new registry reaches every namespace', async () => {
    await applyProject(SECOND);
    for (const ns of [SELF, DECLARED]) await converged(ns, expectedSpec(SECOND), `AllowList in ${ns} after the change`);
  });

  it('deleted by an administrator, it comes back; edited or unlabelled, it is set back', async () => {
    const spec = expectedSpec(SECOND);
    const first = (await allowList(SELF))!.metadata.uid;
    const deleted = await kubectl('admin', ['-n', SELF, 'delete', 'allowlist', NAME], { reject: false });
    expect(deleted.exitCode, deleted.stderr).toBe(0);
    const back = await converged(SELF, spec, 'AllowList recreated');
    expect(back.metadata.uid).not.toBe(first);

    const patch = ['-n', SELF, 'patch', 'allowlist', NAME, '--type=json', '-p', WIDEN];
    const edited = await kubectl('admin', patch, { reject: false });
    expect(edited.exitCode, edited.stderr).toBe(0);
    const repaired = await converged(SELF, spec, 'the widened AllowList set back');
    expect(repaired.metadata.uid).toBe(back.metadata.uid);

    // Without our label it leaves the controller's cache: it is found by name and set back.
    await kubectl('admin', ['-n', SELF, 'label', 'allowlist', NAME, 'app.kubernetes.io/managed-by-']);
    await converged(SELF, spec, 'the AllowList labelled again');
  });

  it('once converged, another pass writes nothing', async () => {
    for (const ns of [SELF, DECLARED]) await converged(ns, expectedSpec(SECOND), `AllowList in ${ns}`);
    const before = reconcileWrites(await controller.metrics.writes());
    const touchedAt = Date.now();
    await kubectl('admin', ['annotate', 'project', PROJECT, `e2e.tenantgate.io/touch=${touchedAt}`, '--overwrite']);
    const touched = () =>
      reconciled.some((r) => r.project === PROJECT && r.result === 'done' && r.startedAt >= touchedAt);
    const what = 'a reconcile of the touched Project';
    await eventually(async () => expect(touched()).toBe(true), { timeoutMs: 30_000, what });
    expect(reconcileWrites(await controller.metrics.writes())).toBe(before);
  });
});

describe('a tenant cannot write the parameters (RBAC, then [T9])', () => {
  it('RBAC refuses alice every create, update and delete of an AllowList in her namespace', async () => {
    await aliceRefused(['create', '-f', '-'], 'cannot create resource "allowlists"', mine());
    // replace, not patch: kubectl's patch reads first, and RBAC would refuse the read.
    const everyImage = { ...expectedSpec(SECOND), registries: { any: true, prefixes: [] } };
    const widened = { ...(await allowList(SELF))!, spec: everyImage };
    await aliceRefused(['replace', '-f', '-'], 'cannot update resource "allowlists"', JSON.stringify(widened));
    await aliceRefused(['delete', 'allowlist', NAME], 'cannot delete resource "allowlists"');
  });

  it('with a Role granting her * on * in her namespace, [T9] refuses her: manage reaches her there only', async () => {
    const grant = [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'everything', namespace: SELF },
        rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'everything', namespace: SELF },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'everything' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
      },
    ];
    const input = grant.map((o) => JSON.stringify(o)).join('\n');
    const granted = await kubectl('admin', ['apply', '-f', '-'], { input, reject: false });
    expect(granted.exitCode, granted.stderr).toBe(0);
    const canI = async (...args: string[]) =>
      (await kubectl('alice', ['auth', 'can-i', ...args], { reject: false })).stdout.trim();
    await eventually(async () => expect(await canI('-n', SELF, 'delete', 'allowlists.tenantgate.io')).toBe('yes'));
    expect(await canI('-n', SELF, 'manage', 'allowlists.tenantgate.io')).toBe('yes');
    expect(await canI('manage', 'allowlists.tenantgate.io', '--all-namespaces')).toBe('no');

    const t9 = (verb: string, name = NAME) =>
      `[T9] AllowList ${SELF}/${name}: user "alice" may not ${verb} it; ` +
      'only subjects allowed the verb manage on allowlists.tenantgate.io cluster-wide';
    await aliceRefused(['create', '-f', '-'], t9('create', 'mine'), mine());
    await aliceRefused(['patch', 'allowlist', NAME, '--type=json', '-p', WIDEN], t9('update'));
    await aliceRefused(['delete', 'allowlist', NAME], t9('delete'));
    // What the tenant could do with the Role: the guard is not in her way elsewhere.
    const other = await kubectl('alice', ['-n', SELF, 'create', 'configmap', 'probe'], { reject: false });
    expect(other.exitCode, other.stderr).toBe(0);
  });

  it('her namespace still goes away when she deletes it: the namespace controller deletes its AllowList', async () => {
    const created = await kubectl('alice', ['create', 'namespace', GONE], { reject: false });
    expect(created.exitCode, created.stderr).toBe(0);
    const written = { timeoutMs: 30_000, what: `AllowList in ${GONE}` };
    await eventually(async () => expect(await allowList(GONE)).toBeDefined(), written);
    const deleted = await kubectl('alice', ['delete', 'namespace', GONE, '--wait=false'], { reject: false });
    expect(deleted.exitCode, deleted.stderr).toBe(0);
    const found = async () =>
      (await kubectl('admin', ['get', 'namespace', GONE, '--ignore-not-found', '-o', 'name'])).stdout.trim();
    await eventually(async () => expect(await found()).toBe(''), { timeoutMs: 90_000, what: `namespace ${GONE} gone` });
  });

  it('a claim finalized after everything else in her deleted namespace is still admitted: the AllowList goes last', async () => {
    const created = await kubectl('alice', ['create', 'namespace', HELD], { reject: false });
    expect(created.exitCode, created.stderr).toBe(0);
    await eventually(async () => expect(await allowList(HELD)).toBeDefined(), {
      timeoutMs: 30_000,
      what: `AllowList in ${HELD}`,
    });
    // A claim held by a finalizer of its own, as pvc-protection holds one while a pod uses it.
    const claim = await kubectl('admin', ['-n', HELD, 'apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'data', finalizers: ['e2e.tenantgate.io/hold'] },
        spec: {
          storageClassName: 'standard',
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '1Gi' } },
        },
      }),
      reject: false,
    });
    expect(claim.exitCode, claim.stderr).toBe(0);
    const deleted = await kubectl('alice', ['delete', 'namespace', HELD, '--wait=false'], { reject: false });
    expect(deleted.exitCode, deleted.stderr).toBe(0);
    // The namespace controller has deleted what it could: the claim waits on its finalizer, the AllowList on ours.
    await eventually(
      async () => {
        const held = await allowList(HELD);
        expect(held?.metadata.deletionTimestamp, 'AllowList deleted by the namespace controller').toBeDefined();
        expect(held?.metadata.finalizers).toContain('tenantgate.io/outlive-judged-objects');
      },
      { timeoutMs: 60_000, what: `AllowList in ${HELD} deleted and held` },
    );
    // The claim's finalizer goes (an UPDATE the policy tenantgate-allow-persistentvolumeclaims judges): admitted.
    const released = await kubectl(
      'admin',
      ['-n', HELD, 'patch', 'pvc', 'data', '--type=merge', '-p', '{"metadata":{"finalizers":null}}'],
      { reject: false },
    );
    expect(released.exitCode, released.stderr).toBe(0);
    const found = async () =>
      (await kubectl('admin', ['get', 'namespace', HELD, '--ignore-not-found', '-o', 'name'])).stdout.trim();
    await eventually(async () => expect(await found()).toBe(''), { timeoutMs: 90_000, what: `namespace ${HELD} gone` });
  });
});
