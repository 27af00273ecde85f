/**
 * Device budgets on the real control plane (docs/budgets.md#devices, docs/adr/0067-budgets.md):
 * a DeviceClass made by the cluster admin, a Project budgeting DRA devices of that class, ResourceClaims
 * and `requests.nvidia.com/gpu`, split over two self-service namespaces by the default quotas the
 * controller writes. As the tenant user alice (no privilege): the apiserver's quota refuses a claim or a
 * GPU pod beyond a namespace's quota (no driver and no node are needed: quota admission counts the
 * claim's request, the pod's limits); the webhook refuses (Q1) raising one namespace's quota beyond the
 * budget while the other's claims use their share — counted by usage even after that other quota is
 * lowered below it. The kube-controller-manager's quota controller reports `status.used` for the DRA keys,
 * and its ResourceClaim controller (in the harness's KUBE_CONTROLLERS) turns a pod's ResourceClaimTemplate
 * into a counted claim.
 * Also what the apiserver itself accepts and refuses as quota keys, and S1 for the keys it never counts.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateWebhookCerts } from '../../src/certs/files.js';
import { startController, type RunningController } from '../../src/controller/controller.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { OWNERS_BINDING_NAME } from '../../src/render/owner-binding.js';
import { installBase, serviceAccountKubeConfig } from '../support/devcluster/tenantgate.js';
import { startWebhookReplicas, type WebhookReplicas } from '../support/devcluster/replicas.js';
import { cluster, eventually, kubectl, uniqueName } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';
import { DEFAULT_QUOTA_NAME, quotaObject, usedReaches } from '../support/quota-status.js';

const QUOTA = DEFAULT_QUOTA_NAME;
const OWNERS = [{ kind: 'Group', name: 'acme:payments-admins' }]; // alice
const GPU = 'requests.nvidia.com/gpu';
const CLAIMS = 'count/resourceclaims.resource.k8s.io';

let webhooks: WebhookReplicas;
let controller: RunningController;

const project = uniqueName('dev'); // its namespaces: <project>-a, <project>-b
const A = `${project}-a`;
const B = `${project}-b`;
const deviceClass = `${uniqueName('gpu')}.example.com`;
const DEV = `${deviceClass}.deviceclass.resource.k8s.io/devices`;

const apply = async (user: string, doc: unknown, extra: string[] = []) =>
  kubectl(user, ['apply', '-f', '-', ...extra], { input: JSON.stringify(doc), reject: false });
const create = async (user: string, doc: unknown, extra: string[] = []) =>
  kubectl(user, ['create', '-f', '-', ...extra], { input: JSON.stringify(doc), reject: false });

const claim = (namespace: string, name: string, count: number) => ({
  apiVersion: 'resource.k8s.io/v1',
  kind: 'ResourceClaim',
  metadata: { name, namespace },
  spec: {
    devices: {
      requests: [{ name: 'gpu', exactly: { deviceClassName: deviceClass, allocationMode: 'ExactCount', count } }],
    },
  },
});

const pause = { name: 'pause', image: 'registry.k8s.io/pause:3.10' };
const gpuPod = (namespace: string, name: string, gpus: number) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace },
  spec: { containers: [{ ...pause, resources: { limits: { 'nvidia.com/gpu': String(gpus) } } }] },
});
const claimPod = (namespace: string, name: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace },
  spec: {
    resourceClaims: [{ name: 'gpu', resourceClaimTemplateName: 'one-device' }],
    containers: [{ ...pause, resources: { claims: [{ name: 'gpu' }] } }],
  },
});

/** alice sets the namespace's quota (a merge patch of spec.hard). */
const patchQuota = (user: string, namespace: string, hard: Record<string, string>, extra: string[] = []) =>
  kubectl(
    user,
    [
      '-n',
      namespace,
      'patch',
      'resourcequota',
      QUOTA,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { hard } }),
      ...extra,
    ],
    { reject: false },
  );

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  const certs = await generateWebhookCerts(join(info.dir, 'device-certs'));
  webhooks = await startWebhookReplicas(info, certs, {}, { name: 'device-webhook', count: 1 });
  controller = await startController({
    kubeConfig: await serviceAccountKubeConfig(info, 'tenantgate-system', 'tenantgate-controller'),
    config: DEFAULT_CONFIG,
    leaderElection: false,
    log: () => {},
  });
}, 300_000);

