/**
 * The tenancy boundary as an attacker tries it: every tenant identity × every target × every
 * verb, with and without --dry-run=server, through the real kubectl against the real apiserver, with the
 * shipped RBAC, the webhook, the policy for the namespaces the webhook skips, and the real controller
 * (which grants owners their per-namespace RoleBinding). Each cell asserts the verdict (the rule id, or
 * the authorizer's 403) and re-reads the stored state: unchanged after every denial and every dry run.
 *
 * The matrix is data: one line per (target, verb), one column per subject.
 */
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { startController, type RunningController } from '../../src/controller/controller.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import {
  installBase,
  serviceAccountKubeConfig,
  serviceAccountKubeconfigFile,
  startLocalWebhook,
  unregisterWebhooks,
  type LocalWebhook,
} from '../support/devcluster/tenantgate.js';
import { OWNERS_BINDING_NAME } from '../../src/render/owner-binding.js';
import { LABEL_PROJECT, LEDGER_PREFIX } from '../../src/validate/types.js';
import { startWebhook } from '../../src/webhook/start.js';
import type { AdmissionDecision } from '../../src/webhook/server.js';
import { cluster, eventually, kubeConfig, kubectl } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';
import { execa } from 'execa';

// --- the cast -------------------------------------------------------------------------------------
// shop (tenant acme): Group acme:payments-admins (alice) and ServiceAccount tb-ci/deployer (sa).
// blog (tenant acme): Group acme:web-admins (carol).  ml (tenant globex): Group globex:admins (bob).
// dave is a tenant without a project; nobody has no RBAC at all; `over` is a ServiceAccount an
// administrator gave far too much RBAC (every verb on namespaces, quotas and projects, cluster-wide):
// the webhook and the policy must hold even then.
const SUBJECTS = ['alice', 'carol', 'bob', 'dave', 'sa', 'over', 'nobody'] as const;
type Subject = (typeof SUBJECTS)[number];

const project = (name: string, tenant: string, owners: unknown[]) => ({
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: { name },
  spec: {
    tenant,
    owners,
    quota: { hard: { 'requests.cpu': '20', pods: '100' } },
    namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', pods: '20' } } },
  },
});
const PROJECTS = [
  project('shop', 'acme', [
    { kind: 'Group', name: 'acme:payments-admins' },
    { kind: 'ServiceAccount', namespace: 'tb-ci', name: 'deployer' },
  ]),
  project('blog', 'acme', [{ kind: 'Group', name: 'acme:web-admins' }]),
  project('ml', 'globex', [{ kind: 'Group', name: 'globex:admins' }]),
];
const GUARD = 'tenantgate-quota'; // the quota every target namespace has (the controller's default in project namespaces)

// --- the verbs ------------------------------------------------------------------------------------
const NS_VERBS: Record<string, (ns: string) => string[]> = {
  label: (ns) => ['label', 'namespace', ns, 'e2e-team=x', '--overwrite'],
  'label pod-security': (ns) => [
    'label',
    'namespace',
    ns,
    'pod-security.kubernetes.io/enforce=privileged',
    '--overwrite',
  ],
  'annotate project-uid': (ns) => ['annotate', 'namespace', ns, 'tenantgate.io/project-uid=forged', '--overwrite'],
  'move to another project': (ns) => [
    'label',
    'namespace',
    ns,
    `tenantgate.io/project=${ns.startsWith('shop-') ? 'blog' : 'shop'}`,
    '--overwrite',
  ],
  delete: (ns) => ['delete', 'namespace', ns, '--wait=false'],
  'quota create': (ns) => ['-n', ns, 'create', 'quota', 'e2e-extra', '--hard=pods=1'],
  'quota patch': (ns) => ['-n', ns, 'patch', 'quota', GUARD, '--type=merge', '-p', '{"spec":{"hard":{"pods":"3"}}}'],
  'quota delete': (ns) => ['-n', ns, 'delete', 'quota', GUARD, '--wait=false'],
  // A finalizer of its own would block its project's cascade; an ownerReference with blockOwnerDeletion
  // to another tenant's Project (its uid is readable by every tenant) would stall that Project's deletion.
  'add finalizer': (ns) => [
    'patch',
    'namespace',
    ns,
    '--type=json',
    '-p',
    '[{"op":"add","path":"/metadata/finalizers","value":["example.com/hold"]}]',
  ],
  'add ownerReference': (ns) => [
    'patch',
    'namespace',
    ns,
    '--type=merge',
    '-p',
    JSON.stringify({
      metadata: {
        ownerReferences: [
          {
            apiVersion: 'tenantgate.io/v1alpha1',
            kind: 'Project',
            name: 'ml',
            uid: FOREIGN_UID,
            blockOwnerDeletion: true,
          },
        ],
      },
    }),
  ],
  // Subresources: RBAC grants tenants neither; `over` has them (see its ClusterRole), the webhook answers T8.
  'status patch': (ns) => [
    'patch',
    'namespace',
    ns,
    '--subresource=status',
    '--type=merge',
    '-p',
    '{"status":{"conditions":[{"type":"E2EForged","status":"True"}]}}',
  ],
  'quota status patch': (ns) => [
    '-n',
    ns,
    'patch',
    'quota',
    GUARD,
    '--subresource=status',
    '--type=merge',
    '-p',
    '{"status":{"hard":{"pods":"9999"}}}',
  ],
};
const FOREIGN_UID = '0d5c6a1e-7f2b-4c1a-9e55-3b1f0c2d4e6f';

