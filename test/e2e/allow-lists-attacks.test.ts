/**
 * The allow-list holes ADR 0095 closes, on the real control plane: each one refused with its rule id, whoever
 * creates the object — alice herself (group acme:payments-admins, no privilege), Kubernetes' workload
 * controllers under their own kube-system ServiceAccounts (Deployment, ReplicaSet, Job, CronJob, DaemonSet,
 * StatefulSet, ephemeral volumes, claims from a ResourceClaimTemplate), and Argo CD's application controller,
 * which tenantgate.yaml lists as privileged. Every judged kind is attacked on CREATE and on UPDATE, and an
 * update that adds nothing new is admitted, also on objects admitted before the Project's lists narrowed.
 *
 * No scheduler and no kubelet run: pods stay Pending. Attacks are sent with --dry-run=server (admission runs
 * as for a write; nothing is stored whatever the verdict). The DaemonSet's node is a Node object only.
 */
import { execa } from 'execa';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { DEFAULT_CONFIG, type TenantgateConfig } from '../../src/config/config.js';
import { startController, type RunningController } from '../../src/controller/controller.js';
import { cluster, eventually, kubectl, uniqueName, type KubectlResult } from '../support/cluster.js';
import {
  installBase,
  serviceAccountKubeConfig,
  serviceAccountKubeconfigFile,
  startLocalWebhook,
  type LocalWebhook,
} from '../support/devcluster/tenantgate.js';
import { removeProjects } from '../support/leftovers.js';
import { REPO_ROOT } from '../support/paths.js';

const PROJECT = uniqueName('holes');
const NS = `${PROJECT}-app`;
const HOSTS = `${PROJECT}.example.com`;
/** Another tenant's project (bob, tenant globex): its namespace holds a Gateway open to routes of every namespace. */
const RIVAL = uniqueName('rival');
const RIVAL_NS = `${RIVAL}-edge`;
const RIVAL_HOSTS = `${RIVAL}.example.com`;
// Cluster-wide objects of this run: a node for the DaemonSet, a node the rival team tainted, the rival's volume.
const PLAIN_NODE = uniqueName('holes-node');
const RIVAL_NODE = uniqueName('holes-rival-node');
const RIVAL_PV = uniqueName('holes-rival-pv');
const ARGO_NAMESPACE = 'argocd';
const ARGO_CONTROLLER = 'argocd-application-controller';
const ARGO_USER = `system:serviceaccount:${ARGO_NAMESPACE}:${ARGO_CONTROLLER}`;

const EVIL = 'docker.io/evil/x:1';
const LOOK_ALIKE = 'registry.example.com.evil.io/x:1';
const PAUSE = 'registry.k8s.io/pause:3.10';
const EVERY_TAINT = [{ operator: 'Exists' }];

/** tenantgate.yaml: Argo CD's application controller privileged, as a platform syncing Projects with it lists it. */
const CONFIG: TenantgateConfig = {
  ...DEFAULT_CONFIG,
  privileged: { users: [...DEFAULT_CONFIG.privileged.users, ARGO_USER], groups: DEFAULT_CONFIG.privileged.groups },
};

/** The project's lists: no node selector, no toleration, NodePort not among the Service types. */
const ALLOW = {
  services: { types: ['LoadBalancer'], externalIPs: ['203.0.113.0/28'] },
  hostnames: { suffixes: [HOSTS] },
  ingressClasses: ['public'],
  gatewayClasses: ['public'],
  storageClasses: ['standard'],
  deviceClasses: ['gpu.example.com'],
  registries: ['registry.k8s.io/', 'registry.example.com'],
};

const GATEWAY_API = 'gateway.networking.k8s.io';
const GATEWAY_API_X = 'gateway.networking.x-k8s.io';
const GATEWAY_API_RESOURCES = [
  'gateways',
  'httproutes',
  'grpcroutes',
  'tlsroutes',
  'tcproutes',
  'udproutes',
  'listenersets',
  'xlistenersets',
];
const GATEWAY_API_CRDS = [
  ...GATEWAY_API_RESOURCES.filter((r) => r !== 'xlistenersets').map((r) => `${r}.${GATEWAY_API}`),
  `xlistenersets.${GATEWAY_API_X}`,
];
const installedCrds: string[] = [];
/** What of Argo CD's namespace and ServiceAccount this file made (Argo CD's own e2e files apply both too). */
const createdArgo: string[][] = [];
let argoKubeconfig = '';

let hook: LocalWebhook;
let controller: RunningController;

type Json = Record<string, unknown>;
interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Json;
}
type Run = (args: string[], input?: string) => Promise<KubectlResult>;

const alice: Run = (args, input) =>
  kubectl('alice', args, { ...(input !== undefined ? { input } : {}), reject: false });
const asArgo: Run = async (args, input) => {
  const r = await execa(join(cluster().binDir, 'kubectl'), args, {
    env: { KUBECONFIG: argoKubeconfig },
    ...(input !== undefined ? { input } : {}),
    reject: false,
    timeout: 60_000,
    encoding: 'utf8',
  });
  return { stdout: String(r.stdout), stderr: String(r.stderr), exitCode: r.exitCode };
};
const stream = (objects: unknown[]): string => objects.map((o) => JSON.stringify(o)).join('\n');

