/**
 * What Kubernetes 1.36 and 1.37 changed that touches budgets, on the pinned control plane
 * (docs/kubernetes-versions.md).
 *
 * Extended resources served by DRA (Kubernetes 1.36 on by default, 1.37 GA; docs/kubernetes-versions.md): a
 * DeviceClass naming an `extendedResourceName` makes the apiserver's ResourceQuota admission charge a
 * ResourceClaim of that class under three keys at once — `<class>.deviceclass.resource.k8s.io/devices`,
 * `requests.deviceclass.resource.kubernetes.io/<class>` and `requests.<extended-resource>` — and a pod asking
 * the extended resource under `requests.<extended-resource>`. Three Projects each budget the class's devices
 * under ONE of the keys (two namespaces each, one device per namespace by default): as the tenant user, a
 * second claim is refused in every one of them (no key lets a namespace past another's quota), a claim and a
 * pod of the extended resource share the extended key's quota (neither counted twice), Q1 holds the budget
 * across the namespaces, and the Project status counts what the quota controller reports. What the quota
 * refuses is tenantgate's own: the refusing quota is the controller's (namespaceDefaults on the key), and
 * tenantgate counts a claim by the key's usage (a quota lowered below it still allocates it).
 *
 * In-place resize (`pods/resize`): a pod resized up inside a namespace near its quota is charged the larger
 * size by the apiserver's quota; past the quota the resize is refused; the Project's `used` follows, and
 * tenantgate counts the resized size as allocated once the quota is lowered below it.
 *
 * Pod-level resources (`spec.resources` of the pod): the quota charges them when the containers ask nothing,
 * refuses a pod past them, and the Project's `used` is the same sum.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateWebhookCerts } from '../../src/certs/files.js';
import { startController, type RunningController } from '../../src/controller/controller.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { installBase, serviceAccountKubeConfig } from '../support/devcluster/tenantgate.js';
import { startWebhookReplicas, type WebhookReplicas } from '../support/devcluster/replicas.js';
import { cluster, eventually, kubectl, uniqueName } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';
import { DEFAULT_QUOTA_NAME, quotaObject, usedReaches } from '../support/quota-status.js';

const QUOTA = DEFAULT_QUOTA_NAME;
const OWNERS = [{ kind: 'Group', name: 'acme:payments-admins' }]; // alice
const deviceClass = `${uniqueName('xgpu')}.example.com`;
const extended = `example.com/${uniqueName('xgpu')}`;
/** A Project's status, as tenantgate's controller writes it. */
const projectStatus = async (name: string) =>
  (
    JSON.parse((await kubectl('admin', ['get', 'project', name, '-o', 'json'])).stdout) as {
      status?: { used?: Record<string, string>; allocated?: Record<string, string> };
    }
  ).status;
/** Alice sets a resource of a namespace's default quota. */
const setHard = (namespace: string, resource: string, value: string) =>
  kubectl(
    'alice',
    [
      '-n',
      namespace,
      'patch',
      'resourcequota',
      DEFAULT_QUOTA_NAME,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { hard: { [resource]: value } } }),
    ],
    { reject: false },
  );
/** The three keys the apiserver charges a claim of the class under, each budgeted alone by one Project. */
const KEYS = {
  devices: `${deviceClass}.deviceclass.resource.k8s.io/devices`,
  implicit: `requests.deviceclass.resource.kubernetes.io/${deviceClass}`,
  extended: `requests.${extended}`,
} as const;
type Key = keyof typeof KEYS;
const projects: Record<Key, string> = {
  devices: uniqueName('dvk'),
  implicit: uniqueName('imk'),
  extended: uniqueName('exk'),
};
const resized = uniqueName('rsz'); // its namespace: <resized>-a
const NODE = `${resized}-node`;
const ns = (key: Key, side: 'a' | 'b') => `${projects[key]}-${side}`;

let webhooks: WebhookReplicas;
let controller: RunningController;

const create = async (user: string, doc: unknown) =>
  kubectl(user, ['create', '-f', '-'], { input: JSON.stringify(doc), reject: false });