afterAll(async () => {
  // While the controller runs, so that its finalizer takes the namespaces with the Project.
  await removeProjects([project]);
  await controller?.stop();
  await webhooks?.stop();
});

describe('DRA and extended resources: what the apiserver serves, accepts and counts', () => {
  it('serves resource.k8s.io/v1 (preferred) with deviceclasses, resourceclaims and resourceclaimtemplates', async () => {
    const group = JSON.parse((await kubectl('admin', ['get', '--raw', '/apis/resource.k8s.io'])).stdout) as {
      preferredVersion: { version: string };
      versions: Array<{ version: string }>;
    };
    expect(group.preferredVersion.version).toBe('v1');
    const names = (await kubectl('admin', ['api-resources', '--api-group=resource.k8s.io', '-o', 'name'])).stdout
      .trim()
      .split('\n')
      .sort();
    expect(names).toEqual(
      expect.arrayContaining([
        'deviceclasses.resource.k8s.io',
        'resourceclaims.resource.k8s.io',
        'resourceclaimtemplates.resource.k8s.io',
        'resourceslices.resource.k8s.io',
      ]),
    );
    process.stderr.write(
      `[devices] resource.k8s.io versions ${group.versions.map((v) => v.version).join(', ')}; resources ${names.join(', ')}\n`,
    );
  });

  it('ResourceQuota keys: the apiserver refuses a non-standard bare name and a fraction of devices; it accepts limits.nvidia.com/gpu and a bare nvidia.com/gpu but never counts them', async () => {
    const ns = uniqueName('probe');
    await kubectl('admin', ['create', 'namespace', ns]);
    const rq = (name: string, hard: Record<string, string>) => ({
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name, namespace: ns },
      spec: { hard },
    });
    const bare = await create('admin', rq('bare', { gpus: '1' }), ['--dry-run=server']);
    expect(bare.exitCode).not.toBe(0);
    expect(bare.stderr).toContain('must be a standard resource for quota');
    const fraction = await create('admin', rq('fraction', { [DEV]: '1500m' }), ['--dry-run=server']);
    expect(fraction.exitCode).not.toBe(0);
    expect(fraction.stderr).toContain('must be an integer');
    expect(
      (await create('admin', rq('uncounted', { 'limits.nvidia.com/gpu': '0', 'nvidia.com/gpu': '0' }))).exitCode,
    ).toBe(0);
    // A pod asking a GPU is admitted although both keys say 0: neither is counted.
    const admitted = await create('admin', gpuPod(ns, 'gpu', 1));
    expect(admitted.exitCode, admitted.stderr).toBe(0);
    // The quota controller has synced the quota (status.hard) but reports no use of either key.
    const status = await eventually(
      async () => {
        const q = JSON.parse(
          (await kubectl('admin', ['-n', ns, 'get', 'resourcequota', 'uncounted', '-o', 'json'])).stdout,
        ) as { status?: { hard?: Record<string, string>; used?: Record<string, string> } };
        expect(q.status?.hard?.['nvidia.com/gpu']).toBe('0');
        return q.status!;
      },
      { what: 'quota uncounted synced' },
    );
    expect(status.used?.['nvidia.com/gpu'] ?? '0').toBe('0');
    expect(status.used?.['limits.nvidia.com/gpu'] ?? '0').toBe('0');
    process.stderr.write(
      `[devices] quota with limits.nvidia.com/gpu=0 and nvidia.com/gpu=0 admitted a 1-GPU pod; status.used ${JSON.stringify(status.used ?? {})}\n`,
    );
    await kubectl('admin', ['delete', 'namespace', ns, '--wait=false']);
  });

  it('LimitRange keys: requests.nvidia.com/gpu and an extended default unlike its defaultRequest are refused; max alone gives every container that many GPUs', async () => {
    const ns = uniqueName('probe-lr');
    await kubectl('admin', ['create', 'namespace', ns]);
    const lr = (name: string, limit: Record<string, unknown>) => ({
      apiVersion: 'v1',
      kind: 'LimitRange',
      metadata: { name, namespace: ns },
      spec: { limits: [{ type: 'Container', ...limit }] },
    });
    const prefixed = await create('admin', lr('prefixed', { default: { 'requests.nvidia.com/gpu': '1' } }), [
      '--dry-run=server',
    ]);
    expect(prefixed.exitCode).not.toBe(0);
    expect(prefixed.stderr).toContain("doesn't follow extended resource name standard");
    const differ = await create(
      'admin',
      lr('differ', { default: { 'nvidia.com/gpu': '2' }, defaultRequest: { 'nvidia.com/gpu': '1' } }),
      ['--dry-run=server'],
    );
    expect(differ.exitCode).not.toBe(0);
    expect(differ.stderr).toContain('must equal to defaultRequest value');
    expect((await create('admin', lr('max-only', { max: { 'nvidia.com/gpu': '2' } }))).exitCode).toBe(0);
    const stored = JSON.parse(
      (await kubectl('admin', ['-n', ns, 'get', 'limitrange', 'max-only', '-o', 'json'])).stdout,
    ) as { spec: { limits: Array<Record<string, Record<string, string>>> } };
    expect(stored.spec.limits[0]!['default']).toEqual({ 'nvidia.com/gpu': '2' });
    const plain = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'plain', namespace: ns },
      spec: { containers: [pause] },
    };
    expect((await create('admin', plain)).exitCode).toBe(0);
    const pod = JSON.parse((await kubectl('admin', ['-n', ns, 'get', 'pod', 'plain', '-o', 'json'])).stdout) as {
      spec: { containers: Array<{ resources: unknown }> };
    };
    expect(pod.spec.containers[0]!.resources).toEqual({
      limits: { 'nvidia.com/gpu': '2' },
      requests: { 'nvidia.com/gpu': '2' },
    });
    process.stderr.write(
      `[devices] ${differ.stderr.trim()}\n[devices] a container without resources under a LimitRange max nvidia.com/gpu 2: ${JSON.stringify(pod.spec.containers[0]!.resources)}\n`,
    );
    await kubectl('admin', ['delete', 'namespace', ns, '--wait=false']);
  });

  it('the webhook refuses a Project budgeting limits.nvidia.com/gpu or a bare nvidia.com/gpu with S1, naming the field and what is allowed', async () => {
    const bad = {
      apiVersion: 'tenantgate.io/v1alpha1',
      kind: 'Project',
      metadata: { name: uniqueName('devbad') },
      spec: {
        tenant: 'acme',
        owners: OWNERS,
        quota: { hard: { 'limits.nvidia.com/gpu': '4' } },
        namespaceDefaults: { quota: { hard: { 'nvidia.com/gpu': '1' } } },
      },
    };
    const r = await apply('admin', bad, ['--dry-run=server']);
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain('[S1]');
    expect(r.stderr).toContain('spec.quota.hard[limits.nvidia.com/gpu] names "limits.nvidia.com/gpu"');
    expect(r.stderr).toContain('allowed: requests.nvidia.com/gpu');
    expect(r.stderr).toContain('spec.namespaceDefaults.quota.hard[nvidia.com/gpu]');
    process.stderr.write(`[devices] ${r.stderr.trim()}\n`);
  });
});