// The objects, each as small as the apiserver accepts.
const pod = (name: string, spec: Json = {}): Manifest => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, labels: { app: name } },
  spec: { containers: [{ name: 'app', image: PAUSE }], ...spec },
});
const imageVolume = (reference: string): Json => ({ volumes: [{ name: 'v', image: { reference } }] });
const service = (name: string, spec: Json = {}): Manifest => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name },
  spec: { selector: { app: name }, ports: [{ port: 80 }], ...spec },
});
const loadBalancer = (name: string, spec: Json = {}): Manifest => service(name, { type: 'LoadBalancer', ...spec });
/** A claim pinned to the project's own volumes, so the binder never binds it to another one. */
const claim = (name: string, spec: Json = {}): Manifest => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name },
  spec: {
    storageClassName: 'standard',
    accessModes: ['ReadWriteOnce'],
    resources: { requests: { storage: '1Gi' } },
    selector: { matchLabels: { 'tenantgate.io/project': PROJECT } },
    ...spec,
  },
});
const ingressPath = { path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } };
const ingress = (name: string, host: string, className?: string, annotations?: Record<string, string>): Manifest => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name, ...(annotations ? { annotations } : {}) },
  spec: { ...(className ? { ingressClassName: className } : {}), rules: [{ host, http: { paths: [ingressPath] } }] },
});
const gateway = (name: string, spec: Json = {}): Manifest => ({
  apiVersion: `${GATEWAY_API}/v1`,
  kind: 'Gateway',
  metadata: { name },
  spec: {
    gatewayClassName: 'public',
    listeners: [{ name: 'http', port: 80, protocol: 'HTTP', hostname: `www.${HOSTS}` }],
    ...spec,
  },
});
const ROUTE_VERSIONS = {
  HTTPRoute: 'v1',
  GRPCRoute: 'v1',
  TLSRoute: 'v1alpha2',
  TCPRoute: 'v1alpha2',
  UDPRoute: 'v1alpha2',
} as const;
type RouteKind = keyof typeof ROUTE_VERSIONS;
const route = (kind: RouteKind, name: string, spec: Json = {}): Manifest => ({
  apiVersion: `${GATEWAY_API}/${ROUTE_VERSIONS[kind]}`,
  kind,
  metadata: { name },
  spec: { parentRefs: [{ name: 'gw' }], ...spec },
});
const toRival = { parentRefs: [{ name: 'edge', namespace: RIVAL_NS }] };
const LISTENER_SETS = { ListenerSet: `${GATEWAY_API}/v1`, XListenerSet: `${GATEWAY_API_X}/v1alpha1` } as const;
type ListenerSetKind = keyof typeof LISTENER_SETS;
const listener = (name: string, hostname?: string, protocol = 'HTTPS', port = 443): Json => ({
  name,
  port,
  protocol,
  ...(hostname ? { hostname } : {}),
});
const listenerSet = (kind: ListenerSetKind, name: string, listeners: Json[]): Manifest => ({
  apiVersion: LISTENER_SETS[kind],
  kind,
  metadata: { name },
  spec: { parentRef: { group: GATEWAY_API, kind: 'Gateway', name: 'gw' }, listeners },
});
const deviceRequest = (tolerations?: Json[]): Json => ({
  name: 'gpu',
  exactly: { deviceClassName: 'gpu.example.com', ...(tolerations ? { tolerations } : {}) },
});
const resourceClaim = (name: string, request: Json = deviceRequest()): Manifest => ({
  apiVersion: 'resource.k8s.io/v1',
  kind: 'ResourceClaim',
  metadata: { name },
  spec: { devices: { requests: [request] } },
});
const resourceClaimTemplate = (name: string, request: Json = deviceRequest()): Manifest => ({
  apiVersion: 'resource.k8s.io/v1',
  kind: 'ResourceClaimTemplate',
  metadata: { name },
  spec: { spec: { devices: { requests: [request] } } },
});

/** The head of the contract's message, `[X9] Pod ns/name: `, and what follows it on that line. */
interface Expected {
  rule: string;
  kind: string;
  name: string;
  what?: string;
}

/** The expected refusals not in `stderr`, each as `Kind name [RULE]`. */
function missing(stderr: string, expected: Expected[]): string[] {
  const lines = stderr.split('\n');
  return expected
    .filter((e) => {
      const line = lines.find((l) => l.includes(`[${e.rule}] ${e.kind} ${NS}/${e.name}: `));
      if (!line?.includes(`is not allowed for project ${PROJECT}; allowed: `)) return true;
      return e.what !== undefined && !line.includes(e.what);
    })
    .map((e) => `${e.kind} ${e.name} [${e.rule}]`);
}

interface Attack {
  object: Manifest;
  rule: string;
  what?: string;
}
const attack = (object: Manifest, rule: string, what?: string): Attack => ({
  object,
  rule,
  ...(what !== undefined ? { what } : {}),
});
const expected = (a: Attack): Expected => ({
  rule: a.rule,
  kind: a.object.kind,
  name: a.object.metadata.name,
  ...(a.what !== undefined ? { what: a.what } : {}),
});

/** Creates every attack in one server-side dry run; each must be refused with its rule. */
async function expectRefused(attacks: Attack[], run: Run = alice): Promise<void> {
  const result = await run(['-n', NS, 'create', '--dry-run=server', '-f', '-'], stream(attacks.map((a) => a.object)));
  const said = `not refused with their rule; kubectl said:\n${result.stdout}${result.stderr}`;
  expect(missing(result.stderr, attacks.map(expected)), said).toEqual([]);
}

async function expectAdmitted(objects: Manifest[], { dryRun = true } = {}): Promise<void> {
  const result = await alice(['-n', NS, 'create', ...(dryRun ? ['--dry-run=server'] : []), '-f', '-'], stream(objects));
  expect(result.exitCode, `${result.stdout}${result.stderr}`).toBe(0);
}

/** An update of a stored object: `resource` as kubectl names it, a merge (or JSON) patch, the rule it breaks. */
interface UpdateAttack {
  resource: string;
  kind: string;
  name: string;
  patch: unknown;
  json?: true;
  rule: string;
  what?: string;
}

