/**
 * The allow-list ValidatingAdmissionPolicies (tenantgate-allow-*, docs/adr/0095-allow-lists-in-the-api-server.md)
 * in the real API server, alone: installBase (the AllowList CRD, the policies as shipped in manifests/),
 * an AllowList applied by hand as admin, no webhook, no controller. Every policy is accepted and
 * type-checked without a warning; for every rule an attack is refused with its rule id, naming the object,
 * the project and what it allows, and an allowed use is admitted — on CREATE, and on UPDATE for what the
 * update adds (an update that adds nothing to an object the rules would refuse today is admitted). Every
 * request is alice's (a tenant) with --dry-run=server, unless it says otherwise.
 *
 * Once on the shared control plane (the newest minor), once on a control plane of the oldest supported
 * minor (1.35): the CEL libraries the policies use must be there. That one serves resource.k8s.io
 * v1beta1 and v1beta2 (off by default), whose claims reach the policies converted to v1, and turns on
 * DRADeviceTaints (alpha in 1.35; without it the API server drops a device request's tolerations).
 */
import { execa } from 'execa';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { AllowListSpec } from '../../src/validate/allow-list-params.js';
import { ALLOW_LIST_POLICIES } from '../../src/validate/policies/allow-lists-policy.js';
import { cluster, eventually, uniqueName } from '../support/cluster.js';
import { ControlPlane, type ClusterInfo } from '../support/devcluster/controlplane.js';
import { oldestSupported } from '../support/devcluster/kubernetes-versions.js';
import { installBase } from '../support/devcluster/tenantgate.js';
import { REPO_ROOT } from '../support/paths.js';

type Obj = Record<string, unknown>;

const P = uniqueName('alp').replace(/[^a-z0-9-]/g, '');
/** Labelled for the project, with its AllowList from the start. */
const NS = `${P}-app`;
/** Its objects are created before it is labelled (nothing judges them), then it gets the label and the AllowList. */
const NS_OLD = `${P}-old`;
/** Labelled for the project, never given an AllowList. */
const NS_BARE = `${P}-bare`;
const BATCH = uniqueName('alp-batch');
const OTHER_CLASS = uniqueName('alp-other');
const GVISOR = uniqueName('alp-gvisor');
const KATA = uniqueName('alp-kata');
const SUFFIX = `${P}.example.com`;
const POOL = { pool: P };
const PAUSE = 'registry.k8s.io/pause:3.10';
const HUB_IMAGE = 'docker.io/library/busybox';
const GATEWAY_GROUP = 'gateway.networking.k8s.io';
const X_GATEWAY_GROUP = 'gateway.networking.x-k8s.io';
const DEDICATED = { key: 'dedicated', operator: 'Equal', value: P, effect: 'NoSchedule' } as const;

const SPEC: AllowListSpec = {
  project: P,
  tenant: 'acme',
  priorityClasses: { any: false, names: [BATCH] },
  systemPriorityClasses: ['system-cluster-critical'],
  services: {
    types: ['LoadBalancer'],
    externalIPs: ['203.0.113.0/28'],
    loadBalancerSourceRanges: { any: false, cidrs: ['10.0.0.0/8'] },
  },
  hostnames: { suffixes: [SUFFIX], wildcards: false },
  ingressClasses: { any: false, names: ['nginx'] },
  gatewayClasses: { any: false, names: ['public'] },
  storageClasses: { any: false, names: ['standard'] },
  runtimeClasses: { any: false, names: [GVISOR] },
  deviceClasses: { any: false, names: ['gpu.example.com'] },
  nodeSelector: POOL,
  tolerations: [DEDICATED],
  registries: { any: false, prefixes: ['registry.k8s.io/', 'ghcr.io/acme', 'quay.io'] },
  persistentVolumes: { unowned: false },
};

const allowList = (namespace: string) => ({
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'AllowList',
  metadata: {
    name: 'tenantgate-allow',
    namespace,
    labels: { 'tenantgate.io/project': P, 'app.kubernetes.io/managed-by': 'tenantgate' },
  },
  spec: SPEC,
});

// --- objects -------------------------------------------------------------------------------------

const object = (apiVersion: string, kind: string, name: string, spec: Obj, metadata: Obj = {}): Obj => ({
  apiVersion,
  kind,
  metadata: { name, ...metadata },
  spec,
});
const pod = (name: string, spec: Obj = {}) =>
  object('v1', 'Pod', name, { nodeSelector: POOL, containers: [{ name: 'c', image: PAUSE }], ...spec });
const withImage = (name: string, image: string) => pod(name, { containers: [{ name: 'c', image }] });
const service = (name: string, spec: Obj) =>
  object('v1', 'Service', name, { selector: { app: name }, ports: [{ port: 80 }], ...spec });
/** A LoadBalancer every rule admits. */
const goodLb = (name: string, spec: Obj = {}) =>
  service(name, {
    type: 'LoadBalancer',
    allocateLoadBalancerNodePorts: false,
    loadBalancerSourceRanges: ['10.1.0.0/16'],
    ...spec,
  });
const STORAGE = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } };
const claim = (name: string, spec: Obj = {}) => object('v1', 'PersistentVolumeClaim', name, { ...STORAGE, ...spec });
const request = (deviceClassName: string, tolerations?: Obj[]) => ({
  deviceClassName,
  ...(tolerations ? { tolerations } : {}),
});
const claimSpec = (requests: Obj[]) => ({ devices: { requests } });
const resourceClaim = (name: string, requests: Obj[]) =>
  object('resource.k8s.io/v1', 'ResourceClaim', name, claimSpec(requests));
const claimTemplate = (name: string, requests: Obj[]) =>
  object('resource.k8s.io/v1', 'ResourceClaimTemplate', name, { spec: claimSpec(requests) });