/** ok: admitted. 403: the authorizer. A rule id: the webhook's or the policy's denial carrying it. */
type Verdict = 'ok' | '403' | 'T3' | 'T4' | 'T5' | 'T6' | 'T7' | 'T8' | 'Q3' | 'N2' | 'immortal';
type Row = [target: string, verb: string, ...verdicts: Verdict[]];

//                                              alice   carol   bob     dave    sa      over    nobody
const owner = (o: Subject, target: string): Row[] => {
  const col = (own: Verdict, overV: Verdict): Verdict[] =>
    SUBJECTS.map((s) => (s === 'over' ? overV : s === o || (o === 'alice' && s === 'sa') ? own : '403'));
  return [
    [target, 'label', ...col('ok', 'T4')],
    [target, 'label pod-security', ...col('T7', 'T4')],
    [target, 'annotate project-uid', ...col('T7', 'T4')],
    [target, 'move to another project', ...col('T3', 'T4')],
    [target, 'delete', ...col('ok', 'T4')],
    [target, 'quota create', ...col('ok', 'T4')],
    [target, 'quota patch', ...col('ok', 'T4')],
    [target, 'quota delete', ...col('Q3', 'T4')],
    [target, 'add finalizer', ...col('T7', 'T4')],
    [target, 'add ownerReference', ...col('T7', 'T4')],
    [target, 'status patch', ...col('403', 'T8')],
    [target, 'quota status patch', ...col('403', 'T8')],
  ];
};
// kube-system and kube-public cannot be deleted by anyone (the apiserver's NamespaceLifecycle).
const SUBRESOURCE_VERBS = new Set(['status patch', 'quota status patch']);
const outside = (
  target: string,
  overV: Verdict,
  overDelete: Verdict = overV,
  overSubresource: Verdict = overV,
): Row[] =>
  Object.keys(NS_VERBS).map((verb) => [
    target,
    verb,
    '403',
    '403',
    '403',
    '403',
    '403',
    verb === 'delete' ? overDelete : SUBRESOURCE_VERBS.has(verb) ? overSubresource : overV,
    '403',
  ]);

const MATRIX: Row[] = [
  ...owner('alice', 'shop-dev'), // alice's own project (and the ServiceAccount's)
  ...owner('carol', 'blog-app'), // same tenant, another project
  ...owner('bob', 'ml-serving'), // another tenant
  // Made by an administrator, in no project (argocd, cert-manager…). Subresource writes are T8 wherever
  // the webhook sees them; in the namespaces it skips, the policy answers T6.
  ...outside('platform-tools', 'T6', 'T6', 'T8'),
  ...outside('kube-public', 'T6', 'immortal', 'T8'),
  ...outside('kube-system', 'T6', 'immortal'), // skipped by the webhook: the ValidatingAdmissionPolicy answers
  ...outside('tenantgate-system', 'T6'),
];

/** Rows that are not a verb on a namespace: tenantgate's own objects, Projects, namespace creation. */
const OTHER: Record<
  string,
  {
    args: (s: Subject) => string[];
    read: () => Promise<unknown>;
    verdicts: Verdict[];
    restore?: () => Promise<void>;
    readOnly?: true;
    message?: (s: Subject) => string;
  }