describe('a device budget over two namespaces, as the tenant', () => {
  it('the admin makes the DeviceClass (a tenant may not) and the Project; alice makes two namespaces, the controller gives each the device defaults', async () => {
    const dc = {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'DeviceClass',
      metadata: { name: deviceClass },
      spec: { selectors: [{ cel: { expression: `device.driver == "${deviceClass}"` } }] },
    };
    const tenant = await create('alice', dc);
    expect(tenant.exitCode).not.toBe(0);
    expect(tenant.stderr).toContain('forbidden');
    expect((await create('admin', dc)).exitCode).toBe(0);
    const p = await apply('admin', {
      apiVersion: 'tenantgate.io/v1alpha1',
      kind: 'Project',
      metadata: { name: project },
      spec: {
        tenant: 'acme',
        owners: OWNERS,
        quota: { hard: { [DEV]: '4', [CLAIMS]: '6', [GPU]: '4', pods: '20' } },
        namespaceDefaults: { quota: { hard: { [DEV]: '2', [CLAIMS]: '3', [GPU]: '2', pods: '10' } } },
      },
    });
    expect(p.exitCode, p.stderr).toBe(0);
    await eventually(async () => expect(controller.informers.snapshot.project(project)).toBeDefined());
    await eventually(async () =>
      expect(await webhooks.scrape(/^tenantgate_webhook_cache_objects\{kind="Project"\}/)).toEqual([
        Number((await kubectl('admin', ['get', 'projects', '-o', 'name'])).stdout.trim().split('\n').length),
      ]),
    );
    for (const ns of [A, B]) {
      const made = await kubectl('alice', ['create', 'namespace', ns], { reject: false });
      expect(made.exitCode, made.stderr).toBe(0);
      await eventually(
        async () => {
          await kubectl('admin', ['-n', ns, 'get', 'rolebinding', OWNERS_BINDING_NAME]);
          expect((await quotaObject(ns)).spec.hard).toEqual({ [DEV]: '2', [CLAIMS]: '3', [GPU]: '2', pods: '10' });
        },
        { what: `${ns}: owners' binding and the default quota` },
      );
      // the quota controller counts the DRA keys from the start
      await usedReaches(ns, { [DEV]: '0', [CLAIMS]: '0', [GPU]: '0' });
    }
  }, 180_000);

  it("(a) the apiserver's quota refuses a claim beyond the namespace's quota; the quota controller reports its use", async () => {
    const first = await create('alice', claim(A, 'two', 2));
    expect(first.exitCode, first.stderr).toBe(0);
    const beyond = await create('alice', claim(A, 'one-more', 1));
    expect(beyond.exitCode).not.toBe(0);
    expect(beyond.stderr).toContain(`exceeded quota: ${QUOTA}`);
    expect(beyond.stderr).toContain(`${DEV}=1`);
    process.stderr.write(`[devices] ${beyond.stderr.trim()}\n`);
    await usedReaches(A, { [DEV]: '2', [CLAIMS]: '1' });
  });

  it('a pod with a ResourceClaimTemplate gets a claim from the ResourceClaim controller, counted in its namespace; a third device is refused to that controller', async () => {
    const template = {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaimTemplate',
      metadata: { name: 'one-device', namespace: B },
      spec: { spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: deviceClass } }] } } },
    };
    expect((await create('alice', template)).exitCode).toBe(0);
    for (const name of ['infer-1', 'infer-2']) {
      const made = await create('alice', claimPod(B, name));
      expect(made.exitCode, made.stderr).toBe(0);
    }
    await usedReaches(B, { [DEV]: '2', [CLAIMS]: '2' });
    const claims = JSON.parse((await kubectl('alice', ['-n', B, 'get', 'resourceclaims', '-o', 'json'])).stdout) as {
      items: Array<{ metadata: { name: string; ownerReferences?: Array<{ kind: string; name: string }> } }>;
    };
    expect(claims.items.map((c) => c.metadata.ownerReferences?.[0]?.kind)).toEqual(['Pod', 'Pod']);
    // a third pod: its claim is refused by the quota, so it never gets one
    expect((await create('alice', claimPod(B, 'infer-3'))).exitCode).toBe(0);
    const refusal = await eventually(
      async () => {
        const events = JSON.parse(
          (
            await kubectl('admin', [
              '-n',
              B,
              'get',
              'events',
              '--field-selector=involvedObject.name=infer-3',
              '-o',
              'json',
            ])
          ).stdout,
        ) as { items: Array<{ reason: string; message: string }> };
        const found = events.items.find((e) => e.reason === 'FailedResourceClaimCreation');
        expect(found?.message).toContain('exceeded quota');
        return found!.message;
      },
      { what: 'infer-3: the ResourceClaim controller reports the quota refusal' },
    );
    process.stderr.write(`[devices] infer-3 event FailedResourceClaimCreation: ${refusal}\n`);
    await new Promise((r) => setTimeout(r, 2_000));
    expect((await quotaObject(B)).status?.used?.[DEV]).toBe('2');
    await kubectl('alice', ['-n', B, 'delete', 'pod', 'infer-3', '--wait=false']);
  });

  it("(b) the webhook refuses raising A's device quota beyond the budget while B's claims use their share — also after B's quota is lowered below its use", async () => {
    const raise = await patchQuota('alice', A, { [DEV]: '3' });
    expect(raise.exitCode).not.toBe(0);
    expect(raise.stderr).toContain(
      `[Q1] ResourceQuota ${A}/${QUOTA} asks ${DEV} 3, project ${project} has 4 of which 2 are allocated to other namespaces: at most 2 fits`,
    );
    // B lowers its quota to 0 devices (allowed: it frees nothing its claims still use) ...
    const lowered = await patchQuota('alice', B, { [DEV]: '0' });
    expect(lowered.exitCode, lowered.stderr).toBe(0);
    await eventually(async () => expect((await quotaObject(B)).status?.hard?.[DEV]).toBe('0'));
    // ... and its claims still hold 2: A still gets no more than 2
    const still = await patchQuota('alice', A, { [DEV]: '3' });
    expect(still.exitCode).not.toBe(0);
    expect(still.stderr).toContain('at most 2 fits');
    expect(still.stderr).toContain(
      `counted by usage: ${B} holds ${DEV} 2 (its quota says 0; in use or still enforced)`,
    );
    process.stderr.write(`[devices] ${still.stderr.trim()}\n`);
    // B cannot claim more either: 4 devices at most across the project's namespaces
    const more = await create('alice', claim(B, 'extra', 1));
    expect(more.exitCode).not.toBe(0);
    expect(more.stderr).toContain('exceeded quota');
    // When B's pods go, the garbage collector deletes their claims: the devices are free, A may grow
    await kubectl('alice', ['-n', B, 'delete', 'pod', 'infer-1', 'infer-2', '--wait=false']);
    await usedReaches(B, { [DEV]: '0', [CLAIMS]: '0' });
    // (B's own creation is reserved in the headroom ledger for reservationTtlSeconds, 30 s, with its default
    // 2 devices: until that entry expires the webhook still counts them — docs/adr/0003-headroom-ledger.md)
    await eventually(
      async () => {
        const grown = await patchQuota('alice', A, { [DEV]: '4' });
        expect(grown.exitCode, grown.stderr).toBe(0);
      },
      { timeoutMs: 45_000, intervalMs: 2_000, what: `${A} grows to 4 devices once ${B}'s claims are gone` },
    );
    expect((await create('alice', claim(A, 'two-more', 2))).exitCode).toBe(0);
    await usedReaches(A, { [DEV]: '4', [CLAIMS]: '2' });
  }, 120_000);

  it('(c) requests.nvidia.com/gpu: GPU pods are counted without a node, refused beyond the quota, and Q1 holds the budget across namespaces', async () => {
    const two = await create('alice', gpuPod(A, 'train', 2));
    expect(two.exitCode, two.stderr).toBe(0);
    const beyond = await create('alice', gpuPod(A, 'train-more', 1));
    expect(beyond.exitCode).not.toBe(0);
    expect(beyond.stderr).toContain(`exceeded quota: ${QUOTA}`);
    expect(beyond.stderr).toContain(`${GPU}=1`);
    await usedReaches(A, { [GPU]: '2' });
    const raise = await patchQuota('alice', B, { [GPU]: '3' });
    expect(raise.exitCode).not.toBe(0);
    expect(raise.stderr).toContain(
      `[Q1] ResourceQuota ${B}/${QUOTA} asks ${GPU} 3, project ${project} has 4 of which 2 are allocated to other namespaces: at most 2 fits`,
    );
    // A lowers its GPU quota to 0 with its pod still there: the 2 GPUs stay held
    expect((await patchQuota('alice', A, { [GPU]: '0' })).exitCode).toBe(0);
    const held = await patchQuota('alice', B, { [GPU]: '3' });
    expect(held.exitCode).not.toBe(0);
    expect(held.stderr).toContain(`counted by usage: ${A} holds ${GPU} 2 (its quota says 0; in use or still enforced)`);
  });

  it("the Project's status counts the device keys (allocated and used)", async () => {
    await eventually(
      async () => {
        const p = JSON.parse((await kubectl('admin', ['get', 'project', project, '-o', 'json'])).stdout) as {
          status?: { used?: Record<string, string>; allocated?: Record<string, string> };
        };
        expect(p.status?.used?.[DEV]).toBe('4');
        expect(p.status?.used?.[GPU]).toBe('2');
        expect(p.status?.allocated?.[DEV]).toBe('4');
      },
      { what: 'Project status counts devices and GPUs' },
    );
  });
});