/** Sends every update as a server-side dry run; each must be refused with its rule. */
async function expectUpdatesRefused(attacks: UpdateAttack[]): Promise<void> {
  const results = await Promise.all(
    attacks.map((a) => {
      const type = `--type=${a.json ? 'json' : 'merge'}`;
      return alice(['-n', NS, 'patch', a.resource, a.name, '--dry-run=server', type, '-p', JSON.stringify(a.patch)]);
    }),
  );
  const missed = attacks.flatMap((a, i) => {
    const out = results[i]!;
    const e: Expected = { rule: a.rule, kind: a.kind, name: a.name, ...(a.what !== undefined ? { what: a.what } : {}) };
    return missing(out.stderr, [e]).map((m) => `${m}: ${(out.stderr || out.stdout).trim()}`);
  });
  expect(missed, 'updates not refused with their rule').toEqual([]);
}

interface Event {
  involvedObject: { kind: string; name: string };
  reason: string;
  message: string;
}
async function events(): Promise<Event[]> {
  const listed = await kubectl('alice', ['-n', NS, 'get', 'events', '-o', 'json']);
  return (JSON.parse(listed.stdout) as { items: Event[] }).items;
}
async function eventsOf(kind: string, name: string): Promise<Event[]> {
  return (await events()).filter((e) => e.involvedObject.kind === kind && e.involvedObject.name === name);
}
/** The `app` labels of the namespace's pods. */
async function podApps(): Promise<string[]> {
  const listed = await kubectl('alice', ['-n', NS, 'get', 'pods', '-o', 'json']);
  const pods = JSON.parse(listed.stdout) as { items: Array<{ metadata: { labels?: Record<string, string> } }> };
  return pods.items.map((p) => p.metadata.labels?.app ?? '');
}

/** The Gateway API CRDs this file needs that the cluster lacks, from test/fixtures/gateway-api. */
async function installGatewayApiCrds(): Promise<void> {
  const listed = await kubectl('admin', ['get', 'crd', '-o', 'name']);
  const present = listed.stdout.split('\n').map((l) => l.replace(/^.*\//, '').trim());
  const absent = GATEWAY_API_CRDS.filter((name) => !present.includes(name));
  if (absent.length === 0) return;
  const dir = join(REPO_ROOT, 'test', 'fixtures', 'gateway-api');
  type Doc = { kind?: string; metadata?: { name?: string } } | null;
  const docs: Doc[] = [];
  for (const file of (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort()) {
    docs.push(...parseAllDocuments(await readFile(join(dir, file), 'utf8')).map((d) => d.toJS() as Doc));
  }
  const crds = absent.map((name) => {
    const crd = docs.find((d) => d?.kind === 'CustomResourceDefinition' && d.metadata?.name === name);
    if (!crd) throw new Error(`test/fixtures/gateway-api has no CustomResourceDefinition ${name}`);
    return crd;
  });
  await kubectl('admin', ['create', '-f', '-'], { input: stream(crds) });
  installedCrds.push(...absent);
  await kubectl('admin', ['wait', '--for=condition=Established', '--timeout=60s', ...absent.map((n) => `crd/${n}`)]);
  for (const name of absent) {
    await eventually(async () => kubectl('admin', ['get', name, '-A']), { what: `${name} is served` });
  }
}

function projectObject(name: string, tenant: string, group: string, allow: Json): Json {
  return {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name },
    spec: {
      tenant,
      owners: [{ kind: 'Group', name: group }],
      quota: { hard: { pods: '60' } },
      namespaceDefaults: { quota: { hard: { pods: '30' } } },
      allow,
    },
  };
}

/** The tenant creates its namespace (self-service); the controller gives it the owners' RoleBinding and quota. */
async function selfServiceNamespace(user: string, namespace: string): Promise<void> {
  await eventually(
    async () => {
      const created = await kubectl(user, ['create', 'namespace', namespace], { reject: false });
      if (created.exitCode !== 0) expect(created.stderr).toContain('AlreadyExists');
    },
    { what: `${user} creates ${namespace} (the webhook has seen the Project)` },
  );
  await eventually(async () => kubectl(user, ['-n', namespace, 'get', 'quota', 'tenantgate-quota']), {
    what: `${namespace}: RoleBinding and quota`,
  });
  await eventually(async () => kubectl('admin', ['-n', namespace, 'get', 'serviceaccount', 'default']), {
    what: `${namespace}: default ServiceAccount`,
  });
  await eventually(
    async () => {
      const quota = await kubectl('admin', ['-n', namespace, 'get', 'quota', 'tenantgate-quota', '-o', 'json']);
      expect((JSON.parse(quota.stdout) as { status?: { hard?: Json } }).status?.hard?.pods).toBe('30');
    },
    { what: `${namespace}: the quota controller has computed the quota` },
  );
}

/** Kubernetes' admin role does not cover Gateway API: the platform grants a namespace's owners its kinds. */
function gatewayApiRole(namespace: string, group: string): Json[] {
  const name = 'gateway-api';
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name, namespace },
      rules: [
        {
          apiGroups: [GATEWAY_API, GATEWAY_API_X],
          resources: GATEWAY_API_RESOURCES,
          verbs: ['get', 'list', 'create', 'update', 'patch'],
        },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group }],
    },
  ];
}