const claim = (namespace: string, name: string) => ({
  apiVersion: 'resource.k8s.io/v1',
  kind: 'ResourceClaim',
  metadata: { name, namespace },
  spec: {
    devices: {
      requests: [{ name: 'gpu', exactly: { deviceClassName: deviceClass, allocationMode: 'ExactCount', count: 1 } }],
    },
  },
});
const extendedPod = (namespace: string, name: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace },
  spec: {
    containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.10', resources: { limits: { [extended]: '1' } } }],
  },
});

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  const certs = await generateWebhookCerts(join(info.dir, 'dra-extended-certs'));
  webhooks = await startWebhookReplicas(info, certs, {}, { name: 'dra-extended-webhook', count: 1 });
  controller = await startController({
    kubeConfig: await serviceAccountKubeConfig(info, 'tenantgate-system', 'tenantgate-controller'),
    config: DEFAULT_CONFIG,
    leaderElection: false,
    log: () => {},
  });
  const made = await create('admin', {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'DeviceClass',
    metadata: { name: deviceClass },
    spec: { selectors: [{ cel: { expression: `device.driver == "${deviceClass}"` } }], extendedResourceName: extended },
  });
  expect(made.exitCode, made.stderr).toBe(0);
  for (const key of Object.keys(KEYS) as Key[]) {
    const p = await kubectl('admin', ['apply', '-f', '-'], {
      reject: false,
      input: JSON.stringify({
        apiVersion: 'tenantgate.io/v1alpha1',
        kind: 'Project',
        metadata: { name: projects[key] },
        spec: {
          tenant: 'acme',
          owners: OWNERS,
          quota: { hard: { [KEYS[key]]: '2' } },
          namespaceDefaults: { quota: { hard: { [KEYS[key]]: '1' } } },
        },
      }),
    });
    expect(p.exitCode, p.stderr).toBe(0);
  }
  const r = await kubectl('admin', ['apply', '-f', '-'], {
    reject: false,
    input: JSON.stringify({
      apiVersion: 'tenantgate.io/v1alpha1',
      kind: 'Project',
      metadata: { name: resized },
      spec: {
        tenant: 'acme',
        owners: OWNERS,
        quota: { hard: { 'requests.cpu': '2' } },
        namespaceDefaults: { quota: { hard: { 'requests.cpu': '1' } } },
      },
    }),
  });
  expect(r.exitCode, r.stderr).toBe(0);
  await eventually(
    async () => {
      for (const name of [...Object.values(projects), resized])
        expect(controller.informers.snapshot.project(name), `the controller's cache has Project ${name}`).toBeDefined();
    },
    { what: 'the controller caches the Projects' },
  );
  await eventually(async () =>
    expect(await webhooks.scrape(/^tenantgate_webhook_cache_objects\{kind="Project"\}/)).toEqual([
      Number((await kubectl('admin', ['get', 'projects', '-o', 'name'])).stdout.trim().split('\n').length),
    ]),
  );
  for (const key of Object.keys(KEYS) as Key[]) {
    for (const side of ['a', 'b'] as const) {
      const r = await kubectl('alice', ['create', 'namespace', ns(key, side)], { reject: false });
      expect(r.exitCode, r.stderr).toBe(0);
      // The quota controller reports the key (0) once it counts it.
      await usedReaches(ns(key, side), { [KEYS[key]]: '0' });
    }
  }
}, 300_000);

afterAll(async () => {
  await kubectl(
    'admin',
    ['delete', 'pods', '--all-namespaces', '--field-selector', `spec.nodeName=${NODE}`, '--grace-period=0', '--force'],
    { reject: false },
  );
  await removeProjects([...Object.values(projects), resized]);
  await kubectl('admin', ['delete', 'node', NODE, '--ignore-not-found'], { reject: false });
  await controller?.stop();
  await webhooks?.stop();
});

