/**
 * A tenant cannot make a deletion wait for ever, and generateName works as a named create, on the real
 * control plane (kubeadm-style: the garbage collector and the namespace controller act as their own
 * kube-system ServiceAccounts) with the shipped webhook configurations and RBAC, the webhook and the
 * controller, tenants driven as real users through kubectl.
 *
 * The attack (docs/rules.md T7): alice, owner of payments, puts an owner reference with
 * blockOwnerDeletion to bob's Project ml, or a finalizer, on her own covering ResourceQuota (or on the
 * LimitRange, NetworkPolicy or RoleBinding tenantgate keeps in her namespace), by patch, create, replace
 * or server-side apply; or on a ConfigMap of her own (the ValidatingAdmissionPolicy
 * tenantgate-owner-references); or creates a namespace whose spec.finalizers nobody would remove. Every variant
 * is refused with [T7] and changes nothing stored; then foreground deletions (Argo CD prunes that way)
 * of bob's Project and of alice's namespace finish.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startController, type RunningController } from '../../src/controller/controller.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import {
  installBase,
  serviceAccountKubeConfig,
  startLocalWebhook,
  type LocalWebhook,
} from '../support/devcluster/tenantgate.js';
import { cluster, eventually, kubectl } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';

const LIMITS = { default: { cpu: '500m' }, defaultRequest: { cpu: '100m' } };
const project = (name: string, tenant: string, group: string, maxNamespaces?: number) => ({
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: { name },
  spec: {
    tenant,
    owners: [{ kind: 'Group', name: group }],
    quota: { hard: { 'requests.cpu': '10', pods: '50' } },
    namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', pods: '10' } }, limitRange: LIMITS },
    networkIsolation: true,
    ...(maxNamespaces ? { maxNamespaces } : {}),
  },
});
const PAYMENTS = project('dbpay', 'acme', 'acme:payments-admins', 3); // alice
const ML = project('dbml', 'globex', 'globex:admins'); // bob

let hook: LocalWebhook;
let controller: RunningController;
let mlUid = '';

const json = async <T = Record<string, any>>(args: string[]): Promise<T | undefined> => {
  const got = await kubectl('admin', [...args, '--ignore-not-found', '-o', 'json']);
  return got.stdout.trim() ? (JSON.parse(got.stdout) as T) : undefined;
};
/** The metadata that decides deletion, as stored. */
const deletionMeta = async (args: string[]) => {
  const o = await json(args);
  return { finalizers: o?.metadata.finalizers ?? [], ownerReferences: o?.metadata.ownerReferences ?? [] };
};
const foreignOwner = () => ({
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  name: 'dbml',
  uid: mlUid,
  blockOwnerDeletion: true,
});

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  hook = await startLocalWebhook(info);
  controller = await startController({
    kubeConfig: await serviceAccountKubeConfig(info, 'tenantgate-system', 'tenantgate-controller'),
    config: DEFAULT_CONFIG,
    leaderElection: false,
    log: () => {},
  });
  for (const p of [PAYMENTS, ML]) await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(p) });
  await eventually(async () => {
    for (const p of [PAYMENTS, ML])
      if (!hook.webhook.cache.snapshot.project(p.metadata.name))
        throw new Error(`${p.metadata.name} not in the webhook's cache`);
  });
  mlUid = (await kubectl('admin', ['get', 'project', 'dbml', '-o', 'jsonpath={.metadata.uid}'])).stdout;
  await kubectl('alice', ['create', 'namespace', 'dbpay-dev']);
  await kubectl('bob', ['create', 'namespace', 'dbml-serving']);
  await eventually(
    async () => {
      for (const ns of ['dbpay-dev', 'dbml-serving']) {
        for (const kind of [
          'rolebinding/tenantgate-owners',
          'quota/tenantgate-quota',
          'limitrange/tenantgate-limits',
          'networkpolicy/tenantgate-isolation',
        ])
          await kubectl('admin', ['-n', ns, 'get', kind]);
      }
    },
    { what: "the controller's objects in both namespaces" },
  );
  // A subject someone granted more RBAC in alice's namespace: write access to its LimitRanges.
  await kubectl('admin', [
    '-n',
    'dbpay-dev',
    'create',
    'role',
    'e2e-limitranges',
    '--verb=get,update,patch',
    '--resource=limitranges',
  ]);
  await kubectl('admin', [
    '-n',
    'dbpay-dev',
    'create',
    'rolebinding',
    'e2e-limitranges',
    '--role=e2e-limitranges',
    '--user=alice',
  ]);
}, 300_000);

afterAll(async () => {
  // While the controller runs, so that its finalizer takes the namespaces with the Projects.
  await removeProjects(['dbpay', 'dbml']);
  await controller?.stop();
  await hook?.stop();
});

