/**
 * The promise on a kubeadm-style control plane (docs/testing.md): Kubernetes' controllers act under
 * their own ServiceAccounts, PodSecurity admission is on, and tenantgate runs as it ships — two
 * `tenantgate webhook` processes with the headroom ledger on, behind one address, and the controller
 * under its ServiceAccount. Every step is a tenant user's real request through kubectl or the API.
 */
import * as k8s from '@kubernetes/client-node';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateWebhookCerts } from '../../src/certs/files.js';
import { startController, type RunningController } from '../../src/controller/controller.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { LEDGER_PREFIX } from '../../src/validate/types.js';
import { parseEntries } from '../../src/ledger/ledger-format.js';
import { OWNERS_BINDING_NAME } from '../../src/render/owner-binding.js';
import { Quantity } from '../../src/quantity/quantity.js';
import { installBase, serviceAccountKubeConfig } from '../support/devcluster/tenantgate.js';
import { startWebhookReplicas, type WebhookReplicas } from '../support/devcluster/replicas.js';
import { cluster, eventually, kubeConfig, kubectl } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';

const NAMESPACE_CONTROLLER = [
  '--as=system:serviceaccount:kube-system:namespace-controller',
  '--as-group=system:serviceaccounts',
  '--as-group=system:serviceaccounts:kube-system',
];
const OWNERS = [{ kind: 'Group', name: 'acme:payments-admins' }];
const GUARD = 'tenantgate-quota';

let webhooks: WebhookReplicas;
let controller: RunningController;
const core = (user: string) => kubeConfig(user).makeApiClient(k8s.CoreV1Api);

/** Every Project this file applied: afterAll removes them. */
const projectsApplied = new Set<string>();

/**
 * Creates or updates the Project and waits until the controller has reconciled the generation just
 * applied (status.observedGeneration, src/controller/status.ts) and both webhook replicas cache every
 * Project: after an update, the old generation's status does not count.
 */
async function applyProject(name: string, spec: Record<string, unknown>): Promise<void> {
  projectsApplied.add(name);
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
  ) as { metadata: { generation: number } };
  const generation = applied.metadata.generation;
  expect(generation, `${name}: metadata.generation of the applied object`).toBeGreaterThan(0);
  await eventually(async () => {
    const live = JSON.parse((await kubectl('admin', ['get', 'project', name, '-o', 'json'])).stdout) as {
      status?: { observedGeneration?: number };
    };
    expect(live.status?.observedGeneration ?? 0, `${name}: status.observedGeneration`).toBeGreaterThanOrEqual(
      generation,
    );
    expect(controller.informers.snapshot.project(name)?.metadata.generation ?? 0).toBeGreaterThanOrEqual(generation);
    const projects = (await kubectl('admin', ['get', 'projects', '-o', 'name'])).stdout.trim().split('\n').length;
    expect(await webhooks.scrape(/^tenantgate_webhook_cache_objects\{kind="Project"\}/)).toEqual(
      webhooks.replicas.map(() => projects),
    );
  });
}

/**
 * Both webhook replicas' caches hold as many ResourceQuotas as the apiserver: a race between two
 * changes is then between them, not between a change and a cache that has not yet seen a quota just
 * created (a replica that has not seen it counts it as possibly absent, and refuses with [Q3]).
 */
async function replicasSeeEveryQuota(): Promise<void> {
  await eventually(
    async () => {
      const total = (await core('admin').listResourceQuotaForAllNamespaces()).items.length;
      expect(await webhooks.scrape(/^tenantgate_webhook_cache_objects\{kind="ResourceQuota"\}/)).toEqual(
        webhooks.replicas.map(() => total),
      );
    },
    { what: 'both replicas saw every quota' },
  );
}

/**
 * Waits until `project`'s headroom ledger holds no live entry of `namespace`: every recorded quota
 * write there is settled (removed) or expired (docs/adr/0003-headroom-ledger.md; an
 * idle project's ledger is not written again, so an entry may stay until it expires). While one lives,
 * a quota created there moments ago counts as possibly absent (the strict reading of ADR 0002): after
 * a round that re-created the default quota, both covering quotas are recent and both deletes are
 * refused [Q3]. Safe, but not the race a test of two concurrent deletes is about.
 */