> = {
  'get ledger ConfigMap': {
    readOnly: true,
    args: () => ['-n', 'tenantgate-system', 'get', 'configmap', `${LEDGER_PREFIX}shop`],
    read: async () => null,
    verdicts: ['403', '403', '403', '403', '403', '403', '403'],
  },
  'patch ledger ConfigMap': {
    args: () => [
      '-n',
      'tenantgate-system',
      'patch',
      'configmap',
      `${LEDGER_PREFIX}shop`,
      '--type=merge',
      '-p',
      '{"data":{"forged":"1"}}',
    ],
    read: () => readJson(['-n', 'tenantgate-system', 'get', 'configmap', `${LEDGER_PREFIX}shop`]),
    verdicts: ['403', '403', '403', '403', '403', '403', '403'],
  },
  'get webhook Secret': {
    readOnly: true,
    args: () => ['-n', 'tenantgate-system', 'get', 'secret', 'tenantgate-webhook-tls'],
    read: async () => null,
    verdicts: ['403', '403', '403', '403', '403', '403', '403'],
  },
  'get config ConfigMap': {
    readOnly: true,
    args: () => ['-n', 'tenantgate-system', 'get', 'configmap', 'tenantgate-config'],
    read: async () => null,
    verdicts: ['403', '403', '403', '403', '403', '403', '403'],
  },
  'patch own Project': {
    args: () => ['patch', 'project', 'shop', '--type=merge', '-p', '{"spec":{"quota":{"hard":{"pods":"9999"}}}}'],
    read: () => readJson(['get', 'project', 'shop'], (o) => (o as { spec: unknown }).spec),
    verdicts: ['403', '403', '403', '403', '403', 'T5', '403'],
  },
  "delete another tenant's Project": {
    args: () => ['delete', 'project', 'ml', '--wait=false'],
    read: () =>
      readJson(
        ['get', 'project', 'ml'],
        (o) => (o as { metadata: { deletionTimestamp?: string } }).metadata.deletionTimestamp ?? null,
      ),
    verdicts: ['403', '403', '403', '403', '403', 'T5', '403'],
  },
  'create a Project': {
    args: () => ['create', '-f', '-'],
    read: () => readJson(['get', 'project', 'forged', '--ignore-not-found']),
    verdicts: ['403', '403', '403', '403', '403', 'T5', '403'],
  },
  // The names the webhooks skip: the policy refuses them to tenants even where the namespace does not exist
  // yet. Here they exist, so an admitted create would fail only later (AlreadyExists): the refusal must be
  // the policy's own message, naming the user and the operation, and the namespace must be as before.
  'create namespace kube-system': {
    args: () => ['create', 'namespace', 'kube-system'],
    read: () => systemNamespace('kube-system'),
    verdicts: ['T6', 'T6', 'T6', 'T6', 'T6', 'T6', '403'],
    message: (s) => policyRefusal('kube-system', s),
  },
  'create namespace tenantgate-system': {
    args: () => ['create', 'namespace', 'tenantgate-system'],
    read: () => systemNamespace('tenantgate-system'),
    verdicts: ['T6', 'T6', 'T6', 'T6', 'T6', 'T6', '403'],
    message: (s) => policyRefusal('tenantgate-system', s),
  },
  'create namespace kube-evil': {
    args: () => ['create', 'namespace', 'kube-evil'],
    read: () => readJson(['get', 'namespace', 'kube-evil', '--ignore-not-found']),
    verdicts: ['N2', 'N2', 'N2', 'N2', 'N2', 'N2', '403'],
  },
  'create namespace ml-stolen': {
    args: () => ['create', 'namespace', 'ml-stolen'],
    read: () => readJson(['get', 'namespace', 'ml-stolen', '--ignore-not-found']),
    verdicts: ['T4', 'T4', 'ok', 'T4', 'T4', 'T4', '403'],
    restore: async () =>
      void (await kubectl('admin', ['delete', 'namespace', 'ml-stolen', '--ignore-not-found', '--wait=false'])),
  },
};
const FORGED_PROJECT = JSON.stringify(project('forged', 'acme', [{ kind: 'Group', name: 'tenants' }]));

/** The user name the apiserver sees for each subject. */
const USERNAME: Record<Subject, string> = {
  alice: 'alice',
  carol: 'carol',
  bob: 'bob',
  dave: 'dave',
  sa: 'system:serviceaccount:tb-ci:deployer',
  over: 'system:serviceaccount:tb-ci:over',
  nobody: 'nobody',
};

/** The ValidatingAdmissionPolicy's refusal of a namespace create (manifests/webhook/excluded-namespaces-policy.yaml). */
const policyRefusal = (ns: string, s: Subject) =>
  `ValidatingAdmissionPolicy 'tenantgate-excluded-namespaces' with binding 'tenantgate-excluded-namespaces' denied request: [T6] Namespace ${ns}: user ${USERNAME[s]} may not create it; kube-system and tenantgate-system are managed only by subjects allowed to manage systemnamespaces.tenantgate.io (cluster administrators)`;

/** A namespace that exists as stored: uid, resourceVersion, labels and annotations (null when absent, which fails the rows that need it). */
async function systemNamespace(name: string): Promise<unknown> {
  const got = (await readJson(['get', 'namespace', name, '--ignore-not-found'])) as {
    metadata: { uid: string; resourceVersion: string; labels?: unknown; annotations?: unknown };
  } | null;
  expect(got, `namespace ${name} exists`).not.toBeNull();
  const { uid, resourceVersion, labels, annotations } = got!.metadata;
  return { uid, resourceVersion, labels, annotations };
}

// --- plumbing -------------------------------------------------------------------------------------
let hook: LocalWebhook;
let controller: RunningController;
/** Every decision the webhook made, in order: what the apiserver sent it (its matchConditions skip the rest). */
const decisions: AdmissionDecision[] = [];
const kubeconfigs = {} as Record<Subject, string>;