describe('an extended resource served by DRA: a budget on any one of its three quota keys', () => {
  it.each(Object.keys(KEYS) as Key[])(
    "%s key alone: one claim of the class is admitted, the second is refused by that key's quota",
    async (key) => {
      const first = await create('alice', claim(ns(key, 'a'), 'first'));
      expect(first.exitCode, first.stderr).toBe(0);
      const second = await create('alice', claim(ns(key, 'a'), 'second'));
      expect(second.exitCode).not.toBe(0);
      expect(second.stderr).toContain(`exceeded quota: ${QUOTA}`);
      expect(second.stderr).toContain(`${KEYS[key]}=1`);
      // The claim is counted once under the key (not once per key the apiserver knows for it).
      await usedReaches(ns(key, 'a'), { [KEYS[key]]: '1' });
      // The quota that refused is tenantgate's: the controller's, from namespaceDefaults.
      expect((await quotaObject(ns(key, 'a'))).spec.hard).toEqual({ [KEYS[key]]: '1' });
      // And tenantgate counts the claim by the key: lowered to 0 below the claim's use (nothing is taken
      // back), the namespace still allocates 1, the other namespace its default 1.
      const lowered = await setHard(ns(key, 'a'), KEYS[key], '0');
      expect(lowered.exitCode, lowered.stderr).toBe(0);
      await eventually(async () => expect((await projectStatus(projects[key]))?.allocated?.[KEYS[key]]).toBe('2'), {
        what: `${projects[key]}: status.allocated ${KEYS[key]} 2 (the claim counted by usage)`,
      });
    },
  );

  it('the extended key: a pod asking the extended resource shares the quota with the claims (pod 1 + claim 1 = 2, then refused)', async () => {
    const b = ns('extended', 'b');
    const pod = await create('alice', extendedPod(b, 'wants-one'));
    expect(pod.exitCode, pod.stderr).toBe(0);
    await usedReaches(b, { [KEYS.extended]: '1' });
    const claimAfterPod = await create('alice', claim(b, 'after-pod'));
    expect(claimAfterPod.exitCode).not.toBe(0);
    expect(claimAfterPod.stderr).toContain(`${KEYS.extended}=1`);
    // The devices key's Project: a pod asking the extended resource is charged only the extended key at
    // creation (the claim the scheduler makes for it is charged the class keys then); unbudgeted there, it is admitted.
    const podInDevices = await create('alice', extendedPod(ns('devices', 'b'), 'wants-one'));
    expect(podInDevices.exitCode, podInDevices.stderr).toBe(0);
    expect((await quotaObject(ns('devices', 'b'))).status?.used?.[KEYS.devices]).toBe('0');
  });

  it("Q1: raising one namespace's quota on the key beyond the budget is refused while the other uses its share; the status counts each key", async () => {
    for (const key of Object.keys(KEYS) as Key[]) {
      if (key !== 'extended') {
        const other = await create('alice', claim(ns(key, 'b'), 'other'));
        expect(other.exitCode, other.stderr).toBe(0);
      }
      const raised = await kubectl(
        'alice',
        [
          '-n',
          ns(key, 'a'),
          'patch',
          'resourcequota',
          QUOTA,
          '--type=merge',
          '-p',
          JSON.stringify({ spec: { hard: { [KEYS[key]]: '2' } } }),
        ],
        { reject: false },
      );
      expect(raised.exitCode).not.toBe(0);
      expect(raised.stderr).toContain(
        `[Q1] ResourceQuota ${ns(key, 'a')}/${QUOTA} asks ${KEYS[key]} 2, project ${projects[key]} has 2 of which 1 are allocated to other namespaces: at most 1 fits`,
      );
      await eventually(
        async () => {
          const p = JSON.parse((await kubectl('admin', ['get', 'project', projects[key], '-o', 'json'])).stdout) as {
            status?: { used?: Record<string, string> };
          };
          expect(p.status?.used?.[KEYS[key]]).toBe('2');
        },
        { what: `${projects[key]}: status.used ${KEYS[key]} 2` },
      );
    }
  });
});