async function ledgerQuietIn(project: string, namespace: string): Promise<void> {
  await eventually(
    async () => {
      const ledger = await core('admin')
        .readNamespacedConfigMap({ namespace: DEFAULT_CONFIG.systemNamespace, name: `${LEDGER_PREFIX}${project}` })
        .catch(() => undefined);
      const now = Date.now();
      expect(
        (ledger ? parseEntries(`ledger of ${project}`, ledger.data?.reservations) : []).filter(
          (e) => e.namespace === namespace && e.expires > now,
        ),
      ).toEqual([]);
    },
    {
      timeoutMs: (DEFAULT_CONFIG.reservationTtlSeconds + 30) * 1000,
      what: `${project}'s ledger holds no live entry of ${namespace}`,
    },
  );
}

/** alice creates a namespace and waits for what the controller gives it (owners' binding, default quota). */
async function ownNamespace(name: string): Promise<void> {
  await kubectl('alice', ['create', 'namespace', name]);
  await eventually(
    async () => {
      await kubectl('admin', ['-n', name, 'get', 'rolebinding', OWNERS_BINDING_NAME]);
      await kubectl('admin', ['-n', name, 'get', 'quota', GUARD]);
      // The allow-list policies' parameters: the controller writes them after the binding; no pod is admitted before.
      await kubectl('admin', ['-n', name, 'get', 'allowlist/tenantgate-allow']);
      await kubectl('admin', ['-n', name, 'get', 'serviceaccount', 'default']);
    },
    { what: `${name}: owners' binding, default quota, allow-list parameters and default ServiceAccount` },
  );
}

async function gone(name: string, timeoutMs: number): Promise<number> {
  const started = Date.now();
  await eventually(
    async () =>
      expect((await kubectl('admin', ['get', 'namespace', name, '--ignore-not-found', '-o', 'name'])).stdout).toBe(''),
    { timeoutMs, what: `${name} deleted` },
  );
  return Date.now() - started;
}

const pod = (
  name: string,
  cpu: string,
  extra: Record<string, unknown> = {},
  container: Record<string, unknown> = {},
) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: {
    ...extra,
    containers: [
      {
        name: 'pause',
        image: 'registry.k8s.io/pause:3.10',
        resources: { requests: { cpu, memory: '16Mi' }, limits: { cpu, memory: '16Mi' } },
        ...container,
      },
    ],
  },
});

async function quotaUsed(namespace: string, resource: string): Promise<Quantity> {
  const q = await core('admin').readNamespacedResourceQuota({ namespace, name: GUARD });
  return Quantity.parse(String(q.status?.used?.[resource] ?? '0'));
}

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  const certs = await generateWebhookCerts(join(info.dir, 'promise-certs'));
  // The shipped configuration: the ledger on (the default), two replicas.
  webhooks = await startWebhookReplicas(info, certs, {}, { name: 'promise-webhook' });
  controller = await startController({
    kubeConfig: await serviceAccountKubeConfig(info, 'tenantgate-system', 'tenantgate-controller'),
    config: DEFAULT_CONFIG,
    leaderElection: false,
    log: () => {},
  });
}, 300_000);

afterAll(async () => {
  // While the controller runs, so that its finalizer takes the namespaces with the Projects.
  await removeProjects([...projectsApplied]);
  await controller?.stop();
  await webhooks?.stop();
});