async function readJson(args: string[], pick: (o: unknown) => unknown = (o) => o): Promise<unknown> {
  const out = (await kubectl('admin', [...args, '-o', 'json'])).stdout.trim();
  return out ? pick(JSON.parse(out)) : null;
}

/** What a cell may change, as stored: the target namespace's metadata and status, its quotas and RoleBindings. */
async function namespaceState(ns: string): Promise<unknown> {
  const core = kubeConfig('admin').makeApiClient(k8s.CoreV1Api);
  const rbac = kubeConfig('admin').makeApiClient(k8s.RbacAuthorizationV1Api);
  const n = await core.readNamespace({ name: ns });
  const quotas = await core.listNamespacedResourceQuota({ namespace: ns });
  const bindings = await rbac.listNamespacedRoleBinding({ namespace: ns });
  return {
    labels: n.metadata?.labels,
    annotations: n.metadata?.annotations,
    finalizers: n.metadata?.finalizers,
    ownerReferences: n.metadata?.ownerReferences,
    conditions: n.status?.conditions,
    deleting: n.metadata?.deletionTimestamp !== undefined,
    quotas: quotas.items.map((q) => [q.metadata?.name, q.spec?.hard, q.status?.hard]).sort(),
    roleBindings: bindings.items.map((b) => [b.metadata?.name, b.roleRef, b.subjects]).sort(),
  };
}

/** Everything a dry run must leave alone: the namespace's state and every project's headroom ledger. */
async function dryRunState(ns: string): Promise<{ namespace: unknown; ledgers: unknown }> {
  const core = kubeConfig('admin').makeApiClient(k8s.CoreV1Api);
  const maps = await core.listNamespacedConfigMap({ namespace: 'tenantgate-system' });
  const ledgers = maps.items
    .filter((m) => m.metadata?.name?.startsWith(LEDGER_PREFIX))
    .map((m) => [m.metadata?.name, m.metadata?.resourceVersion, m.data])
    .sort();
  return { namespace: await namespaceState(ns), ledgers };
}

async function run(subject: Subject, args: string[], dryRun: boolean, input?: string) {
  return execa(join(cluster().binDir, 'kubectl'), [...args, ...(dryRun ? ['--dry-run=server'] : [])], {
    env: { KUBECONFIG: kubeconfigs[subject] },
    reject: false,
    timeout: 60_000,
    ...(input ? { input } : {}),
  });
}

function expectVerdict(
  result: { exitCode?: number; stderr: string; stdout: string },
  verdict: Verdict,
  what: string,
): void {
  if (verdict === 'ok') {
    expect(result.exitCode, `${what}: ${result.stderr}`).toBe(0);
    return;
  }
  expect(result.exitCode, `${what}: expected ${verdict}, got exit 0: ${result.stdout}`).not.toBe(0);
  if (verdict === '403') expect(result.stderr, what).toMatch(/is forbidden: User ".*" cannot [a-z]+ resource/);
  else if (verdict === 'immortal') expect(result.stderr, what).toMatch(/this namespace may not be deleted/);
  else expect(result.stderr, what).toContain(`[${verdict}]`);
}

