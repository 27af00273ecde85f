/**
 * Priority tiers (docs/budgets.md#priority-tiers, ADR 0067) on the real control plane: the webhook
 * (two replicas, ledger on) and the controller as they ship; PriorityClasses created by admin; every
 * tenant step is alice's real request. First, what the apiserver's own quota does with PriorityClass
 * scopes and pods without a priorityClassName (the reason the other-tiers quota has `Exists`).
 */
import * as k8s from '@kubernetes/client-node';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateWebhookCerts } from '../../src/certs/files.js';
import { startController, type RunningController } from '../../src/controller/controller.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { OTHER_TIERS_QUOTA_NAME, otherTiersScopeSelector, tierQuotaName } from '../../src/validate/tiers.js';
import { installBase, serviceAccountKubeConfig } from '../support/devcluster/tenantgate.js';
import { startWebhookReplicas, type WebhookReplicas } from '../support/devcluster/replicas.js';
import { cluster, eventually, kubeConfig, kubectl, uniqueName } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';

const OWNERS = [{ kind: 'Group', name: 'acme:payments-admins' }];
// PriorityClasses are cluster-wide: names of this run.
const PRODUCTION = uniqueName('production');
const BATCH = uniqueName('batch');
const UNDECLARED = uniqueName('undeclared');
const PROJECT = uniqueName('tiers').replace(/[^a-z0-9-]/g, '');

let webhooks: WebhookReplicas;
let controller: RunningController;
const core = () => kubeConfig('admin').makeApiClient(k8s.CoreV1Api);

const pod = (name: string, cpu: string, priorityClassName?: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: {
    ...(priorityClassName ? { priorityClassName } : {}),
    // CPU only: the control plane's quota admission has limitedResources for requests.cpu and
    // requests.memory (test/support/devcluster/controlplane.ts), and no quota here counts memory.
    containers: [
      { name: 'pause', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu }, limits: { cpu } } },
    ],
  },
});

async function create(
  user: string,
  namespace: string,
  object: unknown,
): Promise<{ exitCode: number | undefined; stderr: string }> {
  return kubectl(user, ['-n', namespace, 'create', '-f', '-'], { input: JSON.stringify(object), reject: false });
}

/** Waits until the quota controller has computed the quota's status (the ResourceQuota admission plugin refuses pods until then). */
async function quotaReady(namespace: string, name: string): Promise<void> {
  await eventually(
    async () => {
      const q = await core().readNamespacedResourceQuota({ namespace, name });
      expect(Object.keys(q.status?.hard ?? {}).sort()).toEqual(Object.keys(q.spec?.hard ?? {}).sort());
    },
    { what: `status of ResourceQuota ${namespace}/${name}` },
  );
}

async function applyProject(name: string, spec: Record<string, unknown>): Promise<void> {
  const applied = JSON.parse(
    (
      await kubectl('admin', ['apply', '-f', '-', '-o', 'json'], {
        input: JSON.stringify({
          apiVersion: 'tenantgate.io/v1alpha1',
          kind: 'Project',
          metadata: { name },
          spec: { tenant: 'acme', owners: OWNERS, ...spec },
        }),
      })
    ).stdout,
  ) as { metadata: { generation: number }; spec: Record<string, unknown> };
  expect(applied.spec.tiers, 'the CRD keeps spec.tiers').toBeDefined();
  await eventually(async () => {
    const live = JSON.parse((await kubectl('admin', ['get', 'project', name, '-o', 'json'])).stdout) as {
      status?: { observedGeneration?: number };
    };
    expect(live.status?.observedGeneration ?? 0).toBeGreaterThanOrEqual(applied.metadata.generation);
    const projects = (await kubectl('admin', ['get', 'projects', '-o', 'name'])).stdout.trim().split('\n').length;
    expect(await webhooks.scrape(/^tenantgate_webhook_cache_objects\{kind="Project"\}/)).toEqual(
      webhooks.replicas.map(() => projects),
    );
  });
}