describe('T7: a tenant puts no finalizer or blocking owner reference on what holds its budget and boundary', () => {
  const ownerRefPatch = (blockOwnerDeletion = true) =>
    JSON.stringify({ metadata: { ownerReferences: [{ ...foreignOwner(), blockOwnerDeletion }] } });
  const finalizerPatch = JSON.stringify([
    { op: 'add', path: '/metadata/finalizers', value: ['weird-domain.example.org/never-released'] },
  ]);
  // A blocking reference to a Project or Namespace is answered by the ValidatingAdmissionPolicy inside the
  // apiserver (it runs before the webhooks); any other change of either list by the webhook.
  const BY_POLICY =
    /\[T7\] \w+ dbpay-dev\/tenantgate-[a-z]+: user alice may not add an owner reference with blockOwnerDeletion to Project dbml/;
  const BY_WEBHOOK =
    /\[T7\] \w+ dbpay-dev\/tenantgate-[a-z]+ \(project dbpay, tenant acme\): user "alice" may not add, change or remove metadata\.(ownerReferences|finalizers) .*only privileged subjects set metadata\.finalizers and metadata\.ownerReferences/;
  const attacks: Array<[string, string, () => string[], RegExp]> = [
    [
      'the covering quota: a blocking owner reference by merge patch',
      'quota/tenantgate-quota',
      () => ['-n', 'dbpay-dev', 'patch', 'quota', 'tenantgate-quota', '--type=merge', '-p', ownerRefPatch()],
      BY_POLICY,
    ],
    [
      'the covering quota: a non-blocking owner reference',
      'quota/tenantgate-quota',
      () => ['-n', 'dbpay-dev', 'patch', 'quota', 'tenantgate-quota', '--type=merge', '-p', ownerRefPatch(false)],
      BY_WEBHOOK,
    ],
    [
      'the covering quota: a finalizer by JSON patch',
      'quota/tenantgate-quota',
      () => ['-n', 'dbpay-dev', 'patch', 'quota', 'tenantgate-quota', '--type=json', '-p', finalizerPatch],
      BY_WEBHOOK,
    ],
    [
      'the LimitRange: a blocking owner reference',
      'limitrange/tenantgate-limits',
      () => ['-n', 'dbpay-dev', 'patch', 'limitrange', 'tenantgate-limits', '--type=merge', '-p', ownerRefPatch()],
      BY_POLICY,
    ],
    [
      'the LimitRange: a finalizer',
      'limitrange/tenantgate-limits',
      () => ['-n', 'dbpay-dev', 'patch', 'limitrange', 'tenantgate-limits', '--type=json', '-p', finalizerPatch],
      BY_WEBHOOK,
    ],
    [
      'the NetworkPolicy: a non-blocking owner reference',
      'networkpolicy/tenantgate-isolation',
      () => [
        '-n',
        'dbpay-dev',
        'patch',
        'networkpolicy',
        'tenantgate-isolation',
        '--type=merge',
        '-p',
        ownerRefPatch(false),
      ],
      BY_WEBHOOK,
    ],
    [
      'the NetworkPolicy: a blocking owner reference',
      'networkpolicy/tenantgate-isolation',
      () => [
        '-n',
        'dbpay-dev',
        'patch',
        'networkpolicy',
        'tenantgate-isolation',
        '--type=merge',
        '-p',
        ownerRefPatch(),
      ],
      BY_POLICY,
    ],
    [
      'the RoleBinding: a finalizer',
      'rolebinding/tenantgate-owners',
      () => ['-n', 'dbpay-dev', 'patch', 'rolebinding', 'tenantgate-owners', '--type=json', '-p', finalizerPatch],
      BY_WEBHOOK,
    ],
  ];

  it.each(attacks)(
    '%s is refused with [T7], real and dry run, and nothing changes',
    async (_what, object, args, message) => {
      const before = await deletionMeta(['-n', 'dbpay-dev', 'get', object]);
      for (const dry of [[], ['--dry-run=server']]) {
        const r = await kubectl('alice', [...args(), ...dry], { reject: false });
        expect(r.exitCode, r.stdout).not.toBe(0);
        expect(r.stderr).toMatch(message);
      }
      expect(await deletionMeta(['-n', 'dbpay-dev', 'get', object])).toEqual(before);
    },
  );

  it('refuses the same on a new quota (create), on a replace and by server-side apply', async () => {
    const quota = (meta: Record<string, unknown>) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'ResourceQuota',
        metadata: { name: 'e2e-held', namespace: 'dbpay-dev', ...meta },
        spec: { hard: { pods: '5' } },
      });
    const created = await kubectl('alice', ['create', '-f', '-'], {
      input: quota({ finalizers: ['example.com/hold'] }),
      reject: false,
    });
    expect(created.stderr).toContain(
      '[T7] ResourceQuota dbpay-dev/e2e-held (project dbpay, tenant acme): user "alice" may not add, change or remove metadata.finalizers ([] → ["example.com/hold"])',
    );
    const applied = await kubectl('alice', ['apply', '--server-side', '-f', '-'], {
      input: quota({ ownerReferences: [foreignOwner()] }),
      reject: false,
    });
    expect(applied.stderr).toContain(
      '[T7] ResourceQuota dbpay-dev/e2e-held: user alice may not add an owner reference with blockOwnerDeletion to Project dbml',
    );
    expect(await json(['-n', 'dbpay-dev', 'get', 'quota', 'e2e-held'])).toBeUndefined();
    // The covering quota replaced whole, with a blocking owner reference (and by server-side apply).
    const stored = (await json(['-n', 'dbpay-dev', 'get', 'quota', 'tenantgate-quota']))!;
    const replaced = await kubectl('alice', ['replace', '-f', '-'], {
      input: JSON.stringify({
        ...stored,
        metadata: { ...stored.metadata, ownerReferences: [{ ...foreignOwner(), blockOwnerDeletion: false }] },
      }),
      reject: false,
    });
    expect(replaced.stderr).toContain(
      '[T7] ResourceQuota dbpay-dev/tenantgate-quota (project dbpay, tenant acme): user "alice" may not add, change or remove metadata.ownerReferences',
    );
    const ssa = await kubectl(
      'alice',
      ['apply', '--server-side', '--force-conflicts', '--field-manager=e2e', '-f', '-'],
      { input: quota({ name: 'tenantgate-quota', finalizers: ['example.com/hold'] }), reject: false },
    );
    expect(ssa.stderr).toContain(
      '[T7] ResourceQuota dbpay-dev/tenantgate-quota (project dbpay, tenant acme): user "alice" may not add, change or remove metadata.finalizers',
    );
    expect(await deletionMeta(['-n', 'dbpay-dev', 'get', 'quota', 'tenantgate-quota'])).toEqual({
      finalizers: [],
      ownerReferences: [],
    });
  });

  it('refuses, for objects of any kind (the ValidatingAdmissionPolicy), a new blocking owner reference to a Namespace or a Project', async () => {
    const nsUid = (await kubectl('admin', ['get', 'namespace', 'dbml-serving', '-o', 'jsonpath={.metadata.uid}']))
      .stdout;
    const configMap = (name: string, ref: Record<string, unknown>) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace: 'dbpay-dev', finalizers: ['example.com/hold'], ownerReferences: [ref] },
      });
    const toProject = await kubectl('alice', ['create', '-f', '-'], {
      input: configMap('e2e-hold-project', foreignOwner()),
      reject: false,
    });
    expect(toProject.stderr).toContain(
      '[T7] ConfigMap dbpay-dev/e2e-hold-project: user alice may not add an owner reference with blockOwnerDeletion to Project dbml (the foreground deletion of that owner would wait for this object); allowed: blockOwnerDeletion false or absent',
    );
    const nsRef = { apiVersion: 'v1', kind: 'Namespace', name: 'dbml-serving', uid: nsUid, blockOwnerDeletion: true };
    const toNamespace = await kubectl('alice', ['create', '-f', '-'], {
      input: configMap('e2e-hold-namespace', nsRef),
      reject: false,
    });
    expect(toNamespace.stderr).toContain(
      '[T7] ConfigMap dbpay-dev/e2e-hold-namespace: user alice may not add an owner reference with blockOwnerDeletion to Namespace dbml-serving',
    );
    // The same reference without blockOwnerDeletion holds nobody's deletion: admitted (and removed again).
    const harmless = JSON.stringify({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'e2e-owned',
        namespace: 'dbpay-dev',
        ownerReferences: [{ ...nsRef, blockOwnerDeletion: false }],
      },
    });
    const admitted = await kubectl('alice', ['create', '-f', '-'], { input: harmless, reject: false });
    expect(admitted.exitCode, admitted.stderr).toBe(0);
    const flipped = await kubectl(
      'alice',
      [
        '-n',
        'dbpay-dev',
        'patch',
        'configmap',
        'e2e-owned',
        '--type=json',
        '-p',
        '[{"op":"replace","path":"/metadata/ownerReferences/0/blockOwnerDeletion","value":true}]',
      ],
      { reject: false },
    );
    expect(flipped.stderr).toContain('[T7] ConfigMap dbpay-dev/e2e-owned');
    await kubectl('alice', ['-n', 'dbpay-dev', 'delete', 'configmap', 'e2e-owned']);
    for (const name of ['e2e-hold-project', 'e2e-hold-namespace'])
      expect(await json(['-n', 'dbpay-dev', 'get', 'configmap', name])).toBeUndefined();
  });

  it('refuses a namespace whose spec.finalizers nobody would remove', async () => {
    const ns = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'dbpay-stuck' },
      spec: { finalizers: ['kubernetes', 'example.com/never'] },
    });
    const r = await kubectl('alice', ['create', '-f', '-'], { input: ns, reject: false });
    expect(r.stderr).toContain(
      '[T7] Namespace dbpay-stuck (project dbpay, tenant acme): user "alice" may not set spec.finalizers "example.com/never"',
    );
    expect(await json(['get', 'namespace', 'dbpay-stuck'])).toBeUndefined();
  });
});