/** A pod template labelled `app`, mounting an image volume of `volumeImage`. */
function podTemplate(app: string, volumeImage: string, spec: Json = {}): Json {
  const containers = [{ name: 'app', image: PAUSE }];
  return { metadata: { labels: { app } }, spec: { containers, ...imageVolume(volumeImage), ...spec } };
}
/** The workloads of one template, named `<prefix>-deploy`, `-rs`, `-job`, `-ds`, `-sts` (`-cron`: cronJob). */
function workloads(prefix: string, volumeImage: string): Manifest[] {
  const t = (what: string, spec: Json = {}) => podTemplate(`${prefix}-${what}`, volumeImage, spec);
  const selector = (what: string) => ({ matchLabels: { app: `${prefix}-${what}` } });
  const workload = (apiVersion: string, kind: string, what: string, spec: Json): Manifest => ({
    apiVersion,
    kind,
    metadata: { name: `${prefix}-${what}` },
    spec,
  });
  const never = { restartPolicy: 'Never' };
  return [
    workload('apps/v1', 'Deployment', 'deploy', { replicas: 1, selector: selector('deploy'), template: t('deploy') }),
    workload('apps/v1', 'ReplicaSet', 'rs', { replicas: 1, selector: selector('rs'), template: t('rs') }),
    workload('batch/v1', 'Job', 'job', { backoffLimit: 0, template: t('job', never) }),
    workload('apps/v1', 'DaemonSet', 'ds', { selector: selector('ds'), template: t('ds') }),
    workload('apps/v1', 'StatefulSet', 'sts', { replicas: 1, selector: selector('sts'), template: t('sts') }),
  ];
}
/** Every minute; Forbid: its Job's pod never finishes here, so one Job at most. */
function cronJob(prefix: string, volumeImage: string): Manifest {
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { name: `${prefix}-cron` },
    spec: {
      schedule: '* * * * *',
      concurrencyPolicy: 'Forbid',
      jobTemplate: {
        spec: { backoffLimit: 0, template: podTemplate(`${prefix}-cron`, volumeImage, { restartPolicy: 'Never' }) },
      },
    },
  };
}

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  await installGatewayApiCrds();
  const rivalTaint = { key: 'dedicated', value: RIVAL, effect: 'NoSchedule' };
  const rivalVolume = {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: RIVAL_PV, labels: { 'tenantgate.io/project': RIVAL } },
    // A class of its own: no claim of any test matches it, so the binder leaves it Available.
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      storageClassName: RIVAL_PV,
      persistentVolumeReclaimPolicy: 'Retain',
      hostPath: { path: `/tmp/${RIVAL_PV}` },
    },
  };
  await kubectl('admin', ['create', '-f', '-'], {
    input: stream([
      { apiVersion: 'v1', kind: 'Node', metadata: { name: PLAIN_NODE } },
      { apiVersion: 'v1', kind: 'Node', metadata: { name: RIVAL_NODE }, spec: { taints: [rivalTaint] } },
      rivalVolume,
    ]),
  });
  // The API server taints a new node not-ready (NoSchedule), which DaemonSet pods do not tolerate; no kubelet
  // reports this one ready, so the taint goes by hand.
  const untainted = JSON.stringify({ spec: { taints: null } });
  await kubectl('admin', ['patch', 'node', PLAIN_NODE, '--type=merge', '-p', untainted]);
  const exists = async (what: string[]) => (await kubectl('admin', ['get', ...what], { reject: false })).exitCode === 0;
  if (!(await exists(['namespace', ARGO_NAMESPACE]))) createdArgo.push(['namespace', ARGO_NAMESPACE]);
  else if (!(await exists(['-n', ARGO_NAMESPACE, 'sa', ARGO_CONTROLLER]))) {
    createdArgo.push(['-n', ARGO_NAMESPACE, 'sa', ARGO_CONTROLLER]);
  }
  await eventually(
    async () =>
      kubectl('admin', ['apply', '-f', '-'], {
        input: stream([
          { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ARGO_NAMESPACE } },
          { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: ARGO_CONTROLLER, namespace: ARGO_NAMESPACE } },
        ]),
      }),
    { what: `the ServiceAccount ${ARGO_USER}` },
  );
  argoKubeconfig = await serviceAccountKubeconfigFile(info, ARGO_NAMESPACE, ARGO_CONTROLLER);

  hook = await startLocalWebhook(info, CONFIG);
  const kubeConfig = await serviceAccountKubeConfig(info, 'tenantgate-system', 'tenantgate-controller');
  controller = await startController({ kubeConfig, config: CONFIG, leaderElection: false, log: () => {} });
  // Loose at first: what every taint tolerates goes in now, and stays once the list narrows (below).
  const loose = { ...ALLOW, nodePlacement: { tolerations: EVERY_TAINT } };
  await kubectl('admin', ['apply', '-f', '-'], {
    input: stream([
      projectObject(PROJECT, 'acme', 'acme:payments-admins', loose),
      projectObject(RIVAL, 'globex', 'globex:admins', { hostnames: { suffixes: [RIVAL_HOSTS] } }),
    ]),
  });
  await Promise.all([selfServiceNamespace('alice', NS), selfServiceNamespace('bob', RIVAL_NS)]);
  const argoBinding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'argocd-application-controller', namespace: NS },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
    subjects: [{ kind: 'ServiceAccount', name: ARGO_CONTROLLER, namespace: ARGO_NAMESPACE }],
  };
  await kubectl('admin', ['apply', '-f', '-'], {
    input: stream([
      ...gatewayApiRole(NS, 'acme:payments-admins'),
      ...gatewayApiRole(RIVAL_NS, 'globex:admins'),
      argoBinding,
    ]),
  });
  // The namespace's parameters (the controller writes them): until then the API server admits none of these.
  await eventually(async () => expectAdmitted([pod('probe')]), { what: `${NS}: a plain pod is admitted` });
  const fromAll = { namespaces: { from: 'All' } };
  const edge = gateway('edge', {
    gatewayClassName: 'shared',
    listeners: [
      { name: 'tcp', port: 5432, protocol: 'TCP', hostname: `tcp.${RIVAL_HOSTS}`, allowedRoutes: fromAll },
      { name: 'udp', port: 5353, protocol: 'UDP', hostname: `udp.${RIVAL_HOSTS}`, allowedRoutes: fromAll },
    ],
  });
  await eventually(async () => kubectl('bob', ['-n', RIVAL_NS, 'create', '-f', '-'], { input: JSON.stringify(edge) }), {
    what: `bob's Gateway ${RIVAL_NS}/edge, open to routes of every namespace`,
  });
  await expectAdmitted(
    [
      pod('p-loose', { tolerations: EVERY_TAINT }),
      resourceClaim('rc-loose', deviceRequest(EVERY_TAINT)),
      resourceClaimTemplate('rct-loose', deviceRequest(EVERY_TAINT)),
    ],
    { dryRun: false },
  );
  // Narrowed: the project's pods (and claims) may tolerate nothing.
  const narrowed = [{ op: 'remove', path: '/spec/allow/nodePlacement' }];
  await kubectl('admin', ['patch', 'project', PROJECT, '--type=json', '-p', JSON.stringify(narrowed)]);
  await eventually(async () => expectRefused([attack(pod('probe', { tolerations: EVERY_TAINT }), 'X8')]), {
    what: `${PROJECT}'s narrowed tolerations are in force`,
  });
  // The CronJobs first: their controller makes a Job at the next full minute.
  await expectAdmitted([cronJob('bad', EVIL), cronJob('good', PAUSE)], { dryRun: false });
}, 180_000);

