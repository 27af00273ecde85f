/**
 * Allow-lists (X1–X10, H1, H2, H4, docs/rules.md#allow-lists, ADR 0095) on the real control plane: the API
 * server's policies with the parameters the controller writes (and its owners' RoleBinding, quota), the
 * shipped WebhookConfigurations with the webhook in this process (X10 on a claim's volumeName), and every
 * step alice's real request as the tenant she is (group acme:payments-admins, no privilege).
 * Each attack is refused with its rule id naming the project and what it allows; each allowed use is
 * admitted and stored.
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
import { cluster, eventually, kubectl, uniqueName } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';
import { join } from 'node:path';
import { REPO_ROOT } from '../support/paths.js';

const PROJECT = uniqueName('allow').replace(/[^a-z0-9-]/g, '');
const NS = `${PROJECT}-app`;
// Cluster-wide names of this run.
const BATCH = uniqueName('allow-batch');
const OTHER_CLASS = uniqueName('allow-other');
const GVISOR = uniqueName('allow-gvisor');
const KATA = uniqueName('allow-kata');
const HOSTS = `${PROJECT}.example.com`;
const POOL = { pool: PROJECT };
// PersistentVolumes (cluster-wide): one of this project, one of another project, by the platform's label.
// Their StorageClass is this run's own: the binder runs, and binds a claim of `standard` to no volume here.
const OWN_PV = uniqueName('allow-pv-own');
const OTHER_PV = uniqueName('allow-pv-other');
const PV_CLASS = uniqueName('allow-pv-class');
const GATEWAY_CRD = 'gateways.gateway.networking.k8s.io';
let installedGatewayCrd = false;

let hook: LocalWebhook;
let controller: RunningController;

const pause = { name: 'pause', image: 'registry.k8s.io/pause:3.10' };
const pod = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: { nodeSelector: POOL, containers: [pause], ...spec },
});
const service = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name },
  spec: { selector: { app: name }, ports: [{ port: 80 }], ...spec },
});
const ingress = (name: string, host: string) => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name },
  spec: {
    rules: [
      {
        host,
        http: {
          paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }],
        },
      },
    ],
  },
});
const claim = (name: string, storageClassName: string) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name },
  spec: { storageClassName, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
});

async function create(object: unknown): Promise<{ exitCode: number | undefined; stderr: string }> {
  return kubectl('alice', ['-n', NS, 'create', '-f', '-'], { input: JSON.stringify(object), reject: false });
}

async function refused(object: unknown, rule: string, ...fragments: string[]): Promise<void> {
  const result = await create(object);
  expect(result.exitCode, `refused with [${rule}]`).not.toBe(0);
  expect(result.stderr).toContain(`[${rule}] `);
  expect(result.stderr).toContain(`is not allowed for project ${PROJECT}; allowed: `);
  for (const f of fragments) expect(result.stderr).toContain(f);
  const meta = object as { kind: string; metadata: { name: string } };
  const stored = await kubectl('admin', ['-n', NS, 'get', meta.kind.toLowerCase(), meta.metadata.name], {
    reject: false,
  });
  expect(stored.exitCode, `${meta.kind} ${meta.metadata.name} is not stored`).not.toBe(0);
}

async function admitted(object: unknown): Promise<void> {
  const result = await create(object);
  expect(result.exitCode, result.stderr).toBe(0);
}

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  for (const [name, value] of [
    [BATCH, 100],
    [OTHER_CLASS, 200],
  ] as const) {
    await kubectl('admin', ['apply', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name }, value }),
    });
  }
  for (const [name, project] of [
    [OWN_PV, PROJECT],
    [OTHER_PV, 'shop'],
  ] as const) {
    const pv = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name, labels: { 'tenantgate.io/project': project } },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        storageClassName: PV_CLASS,
        persistentVolumeReclaimPolicy: 'Retain',
        hostPath: { path: `/tmp/${name}` },
      },
    };
    await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(pv) });
  }
  if ((await kubectl('admin', ['get', 'crd', GATEWAY_CRD], { reject: false })).exitCode !== 0) {
    await kubectl('admin', ['create', '-f', join(REPO_ROOT, 'test', 'fixtures', 'gateway-api', 'gateways-crd.yaml')]);
    installedGatewayCrd = true;
    await eventually(async () => kubectl('admin', ['get', 'gateways', '-A']), { what: 'the Gateway CRD is served' });
  }
  for (const name of [GVISOR, KATA]) {
    await kubectl('admin', ['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'node.k8s.io/v1',
        kind: 'RuntimeClass',
        metadata: { name },
        handler: 'runc',
      }),
    });
  }
  hook = await startLocalWebhook(info);
  controller = await startController({
    kubeConfig: await serviceAccountKubeConfig(info, 'tenantgate-system', 'tenantgate-controller'),
    config: DEFAULT_CONFIG,
    leaderElection: false,
    log: () => {},
  });
  const project = {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: PROJECT },
    spec: {
      tenant: 'acme',
      owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
      quota: { hard: { pods: '40' } },
      namespaceDefaults: { quota: { hard: { pods: '20' } } },
      allow: {
        priorityClasses: [BATCH],
        services: { types: ['LoadBalancer'], externalIPs: ['203.0.113.0/28'] },
        hostnames: { suffixes: [HOSTS] },
        storageClasses: ['standard', PV_CLASS],
        runtimeClasses: [GVISOR],
        deviceClasses: ['gpu.example.com'],
        gatewayClasses: ['public'],
        registries: ['registry.k8s.io/'],
        nodePlacement: {
          nodeSelector: POOL,
          tolerations: [{ key: 'dedicated', operator: 'Equal', value: PROJECT, effect: 'NoSchedule' }],
        },
      },
    },
  };
  const applied = JSON.parse(
    (await kubectl('admin', ['apply', '-o', 'json', '-f', '-'], { input: JSON.stringify(project) })).stdout,
  ) as { spec: { allow?: unknown } };
  expect(applied.spec.allow, 'the CRD keeps spec.allow').toEqual(project.spec.allow);
  await eventually(
    async () => {
      const created = await kubectl('alice', ['create', 'namespace', NS], { reject: false });
      if (created.exitCode !== 0) expect(created.stderr).toContain('AlreadyExists');
    },
    { what: `alice creates ${NS} (the webhook has seen the Project)` },
  );
  await eventually(async () => kubectl('alice', ['-n', NS, 'get', 'quota', 'tenantgate-quota']), {
    what: `${NS}: owners' RoleBinding and quota from the controller`,
  });
  await eventually(async () => kubectl('admin', ['-n', NS, 'get', 'serviceaccount', 'default']), {
    what: `${NS}: default ServiceAccount`,
  });
  // Kubernetes' admin role does not cover Gateway API: the platform grants owners Gateways in their namespace.
  const gatewayRole = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'gateways', namespace: NS },
    rules: [{ apiGroups: ['gateway.networking.k8s.io'], resources: ['gateways'], verbs: ['get', 'create'] }],
  };
  const gatewayBinding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'gateways', namespace: NS },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'gateways' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'acme:payments-admins' }],
  };
  await kubectl('admin', ['apply', '-f', '-'], {
    input: [gatewayRole, gatewayBinding].map((o) => JSON.stringify(o)).join('\n'),
  });
  await eventually(
    async () => {
      const q = JSON.parse(
        (await kubectl('admin', ['-n', NS, 'get', 'quota', 'tenantgate-quota', '-o', 'json'])).stdout,
      ) as { status?: { hard?: Record<string, string> } };
      expect(q.status?.hard?.pods).toBe('20');
    },
    { what: 'the quota controller has computed the quota' },
  );
}, 300_000);

afterAll(async () => {
  await removeProjects([PROJECT]);
  await controller?.stop();
  await hook?.stop();
  await kubectl('admin', ['delete', 'priorityclass', BATCH, OTHER_CLASS, '--ignore-not-found'], { reject: false });
  await kubectl('admin', ['delete', 'runtimeclass', GVISOR, KATA, '--ignore-not-found'], { reject: false });
  await kubectl('admin', ['delete', 'persistentvolume', OWN_PV, OTHER_PV, '--ignore-not-found', '--wait=false'], {
    reject: false,
  });
  if (installedGatewayCrd)
    await kubectl('admin', ['delete', 'crd', GATEWAY_CRD, '--ignore-not-found', '--wait=false'], { reject: false });
});

describe('attacks, refused with their rule', () => {
  it('X1: a pod of system-node-critical, and of a class the project does not list', async () => {
    await refused(
      pod('crit', { priorityClassName: 'system-node-critical' }),
      'X1',
      `Pod ${NS}/crit: priorityClassName "system-node-critical"`,
      `allowed: ${BATCH}`,
    );
    await refused(pod('other', { priorityClassName: OTHER_CLASS }), 'X1');
  });

  it('X2, X3: a Service with externalIPs outside the CIDRs, a NodePort Service', async () => {
    await refused(
      service('intercept', { externalIPs: ['8.8.8.8'] }),
      'X2',
      'externalIPs "8.8.8.8"',
      'allowed: addresses in 203.0.113.0/28',
    );
    await refused(service('np', { type: 'NodePort' }), 'X3', 'type NodePort', 'allowed: ClusterIP, LoadBalancer');
  });

  it("H1: an Ingress for another project's hostname, and a look-alike one", async () => {
    await refused(ingress('steal', 'shop.example.com'), 'H1', 'host "shop.example.com"', `hostnames under ${HOSTS}`);
    await refused(ingress('look-alike', `not${HOSTS}`), 'H1');
  });

  it('X5, X6: a PVC of a StorageClass not listed, a pod of a RuntimeClass not listed', async () => {
    await refused(claim('fast', 'fast-ssd'), 'X5', 'storageClassName "fast-ssd"', 'allowed: standard');
    await refused(pod('kata', { runtimeClassName: KATA }), 'X6', `runtimeClassName "${KATA}"`, `allowed: ${GVISOR}`);
  });

  it('X8: a pod leaving the node selector, setting nodeName (in every project), or tolerating every taint', async () => {
    await refused(
      { ...pod('anywhere'), spec: { containers: [pause] } },
      'X8',
      `nodeSelector with no pool`,
      `a nodeSelector with pool=${PROJECT}`,
    );
    await refused(pod('elsewhere', { nodeSelector: { pool: 'shop' } }), 'X8');
    // With the project's node selector too: nodeName skips the scheduler, so it is refused whatever the selector.
    await refused(pod('pinned', { nodeName: 'node-of-shop' }), 'X8', 'nodeName "node-of-shop"');
    await refused(pod('tolerant', { tolerations: [{ operator: 'Exists' }] }), 'X8', 'toleration Exists (every taint)');
  });

  it('X7: a ResourceClaim of a DeviceClass not listed (resource.k8s.io/v1)', async () => {
    const versions = (await kubectl('admin', ['api-versions'])).stdout.split('\n');
    expect(versions, 'the control plane serves resource.k8s.io/v1').toContain('resource.k8s.io/v1');
    const rc = (name: string, deviceClassName: string) => ({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaim',
      metadata: { name },
      spec: { devices: { requests: [{ name: 'd', exactly: { deviceClassName } }] } },
    });
    await refused(
      rc('fpga', 'fpga.example.com'),
      'X7',
      'deviceClassName "fpga.example.com"',
      'allowed: gpu.example.com',
    );
    await admitted(rc('gpu', 'gpu.example.com'));
  });
});

describe('binding volumes, Gateways, debugging: attacks refused, own uses admitted', () => {
  const bound = (name: string, volumeName: string) => ({
    ...claim(name, PV_CLASS),
    spec: { ...claim(name, PV_CLASS).spec, volumeName },
  });
  const gateway = (name: string, gatewayClassName: string) => ({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name },
    spec: { gatewayClassName, listeners: [{ name: 'http', port: 80, protocol: 'HTTP', hostname: `www.${HOSTS}` }] },
  });

  it("X10: a claim naming another project's PersistentVolume is refused; one naming its own is admitted", async () => {
    await refused(
      bound('grab', OTHER_PV),
      'X10',
      `volumeName "${OTHER_PV}" (a PersistentVolume of project shop: label tenantgate.io/project=shop)`,
      `allowed: PersistentVolumes of project ${PROJECT}`,
    );
    await refused(
      {
        ...claim('pick', 'standard'),
        spec: { ...claim('pick', 'standard').spec, selector: { matchLabels: { 'tenantgate.io/project': 'shop' } } },
      },
      'X10',
      `a selector without tenantgate.io/project=${PROJECT}`,
    );
    await admitted(bound('own', OWN_PV));
  });

  it('H4: a Gateway of a GatewayClass not listed is refused; of a listed one admitted', async () => {
    await refused(gateway('internal-gw', 'internal'), 'H4', 'gatewayClassName "internal"', 'allowed: public');
    await admitted(gateway('public-gw', 'public'));
  });

  it('X9: kubectl debug with an image outside the registries is refused; from an allowed one admitted', async () => {
    await admitted(pod('debugged'));
    const evil = await kubectl(
      'alice',
      ['-n', NS, 'debug', 'debugged', '--profile=baseline', '--image=docker.io/library/busybox:1.36', '-c', 'evil'],
      { reject: false },
    );
    expect(evil.exitCode, evil.stdout).not.toBe(0);
    expect(evil.stderr).toContain(
      `[X9] Pod ${NS}/debugged: image "docker.io/library/busybox:1.36" is not allowed for project ${PROJECT}; allowed: images from registry.k8s.io/`,
    );
    const ok = await kubectl(
      'alice',
      ['-n', NS, 'debug', 'debugged', '--profile=baseline', '--image=registry.k8s.io/pause:3.10', '-c', 'fine'],
      { reject: false },
    );
    expect(ok.exitCode, ok.stderr).toBe(0);
    const stored = JSON.parse((await kubectl('admin', ['-n', NS, 'get', 'pod', 'debugged', '-o', 'json'])).stdout) as {
      spec: { ephemeralContainers?: Array<{ name: string }> };
    };
    expect(stored.spec.ephemeralContainers?.map((c) => c.name)).toEqual(['fine']);
  });
});

describe('allowed uses, admitted', () => {
  it("a pod of the allowed class and runtime on the project's nodes with its toleration (and the not-ready ones the apiserver adds)", async () => {
    await admitted(
      pod('batch', {
        priorityClassName: BATCH,
        runtimeClassName: GVISOR,
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: PROJECT, effect: 'NoSchedule' }],
      }),
    );
    const stored = JSON.parse((await kubectl('admin', ['-n', NS, 'get', 'pod', 'batch', '-o', 'json'])).stdout) as {
      spec: { tolerations: Array<{ key?: string }> };
    };
    expect(stored.spec.tolerations.map((t) => t.key)).toEqual(
      expect.arrayContaining(['dedicated', 'node.kubernetes.io/not-ready']),
    );
    await admitted(pod('plain'));
  });

  it('Services: ClusterIP, LoadBalancer without node ports (NodePort is not allowed), externalIPs inside the CIDR', async () => {
    await admitted(service('web', {}));
    await admitted(service('lb', { type: 'LoadBalancer', allocateLoadBalancerNodePorts: false }));
    await admitted(service('ext', { externalIPs: ['203.0.113.5'] }));
  });

  it("an Ingress under the project's suffix, a PVC of the allowed class", async () => {
    await admitted(ingress('www', `www.${HOSTS}`));
    await admitted(claim('data', 'standard'));
  });

  it('an update that adds nothing new passes; one that adds a toleration is refused', async () => {
    expect((await kubectl('alice', ['-n', NS, 'label', 'pod', 'plain', 'tier=web'], { reject: false })).exitCode).toBe(
      0,
    );
    const patched = await kubectl(
      'alice',
      [
        '-n',
        NS,
        'patch',
        'pod',
        'plain',
        '--type=json',
        '-p',
        JSON.stringify([
          {
            op: 'add',
            path: '/spec/tolerations/-',
            value: { key: 'dedicated', operator: 'Equal', value: 'shop', effect: 'NoSchedule' },
          },
        ]),
      ],
      { reject: false },
    );
    expect(patched.exitCode).not.toBe(0);
    expect(patched.stderr).toContain('[X8] ');
  });
});