/** Puts back what an admitted real request changed, so the next cell starts from the same state. */
async function undo(verb: string, ns: string): Promise<void> {
  if (verb === 'label') await kubectl('admin', ['label', 'namespace', ns, 'e2e-team-']);
  else if (verb === 'quota create') await kubectl('admin', ['-n', ns, 'delete', 'quota', 'e2e-extra']);
  else if (verb === 'quota patch')
    await kubectl('admin', [
      '-n',
      ns,
      'patch',
      'quota',
      GUARD,
      '--type=merge',
      '-p',
      '{"spec":{"hard":{"pods":"20"}}}',
    ]);
}

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  for (const s of ['alice', 'carol', 'bob', 'dave', 'nobody'] as const) kubeconfigs[s] = info.kubeconfigs[s]!;
  // Two ServiceAccounts in a namespace of the platform: the self-service one, and an over-granted one.
  await kubectl('admin', ['apply', '-f', '-'], {
    input: [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tb-ci' } },
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'deployer', namespace: 'tb-ci' } },
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'over', namespace: 'tb-ci' } },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'tb-deployer-self-service' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'tenantgate-self-service' },
        subjects: [{ kind: 'ServiceAccount', name: 'deployer', namespace: 'tb-ci' }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'tb-over-granted' },
        rules: [
          {
            apiGroups: [''],
            resources: [
              'namespaces',
              'resourcequotas',
              'namespaces/status',
              'namespaces/finalize',
              'resourcequotas/status',
            ],
            verbs: ['*'],
          },
          { apiGroups: ['tenantgate.io'], resources: ['projects'], verbs: ['*'] },
        ],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'tb-over-granted' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'tb-over-granted' },
        subjects: [{ kind: 'ServiceAccount', name: 'over', namespace: 'tb-ci' }],
      },
    ]
      .map((o) => JSON.stringify(o))
      .join('\n'),
  });
  kubeconfigs.sa = await serviceAccountKubeconfigFile(info, 'tb-ci', 'deployer');
  kubeconfigs.over = await serviceAccountKubeconfigFile(info, 'tb-ci', 'over');

  hook = await startLocalWebhook(info, {}, { onDecision: (d) => decisions.push(d) });
  controller = await startController({
    kubeConfig: await serviceAccountKubeConfig(info, 'tenantgate-system', 'tenantgate-controller'),
    config: DEFAULT_CONFIG,
    leaderElection: false,
    log: () => {},
  });
  for (const p of PROJECTS) await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(p) });
  await eventually(async () => {
    for (const p of PROJECTS)
      if (!hook.webhook.cache.snapshot.project(p.metadata.name))
        throw new Error(`${p.metadata.name} not in the webhook's cache`);
  });
  // Self-service: each owner creates its namespace; the controller grants the owners and adds the default quota.
  for (const [owner, ns] of [
    ['alice', 'shop-dev'],
    ['carol', 'blog-app'],
    ['bob', 'ml-serving'],
  ] as const) {
    await kubectl(owner, ['create', 'namespace', ns]);
  }
  await eventually(
    async () => {
      for (const ns of ['shop-dev', 'blog-app', 'ml-serving']) {
        await kubectl('admin', ['-n', ns, 'get', 'rolebinding', OWNERS_BINDING_NAME]);
        await kubectl('admin', ['-n', ns, 'get', 'quota', GUARD]);
      }
    },
    { what: 'owner RoleBindings and default quotas from the controller' },
  );
  // Targets outside projects, each with a quota, and the objects of tenantgate-system.
  await kubectl('admin', ['create', 'namespace', 'platform-tools']);
  for (const ns of ['platform-tools', 'kube-public', 'kube-system', 'tenantgate-system']) {
    await kubectl('admin', ['-n', ns, 'create', 'quota', GUARD, '--hard=pods=100']);
  }
  await kubectl('admin', [
    '-n',
    'tenantgate-system',
    'create',
    'configmap',
    'tenantgate-config',
    '--from-literal=tenantgate.yaml={}',
  ]);
  await kubectl('admin', [
    '-n',
    'tenantgate-system',
    'create',
    'secret',
    'generic',
    'tenantgate-webhook-tls',
    '--from-literal=tls.key=x',
  ]);
  // A real ledger record: a quota growth in shop reserves its allocation there.
  await kubectl('alice', ['-n', 'shop-dev', 'create', 'quota', 'grow', '--hard=requests.cpu=3,pods=20']);
  await kubectl('admin', ['-n', 'shop-dev', 'delete', 'quota', 'grow']);
  await kubectl('admin', ['-n', 'tenantgate-system', 'get', 'configmap', `${LEDGER_PREFIX}shop`]);
}, 300_000);

afterAll(async () => {
  // While the controller runs, so that its finalizer takes their namespaces with them.
  await removeProjects(PROJECTS.map((p) => p.metadata.name));
  await controller?.stop();
  await hook?.stop();
}, 180_000);

describe('the tenancy boundary: every subject × target × verb, dry run and real', () => {
  it('has one verdict per subject in every row', () => {
    for (const row of MATRIX) expect(row.length, row.slice(0, 2).join(' ')).toBe(2 + SUBJECTS.length);
    for (const [name, o] of Object.entries(OTHER)) expect(o.verdicts.length, name).toBe(SUBJECTS.length);
  });

  it.each(MATRIX.map((row) => [`${row[1]} on ${row[0]}`, row] as const))('%s', async (_name, row) => {
    const [target, verb, ...verdicts] = row;
    const args = NS_VERBS[verb]!(target);
    for (const [i, subject] of SUBJECTS.entries()) {
      const verdict = verdicts[i]!;
      const beforeDry = await dryRunState(target);
      const before = beforeDry.namespace;
      const dry = await run(subject, args, true);
      expectVerdict(dry, verdict, `${subject} ${verb} ${target} --dry-run=server`);
      expect(
        await dryRunState(target),
        `${subject} ${verb} ${target}: a dry run changes nothing, the ledger included`,
      ).toEqual(beforeDry);
      // An admitted delete is shown by the dry run; the real one is in its own test (it cannot be undone).
      if (verdict === 'ok' && verb === 'delete') continue;
      const real = await run(subject, args, false);
      expectVerdict(real, verdict, `${subject} ${verb} ${target}`);
      if (verdict === 'ok') {
        expect(await namespaceState(target), `${subject} ${verb} ${target}: admitted, so it changed`).not.toEqual(
          before,
        );
        await undo(verb, target);
      }
      expect(await namespaceState(target), `${subject} ${verb} ${target}: state afterwards`).toEqual(before);
    }
  });

  it.each(Object.entries(OTHER))('%s', async (name, cell) => {
    for (const [i, subject] of SUBJECTS.entries()) {
      const verdict = cell.verdicts[i]!;
      const before = await cell.read();
      const input = name === 'create a Project' ? FORGED_PROJECT : undefined;
      if (!cell.readOnly) {
        const dry = await run(subject, cell.args(subject), true, input);
        expectVerdict(dry, verdict, `${subject} ${name} --dry-run=server`);
        if (cell.message && verdict !== 'ok' && verdict !== '403')
          expect(dry.stderr, `${subject} ${name} --dry-run=server`).toContain(cell.message(subject));
        expect(await cell.read(), `${subject} ${name}: a dry run changes nothing`).toEqual(before);
      }
      const real = await run(subject, cell.args(subject), false, input);
      expectVerdict(real, verdict, `${subject} ${name}`);
      if (cell.message && verdict !== 'ok' && verdict !== '403')
        expect(real.stderr, `${subject} ${name}`).toContain(cell.message(subject));
      if (verdict === 'ok') {
        expect(await cell.read()).not.toEqual(before);
        await cell.restore?.();
        await eventually(async () => expect(await cell.read()).toEqual(before), { what: `${name} undone` });
      } else {
        expect(await cell.read(), `${subject} ${name}: state afterwards`).toEqual(before);
      }
    }
  });
});