const backend = { service: { name: 'web', port: { number: 80 } } };
const rule = (host?: string) => ({
  ...(host !== undefined ? { host } : {}),
  http: { paths: [{ path: '/', pathType: 'Prefix', backend }] },
});
const CLASS_ANNOTATION = 'kubernetes.io/ingress.class';
const ingress = (name: string, spec: Obj, annotations?: Record<string, string>) => {
  const defaults = { ingressClassName: 'nginx', rules: [rule(`www.${SUFFIX}`)] };
  return object('networking.k8s.io/v1', 'Ingress', name, { ...defaults, ...spec }, annotations ? { annotations } : {});
};
let listeners = 0;
const listener = (hostname: string | undefined, protocol = 'HTTP') => ({
  name: `l${++listeners}`,
  port: 80,
  protocol,
  ...(hostname !== undefined ? { hostname } : {}),
});
const gateway = (name: string, spec: Obj = {}) => {
  const defaults = { gatewayClassName: 'public', listeners: [listener(`www.${SUFFIX}`)] };
  return object(`${GATEWAY_GROUP}/v1`, 'Gateway', name, { ...defaults, ...spec });
};
const LISTENER_SET_KINDS = [
  { apiVersion: `${GATEWAY_GROUP}/v1`, kind: 'ListenerSet' },
  { apiVersion: `${X_GATEWAY_GROUP}/v1alpha1`, kind: 'XListenerSet' },
];
const listenerSet = (kind: { apiVersion: string; kind: string }, name: string, items: Obj[]) => {
  const parentRef = { name: 'gw', kind: 'Gateway', group: GATEWAY_GROUP };
  return object(kind.apiVersion, kind.kind, name, { parentRef, listeners: items });
};
const route = (kind: string, version: string, name: string, spec: Obj) =>
  object(`${GATEWAY_GROUP}/${version}`, kind, name, { parentRefs: [{ name: 'gw' }], ...spec });

/** The Gateway API kinds the policies judge, and the fixture file of each one's CRD. */
const GATEWAY_CRDS = [
  { name: `gateways.${GATEWAY_GROUP}`, file: 'gateways-crd.yaml' },
  ...['httproutes', 'grpcroutes', 'tlsroutes', 'tcproutes', 'udproutes'].map((r) => ({
    name: `${r}.${GATEWAY_GROUP}`,
    file: 'routes-crds.yaml',
  })),
  { name: `listenersets.${GATEWAY_GROUP}`, file: 'listenersets-crds.yaml' },
  { name: `xlistenersets.${X_GATEWAY_GROUP}`, file: 'listenersets-crds.yaml' },
];

// --- one control plane ---------------------------------------------------------------------------

interface Result {
  exitCode: number | undefined;
  stdout: string;
  stderr: string;
}

class Cluster {
  /** The fixture CRDs this file installed (removed at the end). */
  installedCrds: string[] = [];
  constructor(readonly info: ClusterInfo) {}

  async kubectl(user: string, args: string[], input?: string): Promise<Result> {
    const r = await execa(join(this.info.binDir, 'kubectl'), args, {
      env: { KUBECONFIG: this.info.kubeconfigs[user] ?? '' },
      reject: false,
      timeout: 60_000,
      encoding: 'utf8',
      ...(input !== undefined ? { input } : {}),
    });
    return { exitCode: r.exitCode, stdout: String(r.stdout), stderr: String(r.stderr) };
  }

  async ok(user: string, args: string[], input?: string): Promise<string> {
    const r = await this.kubectl(user, args, input);
    if (r.exitCode !== 0) throw new Error(`kubectl ${args.join(' ')} as ${user}: ${r.stderr}`);
    return r.stdout;
  }

  apply(...objects: Obj[]): Promise<string> {
    return this.ok('admin', ['apply', '-f', '-'], objects.map((o) => JSON.stringify(o)).join('\n'));
  }

  create(ns: string, o: Obj, user = 'alice'): Promise<Result> {
    return this.kubectl(user, ['-n', ns, 'create', '--dry-run=server', '-o', 'json', '-f', '-'], JSON.stringify(o));
  }

  /** A JSON patch of a stored object, not stored (--dry-run=server). */
  patch(ns: string, resource: string, name: string, ops: Obj[], user = 'alice'): Promise<Result> {
    const patch = ['--type=json', '-p', JSON.stringify(ops)];
    return this.kubectl(user, ['-n', ns, 'patch', resource, name, '--dry-run=server', ...patch]);
  }

  /** A label changed, nothing else (--dry-run=server). */
  label(ns: string, resource: string, name: string, user = 'alice'): Promise<Result> {
    const label = `touched=${Date.now()}`;
    return this.kubectl(user, ['-n', ns, 'label', '--overwrite', '--dry-run=server', resource, name, label]);
  }
}

const meta = (o: Obj) => o as { kind: string; metadata: { name: string } };

function expectRefused(r: Result, rule: string, subject: string, ...fragments: string[]): void {
  expect(r.exitCode, `refused with [${rule}]: ${r.stdout}`).not.toBe(0);
  expect(r.stderr).toContain(`[${rule}] ${subject}: `);
  expect(r.stderr).toContain(` is not allowed for project ${P}; allowed: `);
  for (const f of fragments) expect(r.stderr).toContain(f);
}

function expectAdmitted(r: Result): void {
  expect(r.exitCode, r.stderr).toBe(0);
}

/** alice owns the judged kinds of namespace `ns` (the policies judge her like everyone else). */
function judgedKindsRole(ns: string): Obj[] {
  const rules = [
    {
      apiGroups: [''],
      resources: ['pods', 'pods/ephemeralcontainers', 'services', 'persistentvolumeclaims'],
      verbs: ['*'],
    },
    { apiGroups: ['networking.k8s.io'], resources: ['ingresses'], verbs: ['*'] },
    { apiGroups: ['resource.k8s.io'], resources: ['resourceclaims', 'resourceclaimtemplates'], verbs: ['*'] },
    { apiGroups: [GATEWAY_GROUP, X_GATEWAY_GROUP], resources: ['*'], verbs: ['*'] },
  ];
  const rbac = 'rbac.authorization.k8s.io';
  return [
    { apiVersion: `${rbac}/v1`, kind: 'Role', metadata: { name: 'judged-kinds', namespace: ns }, rules },
    {
      apiVersion: `${rbac}/v1`,
      kind: 'RoleBinding',
      metadata: { name: 'judged-kinds', namespace: ns },
      roleRef: { apiGroup: rbac, kind: 'Role', name: 'judged-kinds' },
      subjects: [{ apiGroup: rbac, kind: 'User', name: 'alice' }],
    },
  ];
}