afterAll(async () => {
  await removeProjects([PROJECT, RIVAL]);
  await controller?.stop();
  await hook?.stop();
  const remove = (what: string[]) => kubectl('admin', ['delete', ...what, '--ignore-not-found'], { reject: false });
  await remove(['node', PLAIN_NODE, RIVAL_NODE]);
  await remove(['persistentvolume', RIVAL_PV, '--wait=false']);
  for (const what of createdArgo) await remove(what);
  // Gone before the next file looks for them (a terminating CRD is found, but serves no create).
  if (installedCrds.length) await remove(['crd', ...installedCrds, '--timeout=60s']);
}, 120_000);

describe('allowed uses: admitted, and stored as sent', () => {
  it('one object of every judged kind, each within the lists (the later updates start from these)', async () => {
    await expectAdmitted(
      [
        pod('p-good', imageVolume(PAUSE)),
        service('svc-good'),
        loadBalancer('lb-good', { allocateLoadBalancerNodePorts: false, loadBalancerIP: '203.0.113.7' }),
        claim('pvc-good'),
        ingress('ing-good', `www.${HOSTS}`, 'public'),
        gateway('gw', { addresses: [{ value: '203.0.113.9' }] }),
        route('HTTPRoute', 'http-good', { hostnames: [`www.${HOSTS}`] }),
        route('GRPCRoute', 'grpc-good', { hostnames: [`grpc.${HOSTS}`] }),
        route('TLSRoute', 'tls-good', { hostnames: [`tls.${HOSTS}`] }),
        route('TCPRoute', 'tcp-good'),
        route('UDPRoute', 'udp-good', { parentRefs: [{ name: 'gw', namespace: NS }] }),
        // A TCP listener without hostname: Gateway API ignores the hostname of TCP and UDP listeners.
        listenerSet('ListenerSet', 'ls-good', [listener('https', `api.${HOSTS}`), listener('db', '', 'TCP', 5432)]),
        listenerSet('XListenerSet', 'xls-good', [listener('https', `x.${HOSTS}`)]),
        resourceClaim('rc-good'),
        resourceClaimTemplate('rct-good'),
      ],
      { dryRun: false },
    );
    const pGood = await kubectl('alice', ['-n', NS, 'get', 'pod', 'p-good', '-o', 'json']);
    const volumes = (JSON.parse(pGood.stdout) as { spec: Json }).spec.volumes;
    const imageOne = expect.objectContaining({ name: 'v', image: expect.objectContaining({ reference: PAUSE }) });
    expect(volumes, 'the API server keeps image volumes').toEqual(expect.arrayContaining([imageOne]));
    const rcLoose = await kubectl('alice', ['-n', NS, 'get', 'resourceclaim', 'rc-loose', '-o', 'json']);
    type Requests = Array<{ exactly?: { tolerations?: unknown } }>;
    const { requests } = (JSON.parse(rcLoose.stdout) as { spec: { devices: { requests: Requests } } }).spec.devices;
    const tolerations = requests[0]?.exactly?.tolerations;
    const everyTaint = [expect.objectContaining({ operator: 'Exists' })];
    expect(tolerations, 'the API server keeps device tolerations').toEqual(everyTaint);
    await expectAdmitted([
      pod('under-registry', { containers: [{ name: 'app', image: 'registry.example.com/team/app:1' }] }),
      loadBalancer('lb-no-node-ports', { allocateLoadBalancerNodePorts: false }),
      route('TCPRoute', 'tcp-own-ns', { parentRefs: [{ name: 'gw', namespace: NS }] }),
    ]);
  });
});