describe('around the matrix', () => {
  it('an owner really deletes its own namespace; the namespace is gone', async () => {
    await kubectl('alice', ['create', 'namespace', 'shop-tmp']);
    await eventually(() => kubectl('admin', ['-n', 'shop-tmp', 'get', 'rolebinding', OWNERS_BINDING_NAME]), {
      what: 'owner binding in shop-tmp',
    });
    const denied = await run('bob', ['delete', 'namespace', 'shop-tmp'], false);
    expectVerdict(denied, '403', 'bob deletes shop-tmp');
    expect(
      (await kubectl('alice', ['delete', 'namespace', 'shop-tmp', '--wait=false'], { reject: false })).exitCode,
    ).toBe(0);
    await eventually(
      async () =>
        expect(
          (await kubectl('admin', ['get', 'namespace', 'shop-tmp', '--ignore-not-found', '-o', 'name'])).stdout,
        ).toBe(''),
      { what: 'shop-tmp deleted' },
    );
  });

  it("kubernetes.io/metadata.name cannot be forged to fall under the webhooks' exclusion", async () => {
    const before = (
      await kubectl('admin', ['get', 'namespace', 'shop-dev', '-o', 'jsonpath={.metadata.resourceVersion}'])
    ).stdout;
    const result = await run(
      'alice',
      ['label', 'namespace', 'shop-dev', 'kubernetes.io/metadata.name=kube-system', '--overwrite'],
      false,
    );
    // The apiserver sets the label back to the name before admission: the update changes nothing.
    expect(result.exitCode, result.stderr).toBe(0);
    expect(
      (await kubectl('admin', ['get', 'namespace', 'shop-dev', '-o', 'jsonpath={.metadata.resourceVersion}'])).stdout,
    ).toBe(before);
    expect(
      (
        await kubectl('admin', [
          'get',
          'namespace',
          'shop-dev',
          '-o',
          'jsonpath={.metadata.labels.kubernetes\\.io/metadata\\.name}',
        ])
      ).stdout,
    ).toBe('shop-dev');
    const created = await run(
      'alice',
      ['create', '-f', '-'],
      false,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: 'shop-sneaky', labels: { 'kubernetes.io/metadata.name': 'kube-system' } },
      }),
    );
    expect(created.exitCode, created.stderr).toBe(0); // the webhook saw it (it is a project namespace) and admitted it
    const labels = JSON.parse((await kubectl('admin', ['get', 'namespace', 'shop-sneaky', '-o', 'json'])).stdout)
      .metadata.labels;
    expect(labels['kubernetes.io/metadata.name']).toBe('shop-sneaky');
    expect(labels['tenantgate.io/project']).toBe('shop');
    await kubectl('admin', ['delete', 'namespace', 'shop-sneaky', '--wait=false']);
  });

  it("the controller repairs an owners' RoleBinding a tenant widened", async () => {
    await kubectl('alice', [
      '-n',
      'shop-dev',
      'patch',
      'rolebinding',
      OWNERS_BINDING_NAME,
      '--type=json',
      '-p',
      '[{"op":"add","path":"/subjects/-","value":{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"dave"}}]',
    ]);
    await eventually(
      async () => {
        const subjects = JSON.parse(
          (
            await kubectl('admin', [
              '-n',
              'shop-dev',
              'get',
              'rolebinding',
              OWNERS_BINDING_NAME,
              '-o',
              'jsonpath={.subjects}',
            ])
          ).stdout,
        ) as Array<{ name: string }>;
        expect(subjects.map((s) => s.name).sort()).toEqual(['acme:payments-admins', 'deployer']);
      },
      { what: 'binding repaired' },
    );
  });

  // The registrations' matchConditions and rules (docs/adr/0004-webhook.md) keep from the
  // webhook only what it admits by identity alone; these cases fail if they kept anything that must be judged.
  const since = (mark: number) => decisions.slice(mark);
  // Kubernetes' own writers: the apiserver (its quota admission) and kube-controller-manager's controllers.
  const kubernetes = (user: string) =>
    user === 'system:apiserver' ||
    DEFAULT_CONFIG.systemControllers.includes(user) ||
    user.startsWith('system:serviceaccount:kube-system:');

  it("a pod created under a quota: the apiserver's own resourcequotas/status write is admitted without a call to the webhook", async () => {
    const mark = decisions.length;
    const usedPods = async () =>
      Number(
        JSON.parse((await kubectl('admin', ['-n', 'shop-dev', 'get', 'quota', GUARD, '-o', 'json'])).stdout).status
          ?.used?.pods ?? 0,
      );
    const before = await usedPods();
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'counted', namespace: 'shop-dev' },
      spec: {
        containers: [
          {
            name: 'pause',
            image: 'registry.k8s.io/pause:3.10',
            resources: { requests: { cpu: '100m' }, limits: { cpu: '100m' } },
          },
        ],
      },
    };
    // The namespace's default ServiceAccount comes from its controller: retried until it exists.
    await eventually(async () => void (await kubectl('alice', ['create', '-f', '-'], { input: JSON.stringify(pod) })), {
      what: 'the pod created by its owner',
    });
    // The quota counted it: the apiserver's quota admission wrote resourcequotas/status (as system:apiserver).
    await eventually(async () => expect(await usedPods()).toBe(before + 1), { what: 'the quota counts the pod' });
    await kubectl('admin', ['-n', 'shop-dev', 'delete', 'pod', 'counted', '--grace-period=0', '--force']);
    await eventually(async () => expect(await usedPods()).toBe(before), {
      what: 'the quota controller uncounts the deleted pod',
    });
    expect(
      since(mark).filter((d) => kubernetes(d.user)),
      'status writes by the apiserver and the quota controller reach the webhook no more',
    ).toEqual([]);
  });

  it("a tenant's resourcequotas/status, namespaces/status and namespaces/finalize writes are still sent to the webhook and refused (T8)", async () => {
    const mark = decisions.length;
    const before = await namespaceState('shop-dev');
    const quota = await run(
      'over',
      [
        '-n',
        'shop-dev',
        'patch',
        'quota',
        GUARD,
        '--subresource=status',
        '--type=merge',
        '-p',
        '{"status":{"used":{"pods":"0"},"hard":{"pods":"9999"}}}',
      ],
      false,
    );
    expectVerdict(quota, 'T8', 'over writes resourcequotas/status');
    const status = await run(
      'over',
      [
        'patch',
        'namespace',
        'shop-dev',
        '--subresource=status',
        '--type=merge',
        '-p',
        '{"status":{"phase":"Active","conditions":[{"type":"E2EForged","status":"True"}]}}',
      ],
      false,
    );
    expectVerdict(status, 'T8', 'over writes namespaces/status');
    const current = JSON.parse((await kubectl('admin', ['get', 'namespace', 'shop-dev', '-o', 'json'])).stdout) as {
      spec: { finalizers?: string[] };
    };
    const finalize = await run(
      'over',
      ['replace', '--raw', '/api/v1/namespaces/shop-dev/finalize', '-f', '-'],
      false,
      JSON.stringify({ ...current, spec: { finalizers: [] } }),
    );
    expectVerdict(finalize, 'T8', 'over writes namespaces/finalize');
    expect(finalize.stderr).toContain('namespaces/finalize of Namespace shop-dev');
    expect(await namespaceState('shop-dev'), 'nothing changed').toEqual(before);
    const refused = since(mark).filter((d) => d.user === USERNAME.over);
    expect(refused.map((d) => [d.kind, d.operation, d.verdict, d.rules])).toEqual([
      ['ResourceQuota', 'UPDATE', 'denied', ['T8']],
      ['Namespace', 'UPDATE', 'denied', ['T8']],
      ['Namespace', 'UPDATE', 'denied', ['T8']],
    ]);
  });

  it("an owner's namespace UPDATE is judged by the validating webhook (T3, T7) and no longer sent to the mutating one", async () => {
    const mark = decisions.length;
    const before = await namespaceState('shop-dev');
    const unlabel = await run('alice', ['label', 'namespace', 'shop-dev', 'tenantgate.io/project-'], false);
    expectVerdict(unlabel, 'T3', 'alice removes the project label');
    const psa = await run(
      'alice',
      ['label', 'namespace', 'shop-dev', 'pod-security.kubernetes.io/enforce=privileged', '--overwrite'],
      false,
    );
    expectVerdict(psa, 'T7', 'alice loosens pod security');
    expect(await namespaceState('shop-dev'), 'both refused: nothing changed').toEqual(before);
    const ok = await run('alice', ['label', 'namespace', 'shop-dev', 'e2e-team=y'], false);
    expectVerdict(ok, 'ok', 'alice adds her own label');
    await kubectl('admin', ['label', 'namespace', 'shop-dev', 'e2e-team-']);
    const alices = since(mark).filter((d) => d.user === 'alice');
    expect(alices.map((d) => [d.path, d.kind, d.operation, d.verdict, d.rules])).toEqual([
      ['validate', 'Namespace', 'UPDATE', 'denied', ['T3']],
      ['validate', 'Namespace', 'UPDATE', 'denied', ['T7']],
      ['validate', 'Namespace', 'UPDATE', 'allowed', []],
    ]);
    // A namespace CREATE is still mutated (labelled for its project) before it is judged.
    const mark2 = decisions.length;
    await kubectl('alice', ['create', 'namespace', 'shop-mc']);
    expect(
      since(mark2)
        .filter((d) => d.user === 'alice')
        .map((d) => [d.path, d.kind, d.operation, d.verdict]),
    ).toEqual([
      ['mutate', 'Namespace', 'CREATE', 'patched'],
      ['validate', 'Namespace', 'CREATE', 'allowed'],
    ]);
    await kubectl('admin', ['delete', 'namespace', 'shop-mc', '--wait=false']);
  });

  it("an owner's quota UPDATE that keeps its project label reaches the validating webhook alone; one that drops the label is mutated back (ADR 0004)", async () => {
    const projectLabel = async () =>
      JSON.parse((await kubectl('admin', ['-n', 'shop-dev', 'get', 'quota', GUARD, '-o', 'json'])).stdout).metadata
        .labels?.[LABEL_PROJECT] as string | undefined;
    expect(await projectLabel(), 'the controller labelled its default quota').toBe('shop');
    const mark = decisions.length;
    expectVerdict(
      await run('alice', ['-n', 'shop-dev', 'label', 'quota', GUARD, 'e2e-note=x'], false),
      'ok',
      'alice labels her quota',
    );
    expectVerdict(
      await run('alice', ['-n', 'shop-dev', 'label', 'quota', GUARD, `${LABEL_PROJECT}-`], false),
      'ok',
      'alice removes its project label',
    );
    expect(await projectLabel(), 'the mutation put the label back').toBe('shop');
    expect(
      since(mark)
        .filter((d) => d.user === 'alice')
        .map((d) => [d.path, d.kind, d.operation, d.verdict]),
    ).toEqual([
      ['validate', 'ResourceQuota', 'UPDATE', 'allowed'],
      ['mutate', 'ResourceQuota', 'UPDATE', 'patched'],
      ['validate', 'ResourceQuota', 'UPDATE', 'allowed'],
    ]);
    await kubectl('admin', ['-n', 'shop-dev', 'label', 'quota', GUARD, 'e2e-note-']);
  });

  it('webhook down: tenant writes to project namespaces are refused, admins still work in kube-system; back up, tenants work again', async () => {
    const port = hook.webhook.port;
    await hook.webhook.stop();
    const refused = await run('alice', ['label', 'namespace', 'shop-dev', 'e2e-down=1'], false);
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toMatch(/failed calling webhook "(validate|mutate)\.tenantgate\.io"/);
    expect(
      ((await namespaceState('shop-dev')) as { labels: Record<string, string> }).labels['e2e-down'],
    ).toBeUndefined();
    const quota = await run('alice', ['-n', 'shop-dev', 'create', 'quota', 'while-down', '--hard=pods=1'], false);
    expect(quota.stderr).toMatch(/failed calling webhook/);
    expect(
      (await kubectl('admin', ['label', 'namespace', 'kube-system', 'e2e-admin=1', '--overwrite'], { reject: false }))
        .exitCode,
    ).toBe(0);
    await kubectl('admin', ['label', 'namespace', 'kube-system', 'e2e-admin-']);

    // The same process comes back on the same address (as a restarted pod behind its Service would).
    const info = cluster();
    const again = await startWebhook({
      config: DEFAULT_CONFIG,
      kubeConfig: await serviceAccountKubeConfig(info, 'tenantgate-system', 'tenantgate-webhook'),
      cert: hook.certs.cert,
      key: hook.certs.key,
      port,
      host: '127.0.0.1',
      log: () => {},
    });
    hook = {
      ...hook,
      webhook: again,
      stop: async () => {
        await unregisterWebhooks(info);
        await again.stop();
      },
    };
    await again.cache.waitSynced();
    await eventually(
      async () => {
        const ok = await run('alice', ['label', 'namespace', 'shop-dev', 'e2e-down=1'], false);
        expect(ok.exitCode, ok.stderr).toBe(0);
      },
      { what: 'tenant writes admitted again' },
    );
    await kubectl('admin', ['label', 'namespace', 'shop-dev', 'e2e-down-']);
  });
});