/** The fixture CRDs of the Gateway API kinds control plane `c` does not serve yet. */
async function installGatewayApi(c: Cluster): Promise<void> {
  for (const crd of GATEWAY_CRDS) {
    if ((await c.kubectl('admin', ['get', 'crd', crd.name])).exitCode === 0) continue;
    const file = await readFile(join(REPO_ROOT, 'test', 'fixtures', 'gateway-api', crd.file), 'utf8');
    const docs = parseAllDocuments(file).map((d) => d.toJS() as Obj);
    await c.ok('admin', ['create', '-f', '-'], JSON.stringify(docs.find((d) => meta(d).metadata.name === crd.name)));
    c.installedCrds.push(crd.name);
  }
  for (const crd of c.installedCrds) {
    await c.ok('admin', ['wait', '--for=condition=Established', '--timeout=60s', `crd/${crd}`]);
  }
}

/** Installs tenantgate's base (CRDs, the policies) and what the tests need on control plane `c`. */
async function setUp(c: Cluster): Promise<void> {
  await installBase(c.info);
  await installGatewayApi(c);
  for (const [name, value] of [
    [BATCH, 100],
    [OTHER_CLASS, 200],
  ] as const) {
    await c.apply({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name }, value });
  }
  for (const name of [GVISOR, KATA]) {
    await c.apply({ apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name }, handler: 'runc' });
  }
  for (const ns of [NS, NS_OLD, NS_BARE]) {
    const labels = ns === NS_OLD ? {} : { 'tenantgate.io/project': P };
    await c.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels } }, ...judgedKindsRole(ns));
    await eventually(async () => c.ok('admin', ['-n', ns, 'get', 'serviceaccount', 'default']), {
      what: `${ns}: default ServiceAccount`,
    });
  }
  await c.apply(allowList(NS));
  // The policies and their parameters reach the API server's admission through informers.
  const probe = async () => expectRefused(await c.create(NS, withImage('probe', HUB_IMAGE)), 'X9', `Pod ${NS}/probe`);
  await eventually(probe, { what: 'the allow-list policies judge pods of the project namespace', timeoutMs: 90_000 });
}

async function tearDown(c: Cluster): Promise<void> {
  // Pods with a nodeName wait for a kubelet that does not exist here.
  for (const ns of [NS, NS_OLD, NS_BARE]) {
    await c.kubectl('admin', ['-n', ns, 'delete', 'pods', '--all', '--grace-period=0', '--force']);
  }
  await c.kubectl('admin', ['delete', 'namespace', NS, NS_OLD, NS_BARE, '--ignore-not-found', '--timeout=90s']);
  await c.kubectl('admin', ['delete', 'priorityclass', BATCH, OTHER_CLASS, '--ignore-not-found']);
  await c.kubectl('admin', ['delete', 'runtimeclass', GVISOR, KATA, '--ignore-not-found']);
  for (const crd of c.installedCrds) await c.kubectl('admin', ['delete', 'crd', crd, '--wait=false']);
}

interface PolicyStatus {
  metadata: { name: string; generation: number };
  status?: { observedGeneration?: number; typeChecking?: { expressionWarnings?: unknown[] } };
}

// --- the tests, on one control plane -------------------------------------------------------------