describe('the holes, each refused with its rule', () => {
  it('X9: a pod mounting an image volume from a registry the project does not allow', async () => {
    await expectRefused([
      attack(pod('vol-evil', imageVolume(EVIL)), 'X9', `"${EVIL}"`),
      attack(pod('vol-look-alike', imageVolume(LOOK_ALIKE)), 'X9', `"${LOOK_ALIKE}"`),
    ]);
  });

  it('X9: an image of a registry that only starts like an allowed one (registry.example.com.evil.io)', async () => {
    await expectRefused([
      attack(pod('look-alike', { containers: [{ name: 'app', image: LOOK_ALIKE }] }), 'X9', `"${LOOK_ALIKE}"`),
      attack(pod('look-alike-init', { initContainers: [{ name: 'i', image: LOOK_ALIKE }] }), 'X9', `"${LOOK_ALIKE}"`),
    ]);
  });

  it('X8: nodeName on a node the rival team tainted NoSchedule, in a project without a node selector', async () => {
    await expectRefused([attack(pod('pinned', { nodeName: RIVAL_NODE }), 'X8', `nodeName "${RIVAL_NODE}"`)]);
  });

  it('X3: a LoadBalancer opening node ports where NodePort is not allowed; one without is admitted', async () => {
    await expectRefused([
      attack(loadBalancer('lb-defaulted'), 'X3'),
      attack(loadBalancer('lb-node-ports', { allocateLoadBalancerNodePorts: true }), 'X3'),
      attack(
        loadBalancer('lb-pinned-port', {
          allocateLoadBalancerNodePorts: false,
          ports: [{ port: 80, nodePort: 30080 }],
        }),
        'X3',
      ),
    ]);
    await expectAdmitted([loadBalancer('lb-closed', { allocateLoadBalancerNodePorts: false })]);
  });

  it('X2: a Service loadBalancerIP and Gateway addresses outside the CIDRs', async () => {
    await expectRefused([
      attack(loadBalancer('lb-ip', { allocateLoadBalancerNodePorts: false, loadBalancerIP: '8.8.8.8' }), 'X2'),
      attack(gateway('gw-default-type', { addresses: [{ value: '8.8.4.4' }] }), 'X2', '8.8.4.4'),
      attack(gateway('gw-ip', { addresses: [{ type: 'IPAddress', value: '198.51.100.1' }] }), 'X2', '198.51.100.1'),
      attack(gateway('gw-other-type', { addresses: [{ type: 'example.com/pool', value: 'public' }] }), 'X2'),
      attack(gateway('gw-hostname', { addresses: [{ type: 'Hostname', value: 'lb.shop.example.com' }] }), 'H1'),
    ]);
  });

  it("H1: TCP and UDP routes attaching to the rival's Gateway; ListenerSet listeners off the suffixes", async () => {
    await expectRefused([
      attack(route('TCPRoute', 'tcp-steal', toRival), 'H1', RIVAL_NS),
      attack(route('UDPRoute', 'udp-steal', toRival), 'H1', RIVAL_NS),
      attack(listenerSet('ListenerSet', 'ls-steal', [listener('https', 'shop.example.com')]), 'H1', 'shop.example.com'),
      attack(listenerSet('ListenerSet', 'ls-every-host', [listener('http', undefined, 'HTTP', 80)]), 'H1'),
      attack(listenerSet('XListenerSet', 'xls-steal', [listener('https', `not${HOSTS}`)]), 'H1', `not${HOSTS}`),
    ]);
  });

  it('H2: an Ingress update adding the kubernetes.io/ingress.class annotation of a class not allowed', async () => {
    await expectUpdatesRefused([
      {
        resource: 'ingress',
        kind: 'Ingress',
        name: 'ing-good',
        patch: { metadata: { annotations: { 'kubernetes.io/ingress.class': 'internal' } } },
        rule: 'H2',
        what: 'internal',
      },
    ]);
    const same = await alice([
      '-n',
      NS,
      'annotate',
      'ingress',
      'ing-good',
      '--dry-run=server',
      'kubernetes.io/ingress.class=public',
    ]);
    expect(same.exitCode, same.stderr).toBe(0);
  });

  it("X8: claims, templates, and the resourceclaim controller's claims, tolerating every device taint", async () => {
    await expectRefused([
      attack(resourceClaim('rc-tolerant', deviceRequest(EVERY_TAINT)), 'X8'),
      attack(
        resourceClaim('rc-tolerant-alt', {
          name: 'gpu',
          firstAvailable: [{ name: 'any', deviceClassName: 'gpu.example.com', tolerations: EVERY_TAINT }],
        }),
        'X8',
      ),
      attack(resourceClaimTemplate('rct-tolerant', deviceRequest(EVERY_TAINT)), 'X8'),
    ]);
    // rct-loose was admitted before the list narrowed: the claim its pod needs is made now, by the controller.
    const fromTemplate = [{ name: 'gpu', resourceClaimTemplateName: 'rct-loose' }];
    await expectAdmitted([pod('claims', { resourceClaims: fromTemplate })], { dryRun: false });
    const refusal = new RegExp(`FailedResourceClaimCreation: .*\\[X8\\] ResourceClaim ${NS}/claims-gpu-`);
    await eventually(
      async () => {
        const seen = await eventsOf('Pod', 'claims');
        expect(seen.map((e) => `${e.reason}: ${e.message}`).join('\n')).toMatch(refusal);
      },
      { what: "the resourceclaim controller's refused claim, in the pod's events" },
    );
    const claims = (await kubectl('alice', ['-n', NS, 'get', 'resourceclaims', '-o', 'name'])).stdout;
    expect(claims, 'no claim made from the template').not.toContain('claims-gpu-');
  });

  it("Argo CD's application controller, privileged in tenantgate.yaml: its pod is judged too", async () => {
    const evil = pod('argo-evil', { containers: [{ name: 'app', image: EVIL }] });
    await expectRefused([attack(evil, 'X9', `"${EVIL}"`)], asArgo);
  });
});