/** alice creates a namespace; the controller gives it the default quota, the tier quotas and the other-tiers quota. */
async function ownNamespace(name: string): Promise<void> {
  const created = await kubectl('alice', ['create', 'namespace', name], { reject: false });
  expect(created.exitCode, created.stderr).toBe(0);
  for (const quota of ['tenantgate-quota', tierQuotaName(PRODUCTION), tierQuotaName(BATCH), OTHER_TIERS_QUOTA_NAME]) {
    await eventually(async () => kubectl('admin', ['-n', name, 'get', 'quota', quota]), {
      what: `${name}: ResourceQuota ${quota} from the controller`,
    });
    await quotaReady(name, quota);
  }
  await eventually(async () => kubectl('admin', ['-n', name, 'get', 'serviceaccount', 'default']), {
    what: `${name}: default ServiceAccount`,
  });
}

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  for (const [name, value] of [
    [PRODUCTION, 1000],
    [BATCH, 100],
    [UNDECLARED, 500],
  ] as const) {
    await kubectl('admin', ['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'scheduling.k8s.io/v1',
        kind: 'PriorityClass',
        metadata: { name },
        value,
        globalDefault: false,
      }),
    });
  }
  const certs = await generateWebhookCerts(join(info.dir, 'tiers-certs'));
  webhooks = await startWebhookReplicas(info, certs, {}, { name: 'tiers-webhook' });
  controller = await startController({
    kubeConfig: await serviceAccountKubeConfig(info, 'tenantgate-system', 'tenantgate-controller'),
    config: DEFAULT_CONFIG,
    leaderElection: false,
    log: () => {},
  });
}, 300_000);

afterAll(async () => {
  // While the controller runs, so that its finalizer takes the namespaces with the Project.
  await removeProjects([PROJECT]);
  await controller?.stop();
  await webhooks?.stop();
  await kubectl('admin', ['delete', 'priorityclass', PRODUCTION, BATCH, UNDECLARED, '--ignore-not-found'], {
    reject: false,
  });
});

describe('PriorityClass quota scopes on the apiserver (why the other-tiers quota has Exists)', () => {
  it('a quota scoped NotIn [class] alone also counts pods without a priorityClassName; with Exists beside it, it counts only pods that name another class', async () => {
    const ns = uniqueName('tiers-probe');
    await kubectl('admin', ['create', 'namespace', ns]);
    try {
      // An unscoped quota counting CPU (limitedResources: a pod asking CPU needs a quota that counts it).
      await kubectl('admin', ['-n', ns, 'create', 'quota', 'all', '--hard=requests.cpu=10,pods=10']);
      await quotaReady(ns, 'all');
      const quota = (scopeSelector: unknown) => ({
        apiVersion: 'v1',
        kind: 'ResourceQuota',
        metadata: { name: 'others' },
        spec: { hard: { pods: '0' }, scopeSelector },
      });
      // NotIn alone.
      await kubectl('admin', ['-n', ns, 'apply', '-f', '-'], {
        input: JSON.stringify(
          quota({ matchExpressions: [{ scopeName: 'PriorityClass', operator: 'NotIn', values: [PRODUCTION] }] }),
        ),
      });
      await quotaReady(ns, 'others');
      const noClass = await create('admin', ns, pod('no-class', '10m'));
      expect(noClass.exitCode, 'NotIn alone refuses a pod without priorityClassName').not.toBe(0);
      expect(noClass.stderr).toContain('exceeded quota: others');
      expect((await create('admin', ns, pod('prod', '10m', PRODUCTION))).exitCode).toBe(0);
      // Exists and NotIn, as tenantgate writes it.
      await kubectl('admin', ['-n', ns, 'delete', 'quota', 'others']);
      await kubectl('admin', ['-n', ns, 'create', '-f', '-'], {
        input: JSON.stringify(quota(otherTiersScopeSelector([PRODUCTION]))),
      });
      await quotaReady(ns, 'others');
      const noClassAgain = await create('admin', ns, pod('no-class', '10m'));
      expect(
        noClassAgain.exitCode,
        `Exists + NotIn admits a pod without priorityClassName: ${noClassAgain.stderr}`,
      ).toBe(0);
      const other = await create('admin', ns, pod('other', '10m', UNDECLARED));
      expect(other.exitCode, 'Exists + NotIn refuses a pod of another class').not.toBe(0);
      expect(other.stderr).toContain('exceeded quota: others');
      expect((await create('admin', ns, pod('prod-2', '10m', PRODUCTION))).exitCode).toBe(0);
    } finally {
      await kubectl('admin', ['delete', 'namespace', ns, '--wait=false'], { reject: false });
    }
  });
});