describe('in-place resize (pods/resize) inside a namespace near its quota', () => {
  const namespace = `${resized}-a`;
  const resize = (cpu: string) =>
    kubectl(
      'alice',
      [
        '-n',
        namespace,
        'patch',
        'pod',
        'grows',
        '--subresource=resize',
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { containers: [{ name: 'c', resources: { requests: { cpu } } }] } }),
      ],
      { reject: false },
    );

  it('a resize within the quota is admitted and charged; past it the apiserver refuses it; the Project counts the larger size', async () => {
    expect(
      (
        await kubectl('admin', ['apply', '-f', '-'], {
          input: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE } }),
          reject: false,
        })
      ).exitCode,
    ).toBe(0);
    // What a kubelet would report: since 1.37 the apiserver refuses a resize past the node's allocatable.
    const resources = { cpu: '4', memory: '8Gi', pods: '110' };
    const status = await kubectl(
      'admin',
      [
        'patch',
        'node',
        NODE,
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status: { capacity: resources, allocatable: resources } }),
      ],
      { reject: false },
    );
    expect(status.exitCode, status.stderr).toBe(0);
    expect((await kubectl('alice', ['create', 'namespace', namespace], { reject: false })).exitCode).toBe(0);
    await usedReaches(namespace, { 'requests.cpu': '0' });
    const pod = await create('alice', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'grows', namespace },
      spec: {
        containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu: '500m' } } }],
      },
    });
    expect(pod.exitCode, pod.stderr).toBe(0);
    // On the node as the scheduler puts it there (pods/binding): a project's pod may not set spec.nodeName itself [X8].
    const target = { kind: 'Node', name: NODE };
    const binding = { apiVersion: 'v1', kind: 'Binding', metadata: { name: 'grows' }, target };
    const bind = ['create', '--raw', `/api/v1/namespaces/${namespace}/pods/grows/binding`, '-f', '-'];
    const bound = await kubectl('admin', bind, { input: JSON.stringify(binding), reject: false });
    expect(bound.exitCode, bound.stderr).toBe(0);
    await usedReaches(namespace, { 'requests.cpu': '500m' });

    const within = await resize('900m');
    expect(within.exitCode, within.stderr).toBe(0);
    await usedReaches(namespace, { 'requests.cpu': '900m' });
    const past = await resize('1200m');
    expect(past.exitCode).not.toBe(0);
    expect(past.stderr).toContain(`exceeded quota: ${QUOTA}`);
    expect(past.stderr).toContain('requests.cpu');
    await eventually(
      async () => {
        const p = JSON.parse((await kubectl('admin', ['get', 'project', resized, '-o', 'json'])).stdout) as {
          status?: { used?: Record<string, string> };
        };
        expect(p.status?.used?.['requests.cpu']).toBe('900m');
      },
      { what: `${resized}: status.used requests.cpu 900m` },
    );
    // tenantgate's count, not only the apiserver's: the quota lowered below what the resized pod uses
    // (nothing is evicted), the namespace still allocates the 900m it uses, not 500m.
    const lowered = await setHard(namespace, 'requests.cpu', '500m');
    expect(lowered.exitCode, lowered.stderr).toBe(0);
    await eventually(async () => expect((await projectStatus(resized))?.allocated?.['requests.cpu']).toBe('900m'), {
      what: `${resized}: status.allocated requests.cpu 900m (the resized pod counted by usage)`,
    });
  });
});

describe('pod-level resources (spec.resources of the pod)', () => {
  const namespace = `${resized}-b`;
  const podLevel = (name: string, cpu: string) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    // The containers ask nothing themselves: the quota charges the pod's own requests.
    spec: { resources: { requests: { cpu } }, containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
  });

  it('the quota charges the pod-level requests, refuses a pod past them, and the Project counts the same', async () => {
    expect((await kubectl('alice', ['create', 'namespace', namespace], { reject: false })).exitCode).toBe(0);
    await usedReaches(namespace, { 'requests.cpu': '0' });
    const first = await create('alice', podLevel('pod-level', '700m'));
    expect(first.exitCode, first.stderr).toBe(0);
    const stored = JSON.parse(
      (await kubectl('admin', ['-n', namespace, 'get', 'pod', 'pod-level', '-o', 'json'])).stdout,
    ) as { spec: { resources?: { requests?: Record<string, string> } } };
    expect(stored.spec.resources?.requests?.cpu, 'the apiserver keeps pod-level resources (the feature is on)').toBe(
      '700m',
    );
    await usedReaches(namespace, { 'requests.cpu': '700m' });
    const second = await create('alice', podLevel('pod-level-2', '400m'));
    expect(second.exitCode).not.toBe(0);
    expect(second.stderr).toContain(`exceeded quota: ${QUOTA}`);
    await eventually(
      async () => {
        const p = JSON.parse((await kubectl('admin', ['get', 'project', resized, '-o', 'json'])).stdout) as {
          status?: { used?: Record<string, string> };
        };
        // 900m of the resized pod in <resized>-a, and 700m here.
        expect(p.status?.used?.['requests.cpu']).toBe('1600m');
      },
      { what: `${resized}: status.used requests.cpu 1600m` },
    );
  });
});