describe('every judged kind, on CREATE and on UPDATE', () => {
  it('CREATE: an attack of each kind', async () => {
    const internalClass = { 'kubernetes.io/ingress.class': 'internal' };
    await expectRefused([
      attack(pod('c-pod', imageVolume(EVIL)), 'X9'),
      attack(loadBalancer('c-svc'), 'X3'),
      attack(claim('c-pvc', { storageClassName: 'fast-ssd' }), 'X5', 'fast-ssd'),
      attack(claim('c-pvc-selector', { selector: { matchLabels: { 'tenantgate.io/project': RIVAL } } }), 'X10'),
      attack(ingress('c-ing', `www.${HOSTS}`, undefined, internalClass), 'H2', 'internal'),
      attack(gateway('c-gw', { addresses: [{ value: '8.8.8.8' }] }), 'X2', '8.8.8.8'),
      attack(route('HTTPRoute', 'c-http'), 'H1'),
      attack(route('GRPCRoute', 'c-grpc', { hostnames: ['shop.example.com'] }), 'H1', 'shop.example.com'),
      attack(route('TLSRoute', 'c-tls', { hostnames: ['*.example.com'] }), 'H1', '*.example.com'),
      attack(route('TCPRoute', 'c-tcp', toRival), 'H1'),
      attack(route('UDPRoute', 'c-udp', toRival), 'H1'),
      attack(listenerSet('ListenerSet', 'c-ls', [listener('https', 'shop.example.com')]), 'H1'),
      attack(listenerSet('XListenerSet', 'c-xls', [listener('http', '', 'HTTP', 80)]), 'H1'),
      attack(resourceClaim('c-rc', deviceRequest(EVERY_TAINT)), 'X8'),
      attack(resourceClaimTemplate('c-rct', deviceRequest(EVERY_TAINT)), 'X8'),
    ]);
  });

  it('UPDATE: an attack on a stored object of each kind whose spec may change', async () => {
    const rivalToleration = { key: 'dedicated', operator: 'Equal', value: RIVAL, effect: 'NoSchedule' };
    const replaceImage = { op: 'replace', path: '/spec/containers/0/image', value: LOOK_ALIKE };
    const addToleration = { op: 'add', path: '/spec/tolerations/-', value: rivalToleration };
    const update = (resource: string, kind: string, name: string, patch: unknown, rule: string, what?: string) => ({
      resource,
      kind,
      name,
      patch,
      rule,
      ...(what !== undefined ? { what } : {}),
    });
    const gatewayApi = (plural: string, group = GATEWAY_API) => `${plural}.${group}`;
    await expectUpdatesRefused([
      { ...update('pod', 'Pod', 'p-good', [replaceImage], 'X9', `"${LOOK_ALIKE}"`), json: true },
      { ...update('pod', 'Pod', 'p-good', [addToleration], 'X8'), json: true },
      update('service', 'Service', 'svc-good', { spec: { type: 'LoadBalancer' } }, 'X3'),
      update('service', 'Service', 'lb-good', { spec: { loadBalancerIP: '8.8.8.8' } }, 'X2', '8.8.8.8'),
      update('pvc', 'PersistentVolumeClaim', 'pvc-good', { spec: { volumeName: RIVAL_PV } }, 'X10', RIVAL_PV),
      update('ingress', 'Ingress', 'ing-good', { spec: { tls: [{ hosts: ['shop.example.com'] }] } }, 'H1'),
      update(
        gatewayApi('gateways'),
        'Gateway',
        'gw',
        {
          spec: { addresses: [{ value: '203.0.113.9' }, { type: 'IPAddress', value: '8.8.8.8' }] },
        },
        'X2',
        '8.8.8.8',
      ),
      update(
        gatewayApi('httproutes'),
        'HTTPRoute',
        'http-good',
        {
          spec: { hostnames: [`www.${HOSTS}`, 'shop.example.com'] },
        },
        'H1',
        'shop.example.com',
      ),
      update(gatewayApi('grpcroutes'), 'GRPCRoute', 'grpc-good', { spec: { hostnames: null } }, 'H1'),
      update(gatewayApi('tlsroutes'), 'TLSRoute', 'tls-good', { spec: { hostnames: [`*.${HOSTS}`] } }, 'H1'),
      update(
        gatewayApi('tcproutes'),
        'TCPRoute',
        'tcp-good',
        {
          spec: { parentRefs: [{ name: 'gw' }, ...toRival.parentRefs] },
        },
        'H1',
        RIVAL_NS,
      ),
      update(gatewayApi('udproutes'), 'UDPRoute', 'udp-good', { spec: toRival }, 'H1', RIVAL_NS),
      update(
        gatewayApi('listenersets'),
        'ListenerSet',
        'ls-good',
        {
          spec: { listeners: [listener('https', `api.${HOSTS}`), listener('open', '', 'HTTP', 8080)] },
        },
        'H1',
      ),
      update(
        gatewayApi('xlistenersets', GATEWAY_API_X),
        'XListenerSet',
        'xls-good',
        {
          spec: { listeners: [listener('https', 'shop.example.com')] },
        },
        'H1',
        'shop.example.com',
      ),
    ]);
  });

  it('pods/ephemeralcontainers: kubectl debug from a look-alike registry refused, a good one admitted', async () => {
    const debug = (image: string, container: string) =>
      alice(['-n', NS, 'debug', 'p-good', '--profile=baseline', `--image=${image}`, '-c', container]);
    const evil = await debug(LOOK_ALIKE, 'evil');
    const expectedRefusal = { rule: 'X9', kind: 'Pod', name: 'p-good', what: `"${LOOK_ALIKE}"` };
    expect(missing(evil.stderr, [expectedRefusal]), evil.stderr).toEqual([]);
    const ok = await debug('registry.example.com/tools/debug:1', 'fine');
    expect(ok.exitCode, ok.stderr).toBe(0);
  });

  it('ResourceClaim, ResourceClaimTemplate: the spec is immutable, the API server refuses a change', async () => {
    const changed = { spec: { devices: { requests: [deviceRequest(EVERY_TAINT)] } } };
    const patch = (resource: string, body: unknown) =>
      alice(['-n', NS, 'patch', resource, '--dry-run=server', '--type=merge', '-p', JSON.stringify(body)]);
    const results = [
      await patch('resourceclaim/rc-good', changed),
      await patch('resourceclaimtemplate/rct-good', { spec: changed }),
    ];
    for (const result of results) {
      expect(result.exitCode, result.stdout).not.toBe(0);
      expect(result.stderr).toContain('immutable');
    }
  });

  it('an update adding nothing new is admitted: a label on each kind, also where narrowed lists refuse', async () => {
    const objects = [
      'pod/p-good',
      'pod/p-loose',
      'service/svc-good',
      'service/lb-good',
      'persistentvolumeclaim/pvc-good',
      'ingress/ing-good',
      `gateways.${GATEWAY_API}/gw`,
      `httproutes.${GATEWAY_API}/http-good`,
      `grpcroutes.${GATEWAY_API}/grpc-good`,
      `tlsroutes.${GATEWAY_API}/tls-good`,
      `tcproutes.${GATEWAY_API}/tcp-good`,
      `udproutes.${GATEWAY_API}/udp-good`,
      `listenersets.${GATEWAY_API}/ls-good`,
      `xlistenersets.${GATEWAY_API_X}/xls-good`,
      'resourceclaim/rc-good',
      'resourceclaim/rc-loose',
      'resourceclaimtemplate/rct-good',
      'resourceclaimtemplate/rct-loose',
    ];
    const labelled = await alice(['-n', NS, 'label', ...objects, 'touched=yes']);
    expect(labelled.exitCode, `${labelled.stdout}${labelled.stderr}`).toBe(0);
    expect(labelled.stdout.split('\n').filter((l) => l.endsWith(' labeled'))).toHaveLength(objects.length);
  });
});