describe("Kubernetes' controllers finish what an owner started", () => {
  it('an owner deletes its namespace: the namespace controller removes its quota and RoleBinding, and the namespace is gone within 30 s', async () => {
    await applyProject('pgone', {
      quota: { hard: { 'requests.cpu': '4', pods: '20' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', pods: '5' } } },
    });
    await ownNamespace('pgone-a');
    await kubectl('alice', ['-n', 'pgone-a', 'create', 'configmap', 'content', '--from-literal=k=v']);
    const deleted = await kubectl('alice', ['delete', 'namespace', 'pgone-a', '--wait=false'], { reject: false });
    expect(deleted.exitCode, deleted.stderr).toBe(0);
    const ms = await gone('pgone-a', 30_000);
    process.stderr.write(`[promise] owner's namespace deleted in ${ms} ms\n`);
  });

  it("as the namespace controller's identity: a covering quota delete in a live namespace is still Q3; in a terminating one the controller empties it", async () => {
    await applyProject('pterm', {
      quota: { hard: { 'requests.cpu': '4', pods: '20' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', pods: '5' } } },
    });
    await ownNamespace('pterm-a');
    const live = await kubectl(
      'admin',
      ['-n', 'pterm-a', 'delete', 'quota', GUARD, '--dry-run=server', ...NAMESPACE_CONTROLLER],
      { reject: false },
    );
    expect(live.exitCode).not.toBe(0);
    expect(live.stderr).toContain('[Q3]');
    // Held in Terminating by a ConfigMap's finalizer: everything else is deleted by the controller's own identity.
    await kubectl('admin', ['-n', 'pterm-a', 'create', 'configmap', 'held']);
    await kubectl('admin', [
      '-n',
      'pterm-a',
      'patch',
      'configmap',
      'held',
      '--type=merge',
      '-p',
      '{"metadata":{"finalizers":["e2e.tenantgate.io/hold"]}}',
    ]);
    await kubectl('alice', ['delete', 'namespace', 'pterm-a', '--wait=false']);
    await eventually(
      async () => {
        const left = (
          await kubectl('admin', ['-n', 'pterm-a', 'get', 'resourcequotas,rolebindings', '-o', 'name'])
        ).stdout.trim();
        expect(left).toBe('');
      },
      { timeoutMs: 30_000, what: 'quota and RoleBinding deleted by the namespace controller' },
    );
    await kubectl('admin', [
      '-n',
      'pterm-a',
      'patch',
      'configmap',
      'held',
      '--type=merge',
      '-p',
      '{"metadata":{"finalizers":[]}}',
    ]);
    await gone('pterm-a', 30_000);
  });

  it('a Project deleted as admin: the cascade deletes every namespace and the Project is gone', async () => {
    await applyProject('pcas', {
      quota: { hard: { 'requests.cpu': '4', pods: '20' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', pods: '5' } } },
    });
    await ownNamespace('pcas-a');
    await ownNamespace('pcas-b');
    await kubectl('admin', ['delete', 'project', 'pcas', '--wait=false']);
    await Promise.all([gone('pcas-a', 90_000), gone('pcas-b', 90_000)]);
    await eventually(
      async () =>
        expect((await kubectl('admin', ['get', 'project', 'pcas', '--ignore-not-found', '-o', 'name'])).stdout).toBe(
          '',
        ),
      { timeoutMs: 30_000, what: 'Project pcas gone' },
    );
  });
});

describe('budgets count usage, not only quotas', () => {
  it('shrink-and-shift with real pods is refused [Q1], saying what is in use; the project never runs more than its budget', async () => {
    await applyProject('pshift', {
      quota: { hard: { 'requests.cpu': '2', 'requests.memory': '2Gi', pods: '40' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', 'requests.memory': '512Mi', pods: '10' } } },
    });
    await ownNamespace('pshift-a');
    await ownNamespace('pshift-b');
    // Fill A (pods count in the quota at creation; no scheduler is needed).
    const created = await kubectl('alice', ['-n', 'pshift-a', 'create', '-f', '-'], {
      input: JSON.stringify(pod('fill', '1')),
      reject: false,
    });
    expect(created.exitCode, created.stderr).toBe(0);
    await eventually(async () => expect((await quotaUsed('pshift-a', 'requests.cpu')).toString()).toBe('1'), {
      what: 'A uses 1 CPU',
    });
    // Lowering A's quota below its usage frees nothing…
    const shrink = await kubectl(
      'alice',
      ['-n', 'pshift-a', 'patch', 'quota', GUARD, '--type=merge', '-p', '{"spec":{"hard":{"requests.cpu":"100m"}}}'],
      { reject: false },
    );
    expect(shrink.exitCode, shrink.stderr).toBe(0);
    // …so giving that room to B is refused, naming the namespace that holds it by usage.
    for (const dryRun of [true, false]) {
      const shift = await kubectl(
        'alice',
        [
          '-n',
          'pshift-b',
          'patch',
          'quota',
          GUARD,
          '--type=merge',
          '-p',
          '{"spec":{"hard":{"requests.cpu":"1900m"}}}',
          ...(dryRun ? ['--dry-run=server'] : []),
        ],
        { reject: false },
      );
      expect(shift.exitCode).not.toBe(0);
      expect(shift.stderr).toContain('[Q1]');
      expect(shift.stderr).toMatch(/counted by usage: pshift-a holds requests\.cpu 1 \(its quota says 100m/);
    }
    expect(
      (await core('admin').readNamespacedResourceQuota({ namespace: 'pshift-b', name: GUARD })).spec?.hard?.[
        'requests.cpu'
      ],
    ).toBe('1');
    // Fill B up to its own quota: the project's pods ask for exactly its budget, never more.
    expect(
      (
        await kubectl('alice', ['-n', 'pshift-b', 'create', '-f', '-'], {
          input: JSON.stringify(pod('fill', '1')),
          reject: false,
        })
      ).exitCode,
    ).toBe(0);
    const more = await kubectl('alice', ['-n', 'pshift-b', 'create', '-f', '-'], {
      input: JSON.stringify(pod('more', '100m')),
      reject: false,
    });
    expect(more.stderr).toMatch(/exceeded quota/);
    const pods = await Promise.all(
      ['pshift-a', 'pshift-b'].map((namespace) => core('admin').listNamespacedPod({ namespace })),
    );
    let requested = Quantity.parse('0');
    for (const p of pods.flatMap((l) => l.items))
      for (const c of p.spec?.containers ?? [])
        requested = requested.add(Quantity.parse(String(c.resources?.requests?.cpu ?? '0')));
    expect(requested.cmp(Quantity.parse('2'))).toBeLessThanOrEqual(0);
    // The controller reports the allocation counted by usage: within budget, A's share is its 1 CPU in use.
    await eventually(
      async () => {
        const status = JSON.parse((await kubectl('admin', ['get', 'project', 'pshift', '-o', 'json'])).stdout)
          .status as { conditions?: Array<{ type: string; status: string }>; budgetUse?: string };
        expect(status.conditions?.find((c) => c.type === 'QuotaWithinBudget')?.status).toBe('True');
        expect(status.budgetUse).toBe('requests.cpu 2/2');
      },
      { what: 'status counts usage' },
    );
  });
});

describe('Pod Security by default', () => {
  it('a project namespace carries the default levels, and a privileged pod is refused by the apiserver', async () => {
    await applyProject('ppsa', {
      quota: { hard: { 'requests.cpu': '2', 'requests.memory': '1Gi', pods: '20' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', 'requests.memory': '512Mi', pods: '10' } } },
    });
    await ownNamespace('ppsa-a');
    const labels = JSON.parse((await kubectl('admin', ['get', 'namespace', 'ppsa-a', '-o', 'json'])).stdout).metadata
      .labels as Record<string, string>;
    expect(labels).toMatchObject({
      'pod-security.kubernetes.io/enforce': 'baseline',
      'pod-security.kubernetes.io/warn': 'restricted',
      'pod-security.kubernetes.io/audit': 'restricted',
    });
    for (const [what, p] of [
      ['privileged', pod('priv', '100m', {}, { securityContext: { privileged: true } })],
      ['hostNetwork', pod('hostnet', '100m', { hostNetwork: true })],
      ['hostPath /', pod('hostpath', '100m', { volumes: [{ name: 'root', hostPath: { path: '/' } }] })],
    ] as const) {
      const result = await kubectl('alice', ['-n', 'ppsa-a', 'create', '-f', '-'], {
        input: JSON.stringify(p),
        reject: false,
      });
      expect(result.exitCode, what).not.toBe(0);
      expect(result.stderr, what).toMatch(/violates PodSecurity "baseline:latest"/);
    }
    const fine = await kubectl('alice', ['-n', 'ppsa-a', 'create', '-f', '-'], {
      input: JSON.stringify(pod('fine', '100m')),
      reject: false,
    });
    expect(fine.exitCode, fine.stderr).toBe(0);
    // The tenant cannot lower the level (T7).
    const lower = await kubectl(
      'alice',
      ['label', 'namespace', 'ppsa-a', 'pod-security.kubernetes.io/enforce=privileged', '--overwrite'],
      { reject: false },
    );
    expect(lower.stderr).toContain('[T7]');
  });
});

describe('self-service namespaces and races, with two replicas on the ledger', () => {
  it('a namespace that would not be covered for every budgeted resource is refused [Q2], saying what to declare', async () => {
    await applyProject('pnodef', { quota: { hard: { 'requests.cpu': '2', pods: '20' } } });
    for (const dryRun of [true, false]) {
      const result = await kubectl(
        'alice',
        ['create', 'namespace', 'pnodef-a', ...(dryRun ? ['--dry-run=server'] : [])],
        { reject: false },
      );
      expect(result.exitCode).not.toBe(0);
      expect(result.stderr).toContain('[Q2]');
      expect(result.stderr).toContain('namespaceDefaults');
    }
    expect((await kubectl('admin', ['get', 'namespace', 'pnodef-a', '--ignore-not-found', '-o', 'name'])).stdout).toBe(
      '',
    );
  });

  it(
    'two concurrent deletes of the two covering quotas of a namespace: one is refused [Q3], every round',
    async () => {
      await applyProject('pcover', {
        quota: { hard: { 'requests.cpu': '4', pods: '20' } },
        namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', pods: '5' } } },
      });
      await ownNamespace('pcover-a');
      const alice = core('alice');
      for (let round = 0; round < 5; round++) {
        await kubectl('alice', ['-n', 'pcover-a', 'create', 'quota', 'second', '--hard=requests.cpu=1,pods=5']);
        await replicasSeeEveryQuota();
        await ledgerQuietIn('pcover', 'pcover-a');
        const results = await Promise.allSettled(
          [GUARD, 'second'].map((name) => alice.deleteNamespacedResourceQuota({ namespace: 'pcover-a', name })),
        );
        const refused = results.filter((r) => r.status === 'rejected');
        const reasons = refused.map((r) =>
          String((r as PromiseRejectedResult).reason?.body ?? (r as PromiseRejectedResult).reason),
        );
        expect(refused, `round ${round}: ${reasons.join(' | ')}`).toHaveLength(1);
        expect(reasons[0]).toContain('[Q3]');
        const left = (await core('admin').listNamespacedResourceQuota({ namespace: 'pcover-a' })).items.map(
          (q) => q.metadata?.name,
        );
        expect(left, `round ${round}`).toHaveLength(1);
        // Back to the default quota alone for the next round.
        if (left[0] === 'second') {
          await kubectl('alice', ['-n', 'pcover-a', 'create', 'quota', GUARD, '--hard=requests.cpu=1,pods=5']);
          await kubectl('alice', ['-n', 'pcover-a', 'delete', 'quota', 'second']);
        }
      }
      // Each round may wait for the ledger's entries to expire (reservationTtlSeconds).
    },
    5 * (DEFAULT_CONFIG.reservationTtlSeconds + 20) * 1000,
  );

  it('30 parallel namespace creates never exceed maxNamespaces', async () => {
    await applyProject('pmax', {
      maxNamespaces: 3,
      quota: { hard: { 'requests.cpu': '40', pods: '200' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', pods: '5' } } },
    });
    const alice = core('alice');
    const names = Array.from({ length: 30 }, (_, i) => `pmax-n${i}`);
    const results = await Promise.allSettled(
      names.map((name) => alice.createNamespace({ body: { metadata: { name } } })),
    );
    const admitted = results.filter((r) => r.status === 'fulfilled').length;
    for (const r of results)
      if (r.status === 'rejected')
        expect(String((r.reason as { body?: string }).body ?? r.reason)).toMatch(/maxNamespaces is 3/);
    const existing = (await core('admin').listNamespace({ labelSelector: 'tenantgate.io/project=pmax' })).items.length;
    process.stderr.write(
      `[promise] 30 parallel creates with maxNamespaces 3: ${admitted} admitted, ${existing} exist\n`,
    );
    expect(admitted).toBe(3);
    expect(existing).toBe(3);
  });
});