describe('a project budgeted per PriorityClass', () => {
  const a = `${PROJECT}-a`;
  const b = `${PROJECT}-b`;

  beforeAll(async () => {
    await applyProject(PROJECT, {
      quota: { hard: { 'requests.cpu': '20', pods: '100' } },
      tiers: {
        [PRODUCTION]: { quota: { hard: { 'requests.cpu': '4' } } },
        [BATCH]: { quota: { hard: { 'requests.cpu': '8' } } },
      },
      namespaceDefaults: {
        quota: { hard: { 'requests.cpu': '4', pods: '20' } },
        tiers: {
          [PRODUCTION]: { quota: { hard: { 'requests.cpu': '1' } } },
          [BATCH]: { quota: { hard: { 'requests.cpu': '2' } } },
        },
      },
    });
  }, 120_000);

  it('the controller gives a namespace the tenant creates its tier quotas and the other-tiers quota, scoped by PriorityClass', async () => {
    await ownNamespace(a);
    const quotas = await core().listNamespacedResourceQuota({ namespace: a });
    const byName = new Map(quotas.items.map((q) => [q.metadata?.name, q]));
    const production = byName.get(tierQuotaName(PRODUCTION))!;
    expect(production.spec?.hard).toEqual({ 'requests.cpu': '1' });
    expect(production.spec?.scopeSelector?.matchExpressions).toEqual([
      { scopeName: 'PriorityClass', operator: 'In', values: [PRODUCTION] },
    ]);
    expect(byName.get(tierQuotaName(BATCH))?.spec?.hard).toEqual({ 'requests.cpu': '2' });
    const others = byName.get(OTHER_TIERS_QUOTA_NAME)!;
    expect(others.spec?.hard).toEqual({ pods: '0' });
    expect(others.spec?.scopeSelector?.matchExpressions).toEqual(
      otherTiersScopeSelector([BATCH, PRODUCTION].sort()).matchExpressions,
    );
  });

  it('a pod of tier production beyond its namespace tier quota is refused by the apiserver; within it, admitted', async () => {
    const big = await create('alice', a, pod('prod-big', '1500m', PRODUCTION));
    expect(big.exitCode).not.toBe(0);
    expect(big.stderr).toContain(`exceeded quota: ${tierQuotaName(PRODUCTION)}`);
    const small = await create('alice', a, pod('prod-small', '500m', PRODUCTION));
    expect(small.exitCode, small.stderr).toBe(0);
  });

  it('a pod of a PriorityClass that is no tier is refused by the apiserver; a pod without a class is not', async () => {
    const other = await create('alice', a, pod('undeclared', '100m', UNDECLARED));
    expect(other.exitCode).not.toBe(0);
    expect(other.stderr).toContain(`exceeded quota: ${OTHER_TIERS_QUOTA_NAME}`);
    const plain = await create('alice', a, pod('plain', '100m'));
    expect(plain.exitCode, plain.stderr).toBe(0);
  });

  it('raising a namespace production quota beyond the tier budget is [Q1] while another namespace holds the rest; within it, admitted', async () => {
    await ownNamespace(b);
    const over = await kubectl(
      'alice',
      [
        '-n',
        a,
        'patch',
        'quota',
        tierQuotaName(PRODUCTION),
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { hard: { 'requests.cpu': '4' } } }),
      ],
      { reject: false },
    );
    expect(over.exitCode).not.toBe(0);
    expect(over.stderr).toContain('[Q1]');
    expect(over.stderr).toContain(`requests.cpu@${PRODUCTION} 4`);
    expect(over.stderr).toContain('at most 3 fits');
    const fits = await kubectl(
      'alice',
      [
        '-n',
        a,
        'patch',
        'quota',
        tierQuotaName(PRODUCTION),
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { hard: { 'requests.cpu': '3' } } }),
      ],
      { reject: false },
    );
    expect(fits.exitCode, fits.stderr).toBe(0);
    // The other-tiers quota counts under pods@* with a budget of 0: a tenant cannot open it.
    const open = await kubectl(
      'alice',
      [
        '-n',
        b,
        'patch',
        'quota',
        OTHER_TIERS_QUOTA_NAME,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { hard: { pods: '5' } } }),
      ],
      { reject: false },
    );
    expect(open.exitCode).not.toBe(0);
    expect(open.stderr).toContain('[Q1]');
    expect(open.stderr).toContain('pods@*');
  });

  it('deleting the only production quota of a namespace is [Q3]', async () => {
    const deleted = await kubectl('alice', ['-n', b, 'delete', 'quota', tierQuotaName(PRODUCTION)], { reject: false });
    expect(deleted.exitCode).not.toBe(0);
    expect(deleted.stderr).toContain('[Q3]');
    expect(deleted.stderr).toContain(`requests.cpu@${PRODUCTION}`);
  });

  it('a deleted other-tiers quota is put back by the controller', async () => {
    const before = await core().readNamespacedResourceQuota({ namespace: b, name: OTHER_TIERS_QUOTA_NAME });
    await kubectl('admin', ['-n', b, 'delete', 'quota', OTHER_TIERS_QUOTA_NAME]);
    await eventually(
      async () => {
        const again = await core().readNamespacedResourceQuota({ namespace: b, name: OTHER_TIERS_QUOTA_NAME });
        expect(again.metadata?.uid).not.toBe(before.metadata?.uid);
        expect(again.spec?.hard).toEqual({ pods: '0' });
      },
      { what: `${b}: ${OTHER_TIERS_QUOTA_NAME} created again` },
    );
  });

  it('a tenant cannot widen the other-tiers quota to an undeclared class [Q2]', async () => {
    const wider = await kubectl(
      'alice',
      [
        '-n',
        b,
        'patch',
        'quota',
        OTHER_TIERS_QUOTA_NAME,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { scopeSelector: otherTiersScopeSelector([BATCH, PRODUCTION, UNDECLARED].sort()) } }),
      ],
      { reject: false },
    );
    expect(wider.exitCode).not.toBe(0);
    expect(wider.stderr).toContain('[Q2]');
    expect(wider.stderr).toContain(`leaves pods of ${UNDECLARED} without a quota`);
  });

  it('the Project status shows the tier keys', async () => {
    await eventually(
      async () => {
        const live = JSON.parse((await kubectl('admin', ['get', 'project', PROJECT, '-o', 'json'])).stdout) as {
          status?: { allocated?: Record<string, string>; used?: Record<string, string> };
        };
        expect(live.status?.allocated?.[`requests.cpu@${PRODUCTION}`]).toBe('4');
        expect(live.status?.allocated?.['pods@*']).toBe('0');
        expect(live.status?.used?.[`requests.cpu@${PRODUCTION}`]).toBe('500m');
      },
      { what: 'tier keys in the status' },
    );
  });

  it('a tier added to the Project: the controller repairs the other-tiers quota and creates the new tier quota; its pods are admitted', async () => {
    await applyProject(PROJECT, {
      quota: { hard: { 'requests.cpu': '20', pods: '100' } },
      tiers: {
        [PRODUCTION]: { quota: { hard: { 'requests.cpu': '4' } } },
        [BATCH]: { quota: { hard: { 'requests.cpu': '8' } } },
        [UNDECLARED]: { quota: { hard: { 'requests.cpu': '2' } } },
      },
      namespaceDefaults: {
        quota: { hard: { 'requests.cpu': '4', pods: '20' } },
        tiers: {
          [PRODUCTION]: { quota: { hard: { 'requests.cpu': '1' } } },
          [BATCH]: { quota: { hard: { 'requests.cpu': '2' } } },
          [UNDECLARED]: { quota: { hard: { 'requests.cpu': '1' } } },
        },
      },
    });
    await eventually(
      async () => {
        const others = await core().readNamespacedResourceQuota({ namespace: a, name: OTHER_TIERS_QUOTA_NAME });
        expect(others.spec?.scopeSelector?.matchExpressions).toEqual(
          otherTiersScopeSelector([BATCH, PRODUCTION, UNDECLARED].sort()).matchExpressions,
        );
        const added = await core().readNamespacedResourceQuota({ namespace: a, name: tierQuotaName(UNDECLARED) });
        expect(added.spec?.hard).toEqual({ 'requests.cpu': '1' });
      },
      { what: `${a}: other-tiers quota repaired and ${tierQuotaName(UNDECLARED)} created` },
    );
    await quotaReady(a, OTHER_TIERS_QUOTA_NAME);
    await quotaReady(a, tierQuotaName(UNDECLARED));
    // The apiserver's quota admission reads quotas from its own cache: retried until it has the repaired scope.
    await eventually(
      async () => {
        const now = await create('alice', a, pod('now-a-tier', '100m', UNDECLARED));
        expect(now.exitCode, now.stderr).toBe(0);
      },
      { what: `a pod of ${UNDECLARED} admitted`, timeoutMs: 30_000 },
    );
  });
});