describe('judged whoever creates the pod: the workload controllers under their own identities', () => {
  /** The owner whose events carry a refused pod of `<prefix>` (a ReplicaSet or Job named after it, or itself). */
  const owners = [
    { kind: 'ReplicaSet', prefix: 'bad-deploy', generated: true },
    { kind: 'ReplicaSet', prefix: 'bad-rs', generated: false },
    { kind: 'Job', prefix: 'bad-job', generated: false },
    { kind: 'Job', prefix: 'bad-cron', generated: true },
    { kind: 'DaemonSet', prefix: 'bad-ds', generated: false },
    { kind: 'StatefulSet', prefix: 'bad-sts', generated: false },
  ];
  const goodApps = ['deploy', 'rs', 'job', 'cron', 'ds', 'sts'].map((w) => `good-${w}`);

  // Deployment, ReplicaSet, Job, CronJob, DaemonSet, StatefulSet.
  it(
    "every workload kind: a template mounting an image from docker.io makes no pod, [X9] in the owner's events; " +
      'allowed templates get their pods',
    async () => {
      await expectAdmitted([...workloads('bad', EVIL), ...workloads('good', PAUSE)], { dryRun: false });
      const ownedBy = (e: Event, o: (typeof owners)[number]) =>
        e.involvedObject.kind === o.kind &&
        (o.generated ? e.involvedObject.name.startsWith(`${o.prefix}-`) : e.involvedObject.name === o.prefix);
      await eventually(
        async () => {
          const seen = await events();
          const apps = await podApps();
          const unrefused = owners.filter(
            (o) =>
              !seen.some(
                (e) => ownedBy(e, o) && e.reason === 'FailedCreate' && e.message.includes(`[X9] Pod ${NS}/${o.prefix}`),
              ),
          );
          const podless = goodApps.filter((app) => !apps.includes(app));
          const stored = apps.filter((app) => app.startsWith('bad-'));
          if (unrefused.length || podless.length) {
            const list = (xs: string[]) => xs.join(', ') || 'none';
            throw new Error(
              `no [X9] FailedCreate for: ${list(unrefused.map((o) => `${o.kind} of ${o.prefix}`))}; ` +
                `no pod for: ${list(podless)}; pods of bad templates stored: ${list(stored)}`,
            );
          }
        },
        { timeoutMs: 130_000, intervalMs: 2_000, what: "bad templates refused in the owners' events, good ones run" },
      );
      expect(
        (await podApps()).filter((app) => app.startsWith('bad-')),
        'no pod of a bad template is stored',
      ).toEqual([]);
    },
    180_000,
  );

  it("the ephemeral-volume controller's claim of a StorageClass not allowed: [X5] in the pod's events", async () => {
    const claimSpec = { ...claim('unused').spec, storageClassName: 'fast-ssd', selector: undefined };
    const volume = { name: 'data', ephemeral: { volumeClaimTemplate: { spec: claimSpec } } };
    await expectAdmitted([pod('scratch', { volumes: [volume] })], { dryRun: false });
    await eventually(
      async () => {
        const seen = await eventsOf('Pod', 'scratch');
        expect(seen.map((e) => e.message).join('\n')).toContain(`[X5] PersistentVolumeClaim ${NS}/scratch-data: `);
      },
      { what: "the ephemeral-volume controller's refusal, in the pod's events" },
    );
    const claims = await kubectl('alice', ['-n', NS, 'get', 'pvc', 'scratch-data'], { reject: false });
    expect(claims.exitCode, 'the claim is not stored').not.toBe(0);
  });
});