describe('generateName', () => {
  const generated = (user: string, prefix: string, dry: string[] = []) =>
    kubectl(user, ['create', '-f', '-', '-o', 'json', ...dry], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { generateName: prefix } }),
      reject: false,
    });

  it('alice gets a labelled namespace of her project, with its quota, and maxNamespaces counts it', async () => {
    const dry = await generated('alice', 'dbpay-', ['--dry-run=server']);
    expect(dry.exitCode, dry.stderr).toBe(0);
    const r = await generated('alice', 'dbpay-');
    expect(r.exitCode, r.stderr).toBe(0);
    const ns = JSON.parse(r.stdout) as {
      metadata: { name: string; labels: Record<string, string>; annotations: Record<string, string> };
    };
    expect(ns.metadata.name).toMatch(/^dbpay-[a-z0-9]{5}$/);
    expect(ns.metadata.labels).toMatchObject({
      'tenantgate.io/project': 'dbpay',
      'tenantgate.io/tenant': 'acme',
      'pod-security.kubernetes.io/enforce': 'baseline',
    });
    expect(ns.metadata.annotations['tenantgate.io/project-uid']).toBe(
      (await json(['get', 'project', 'dbpay']))!.metadata.uid,
    );
    await eventually(() => kubectl('admin', ['-n', ns.metadata.name, 'get', 'quota', 'tenantgate-quota']), {
      what: `the default quota in ${ns.metadata.name}`,
    });
    // dbpay-dev and this one; a third fits maxNamespaces 3, a fourth does not.
    expect((await generated('alice', 'dbpay-')).exitCode).toBe(0);
    const over = await generated('alice', 'dbpay-');
    expect(over.exitCode).not.toBe(0);
    expect(over.stderr).toMatch(
      /\[Q1\] Namespace dbpay-[a-z0-9]{5} would be namespace 4 of project dbpay, whose maxNamespaces is 3/,
    );
  });

  it('bob is refused a prefix he does not own, told the generateName and the projects he may use', async () => {
    const r = await generated('bob', 'dbpay-');
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toMatch(
      /\[T4\] user "bob" may not create namespace dbpay-[a-z0-9]{5} \(generateName "dbpay-"\): it belongs to project dbpay \(tenant acme\), whose owners are Group acme:payments-admins; user "bob" owns projects? (?:[a-z0-9-]+ \(namespaces starting with "[a-z0-9-]+"\), )*dbml \(namespaces starting with "dbml-"\)/,
    );
    const none = await generated('bob', 'scratch-');
    expect(none.stderr).toMatch(
      /\[T6\] Namespace scratch-[a-z0-9]{5} \(generateName "scratch-"\) belongs to no project, and user "bob" may only create namespaces inside a project it owns \(names starting with (?:"[a-z0-9-]+" or )*"dbml-"(?: or "[a-z0-9-]+")*\)/,
    );
  });
});

describe('foreground deletion finishes', () => {
  it("of another tenant's Project (as Argo CD prunes), after the attack was refused", async () => {
    const deleted = await kubectl('admin', ['delete', 'project', 'dbml', '--cascade=foreground', '--wait=false']);
    expect(deleted.exitCode).toBe(0);
    await eventually(
      async () => {
        expect(await json(['get', 'project', 'dbml'])).toBeUndefined();
        expect(await json(['get', 'namespace', 'dbml-serving'])).toBeUndefined();
      },
      { timeoutMs: 120_000, intervalMs: 1000, what: 'Project dbml and its namespace gone' },
    );
  }, 180_000);

  it('of a namespace, deleted by its owner', async () => {
    const deleted = await kubectl('alice', [
      'delete',
      'namespace',
      'dbpay-dev',
      '--cascade=foreground',
      '--wait=false',
    ]);
    expect(deleted.exitCode).toBe(0);
    await eventually(async () => expect(await json(['get', 'namespace', 'dbpay-dev'])).toBeUndefined(), {
      timeoutMs: 120_000,
      intervalMs: 1000,
      what: 'namespace dbpay-dev gone',
    });
  }, 180_000);
});