function allowListPolicyTests(c: () => Cluster, options: { betaClaimVersions: boolean }): void {
  const create = (o: Obj, ns = NS, user = 'alice') => c().create(ns, o, user);
  const refused = async (o: Obj, rule: string, ...fragments: string[]) =>
    expectRefused(await create(o), rule, `${meta(o).kind} ${NS}/${meta(o).metadata.name}`, ...fragments);
  const admitted = async (o: Obj) => expectAdmitted(await create(o));

  it('every policy is accepted, type-checked without warnings, bound to the AllowList tenantgate-allow', async () => {
    await eventually(
      async () => {
        const text = await c().ok('admin', ['get', 'validatingadmissionpolicies', '-o', 'json']);
        const list = JSON.parse(text) as { items: PolicyStatus[] };
        for (const { name } of ALLOW_LIST_POLICIES) {
          const policy = list.items.find((i) => i.metadata.name === name);
          expect(policy, name).toBeDefined();
          expect(policy!.status?.observedGeneration, `${name} is type-checked`).toBe(policy!.metadata.generation);
          expect(policy!.status?.typeChecking?.expressionWarnings ?? [], name).toEqual([]);
        }
      },
      { what: 'every allow-list policy is type-checked', timeoutMs: 60_000 },
    );
    const bindings = JSON.parse(await c().ok('admin', ['get', 'validatingadmissionpolicybindings', '-o', 'json'])) as {
      items: Array<{ metadata: { name: string }; spec: Obj }>;
    };
    for (const { name } of ALLOW_LIST_POLICIES) {
      expect(bindings.items.find((b) => b.metadata.name === name)?.spec).toMatchObject({
        policyName: name,
        paramRef: { name: 'tenantgate-allow', parameterNotFoundAction: 'Deny' },
      });
    }
  });

  describe('CREATE: an attack on each rule is refused with its id, an allowed use admitted', () => {
    it('X1 priority class: system-* only when the Project names it; another class when listed', async () => {
      await refused(
        pod('crit', { priorityClassName: 'system-node-critical' }),
        'X1',
        'priorityClassName "system-node-critical"',
        `allowed: ${BATCH}, system-cluster-critical`,
      );
      await refused(pod('other', { priorityClassName: OTHER_CLASS }), 'X1', `priorityClassName "${OTHER_CLASS}"`);
      await admitted(pod('batch', { priorityClassName: BATCH }));
      await admitted(pod('cluster-critical', { priorityClassName: 'system-cluster-critical' }));
      await admitted(pod('none'));
    });

    it('X6 runtime class: listed, when set', async () => {
      await refused(pod('kata', { runtimeClassName: KATA }), 'X6', `runtimeClassName "${KATA}"`, `allowed: ${GVISOR}`);
      await admitted(pod('gvisor', { runtimeClassName: GVISOR }));
    });

    it('X8 node placement: the node selector with its values, no nodeName, allowed tolerations', async () => {
      const otherTaint = { ...DEDICATED, value: 'shop' };
      await refused(
        pod('no-selector', { nodeSelector: undefined }),
        'X8',
        'nodeSelector with no pool',
        `allowed: a nodeSelector with pool=${P}`,
      );
      await refused(pod('other-pool', { nodeSelector: { pool: 'shared' } }), 'X8', 'nodeSelector with pool=shared');
      await refused(pod('pinned', { nodeName: 'node-1' }), 'X8', 'nodeName "node-1"', 'allowed: no nodeName');
      await refused(
        pod('other-taint', { tolerations: [otherTaint] }),
        'X8',
        'toleration dedicated=shop:NoSchedule',
        `allowed: dedicated=${P}:NoSchedule (and node.kubernetes.io/* ones)`,
      );
      await refused(
        pod('every-taint', { tolerations: [{ operator: 'Exists' }] }),
        'X8',
        'toleration Exists (every taint)',
      );
      const unreachable = { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' };
      await admitted(pod('placed', { nodeSelector: { ...POOL, zone: 'a' }, tolerations: [DEDICATED, unreachable] }));
    });

    it('X9 images of containers and image volumes: a prefix with / is a start, another a repository', async () => {
      await refused(
        withImage('hub', HUB_IMAGE),
        'X9',
        `image "${HUB_IMAGE}"`,
        'allowed: images from registry.k8s.io/, ghcr.io/acme, quay.io',
      );
      await refused(
        pod('init', { initContainers: [{ name: 'i', image: 'registry.k8s.io.evil.io/pause' }] }),
        'X9',
        'image "registry.k8s.io.evil.io/pause"',
      );
      await refused(withImage('repo', 'ghcr.io/acmeevil/tool:1'), 'X9', 'image "ghcr.io/acmeevil/tool:1"');
      await refused(withImage('host', 'quay.io.evil.io/x:1'), 'X9', 'image "quay.io.evil.io/x:1"');
      await refused(withImage('host-port', 'quay.io:443/x:1'), 'X9', 'image "quay.io:443/x:1"');
      await refused(
        pod('volume', { volumes: [{ name: 'data', image: { reference: 'docker.io/evil/data:1' } }] }),
        'X9',
        'image "docker.io/evil/data:1"',
      );
      const digest = `ghcr.io/acme/tool@sha256:${'a'.repeat(64)}`;
      await admitted(
        pod('images', {
          initContainers: [{ name: 'i', image: 'ghcr.io/acme:1.0' }],
          containers: [
            { name: 'c', image: PAUSE },
            { name: 'd', image: digest },
            { name: 'e', image: 'quay.io/team/app:2' },
          ],
          volumes: [{ name: 'data', image: { reference: 'ghcr.io/acme/data:1' } }],
        }),
      );
    });

    it('X2 addresses: externalIPs and loadBalancerIP inside the allowed CIDRs', async () => {
      await refused(
        service('ext', { externalIPs: ['203.0.113.1', '198.51.100.7'] }),
        'X2',
        'externalIPs "198.51.100.7"',
        'allowed: addresses in 203.0.113.0/28',
      );
      await refused(goodLb('lb-ip', { loadBalancerIP: '198.51.100.8' }), 'X2', 'loadBalancerIP "198.51.100.8"');
      await admitted(service('ext-ok', { externalIPs: ['203.0.113.1'] }));
      await admitted(goodLb('lb-ip-ok', { loadBalancerIP: '203.0.113.9' }));
    });

    it('X3 type: listed; without NodePort a LoadBalancer allocates no node port and no port sets one', async () => {
      await refused(service('np', { type: 'NodePort' }), 'X3', 'type NodePort', 'allowed: ClusterIP, LoadBalancer');
      await refused(
        service('ext-name', { type: 'ExternalName', externalName: 'db.example.com', selector: undefined }),
        'X3',
        'type ExternalName',
      );
      await refused(
        goodLb('lb-alloc', { allocateLoadBalancerNodePorts: undefined }),
        'X3',
        'allocateLoadBalancerNodePorts true',
        'allowed: allocateLoadBalancerNodePorts: false',
      );
      await refused(goodLb('lb-port', { ports: [{ port: 80, nodePort: 30080 }] }), 'X3', 'nodePort 30080');
      await admitted(goodLb('lb-ok'));
    });

    it('X4 a LoadBalancer: at least one source range, each inside the allowed CIDRs', async () => {
      await refused(
        goodLb('open', { loadBalancerSourceRanges: undefined }),
        'X4',
        'a LoadBalancer without loadBalancerSourceRanges',
        'allowed: loadBalancerSourceRanges inside 10.0.0.0/8',
      );
      await refused(
        goodLb('wide', { loadBalancerSourceRanges: ['10.1.0.0/16', '0.0.0.0/0'] }),
        'X4',
        'loadBalancerSourceRanges "0.0.0.0/0"',
      );
      await admitted(goodLb('ranges', { loadBalancerSourceRanges: ['10.0.0.0/8', '10.2.3.0/24'] }));
    });

    it("X5 a claim's storage class, when set: listed", async () => {
      await refused(claim('fast', { storageClassName: 'fast' }), 'X5', 'storageClassName "fast"', 'allowed: standard');
      await admitted(claim('standard', { storageClassName: 'standard' }));
      await admitted(claim('default'));
    });

    it("X10 a claim's selector pins tenantgate.io/project to the project", async () => {
      const labels = (matchLabels: Obj) => ({ selector: { matchLabels } });
      const pinIn = (values: string[]) => ({
        selector: { matchExpressions: [{ key: 'tenantgate.io/project', operator: 'In', values }] },
      });
      await refused(
        claim('other', labels({ 'tenantgate.io/project': 'shop' })),
        'X10',
        `a selector without tenantgate.io/project=${P}`,
      );
      await refused(claim('unpinned', labels({ tier: 'fast' })), 'X10');
      await refused(claim('two', pinIn([P, 'shop'])), 'X10');
      await admitted(claim('labels', labels({ 'tenantgate.io/project': P, tier: 'fast' })));
      await admitted(claim('expression', pinIn([P])));
    });

    it("X7 a ResourceClaim's and a template's device classes (exactly, firstAvailable): listed", async () => {
      const exactly = (deviceClassName: string) => [{ name: 'r', exactly: request(deviceClassName) }];
      const firstAvailable = [
        { name: 'a', ...request('gpu.example.com') },
        { name: 'b', ...request('fpga.example.com') },
      ];
      await refused(
        resourceClaim('cpu', exactly('cpu.example.com')),
        'X7',
        'deviceClassName "cpu.example.com"',
        'allowed: gpu.example.com',
      );
      await refused(
        resourceClaim('first', [{ name: 'r', firstAvailable }]),
        'X7',
        'deviceClassName "fpga.example.com"',
      );
      await refused(claimTemplate('cpu', exactly('cpu.example.com')), 'X7', 'deviceClassName "cpu.example.com"');
      const both = [...exactly('gpu.example.com'), { name: 's', firstAvailable: firstAvailable.slice(0, 1) }];
      await admitted(resourceClaim('gpu', both));
      await admitted(claimTemplate('gpu', exactly('gpu.example.com')));
    });

    it("X8 a device request's tolerations: allowed ones, without the node.kubernetes.io/ exception", async () => {
      const tolerating = (tolerations: Obj[]) => [{ name: 'r', exactly: request('gpu.example.com', tolerations) }];
      const unreachable = { key: 'node.kubernetes.io/unreachable', operator: 'Exists' };
      await refused(
        resourceClaim('taint', tolerating([{ ...DEDICATED, value: 'shop' }])),
        'X8',
        'device toleration dedicated=shop:NoSchedule',
        `allowed: dedicated=${P}:NoSchedule`,
      );
      const subrequest = { name: 'a', ...request('gpu.example.com', [unreachable]) };
      await refused(
        resourceClaim('node', [{ name: 'r', firstAvailable: [subrequest] }]),
        'X8',
        'device toleration node.kubernetes.io/unreachable:Exists',
      );
      await refused(
        claimTemplate('taint', tolerating([{ operator: 'Exists' }])),
        'X8',
        'device toleration Exists (every taint)',
      );
      const ok = await create(resourceClaim('tolerating', tolerating([DEDICATED])));
      expectAdmitted(ok);
      const kept = JSON.parse(ok.stdout).spec.devices.requests[0].exactly.tolerations;
      expect(kept, 'the API server keeps device tolerations (DRADeviceTaints)').toHaveLength(1);
    });

    // Only on the oldest minor's plane, started with resource.k8s.io/v1beta1 and v1beta2 served.
    if (options.betaClaimVersions)
      it('X7, X8: v1beta1 and v1beta2 claims are judged converted to v1', async () => {
        // v1beta1 names the class in the request itself; v1beta2 has `exactly`, as v1.
        const v1beta1 = (deviceClassName: string) =>
          object('resource.k8s.io/v1beta1', 'ResourceClaim', 'beta1', claimSpec([{ name: 'r', deviceClassName }]));
        const otherTaint = [{ ...DEDICATED, value: 'shop' }];
        const exactly = [{ name: 'r', exactly: request('gpu.example.com', otherTaint) }];
        const v1beta2 = object('resource.k8s.io/v1beta2', 'ResourceClaim', 'beta2', claimSpec(exactly));
        await refused(v1beta1('cpu.example.com'), 'X7', 'deviceClassName "cpu.example.com"');
        await refused(v1beta2, 'X8', 'device toleration dedicated=shop:NoSchedule');
        await admitted(v1beta1('gpu.example.com'));
      });

    it('H2 the Ingress class: ingressClassName and the kubernetes.io/ingress.class annotation, one given', async () => {
      const traefik = { [CLASS_ANNOTATION]: 'traefik' };
      await refused(
        ingress('other', { ingressClassName: 'traefik' }),
        'H2',
        'ingressClassName "traefik"',
        'allowed: nginx',
      );
      await refused(
        ingress('annotated', { ingressClassName: undefined }, traefik),
        'H2',
        `annotation ${CLASS_ANNOTATION} "traefik"`,
      );
      await refused(ingress('both', { ingressClassName: 'traefik' }, traefik), 'H2', 'ingressClassName "traefik"');
      await refused(
        ingress('default', { ingressClassName: undefined }),
        'H2',
        `an Ingress without ingressClassName or ${CLASS_ANNOTATION}`,
      );
      await admitted(ingress('nginx', {}));
      await admitted(ingress('nginx-annotated', { ingressClassName: undefined }, { [CLASS_ANNOTATION]: 'nginx' }));
    });

    it("H1 an Ingress's hosts under the suffixes; no host or a defaultBackend is every hostname", async () => {
      await refused(
        ingress('evil', { rules: [rule('www.evil.com')] }),
        'H1',
        'host "www.evil.com" (it is outside the project\'s hostname suffixes)',
        `allowed: hostnames under ${SUFFIX}, no wildcard`,
      );
      await refused(
        ingress('hostless', { rules: [rule()] }),
        'H1',
        'a rule without host or a defaultBackend (no hostname matches every hostname)',
      );
      await refused(
        ingress('default-backend', { defaultBackend: backend }),
        'H1',
        'a rule without host or a defaultBackend',
      );
      await refused(
        ingress('tls', { tls: [{ hosts: [`www.${SUFFIX}`, 'pay.evil.com'] }] }),
        'H1',
        'host "pay.evil.com"',
      );
      await refused(ingress('wildcard', { rules: [rule(`*.${SUFFIX}`)] }), 'H1', 'wildcard hostnames are not allowed');
      await refused(ingress('lookalike', { rules: [rule(`evil${SUFFIX}`)] }), 'H1', `host "evil${SUFFIX}"`);
      const tls = [{ hosts: [`api.${SUFFIX}`] }];
      await admitted(ingress('hosts', { rules: [rule(SUFFIX), rule(`api.${SUFFIX}`)], tls }));
    });

    it("H4, H1, X2 a Gateway: its class, its listeners' hostnames but TCP and UDP ones', its addresses", async () => {
      await refused(
        gateway('private', { gatewayClassName: 'private' }),
        'H4',
        'gatewayClassName "private"',
        'allowed: public',
      );
      await refused(
        gateway('all-hosts', { listeners: [listener(undefined)] }),
        'H1',
        'a listener without hostname (no hostname matches every hostname)',
      );
      await refused(
        gateway('evil', { listeners: [listener('www.evil.com', 'HTTPS')] }),
        'H1',
        'listener hostname "www.evil.com"',
      );
      await refused(
        gateway('ip', { addresses: [{ value: '203.0.113.2' }, { type: 'IPAddress', value: '198.51.100.1' }] }),
        'X2',
        'address "198.51.100.1"',
        'allowed: addresses in 203.0.113.0/28',
      );
      await refused(
        gateway('named', { addresses: [{ type: 'NamedAddress', value: 'shared-lb' }] }),
        'X2',
        'address "shared-lb" of type NamedAddress',
      );
      await refused(
        gateway('lb-host', { addresses: [{ type: 'Hostname', value: 'lb.evil.com' }] }),
        'H1',
        'address "lb.evil.com"',
      );
      await admitted(
        gateway('ok', {
          listeners: [listener(`www.${SUFFIX}`), listener(undefined, 'TCP'), listener('ignored.evil.com', 'UDP')],
          addresses: [{ value: '203.0.113.2' }, { type: 'Hostname', value: `lb.${SUFFIX}` }],
        }),
      );
    });

    it("H1 a ListenerSet's and an XListenerSet's listeners' hostnames", async () => {
      for (const kind of LISTENER_SET_KINDS) {
        await refused(
          listenerSet(kind, 'all-hosts', [listener(undefined, 'HTTPS')]),
          'H1',
          'a listener without hostname',
        );
        await refused(listenerSet(kind, 'evil', [listener('a.evil.com')]), 'H1', 'listener hostname "a.evil.com"');
        await admitted(listenerSet(kind, 'ok', [listener(`a.${SUFFIX}`), listener(undefined, 'TCP')]));
      }
    });

    it("H1 an HTTPRoute's, GRPCRoute's, TLSRoute's hostnames: none is every hostname", async () => {
      for (const [kind, version] of [
        ['HTTPRoute', 'v1'],
        ['GRPCRoute', 'v1'],
        ['TLSRoute', 'v1alpha2'],
      ] as const) {
        await refused(
          route(kind, version, 'all-hosts', {}),
          'H1',
          'a route without hostnames (no hostname matches every hostname)',
        );
        await refused(
          route(kind, version, 'evil', { hostnames: [`a.${SUFFIX}`, 'A.EVIL.COM'] }),
          'H1',
          'hostname "a.evil.com"',
        );
        await admitted(route(kind, version, 'ok', { hostnames: [`a.${SUFFIX}`, SUFFIX] }));
      }
    });

    it('H1 a TCPRoute and a UDPRoute attach only to parents in their own namespace', async () => {
      for (const kind of ['TCPRoute', 'UDPRoute']) {
        await refused(
          route(kind, 'v1alpha2', 'away', { parentRefs: [{ name: 'gw' }, { name: 'shared', namespace: 'infra' }] }),
          'H1',
          'a parentRef to namespace "infra"',
          `allowed: parents in its own namespace ${NS}`,
        );
        const home = { parentRefs: [{ name: 'gw' }, { name: 'gw2', namespace: NS }] };
        await admitted(route(kind, 'v1alpha2', 'home', home));
      }
    });
  });

  describe('UPDATE: what an update adds is judged', () => {
    const stored = (o: Obj) => c().ok('alice', ['-n', NS, 'create', '-f', '-'], JSON.stringify(o));
    type Ops = Obj[];
    const patchRefused = async (resource: string, name: string, ops: Ops, rule: string, kind: string, ...s: string[]) =>
      expectRefused(await c().patch(NS, resource, name, ops), rule, `${kind} ${NS}/${name}`, ...s);
    const patchAdmitted = async (resource: string, name: string, ops: Ops) =>
      expectAdmitted(await c().patch(NS, resource, name, ops));
    const add = (path: string, value: unknown) => [{ op: 'add', path, value }];
    const replace = (path: string, value: unknown) => [{ op: 'replace', path, value }];
    const remove = (path: string) => [{ op: 'remove', path }];

    beforeAll(async () => {
      await stored(pod('u-pod', { tolerations: [DEDICATED] }));
      await stored(goodLb('u-lb', { externalIPs: ['203.0.113.3'] }));
      await stored(service('u-svc', {}));
      await stored(claim('u-claim'));
      await stored(ingress('u-ing', {}));
      await stored(gateway('u-gw'));
      await stored(listenerSet(LISTENER_SET_KINDS[0]!, 'u-ls', [listener(`a.${SUFFIX}`)]));
      await stored(route('HTTPRoute', 'v1', 'u-http', { hostnames: [`a.${SUFFIX}`] }));
      await stored(route('TCPRoute', 'v1alpha2', 'u-tcp', {}));
    });

    it('X8, X9 a pod: an added toleration, a new image, an ephemeral container', async () => {
      const notReady = { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' };
      await patchRefused(
        'pod',
        'u-pod',
        add('/spec/tolerations/-', { key: 'gpu', operator: 'Exists' }),
        'X8',
        'Pod',
        'toleration gpu:Exists',
      );
      await patchRefused(
        'pod',
        'u-pod',
        replace('/spec/containers/0/image', 'docker.io/library/nginx'),
        'X9',
        'Pod',
        'image "docker.io/library/nginx"',
      );
      await patchAdmitted('pod', 'u-pod', replace('/spec/containers/0/image', 'registry.k8s.io/pause:3.9'));
      await patchAdmitted('pod', 'u-pod', add('/spec/tolerations/-', notReady));
      const current = JSON.parse(await c().ok('alice', ['-n', NS, 'get', 'pod', 'u-pod', '-o', 'json'])) as Obj;
      const spec = current.spec as Obj;
      const withDebug = (image: string) => ({
        ...current,
        spec: { ...spec, ephemeralContainers: [{ name: 'debug', image }] },
      });
      const url = `/api/v1/namespaces/${NS}/pods/u-pod/ephemeralcontainers?dryRun=All`;
      const put = (image: string) =>
        c().kubectl('alice', ['replace', '--raw', url, '-f', '-'], JSON.stringify(withDebug(image)));
      expectRefused(await put(HUB_IMAGE), 'X9', `Pod ${NS}/u-pod`, `image "${HUB_IMAGE}"`);
      expectAdmitted(await put('registry.k8s.io/e2e-test-images/busybox:1.37'));
    });

    it('X2, X3, X4 a Service: an added address, another type, node ports, source ranges', async () => {
      const lb = (ops: Ops, rule: string, ...says: string[]) =>
        patchRefused('service', 'u-lb', ops, rule, 'Service', ...says);
      await lb(add('/spec/externalIPs/-', '198.51.100.9'), 'X2', 'externalIPs "198.51.100.9"');
      await lb(add('/spec/loadBalancerIP', '198.51.100.10'), 'X2', 'loadBalancerIP "198.51.100.10"');
      await lb(replace('/spec/allocateLoadBalancerNodePorts', true), 'X3', 'allocateLoadBalancerNodePorts true');
      await lb(add('/spec/ports/0/nodePort', 30081), 'X3', 'nodePort 30081');
      await lb(
        add('/spec/loadBalancerSourceRanges/-', '192.168.0.0/16'),
        'X4',
        'loadBalancerSourceRanges "192.168.0.0/16"',
      );
      await lb(remove('/spec/loadBalancerSourceRanges'), 'X4', 'a LoadBalancer without loadBalancerSourceRanges');
      await patchRefused('service', 'u-svc', add('/spec/type', 'NodePort'), 'X3', 'Service', 'type NodePort');
      await patchAdmitted('service', 'u-lb', [
        ...add('/spec/externalIPs/-', '203.0.113.4'),
        ...add('/spec/loadBalancerSourceRanges/-', '10.9.0.0/16'),
      ]);
    });

    it("X5 a claim's storage class set later (the default class assigned retroactively is judged too)", async () => {
      await patchRefused(
        'pvc',
        'u-claim',
        add('/spec/storageClassName', 'fast'),
        'X5',
        'PersistentVolumeClaim',
        'storageClassName "fast"',
      );
      await patchAdmitted('pvc', 'u-claim', add('/spec/storageClassName', 'standard'));
    });

    it('H2, H1 an Ingress: another class, an added class annotation, an added host', async () => {
      await patchRefused(
        'ingress',
        'u-ing',
        replace('/spec/ingressClassName', 'traefik'),
        'H2',
        'Ingress',
        'ingressClassName "traefik"',
      );
      await patchRefused(
        'ingress',
        'u-ing',
        add('/metadata/annotations', { [CLASS_ANNOTATION]: 'traefik' }),
        'H2',
        'Ingress',
        `annotation ${CLASS_ANNOTATION}`,
      );
      await patchRefused(
        'ingress',
        'u-ing',
        add('/spec/rules/-', rule('shop.evil.com')),
        'H1',
        'Ingress',
        'host "shop.evil.com"',
      );
      await patchAdmitted('ingress', 'u-ing', add('/spec/rules/-', rule(`shop.${SUFFIX}`)));
    });

    it('H4, H1, X2 a Gateway, H1 a ListenerSet and routes: what they add', async () => {
      const gw = `gateways.${GATEWAY_GROUP}`;
      await patchRefused(
        gw,
        'u-gw',
        replace('/spec/gatewayClassName', 'private'),
        'H4',
        'Gateway',
        'gatewayClassName "private"',
      );
      await patchRefused(
        gw,
        'u-gw',
        add('/spec/listeners/-', listener(undefined)),
        'H1',
        'Gateway',
        'a listener without hostname',
      );
      await patchRefused(
        gw,
        'u-gw',
        add('/spec/addresses', [{ value: '198.51.100.3' }]),
        'X2',
        'Gateway',
        'address "198.51.100.3"',
      );
      await patchAdmitted(gw, 'u-gw', add('/spec/listeners/-', listener(`b.${SUFFIX}`)));
      const ls = `listenersets.${GATEWAY_GROUP}`;
      await patchRefused(
        ls,
        'u-ls',
        add('/spec/listeners/-', listener('b.evil.com')),
        'H1',
        'ListenerSet',
        'listener hostname "b.evil.com"',
      );
      const http = `httproutes.${GATEWAY_GROUP}`;
      await patchRefused(
        http,
        'u-http',
        add('/spec/hostnames/-', 'b.evil.com'),
        'H1',
        'HTTPRoute',
        'hostname "b.evil.com"',
      );
      await patchRefused(http, 'u-http', remove('/spec/hostnames'), 'H1', 'HTTPRoute', 'a route without hostnames');
      const away = { name: 'gw', namespace: 'infra' };
      await patchRefused(
        `tcproutes.${GATEWAY_GROUP}`,
        'u-tcp',
        add('/spec/parentRefs/-', away),
        'H1',
        'TCPRoute',
        'a parentRef to namespace "infra"',
      );
    });
  });

  describe('UPDATE of objects the rules would refuse today: an update that adds nothing is admitted', () => {
    const anything = [{ operator: 'Exists' }];
    const cpuAnyTaint = [{ name: 'r', exactly: request('cpu.example.com', anything) }];
    const allHosts = [listener(undefined)];
    /** Every rule broken, created while the namespace was no project's (nothing judged it). */
    const OLD: Array<{ resource: string; object: Obj }> = [
      {
        resource: 'pod',
        object: pod('o-pod', {
          nodeSelector: undefined,
          schedulingGates: [{ name: 'example.com/hold' }],
          priorityClassName: OTHER_CLASS,
          runtimeClassName: KATA,
          tolerations: anything,
          containers: [{ name: 'c', image: HUB_IMAGE }],
          volumes: [{ name: 'data', image: { reference: 'docker.io/evil/data:1' } }],
        }),
      },
      { resource: 'pod', object: pod('o-pinned', { nodeName: 'node-1' }) },
      {
        resource: 'service',
        object: service('o-lb', {
          type: 'LoadBalancer',
          externalIPs: ['198.51.100.1'],
          loadBalancerIP: '198.51.100.2',
          ports: [{ port: 80, nodePort: 30090 }],
        }),
      },
      { resource: 'service', object: service('o-np', { type: 'NodePort' }) },
      {
        resource: 'pvc',
        object: claim('o-claim', { storageClassName: 'fast', selector: { matchLabels: { tier: 'fast' } } }),
      },
      { resource: 'resourceclaim', object: resourceClaim('o-rc', cpuAnyTaint) },
      { resource: 'resourceclaimtemplate', object: claimTemplate('o-rct', cpuAnyTaint) },
      {
        resource: 'ingress',
        object: ingress('o-ing', {
          ingressClassName: undefined,
          defaultBackend: backend,
          rules: [rule(), rule('www.evil.com')],
        }),
      },
      {
        resource: `gateways.${GATEWAY_GROUP}`,
        object: gateway('o-gw', {
          gatewayClassName: 'private',
          listeners: [listener(undefined)],
          addresses: [{ type: 'NamedAddress', value: 'x' }],
        }),
      },
      { resource: `listenersets.${GATEWAY_GROUP}`, object: listenerSet(LISTENER_SET_KINDS[0]!, 'o-ls', allHosts) },
      { resource: `xlistenersets.${X_GATEWAY_GROUP}`, object: listenerSet(LISTENER_SET_KINDS[1]!, 'o-xls', allHosts) },
      { resource: `grpcroutes.${GATEWAY_GROUP}`, object: route('GRPCRoute', 'v1', 'o-grpc', {}) },
      {
        resource: `udproutes.${GATEWAY_GROUP}`,
        object: route('UDPRoute', 'v1alpha2', 'o-udp', { parentRefs: [{ name: 'gw', namespace: 'infra' }] }),
      },
    ];

    beforeAll(async () => {
      for (const { object: o } of OLD) await c().ok('admin', ['-n', NS_OLD, 'create', '-f', '-'], JSON.stringify(o));
      await c().ok('admin', ['label', 'namespace', NS_OLD, `tenantgate.io/project=${P}`]);
      await c().apply(allowList(NS_OLD));
      const probe = async () => {
        const r = await c().create(NS_OLD, pod('probe', { priorityClassName: OTHER_CLASS }));
        expectRefused(r, 'X1', `Pod ${NS_OLD}/probe`);
      };
      await eventually(probe, { what: `the policies judge ${NS_OLD} once it is a project namespace` });
    });

    it('a label change on each is admitted: it adds no image, toleration, hostname, address or class', async () => {
      for (const { resource, object: o } of OLD) {
        expectAdmitted(await c().label(NS_OLD, resource, meta(o).metadata.name));
      }
    });

    it('what an update adds is still judged: a node selector (X8), an address (X2), a hostname (H1)', async () => {
      const patch = (resource: string, name: string, path: string, value: unknown) =>
        c().patch(NS_OLD, resource, name, [{ op: 'add', path, value }]);
      expectRefused(
        await patch('pod', 'o-pod', '/spec/nodeSelector', { zone: 'a' }),
        'X8',
        `Pod ${NS_OLD}/o-pod`,
        'nodeSelector with no pool',
      );
      expectRefused(
        await patch('service', 'o-lb', '/spec/externalIPs/-', '198.51.100.3'),
        'X2',
        `Service ${NS_OLD}/o-lb`,
        'externalIPs "198.51.100.3"',
      );
      expectRefused(
        await patch(`grpcroutes.${GATEWAY_GROUP}`, 'o-grpc', '/spec/hostnames', ['x.evil.com']),
        'H1',
        `GRPCRoute ${NS_OLD}/o-grpc`,
        'hostname "x.evil.com"',
      );
    });
  });

  describe('scope: who and where', () => {
    it('no subject is exempt: a cluster administrator is refused like a tenant', async () => {
      expectRefused(await create(withImage('admin-hub', HUB_IMAGE), NS, 'admin'), 'X9', `Pod ${NS}/admin-hub`);
    });

    it('a project namespace without its AllowList admits none of the judged objects (Deny if not found)', async () => {
      const r = await create(pod('bare'), NS_BARE);
      expect(r.exitCode).not.toBe(0);
      expect(r.stderr).toMatch(/tenantgate-allow-pods.*(not found|no params found)/i);
      expect((await create(service('bare', {}), NS_BARE)).exitCode).not.toBe(0);
    });

    it('a namespace of no project is not judged', async () => {
      const plain = `${P}-plain`;
      await c().ok('admin', ['create', 'namespace', plain]);
      try {
        await eventually(async () => c().ok('admin', ['-n', plain, 'get', 'serviceaccount', 'default']), {
          what: `${plain}: default ServiceAccount`,
        });
        const anything = pod('anything', { nodeSelector: undefined, containers: [{ name: 'c', image: HUB_IMAGE }] });
        expectAdmitted(await create(anything, plain, 'admin'));
      } finally {
        await c().kubectl('admin', ['delete', 'namespace', plain, '--wait=false']);
      }
    });
  });
}

describe('on the newest supported minor (the shared control plane)', () => {
  let c: Cluster;
  beforeAll(async () => {
    c = new Cluster(cluster());
    await setUp(c);
  }, 300_000);
  afterAll(async () => {
    if (c) await tearDown(c);
  }, 180_000);
  allowListPolicyTests(() => c, { betaClaimVersions: false });
});

describe('on the oldest supported minor (a control plane of its own)', () => {
  let cp: ControlPlane | undefined;
  let c: Cluster;
  beforeAll(async () => {
    const build = oldestSupported();
    cp = await ControlPlane.start({
      binDir: build.binDir,
      etcdBinDir: build.etcdBinDir,
      ...(process.env.TG_K8S_OLDEST_BIN ? {} : { expectedVersion: build.version }),
      apiserverArgs: [
        '--feature-gates=DRADeviceTaints=true',
        '--runtime-config=resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true',
      ],
    });
    c = new Cluster(cp.info);
    await setUp(c);
  }, 300_000);
  afterAll(async () => {
    await cp?.stop();
  }, 120_000);
  allowListPolicyTests(() => c, { betaClaimVersions: true });
});
