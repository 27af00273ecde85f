/**
 * The allow-list corpus (docs/adr/0095-allow-lists-in-the-api-server.md): every attack and every allowed
 * use of the allow-list e2e tests and the ADR's rules one by one (X1–X9, H1, H2, H4, X10's selector), each
 * refused and admitted, on CREATE and on UPDATE. A case is a kind, an object, the old object of an update
 * and the verdict written here by hand: the rule it breaks (it breaks at most one) or 'admitted'.
 *
 * Two forms judge it and must agree with what is written here: the offline functions
 * (test/unit/allow-lists-corpus.test.ts) and the API server's policies as a tenant with `--dry-run=server`
 * (test/e2e/allow-lists-differential.test.ts). Pure: no I/O.
 *
 * Two projects, each with one namespace: `strict` names a list for every rule (most from its own
 * `spec.allow`, a few from tenantgate.yaml's `allow`); `open` gives nothing of its own, so it takes
 * tenantgate.yaml's defaults (a priority class list whose system-* entry is dropped, the `{project}` suffix
 * template, wildcards) and "any" for every list they leave unset.
 *
 * Objects are written as the API server stores them where an update needs that: pods carry the two
 * node.kubernetes.io tolerations the API server adds, their ServiceAccount and no token volume, so an
 * update's new object differs from the stored one only by what the case changes.
 */
import { DEFAULT_CONFIG, type TenantgateConfig } from '../../src/config/config.js';
import { allowListViolations, type AllowListKind } from '../../src/validate/allow-admission.js';
import { allowSubject } from '../../src/validate/rules/allow-lists.js';
import type { Project, RuleId } from '../../src/validate/types.js';

type Json = Record<string, unknown>;

/** The names a run uses: cluster-wide classes are unique per run on a shared control plane. */
export interface CorpusNames {
  strictProject: string;
  openProject: string;
  strictNamespace: string;
  openNamespace: string;
  /** PriorityClasses the cluster holds (the Priority admission plugin refuses an unknown one). */
  batchClass: string;
  otherClass: string;
  /** RuntimeClasses the cluster holds (the RuntimeClass admission plugin refuses an unknown one). */
  gvisor: string;
  kata: string;
}

/** Fixed names, for the offline run. */
export const OFFLINE_NAMES: CorpusNames = {
  strictProject: 'payments',
  openProject: 'sandbox',
  strictNamespace: 'payments-app',
  openNamespace: 'sandbox-app',
  batchClass: 'batch-low',
  otherClass: 'other-high',
  gvisor: 'gvisor',
  kata: 'kata',
};

export type CorpusKind =
  | 'Pod'
  | 'Service'
  | 'PersistentVolumeClaim'
  | 'Ingress'
  | 'Gateway'
  | 'ListenerSet'
  | 'XListenerSet'
  | 'HTTPRoute'
  | 'GRPCRoute'
  | 'TLSRoute'
  | 'TCPRoute'
  | 'UDPRoute'
  | 'ResourceClaim'
  | 'ResourceClaimTemplate';

export type Expected = RuleId | 'admitted';

export interface AllowListCase {
  /** Unique; also the object's name. */
  id: string;
  /** Which project's namespace the object is in. */
  project: 'strict' | 'open';
  kind: CorpusKind;
  object: Json;
  /** An UPDATE's stored object; absent: a CREATE. */
  old?: Json;
  /** The update goes through this subresource (`kubectl debug` adds ephemeral containers so). */
  subresource?: 'ephemeralcontainers';
  /** Before the update, the old pod is bound to a node through pods/binding (as the scheduler does). */
  bindTo?: string;
  /** The verdict, written by hand. */
  expected: Expected;
  /** What the case shows. */
  what: string;
  /**
   * Why the API server cannot be sent it: its validation refuses the update before admission (an
   * immutable field). Only the offline form judges such a case.
   */
  offlineOnly?: string;
}

const RC_API = 'resource.k8s.io/v1';
/** Gateway API versions as the fixtures in test/fixtures/gateway-api/ serve them. */
export const GATEWAY_API_VERSIONS: Record<
  'Gateway' | 'ListenerSet' | 'XListenerSet' | 'HTTPRoute' | 'GRPCRoute' | 'TLSRoute' | 'TCPRoute' | 'UDPRoute',
  string
> = {
  Gateway: 'gateway.networking.k8s.io/v1',
  ListenerSet: 'gateway.networking.k8s.io/v1',
  XListenerSet: 'gateway.networking.x-k8s.io/v1alpha1',
  HTTPRoute: 'gateway.networking.k8s.io/v1',
  GRPCRoute: 'gateway.networking.k8s.io/v1',
  TLSRoute: 'gateway.networking.k8s.io/v1alpha2',
  TCPRoute: 'gateway.networking.k8s.io/v1alpha2',
  UDPRoute: 'gateway.networking.k8s.io/v1alpha2',
};

export const PROJECT_OWNERS_GROUP = 'acme:payments-admins';

/** The strict project's hostname suffix (its own `spec.allow.hostnames`). */
export const strictSuffix = (n: CorpusNames): string => `${n.strictProject}.example.org`;
/** The open project's suffix: tenantgate.yaml's template `{project}.example.com` filled in. */
export const openSuffix = (n: CorpusNames): string => `${n.openProject}.example.com`;

/**
 * tenantgate.yaml: the defaults, plus an `allow` whose fields each project resolves field by field (and
 * `services` key by key): the strict project keeps the ingress classes and the source ranges from here.
 */
export function corpusConfig(n: CorpusNames): TenantgateConfig {
  return {
    ...DEFAULT_CONFIG,
    allow: {
      priorityClasses: [n.otherClass, 'system-cluster-critical'],
      ingressClasses: ['public'],
      hostnames: { suffixes: ['{project}.example.com'], wildcards: true },
      services: { loadBalancerSourceRanges: ['10.0.0.0/8'] },
      storageClasses: ['standard-default'],
    },
  };
}

const STRICT_TOLERATION = (n: CorpusNames) => ({
  key: 'dedicated',
  operator: 'Equal',
  value: n.strictProject,
  effect: 'NoSchedule',
});

function project(name: string, allow: Project['spec']['allow']): Project {
  return {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name },
    spec: { tenant: 'acme', owners: [{ kind: 'Group', name: PROJECT_OWNERS_GROUP }], ...(allow ? { allow } : {}) },
  };
}

export function corpusProjects(n: CorpusNames): { strict: Project; open: Project } {
  return {
    strict: project(n.strictProject, {
      priorityClasses: [n.batchClass, 'system-cluster-critical'],
      services: { types: ['LoadBalancer'], externalIPs: ['203.0.113.0/28'] },
      hostnames: { suffixes: [strictSuffix(n)], wildcards: false },
      gatewayClasses: ['public'],
      storageClasses: ['standard'],
      runtimeClasses: [n.gvisor],
      deviceClasses: ['gpu.example.com'],
      registries: ['registry.k8s.io/', 'ghcr.io/acme/tool', 'mirror.example.com'],
      nodePlacement: {
        nodeSelector: { pool: n.strictProject },
        tolerations: [STRICT_TOLERATION(n) as never, { key: 'gpu', operator: 'Exists' }],
      },
    }),
    open: project(n.openProject, undefined),
  };
}

/**
 * The lists before they were narrowed: a project (named `shop`, whose claims' selectors pin `shop`)
 * that admits every old object of the corpus's updates, so the e2e test can store them before it
 * installs the narrow parameters. With tenantgate.yaml's defaults (`WIDER_CONFIG`, no `allow`) every
 * list it leaves unset is "any"; nodeName and hostless routes are refused whatever the lists, so no old
 * object uses them.
 */
export const WIDER_CONFIG: TenantgateConfig = DEFAULT_CONFIG;

export function widerProject(n: CorpusNames): Project {
  return project('shop', {
    priorityClasses: [n.batchClass, n.otherClass, 'system-cluster-critical', 'system-node-critical'],
    services: { types: ['NodePort', 'LoadBalancer', 'ExternalName'], externalIPs: ['0.0.0.0/0', '::/0'] },
    hostnames: { suffixes: ['org', 'com', 'net'], wildcards: true },
    nodePlacement: {
      nodeSelector: {},
      tolerations: [{ operator: 'Exists' }],
    },
  });
}

// ---------------------------------------------------------------------------------------------
// Builders
// ---------------------------------------------------------------------------------------------

/** What the API server adds to every pod (DefaultTolerationSeconds), written out so an update keeps them. */
const NODE_CONDITION_TOLERATIONS = [
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
];
const PAUSE = 'registry.k8s.io/pause:3.10';
const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;

const clean = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

function meta(name: string, extra: Json = {}): Json {
  return { name, ...extra };
}

/** The corpus's builders for one project: every object admitted unless the case changes it. */
function builders(n: CorpusNames, which: 'strict' | 'open') {
  const suffix = which === 'strict' ? strictSuffix(n) : openSuffix(n);
  const placement = which === 'strict' ? { nodeSelector: { pool: n.strictProject } } : {};
  const pod = (name: string, spec: Json = {}, extraTolerations: Json[] = []): Json =>
    clean({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: meta(name),
      spec: {
        serviceAccountName: 'default',
        automountServiceAccountToken: false,
        ...placement,
        containers: [{ name: 'main', image: PAUSE }],
        tolerations: [...NODE_CONDITION_TOLERATIONS, ...extraTolerations],
        ...spec,
      },
    });
  const service = (name: string, spec: Json = {}): Json =>
    clean({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(name),
      spec: { selector: { app: name }, ports: [{ port: 80 }], ...spec },
    });
  /** A LoadBalancer every list of the strict project admits. */
  const lb = (name: string, spec: Json = {}): Json =>
    service(name, {
      type: 'LoadBalancer',
      allocateLoadBalancerNodePorts: false,
      loadBalancerSourceRanges: ['10.1.0.0/16'],
      ...spec,
    });
  const claim = (name: string, spec: Json = {}): Json =>
    clean({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: meta(name),
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, ...spec },
    });
  const backend = { service: { name: 'web', port: { number: 80 } } };
  const rule = (host?: string): Json => ({
    ...(host !== undefined ? { host } : {}),
    http: { paths: [{ path: '/', pathType: 'Prefix', backend }] },
  });
  const ingress = (name: string, spec: Json = {}, metadata: Json = {}): Json =>
    clean({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: meta(name, metadata),
      spec: { ingressClassName: 'public', rules: [rule(`www.${suffix}`)], ...spec },
    });
  const listener = (name: string, hostname?: string, protocol = 'HTTP', port = 80): Json => ({
    name,
    port,
    protocol,
    ...(hostname !== undefined ? { hostname } : {}),
  });
  const gateway = (name: string, spec: Json = {}): Json =>
    clean({
      apiVersion: GATEWAY_API_VERSIONS.Gateway,
      kind: 'Gateway',
      metadata: meta(name),
      spec: { gatewayClassName: 'public', listeners: [listener('http', `www.${suffix}`)], ...spec },
    });
  const listenerSet = (name: string, listeners: Json[], kind: 'ListenerSet' | 'XListenerSet' = 'ListenerSet'): Json =>
    clean({
      apiVersion: GATEWAY_API_VERSIONS[kind],
      kind,
      metadata: meta(name),
      spec: { parentRef: { name: 'gw' }, listeners },
    });
  const route = (kind: 'HTTPRoute' | 'GRPCRoute' | 'TLSRoute', name: string, hostnames: string[] | undefined): Json =>
    clean({
      apiVersion: GATEWAY_API_VERSIONS[kind],
      kind,
      metadata: meta(name),
      spec: {
        parentRefs: [{ name: 'gw' }],
        ...(hostnames ? { hostnames } : {}),
        rules: [{ backendRefs: [{ name: 'web', port: kind === 'TLSRoute' ? 443 : 80 }] }],
      },
    });
  const l4Route = (kind: 'TCPRoute' | 'UDPRoute', name: string, parentNamespace?: string): Json =>
    clean({
      apiVersion: GATEWAY_API_VERSIONS[kind],
      kind,
      metadata: meta(name),
      spec: {
        parentRefs: [{ name: 'gw', ...(parentNamespace !== undefined ? { namespace: parentNamespace } : {}) }],
        rules: [{ backendRefs: [{ name: 'db', port: 5432 }] }],
      },
    });
  const devices = (requests: Json[]): Json => ({ devices: { requests } });
  const exactly = (deviceClassName: string, tolerations?: Json[]): Json => ({
    name: 'd',
    exactly: { deviceClassName, ...(tolerations ? { tolerations } : {}) },
  });
  const resourceClaim = (name: string, requests: Json[]): Json =>
    clean({ apiVersion: RC_API, kind: 'ResourceClaim', metadata: meta(name), spec: devices(requests) });
  const claimTemplate = (name: string, requests: Json[]): Json =>
    clean({
      apiVersion: RC_API,
      kind: 'ResourceClaimTemplate',
      metadata: meta(name),
      spec: { spec: devices(requests) },
    });
  return {
    suffix,
    pod,
    service,
    lb,
    claim,
    rule,
    ingress,
    listener,
    gateway,
    listenerSet,
    route,
    l4Route,
    exactly,
    resourceClaim,
    claimTemplate,
  };
}

/** The old object with one more label: an update that adds nothing a rule judges. */
function relabelled(old: Json): Json {
  const metadata = (old.metadata ?? {}) as Json;
  return clean({
    ...old,
    metadata: { ...metadata, labels: { ...((metadata.labels as Json | undefined) ?? {}), tier: 'relabelled' } },
  });
}

/** A deep copy of `object` changed by `change`. */
function changed(object: Json, change: (o: Json & { spec: Json }) => void): Json {
  const copy = clean(object) as Json & { spec: Json };
  change(copy);
  return clean(copy);
}

const specOf = (o: Json): Json => o.spec as Json;
const containersOf = (o: Json): Json[] => specOf(o).containers as Json[];

// ---------------------------------------------------------------------------------------------
// The corpus
// ---------------------------------------------------------------------------------------------

export function allowListCorpus(n: CorpusNames): AllowListCase[] {
  const s = builders(n, 'strict');
  const o = builders(n, 'open');
  const S = s.suffix;
  const O = o.suffix;
  const cases: AllowListCase[] = [];
  const create = (project: AllowListCase['project'], object: Json, expected: Expected, what: string): void => {
    const m = object.metadata as { name: string };
    cases.push({ id: m.name, project, kind: object.kind as CorpusKind, object, expected, what });
  };
  const update = (
    project: AllowListCase['project'],
    old: Json,
    object: Json,
    expected: Expected,
    what: string,
    extra: Partial<AllowListCase> = {},
  ): void => {
    const m = object.metadata as { name: string };
    cases.push({ id: m.name, project, kind: object.kind as CorpusKind, object, old, expected, what, ...extra });
  };
  const immutable = (field: string) =>
    `the API server's validation refuses a change of ${field} before admission (immutable)`;

  // ---- X1: priority classes --------------------------------------------------------------
  create('strict', s.pod('x1-listed', { priorityClassName: n.batchClass }), 'admitted', 'a class the project lists');
  create(
    'strict',
    s.pod('x1-not-listed', { priorityClassName: n.otherClass }),
    'X1',
    "a class the project does not list (tenantgate.yaml does: the project's own list wins)",
  );
  create(
    'strict',
    s.pod('x1-system-node-critical', { priorityClassName: 'system-node-critical' }),
    'X1',
    'a system-* class the project does not name',
  );
  create(
    'strict',
    s.pod('x1-system-named', { priorityClassName: 'system-cluster-critical' }),
    'admitted',
    'a system-* class the project names itself',
  );
  create('strict', s.pod('x1-no-class'), 'admitted', 'no priorityClassName');
  create(
    'open',
    o.pod('x1-open-default-listed', { priorityClassName: n.otherClass }),
    'admitted',
    "a class tenantgate.yaml's default lists",
  );
  create(
    'open',
    o.pod('x1-open-default-unlisted', { priorityClassName: n.batchClass }),
    'X1',
    "a class tenantgate.yaml's default does not list",
  );
  create(
    'open',
    o.pod('x1-open-system-from-default', { priorityClassName: 'system-cluster-critical' }),
    'X1',
    'a system-* class only tenantgate.yaml names (never from the defaults)',
  );
  {
    const old = s.pod('u-x1-kept', { priorityClassName: n.otherClass });
    update('strict', old, relabelled(old), 'admitted', 'a pod admitted before its class was delisted is relabelled');
    const good = s.pod('u-x1-changed', { priorityClassName: n.batchClass });
    update(
      'strict',
      good,
      changed(good, (p) => (p.spec.priorityClassName = n.otherClass)),
      'X1',
      'an update that changes the class to one not listed',
      { offlineOnly: immutable("a pod's priorityClassName") },
    );
    const listed = s.pod('u-x1-changed-listed', { priorityClassName: n.batchClass });
    update(
      'strict',
      listed,
      changed(listed, (p) => (p.spec.priorityClassName = 'system-cluster-critical')),
      'admitted',
      'an update that changes the class to a listed one',
      { offlineOnly: immutable("a pod's priorityClassName") },
    );
  }

  // ---- X6: runtime classes --------------------------------------------------------------
  create('strict', s.pod('x6-listed', { runtimeClassName: n.gvisor }), 'admitted', 'a RuntimeClass the project lists');
  create(
    'strict',
    s.pod('x6-not-listed', { runtimeClassName: n.kata }),
    'X6',
    'a RuntimeClass the project does not list',
  );
  create(
    'open',
    o.pod('x6-open-any', { runtimeClassName: n.kata }),
    'admitted',
    'any RuntimeClass where no list is given',
  );
  {
    const old = s.pod('u-x6-kept', { runtimeClassName: n.kata });
    update('strict', old, relabelled(old), 'admitted', 'a pod of a delisted RuntimeClass is relabelled');
    const good = s.pod('u-x6-changed', { runtimeClassName: n.gvisor });
    update(
      'strict',
      good,
      changed(good, (p) => (p.spec.runtimeClassName = n.kata)),
      'X6',
      'an update that changes the RuntimeClass to one not listed',
      { offlineOnly: immutable("a pod's runtimeClassName") },
    );
  }

  // ---- X8: node placement (pods) -------------------------------------------------------
  create(
    'strict',
    s.pod('x8-selector-missing', { nodeSelector: undefined }),
    'X8',
    "a pod without the project's node selector",
  );
  create(
    'strict',
    s.pod('x8-selector-other', { nodeSelector: { pool: 'shop' } }),
    'X8',
    'a pod selecting another pool',
  );
  create(
    'strict',
    s.pod('x8-selector-more', { nodeSelector: { pool: n.strictProject, zone: 'a' } }),
    'admitted',
    "the project's selector and one more key",
  );
  create(
    'strict',
    s.pod('x8-node-name', { nodeName: 'node-of-shop' }),
    'X8',
    'nodeName skips the scheduler and every NoSchedule taint',
  );
  create(
    'open',
    o.pod('x8-open-node-name', { nodeName: 'node-a' }),
    'X8',
    'nodeName is refused in every project, also without a node selector',
  );
  create('open', o.pod('x8-open-no-selector'), 'admitted', 'no selector where the project asks for none');
  create('strict', s.pod('x8-toleration-listed', {}, [STRICT_TOLERATION(n)]), 'admitted', "the project's toleration");
  create(
    'strict',
    s.pod('x8-toleration-no-operator', {}, [{ key: 'dedicated', value: n.strictProject, effect: 'NoSchedule' }]),
    'admitted',
    "the project's toleration, operator unset (Equal)",
  );
  create(
    'strict',
    s.pod('x8-toleration-other-value', {}, [
      { key: 'dedicated', operator: 'Equal', value: 'shop', effect: 'NoSchedule' },
    ]),
    'X8',
    "another project's dedicated nodes",
  );
  create(
    'strict',
    s.pod('x8-toleration-other-effect', {}, [
      { key: 'dedicated', operator: 'Equal', value: n.strictProject, effect: 'NoExecute' },
    ]),
    'X8',
    'the listed toleration with another effect',
  );
  create(
    'strict',
    s.pod('x8-toleration-every-effect', {}, [{ key: 'dedicated', operator: 'Equal', value: n.strictProject }]),
    'X8',
    'the listed toleration for every effect (the list names NoSchedule)',
  );
  create(
    'strict',
    s.pod('x8-toleration-exists-key', {}, [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }]),
    'X8',
    'Exists where the list says Equal',
  );
  create(
    'strict',
    s.pod('x8-toleration-everything', {}, [{ operator: 'Exists' }]),
    'X8',
    'a toleration of every taint',
  );
  create(
    'strict',
    s.pod('x8-toleration-exists-listed', {}, [{ key: 'gpu', operator: 'Exists', effect: 'NoExecute' }]),
    'admitted',
    'an Exists toleration listed without effect covers every effect',
  );
  create(
    'strict',
    s.pod('x8-toleration-equal-for-exists', {}, [{ key: 'gpu', operator: 'Equal', value: 'a100' }]),
    'X8',
    'Equal where the list says Exists',
  );
  create(
    'strict',
    s.pod('x8-toleration-node-condition', {}, [
      { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
    ]),
    'admitted',
    'a node.kubernetes.io/ toleration',
  );
  create(
    'strict',
    s.pod('x8-toleration-node-condition-look-alike', {}, [{ key: 'node.kubernetes.io.evil/x', operator: 'Exists' }]),
    'X8',
    'a key that only starts like node.kubernetes.io/',
  );
  create(
    'strict',
    s.pod('x8-toleration-exists-every-effect', {}, [{ key: 'gpu', operator: 'Exists' }]),
    'admitted',
    'the listed Exists toleration as listed (every effect)',
  );
  create(
    'open',
    o.pod('x8-open-toleration', {}, [{ key: 'dedicated', operator: 'Equal', value: 'shop', effect: 'NoSchedule' }]),
    'X8',
    'a toleration where the project lists none',
  );
  {
    const plain = s.pod('u-x8-relabel');
    update('strict', plain, relabelled(plain), 'admitted', 'a label added to an admitted pod');
    const tolerant = s.pod('u-x8-add-toleration');
    update(
      'strict',
      tolerant,
      changed(tolerant, (p) =>
        (p.spec.tolerations as Json[]).push({
          key: 'dedicated',
          operator: 'Equal',
          value: 'shop',
          effect: 'NoSchedule',
        }),
      ),
      'X8',
      "an update adding another project's toleration",
    );
    const listed = s.pod('u-x8-add-listed');
    update(
      'strict',
      listed,
      changed(listed, (p) => (p.spec.tolerations as Json[]).push(STRICT_TOLERATION(n))),
      'admitted',
      "an update adding the project's toleration",
    );
    const everything = s.pod('u-x8-kept-toleration', {}, [{ operator: 'Exists' }]);
    update(
      'strict',
      everything,
      changed(everything, (p) => (p.spec.tolerations as Json[]).push(STRICT_TOLERATION(n))),
      'admitted',
      'a pod keeping a toleration admitted before the list was narrowed adds a listed one',
    );
    const gates = { schedulingGates: [{ name: 'example.com/wait' }] };
    const gated = (name: string) => s.pod(name, { nodeSelector: undefined, ...gates });
    update(
      'strict',
      gated('u-x8-selector-other'),
      changed(gated('u-x8-selector-other'), (p) => (p.spec.nodeSelector = { pool: 'shop' })),
      'X8',
      'a gated pod given another pool',
    );
    update(
      'strict',
      gated('u-x8-selector-own'),
      changed(gated('u-x8-selector-own'), (p) => (p.spec.nodeSelector = { pool: n.strictProject })),
      'admitted',
      "a gated pod given the project's pool",
    );
    update(
      'strict',
      gated('u-x8-selector-unrelated'),
      changed(gated('u-x8-selector-unrelated'), (p) => (p.spec.nodeSelector = { zone: 'a' })),
      'X8',
      'a gated pod whose changed selector still lacks the pool',
    );
    const unselected = gated('u-x8-selector-kept');
    update(
      'strict',
      unselected,
      relabelled(unselected),
      'admitted',
      'a pod without the selector (admitted before) is relabelled',
    );
    const bound = s.pod('u-x8-bound');
    update(
      'strict',
      changed(bound, (p) => (p.spec.nodeName = 'node-a')),
      changed(relabelled(bound), (p) => (p.spec.nodeName = 'node-a')),
      'admitted',
      'a pod the scheduler bound (pods/binding) is relabelled',
      { bindTo: 'node-a' },
    );
    const free = s.pod('u-x8-node-name');
    update(
      'strict',
      free,
      changed(free, (p) => (p.spec.nodeName = 'node-a')),
      'X8',
      'an update setting nodeName',
      { offlineOnly: immutable("a pod's nodeName (only pods/binding sets it)") },
    );
  }

  // ---- X9: registries --------------------------------------------------------------------
  const image = (id: string, ref: string, expected: Expected, what: string) =>
    create('strict', s.pod(id, { containers: [{ name: 'main', image: ref }] }), expected, what);
  image('x9-prefix-slash', PAUSE, 'admitted', 'an image under a prefix ending in /');
  image(
    'x9-prefix-look-alike-host',
    'registry.k8s.io.evil.io/pause:3.10',
    'X9',
    'a host that only starts like an allowed one',
  );
  image('x9-other-registry', 'docker.io/library/busybox:1.36', 'X9', 'an image of a registry not listed');
  image('x9-short-name', 'busybox:1.36', 'X9', 'a short name (docker.io)');
  image('x9-repository-tag', 'ghcr.io/acme/tool:1.2', 'admitted', 'a tag of the listed repository');
  image('x9-repository-digest', `ghcr.io/acme/tool@${DIGEST}`, 'admitted', 'a digest of the listed repository');
  image('x9-repository-equal', 'ghcr.io/acme/tool', 'admitted', 'the listed repository itself');
  image('x9-repository-below', 'ghcr.io/acme/tool/helper:1', 'admitted', 'a repository under the listed one');
  image(
    'x9-repository-look-alike',
    'ghcr.io/acme/toolbox:1',
    'X9',
    'a repository that only starts like the listed one',
  );
  image('x9-prefix-host-alone', 'registry.k8s.io', 'X9', 'the host of a prefix ending in / without the /');
  image('x9-host-equal', 'mirror.example.com', 'admitted', 'an image equal to a listed prefix');
  image(
    'x9-host-digest',
    `mirror.example.com@${DIGEST}`,
    'X9',
    'a digest right after a listed host (a host prefix continues only with /)',
  );
  image('x9-host-below', 'mirror.example.com/team/app:1', 'admitted', 'an image under a listed host');
  image(
    'x9-host-look-alike',
    'mirror.example.com.evil.io/team/app:1',
    'X9',
    'a host that only starts like a listed host',
  );
  image(
    'x9-host-port',
    'mirror.example.com:5000/team/app:1',
    'X9',
    'a port after a listed host (a host prefix continues only with /)',
  );
  create(
    'strict',
    s.pod('x9-init-container', { initContainers: [{ name: 'init', image: 'docker.io/library/busybox:1.36' }] }),
    'X9',
    "an init container's image",
  );
  create(
    'strict',
    s.pod('x9-image-volume', { volumes: [{ name: 'data', image: { reference: 'docker.io/library/busybox:1.36' } }] }),
    'X9',
    "an image volume's reference",
  );
  create(
    'strict',
    s.pod('x9-image-volume-listed', {
      volumes: [{ name: 'data', image: { reference: 'registry.k8s.io/e2e-test-images/agnhost:2.53' } }],
    }),
    'admitted',
    'an image volume from a listed registry',
  );
  create(
    'open',
    o.pod('x9-open-any', { containers: [{ name: 'main', image: 'docker.io/library/busybox:1.36' }] }),
    'admitted',
    'any registry where no list is given',
  );
  {
    const good = s.pod('u-x9-changed');
    update(
      'strict',
      good,
      changed(good, (p) => (containersOf(p)[0]!.image = 'docker.io/library/busybox:1.36')),
      'X9',
      'an update changing the image to another registry',
    );
    const bad = s.pod('u-x9-kept', { containers: [{ name: 'main', image: 'docker.io/library/busybox:1.36' }] });
    update(
      'strict',
      bad,
      relabelled(bad),
      'admitted',
      'a pod whose image was admitted before the list was narrowed is relabelled',
    );
    const two = s.pod('u-x9-other-container', {
      containers: [
        { name: 'main', image: 'docker.io/library/busybox:1.36' },
        { name: 'side', image: PAUSE },
      ],
    });
    update(
      'strict',
      two,
      changed(two, (p) => (containersOf(p)[1]!.image = 'registry.k8s.io/pause:3.9')),
      'admitted',
      'an update changing another container to an allowed image',
    );
    const debugged = s.pod('u-x9-debug-other');
    const debug = (ref: string) => (p: Json & { spec: Json }) =>
      (p.spec.ephemeralContainers = [{ name: 'debugger', image: ref }]);
    update(
      'strict',
      debugged,
      changed(debugged, debug('docker.io/library/busybox:1.36')),
      'X9',
      'kubectl debug with an image of another registry',
      { subresource: 'ephemeralcontainers' },
    );
    const fine = s.pod('u-x9-debug-listed');
    update(
      'strict',
      fine,
      changed(fine, debug('registry.k8s.io/e2e-test-images/agnhost:2.53')),
      'admitted',
      'kubectl debug with an image of a listed registry',
      { subresource: 'ephemeralcontainers' },
    );
    const stale = s.pod('u-x9-debug-beside-old', {
      containers: [{ name: 'main', image: 'docker.io/library/busybox:1.36' }],
    });
    update(
      'strict',
      stale,
      changed(stale, debug('registry.k8s.io/e2e-test-images/agnhost:2.53')),
      'admitted',
      'kubectl debug with a listed image on a pod whose image was admitted before',
      { subresource: 'ephemeralcontainers' },
    );
  }

  // ---- X2, X3, X4: Services -------------------------------------------------------------
  create('strict', s.service('x3-cluster-ip'), 'admitted', 'a ClusterIP Service');
  create('strict', s.service('x3-headless', { clusterIP: 'None' }), 'admitted', 'a headless ClusterIP Service');
  create(
    'open',
    o.service('x3-open-node-port', { type: 'NodePort' }),
    'X3',
    'a NodePort Service where the project lists no type',
  );
  create(
    'strict',
    s.service('x2-external-ip-inside', { externalIPs: ['203.0.113.5'] }),
    'admitted',
    "an externalIP inside the project's CIDR",
  );
  create(
    'strict',
    s.service('x2-external-ip-outside', { externalIPs: ['203.0.113.5', '8.8.8.8'] }),
    'X2',
    'an externalIP outside the CIDRs (traffic interception)',
  );
  create(
    'strict',
    s.service('x2-external-ip-v6', { externalIPs: ['2001:db8::1'] }),
    'X2',
    'an IPv6 externalIP outside the CIDRs',
  );
  create(
    'strict',
    s.lb('x2-lb-ip-inside', { loadBalancerIP: '203.0.113.6' }),
    'admitted',
    'a loadBalancerIP inside the CIDR',
  );
  create(
    'strict',
    s.lb('x2-lb-ip-outside', { loadBalancerIP: '198.51.100.1' }),
    'X2',
    'a loadBalancerIP outside the CIDRs',
  );
  create(
    'open',
    o.service('x2-open-external-ip', { externalIPs: ['203.0.113.5'] }),
    'X2',
    'an externalIP where the project lists no CIDR',
  );
  create(
    'strict',
    s.service('x3-node-port', { type: 'NodePort' }),
    'X3',
    'a NodePort Service where only LoadBalancer is listed',
  );
  create(
    'strict',
    s.service('x3-external-name', {
      type: 'ExternalName',
      externalName: 'db.example.net',
      selector: undefined,
      ports: undefined,
    }),
    'X3',
    'an ExternalName Service not listed',
  );
  create('strict', s.lb('x3-lb-allowed'), 'admitted', 'a LoadBalancer without node ports, from allowed ranges');
  create(
    'strict',
    s.lb('x3-lb-node-ports', { allocateLoadBalancerNodePorts: undefined }),
    'X3',
    'a LoadBalancer allocating node ports (the default) where NodePort is not listed',
  );
  create(
    'strict',
    s.lb('x3-lb-node-port-set', { ports: [{ port: 80, nodePort: 30080 }] }),
    'X3',
    'a LoadBalancer naming a nodePort where NodePort is not listed',
  );
  create('open', o.lb('x3-open-lb'), 'X3', 'a LoadBalancer where the project lists no type');
  create(
    'strict',
    s.lb('x4-no-ranges', { loadBalancerSourceRanges: undefined }),
    'X4',
    'a LoadBalancer open to every address (ranges from tenantgate.yaml)',
  );
  create(
    'strict',
    s.lb('x4-range-outside', { loadBalancerSourceRanges: ['10.1.0.0/16', '0.0.0.0/0'] }),
    'X4',
    'a source range outside the allowed CIDRs',
  );
  create(
    'strict',
    s.lb('x4-range-inside', { loadBalancerSourceRanges: ['10.1.0.0/16', '10.200.0.0/24'] }),
    'admitted',
    'source ranges inside the allowed CIDR',
  );
  create(
    'strict',
    s.lb('x4-range-wider', { loadBalancerSourceRanges: ['10.0.0.0/7'] }),
    'X4',
    'a source range wider than the allowed CIDR that contains its start',
  );
  create(
    'strict',
    s.lb('x4-range-v6', { loadBalancerSourceRanges: ['2001:db8::/32'] }),
    'X4',
    'an IPv6 source range where the allowed CIDR is IPv4',
  );
  create(
    'strict',
    s.lb('x4-range-equal', { loadBalancerSourceRanges: ['10.0.0.0/8'] }),
    'admitted',
    'the allowed CIDR itself',
  );
  {
    const plain = s.service('u-x2-add-outside');
    update(
      'strict',
      plain,
      changed(plain, (x) => (x.spec.externalIPs = ['8.8.8.8'])),
      'X2',
      'an update adding an externalIP outside the CIDRs',
    );
    const intercepting = s.service('u-x2-kept', { externalIPs: ['8.8.8.8'] });
    update(
      'strict',
      intercepting,
      changed(intercepting, (x) => (x.spec.externalIPs as string[]).push('203.0.113.9')),
      'admitted',
      'an update adding an allowed externalIP beside one admitted before',
    );
    const balanced = s.lb('u-x2-lb-ip');
    update(
      'strict',
      balanced,
      changed(balanced, (x) => (x.spec.loadBalancerIP = '198.51.100.1')),
      'X2',
      'an update setting a loadBalancerIP outside the CIDRs',
    );
    const lbIp = s.lb('u-x2-lb-ip-kept', { loadBalancerIP: '198.51.100.1' });
    update(
      'strict',
      lbIp,
      relabelled(lbIp),
      'admitted',
      'a LoadBalancer whose address was admitted before is relabelled',
    );
    const toNodePort = s.service('u-x3-node-port');
    update(
      'strict',
      toNodePort,
      changed(toNodePort, (x) => (x.spec.type = 'NodePort')),
      'X3',
      'a ClusterIP Service turned into a NodePort one',
    );
    const toDefaultedLb = s.service('u-x3-to-lb-defaulted');
    update(
      'strict',
      toDefaultedLb,
      changed(toDefaultedLb, (x) =>
        Object.assign(x.spec, { type: 'LoadBalancer', loadBalancerSourceRanges: ['10.1.0.0/16'] }),
      ),
      'X3',
      'a ClusterIP Service turned into a LoadBalancer allocating node ports (the default)',
    );
    const toLb = s.service('u-x3-to-lb');
    update(
      'strict',
      toLb,
      changed(toLb, (x) =>
        Object.assign(x.spec, {
          type: 'LoadBalancer',
          allocateLoadBalancerNodePorts: false,
          loadBalancerSourceRanges: ['10.1.0.0/16'],
        }),
      ),
      'admitted',
      'a ClusterIP Service turned into an allowed LoadBalancer',
    );
    const allocating = s.lb('u-x3-allocate');
    update(
      'strict',
      allocating,
      changed(allocating, (x) => (x.spec.allocateLoadBalancerNodePorts = true)),
      'X3',
      'a LoadBalancer switched to allocating node ports',
    );
    const oldAllocating = s.lb('u-x3-allocate-kept', { allocateLoadBalancerNodePorts: true });
    update(
      'strict',
      oldAllocating,
      relabelled(oldAllocating),
      'admitted',
      'a LoadBalancer allocating node ports since before the list was narrowed is relabelled',
    );
    const toOpenLb = s.service('u-x4-to-open-lb');
    update(
      'strict',
      toOpenLb,
      changed(toOpenLb, (x) => Object.assign(x.spec, { type: 'LoadBalancer', allocateLoadBalancerNodePorts: false })),
      'X4',
      'a ClusterIP Service turned into a LoadBalancer open to every address',
    );
    const ranged = s.lb('u-x4-add-outside');
    update(
      'strict',
      ranged,
      changed(ranged, (x) => (x.spec.loadBalancerSourceRanges as string[]).push('0.0.0.0/0')),
      'X4',
      'an update adding a source range outside the CIDRs',
    );
    const wide = s.lb('u-x4-kept', { loadBalancerSourceRanges: ['0.0.0.0/0'] });
    update(
      'strict',
      wide,
      changed(wide, (x) => (x.spec.loadBalancerSourceRanges as string[]).push('10.2.0.0/16')),
      'admitted',
      'an update adding an allowed range beside one admitted before',
    );
    const open = s.lb('u-x4-open-kept', { loadBalancerSourceRanges: undefined });
    update(
      'strict',
      open,
      relabelled(open),
      'admitted',
      'a LoadBalancer open to every address since before is relabelled',
    );
    const closing = s.lb('u-x4-open-closed', { loadBalancerSourceRanges: undefined });
    update(
      'strict',
      closing,
      changed(closing, (x) => (x.spec.loadBalancerSourceRanges = ['10.3.0.0/16'])),
      'admitted',
      'a LoadBalancer open to every address given an allowed range',
    );
  }

  // ---- X5 and X10 (selector): claims --------------------------------------------------
  create(
    'strict',
    s.claim('x5-listed', { storageClassName: 'standard' }),
    'admitted',
    'a StorageClass the project lists',
  );
  create(
    'strict',
    s.claim('x5-not-listed', { storageClassName: 'fast-ssd' }),
    'X5',
    'a StorageClass the project does not list',
  );
  create(
    'strict',
    s.claim('x5-default-only', { storageClassName: 'standard-default' }),
    'X5',
    "a class only tenantgate.yaml lists (the project's own list wins)",
  );
  create('strict', s.claim('x5-no-class'), 'admitted', "no storageClassName (the cluster's default class)");
  create(
    'open',
    o.claim('x5-open-default', { storageClassName: 'standard-default' }),
    'admitted',
    "a class tenantgate.yaml's default lists",
  );
  create(
    'open',
    o.claim('x5-open-other', { storageClassName: 'fast-ssd' }),
    'X5',
    "a class tenantgate.yaml's default does not list",
  );
  const pin = (selector: Json) => ({ storageClassName: 'standard', selector });
  create(
    'strict',
    s.claim('x10-match-labels', pin({ matchLabels: { 'tenantgate.io/project': n.strictProject } })),
    'admitted',
    'a selector pinning the project label',
  );
  create(
    'strict',
    s.claim(
      'x10-match-expression',
      pin({ matchExpressions: [{ key: 'tenantgate.io/project', operator: 'In', values: [n.strictProject] }] }),
    ),
    'admitted',
    'a matchExpression In the project alone',
  );
  create(
    'strict',
    s.claim('x10-other-project', pin({ matchLabels: { 'tenantgate.io/project': 'shop' } })),
    'X10',
    "a selector for another project's volumes",
  );
  create(
    'strict',
    s.claim(
      'x10-two-projects',
      pin({
        matchExpressions: [{ key: 'tenantgate.io/project', operator: 'In', values: [n.strictProject, 'shop'] }],
      }),
    ),
    'X10',
    'an In with another project beside it',
  );
  create(
    'strict',
    s.claim(
      'x10-not-in',
      pin({ matchExpressions: [{ key: 'tenantgate.io/project', operator: 'NotIn', values: ['shop'] }] }),
    ),
    'X10',
    'a NotIn (every other project)',
  );
  create(
    'strict',
    s.claim('x10-unpinned', pin({ matchLabels: { disk: 'ssd' } })),
    'X10',
    'a selector without the project label',
  );
  create('strict', s.claim('x10-empty-selector', pin({})), 'X10', 'an empty selector (every volume)');
  create(
    'strict',
    s.claim('x10-exists', pin({ matchExpressions: [{ key: 'tenantgate.io/project', operator: 'Exists' }] })),
    'X10',
    "a selector for every project's volumes",
  );
  create(
    'strict',
    s.claim('x10-pinned-and-more', pin({ matchLabels: { 'tenantgate.io/project': n.strictProject, disk: 'ssd' } })),
    'admitted',
    'the project pinned beside another label',
  );
  create(
    'open',
    o.claim('x10-open-other', { selector: { matchLabels: { 'tenantgate.io/project': n.strictProject } } }),
    'X10',
    "a selector for another project's volumes (the open project)",
  );
  {
    const classless = s.claim('u-x5-set-class');
    update(
      'strict',
      classless,
      changed(classless, (c) => (c.spec.storageClassName = 'fast-ssd')),
      'X5',
      'a claim without class given one not listed',
    );
    const classlessOk = s.claim('u-x5-set-listed');
    update(
      'strict',
      classlessOk,
      changed(classlessOk, (c) => (c.spec.storageClassName = 'standard')),
      'admitted',
      'a claim without class given a listed one',
    );
    const fast = s.claim('u-x5-kept', { storageClassName: 'fast-ssd' });
    update('strict', fast, relabelled(fast), 'admitted', 'a claim of a delisted class is relabelled');
    const grabbing = s.claim('u-x10-kept', pin({ matchLabels: { 'tenantgate.io/project': 'shop' } }));
    update(
      'strict',
      grabbing,
      relabelled(grabbing),
      'admitted',
      'a claim whose selector was admitted before is relabelled',
    );
    const pinned = s.claim('u-x10-changed', pin({ matchLabels: { 'tenantgate.io/project': n.strictProject } }));
    update(
      'strict',
      pinned,
      changed(pinned, (c) => (c.spec.selector = { matchLabels: { 'tenantgate.io/project': 'shop' } })),
      'X10',
      'an update re-pointing the selector',
      { offlineOnly: immutable("a claim's selector") },
    );
  }

  // ---- X7 and X8 (devices): ResourceClaims and templates ------------------------------
  create(
    'strict',
    s.resourceClaim('x7-listed', [s.exactly('gpu.example.com')]),
    'admitted',
    'a DeviceClass the project lists',
  );
  create(
    'strict',
    s.resourceClaim('x7-not-listed', [s.exactly('fpga.example.com')]),
    'X7',
    'a DeviceClass the project does not list',
  );
  create(
    'strict',
    s.resourceClaim('x7-first-available', [
      {
        name: 'd',
        firstAvailable: [
          { name: 'a', deviceClassName: 'gpu.example.com' },
          { name: 'b', deviceClassName: 'fpga.example.com' },
        ],
      },
    ]),
    'X7',
    'a firstAvailable alternative not listed',
  );
  create(
    'strict',
    s.resourceClaim('x7-first-available-listed', [
      { name: 'd', firstAvailable: [{ name: 'a', deviceClassName: 'gpu.example.com' }] },
    ]),
    'admitted',
    'firstAvailable alternatives all listed',
  );
  create(
    'strict',
    s.claimTemplate('x7-template', [s.exactly('fpga.example.com')]),
    'X7',
    'a template of a DeviceClass not listed',
  );
  create(
    'strict',
    s.claimTemplate('x7-template-listed', [s.exactly('gpu.example.com')]),
    'admitted',
    'a template of a listed DeviceClass',
  );
  cases.push({
    id: 'x7-v1beta1-flat',
    project: 'strict',
    kind: 'ResourceClaim',
    object: clean({
      apiVersion: 'resource.k8s.io/v1beta1',
      kind: 'ResourceClaim',
      metadata: meta('x7-v1beta1-flat'),
      spec: { devices: { requests: [{ name: 'd', deviceClassName: 'fpga.example.com' }] } },
    }),
    expected: 'X7',
    what: "a v1beta1 claim (the device class beside the request's name)",
    offlineOnly:
      'the test control plane serves resource.k8s.io/v1 only ' +
      '(the API server converts older versions to v1 before the policy sees them)',
  });
  create(
    'open',
    o.resourceClaim('x7-open-any', [o.exactly('fpga.example.com')]),
    'admitted',
    'any DeviceClass where no list is given',
  );
  create(
    'strict',
    s.resourceClaim('x8-device-listed', [s.exactly('gpu.example.com', [STRICT_TOLERATION(n)])]),
    'admitted',
    'a device toleration the project lists',
  );
  create(
    'strict',
    s.resourceClaim('x8-device-other', [
      s.exactly('gpu.example.com', [{ key: 'dedicated', operator: 'Equal', value: 'shop', effect: 'NoSchedule' }]),
    ]),
    'X8',
    'a device toleration of another project',
  );
  create(
    'strict',
    s.resourceClaim('x8-device-node-condition', [
      s.exactly('gpu.example.com', [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' }]),
    ]),
    'X8',
    'a node.kubernetes.io/ toleration on a device (no exception for devices)',
  );
  create(
    'strict',
    s.resourceClaim('x8-device-first-available', [
      {
        name: 'd',
        firstAvailable: [{ name: 'a', deviceClassName: 'gpu.example.com', tolerations: [{ operator: 'Exists' }] }],
      },
    ]),
    'X8',
    'a firstAvailable alternative tolerating every taint',
  );
  create(
    'strict',
    s.claimTemplate('x8-device-template', [s.exactly('gpu.example.com', [{ operator: 'Exists' }])]),
    'X8',
    'a template tolerating every device taint',
  );
  {
    const fpga = s.resourceClaim('u-x7-kept', [s.exactly('fpga.example.com')]);
    update('strict', fpga, relabelled(fpga), 'admitted', 'a claim of a delisted DeviceClass is relabelled');
    const gpu = s.resourceClaim('u-x7-changed', [s.exactly('gpu.example.com')]);
    update(
      'strict',
      gpu,
      changed(
        gpu,
        (c) => (((c.spec.devices as Json).requests as Json[])[0]!.exactly = { deviceClassName: 'fpga.example.com' }),
      ),
      'X7',
      'an update to a DeviceClass not listed',
      { offlineOnly: immutable("a ResourceClaim's spec") },
    );
    const tolerant = s.resourceClaim('u-x8-device-kept', [s.exactly('gpu.example.com', [{ operator: 'Exists' }])]);
    update(
      'strict',
      tolerant,
      relabelled(tolerant),
      'admitted',
      'a claim tolerating every device taint since before is relabelled',
    );
    const template = s.claimTemplate('u-x8-device-changed', [s.exactly('gpu.example.com')]);
    update(
      'strict',
      template,
      changed(
        template,
        (t) =>
          ((((t.spec.spec as Json).devices as Json).requests as Json[])[0]!.exactly = {
            deviceClassName: 'gpu.example.com',
            tolerations: [{ operator: 'Exists' }],
          }),
      ),
      'X8',
      'an update adding a device toleration of every taint',
      { offlineOnly: immutable("a ResourceClaimTemplate's spec") },
    );
  }

  // ---- H2: ingress classes (from tenantgate.yaml for both projects) --------------------
  create('strict', s.ingress('h2-listed'), 'admitted', "an Ingress of the default's class");
  create(
    'strict',
    s.ingress('h2-not-listed', { ingressClassName: 'internal' }),
    'H2',
    'an Ingress of a class not listed',
  );
  create(
    'strict',
    s.ingress('h2-none', { ingressClassName: undefined }),
    'H2',
    "an Ingress of no class (the cluster's default class)",
  );
  create(
    'strict',
    s.ingress(
      'h2-annotation-listed',
      { ingressClassName: undefined },
      { annotations: { 'kubernetes.io/ingress.class': 'public' } },
    ),
    'admitted',
    'the class by the annotation',
  );
  create(
    'strict',
    s.ingress(
      'h2-annotation-other',
      { ingressClassName: undefined },
      { annotations: { 'kubernetes.io/ingress.class': 'internal' } },
    ),
    'H2',
    'another class by the annotation',
  );
  create(
    'strict',
    s.ingress('h2-both-listed', {}, { annotations: { 'kubernetes.io/ingress.class': 'public' } }),
    'admitted',
    'the listed class by the field and by the annotation',
  );
  create(
    'open',
    o.ingress('h2-open-other', { ingressClassName: 'internal' }),
    'H2',
    "a class tenantgate.yaml's default does not list",
  );
  {
    const pub = s.ingress('u-h2-changed');
    update(
      'strict',
      pub,
      changed(pub, (i) => (i.spec.ingressClassName = 'internal')),
      'H2',
      'an update to a class not listed',
    );
    const internal = s.ingress('u-h2-kept', { ingressClassName: 'internal' });
    const moved = s.ingress('u-h2-moved', { ingressClassName: 'internal' });
    update(
      'strict',
      moved,
      changed(moved, (i) => (i.spec.ingressClassName = 'private')),
      'H2',
      'an Ingress of a delisted class moved to another class not listed',
    );
    const annotated = s.ingress(
      'u-h2-annotation',
      { ingressClassName: undefined },
      { annotations: { 'kubernetes.io/ingress.class': 'public' } },
    );
    update(
      'strict',
      annotated,
      changed(
        annotated,
        (i) => (((i.metadata as Json).annotations as Json)['kubernetes.io/ingress.class'] = 'internal'),
      ),
      'H2',
      'an update changing the class annotation to a class not listed',
    );
    const plainClass = s.ingress('u-h2-annotation-added');
    update(
      'strict',
      plainClass,
      changed(plainClass, (i) => ((i.metadata as Json).annotations = { 'kubernetes.io/ingress.class': 'internal' })),
      'H2',
      'an update adding the annotation of a class not listed',
    );
    update('strict', internal, relabelled(internal), 'admitted', 'an Ingress of a delisted class is relabelled');
  }

  // ---- H1: hostnames -------------------------------------------------------------------
  const host = (id: string, h: string, expected: Expected, what: string) =>
    create('strict', s.ingress(id, { rules: [s.rule(h)] }), expected, what);
  host('h1-under-suffix', `api.${S}`, 'admitted', "a host under the project's suffix");
  host('h1-suffix-itself', S, 'admitted', 'the suffix itself');
  host('h1-other-project', 'shop.example.com', 'H1', "another project's hostname");
  host('h1-look-alike', `evil${S}`, 'H1', 'a name that only ends like the suffix');
  host('h1-suffix-inside', `${S}.evil.net`, 'H1', 'the suffix inside another name');
  host('h1-wildcard-refused', `*.${S}`, 'H1', 'a wildcard where the project allows none');
  create(
    'strict',
    s.ingress('h1-rule-without-host', { rules: [s.rule(`www.${S}`), s.rule()] }),
    'H1',
    'a rule without host (every hostname)',
  );
  create(
    'strict',
    s.ingress('h1-default-backend', {
      rules: undefined,
      defaultBackend: { service: { name: 'web', port: { number: 80 } } },
    }),
    'H1',
    'a defaultBackend (every hostname)',
  );
  create(
    'strict',
    s.ingress('h1-tls-other', { tls: [{ hosts: [`www.${S}`, 'shop.example.com'], secretName: 'tls' }] }),
    'H1',
    'a TLS host of another project',
  );
  create(
    'strict',
    s.ingress('h1-tls-own', { tls: [{ hosts: [`www.${S}`], secretName: 'tls' }] }),
    'admitted',
    'a TLS host under the suffix',
  );
  create(
    'strict',
    s.ingress('h1-tls-no-hosts', { tls: [{ secretName: 'tls' }] }),
    'admitted',
    'a TLS entry without hosts (only tls[].hosts[] names hostnames)',
  );
  create(
    'open',
    o.ingress('h1-open-wildcard', { rules: [o.rule(`*.${O}`)] }),
    'admitted',
    'a wildcard under the default suffix template (wildcards from tenantgate.yaml)',
  );
  create(
    'open',
    o.ingress('h1-open-wildcard-above', { rules: [o.rule('*.example.com')] }),
    'H1',
    'a wildcard above the suffix',
  );
  create(
    'open',
    o.ingress('h1-open-strict-host', { rules: [o.rule(`www.${S}`)] }),
    'H1',
    "the other project's hostname",
  );
  create('strict', s.route('HTTPRoute', 'h1-http-own', [`www.${S}`, S]), 'admitted', 'an HTTPRoute under the suffix');
  create(
    'strict',
    s.route('HTTPRoute', 'h1-http-other', [`www.${S}`, 'shop.example.com']),
    'H1',
    "an HTTPRoute for another project's hostname",
  );
  create(
    'strict',
    s.route('HTTPRoute', 'h1-http-none', undefined),
    'H1',
    'an HTTPRoute without hostnames (every hostname of its listener)',
  );
  create('strict', s.route('GRPCRoute', 'h1-grpc-own', [`rpc.${S}`]), 'admitted', 'a GRPCRoute under the suffix');
  create('strict', s.route('GRPCRoute', 'h1-grpc-other', ['rpc.example.net']), 'H1', 'a GRPCRoute outside the suffix');
  create('strict', s.route('TLSRoute', 'h1-tls-route-own', [`tls.${S}`]), 'admitted', 'a TLSRoute under the suffix');
  create('strict', s.route('TLSRoute', 'h1-tls-route-none', undefined), 'H1', 'a TLSRoute without hostnames');
  create(
    'strict',
    s.route('TLSRoute', 'h1-tls-route-wildcard-above', ['*.example.com']),
    'H1',
    'a TLSRoute wildcard above the suffix',
  );
  create(
    'open',
    o.route('HTTPRoute', 'h1-open-http-wildcard', [`*.${O}`]),
    'admitted',
    'an HTTPRoute wildcard where wildcards are allowed',
  );
  create('strict', s.l4Route('TCPRoute', 'h1-tcp-own'), 'admitted', 'a TCPRoute attached in its own namespace');
  create(
    'strict',
    s.l4Route('TCPRoute', 'h1-tcp-own-named', n.strictNamespace),
    'admitted',
    'a TCPRoute naming its own namespace',
  );
  create(
    'strict',
    s.l4Route('TCPRoute', 'h1-tcp-other', 'shop-app'),
    'H1',
    "a TCPRoute attached to another namespace's Gateway (it has no hostname to judge)",
  );
  create('strict', s.l4Route('UDPRoute', 'h1-udp-own'), 'admitted', 'a UDPRoute attached in its own namespace');
  const twoParents = changed(s.l4Route('TCPRoute', 'h1-tcp-two-parents'), (r) =>
    (r.spec.parentRefs as Json[]).push({ name: 'gw', namespace: 'shop-app' }),
  );
  create('strict', twoParents, 'H1', "a TCPRoute attached in its own namespace and to another namespace's Gateway");
  create(
    'open',
    o.l4Route('UDPRoute', 'h1-udp-other', 'shop-app'),
    'H1',
    "a UDPRoute attached to another namespace's Gateway",
  );
  create('strict', s.gateway('h1-gateway-own'), 'admitted', 'a Gateway listener under the suffix');
  create(
    'strict',
    s.gateway('h1-gateway-other', { listeners: [s.listener('http', 'shop.example.com')] }),
    'H1',
    "a Gateway listener for another project's hostname",
  );
  create(
    'strict',
    s.gateway('h1-gateway-no-hostname', { listeners: [s.listener('http')] }),
    'H1',
    'an HTTP listener without hostname (every hostname)',
  );
  create(
    'strict',
    s.gateway('h1-gateway-tcp', { listeners: [s.listener('db', undefined, 'TCP', 5432)] }),
    'admitted',
    'a TCP listener without hostname (Gateway API ignores it)',
  );
  create(
    'strict',
    s.gateway('h1-gateway-udp-hostname', { listeners: [s.listener('dns', 'dns.example.net', 'UDP', 53)] }),
    'admitted',
    "a UDP listener's hostname, which Gateway API ignores",
  );
  create(
    'strict',
    s.gateway('h1-gateway-hostname-address', { addresses: [{ type: 'Hostname', value: `lb.${S}` }] }),
    'admitted',
    'a Hostname address under the suffix',
  );
  create(
    'strict',
    s.gateway('h1-gateway-hostname-address-other', { addresses: [{ type: 'Hostname', value: 'lb.example.net' }] }),
    'H1',
    'a Hostname address outside the suffix',
  );
  create(
    'strict',
    s.gateway('h1-gateway-hostname-address-wildcard', { addresses: [{ type: 'Hostname', value: `*.${S}` }] }),
    'H1',
    'a wildcard Hostname address where wildcards are not allowed',
  );
  create(
    'strict',
    s.gateway('h1-gateway-https-no-hostname', { listeners: [s.listener('https', undefined, 'HTTPS', 443)] }),
    'H1',
    'an HTTPS listener without hostname',
  );
  create(
    'strict',
    s.gateway('h1-gateway-tls-no-hostname', { listeners: [s.listener('tls', undefined, 'TLS', 8443)] }),
    'H1',
    'a TLS listener without hostname',
  );
  create('open', o.route('HTTPRoute', 'h1-open-inner-wildcard', [`a.*.${O}`]), 'H1', 'a * that is not the first label');
  create('open', o.route('HTTPRoute', 'h1-open-star', ['*']), 'H1', 'a bare * (every hostname)');
  create(
    'open',
    o.gateway('h1-open-double-wildcard', { listeners: [o.listener('http', `*.*.${O}`)] }),
    'H1',
    'a wildcard of wildcards',
  );
  create(
    'open',
    o.listenerSet('h1-open-listener-set-udp', [o.listener('dns', 'dns.example.net', 'UDP', 53)]),
    'admitted',
    "a ListenerSet UDP listener's hostname, which Gateway API ignores",
  );
  create(
    'strict',
    s.listenerSet('h1-listener-set-own', [s.listener('extra', `extra.${S}`)]),
    'admitted',
    'a ListenerSet listener under the suffix',
  );
  create(
    'strict',
    s.listenerSet('h1-listener-set-other', [s.listener('extra', 'shop.example.com')]),
    'H1',
    "a ListenerSet listener for another project's hostname",
  );
  create(
    'strict',
    s.listenerSet('h1-listener-set-no-hostname', [s.listener('extra')]),
    'H1',
    'a ListenerSet HTTP listener without hostname',
  );
  create(
    'strict',
    s.listenerSet('h1-listener-set-empty-hostname', [s.listener('extra', '')]),
    'H1',
    'a ListenerSet listener whose hostname is empty (every hostname)',
  );
  create(
    'strict',
    s.listenerSet('h1-listener-set-tcp-empty-hostname', [s.listener('db', '', 'TCP', 5432)]),
    'admitted',
    "a TCP listener's empty hostname, which Gateway API ignores",
  );
  create(
    'strict',
    s.listenerSet('h1-x-listener-set-own', [s.listener('extra', `x.${S}`)], 'XListenerSet'),
    'admitted',
    'an XListenerSet (experimental channel) listener under the suffix',
  );
  create(
    'strict',
    s.listenerSet('h1-x-listener-set-other', [s.listener('extra', 'shop.example.com')], 'XListenerSet'),
    'H1',
    "an XListenerSet listener for another project's hostname",
  );
  create(
    'strict',
    s.listenerSet('h1-listener-set-tcp', [s.listener('db', undefined, 'TCP', 5432)]),
    'admitted',
    'a ListenerSet TCP listener without hostname',
  );
  {
    const ing = s.ingress('u-h1-add-host');
    update(
      'strict',
      ing,
      changed(ing, (i) => (i.spec.rules as Json[]).push(s.rule('shop.example.com'))),
      'H1',
      "an update adding another project's host",
    );
    const stale = s.ingress('u-h1-kept', { rules: [s.rule('old.example.net')] });
    update(
      'strict',
      stale,
      changed(stale, (i) => (i.spec.rules as Json[]).push(s.rule(`api.${S}`))),
      'admitted',
      'an update adding an own host beside one admitted before',
    );
    const tls = s.ingress('u-h1-add-tls');
    update(
      'strict',
      tls,
      changed(tls, (i) => (i.spec.tls = [{ hosts: ['shop.example.com'], secretName: 'tls' }])),
      'H1',
      'an update adding a TLS host of another project',
    );
    const r = s.route('HTTPRoute', 'u-h1-route-add', [`www.${S}`]);
    update(
      'strict',
      r,
      changed(r, (x) => (x.spec.hostnames as string[]).push('shop.example.com')),
      'H1',
      "an update adding another project's hostname to a route",
    );
    const staleRoute = s.route('HTTPRoute', 'u-h1-route-kept', ['old.example.net']);
    update(
      'strict',
      staleRoute,
      changed(staleRoute, (x) => (x.spec.hostnames as string[]).push(`api.${S}`)),
      'admitted',
      'a route adding an own hostname beside one admitted before',
    );
    const tcp = s.l4Route('TCPRoute', 'u-h1-tcp-moved');
    update(
      'strict',
      tcp,
      changed(tcp, (x) => ((x.spec.parentRefs as Json[])[0]!.namespace = 'shop-app')),
      'H1',
      'a TCPRoute re-attached to another namespace',
    );
    const udp = s.l4Route('UDPRoute', 'u-h1-udp-moved');
    update(
      'strict',
      udp,
      changed(udp, (x) => ((x.spec.parentRefs as Json[])[0]!.namespace = 'shop-app')),
      'H1',
      'a UDPRoute re-attached to another namespace',
    );
    const grpc = s.route('GRPCRoute', 'u-h1-grpc-hostnames-removed', [`rpc.${S}`]);
    update(
      'strict',
      grpc,
      changed(grpc, (x) => delete x.spec.hostnames),
      'H1',
      'a GRPCRoute whose hostnames are removed (every hostname)',
    );
    const tlsRoute = s.route('TLSRoute', 'u-h1-tls-route-wildcard', [`tls.${S}`]);
    update(
      'strict',
      tlsRoute,
      changed(tlsRoute, (x) => (x.spec.hostnames = [`*.${S}`])),
      'H1',
      'a TLSRoute changed to a wildcard where wildcards are not allowed',
    );
    const lsOpen = s.listenerSet('u-h1-listener-set-empty', [s.listener('extra', `extra.${S}`)]);
    update(
      'strict',
      lsOpen,
      changed(lsOpen, (l) => (l.spec.listeners as Json[]).push(s.listener('open', '', 'HTTP', 8080))),
      'H1',
      'a ListenerSet adding a listener with an empty hostname',
    );
    const tcpKept = s.l4Route('TCPRoute', 'u-h1-tcp-relabelled');
    update('strict', tcpKept, relabelled(tcpKept), 'admitted', 'a TCPRoute relabelled');
    const gw = s.gateway('u-h1-gateway-listener');
    update(
      'strict',
      gw,
      changed(gw, (g) => (g.spec.listeners as Json[]).push(s.listener('other', 'shop.example.com'))),
      'H1',
      "an update adding a listener for another project's hostname",
    );
    const gwOwn = s.gateway('u-h1-gateway-own-listener');
    update(
      'strict',
      gwOwn,
      changed(gwOwn, (g) => (g.spec.listeners as Json[]).push(s.listener('api', `api.${S}`))),
      'admitted',
      'an update adding a listener under the suffix',
    );
    const ls = s.listenerSet('u-h1-listener-set', [s.listener('extra', `extra.${S}`)]);
    update(
      'strict',
      ls,
      changed(ls, (l) => (l.spec.listeners as Json[]).push(s.listener('steal', 'shop.example.com'))),
      'H1',
      "a ListenerSet adding a listener for another project's hostname",
    );
    const lsStale = s.listenerSet('u-h1-listener-set-kept', [s.listener('old', 'old.example.net')]);
    update(
      'strict',
      lsStale,
      relabelled(lsStale),
      'admitted',
      'a ListenerSet whose hostname was admitted before is relabelled',
    );
  }

  // ---- H4: gateway classes; X2 on Gateway addresses ----------------------------------
  create(
    'strict',
    s.gateway('h4-not-listed', { gatewayClassName: 'internal' }),
    'H4',
    'a Gateway of a class not listed',
  );
  create(
    'open',
    o.gateway('h4-open-any', { gatewayClassName: 'internal' }),
    'admitted',
    'any GatewayClass where no list is given',
  );
  create(
    'strict',
    s.gateway('x2-gateway-address-inside', { addresses: [{ type: 'IPAddress', value: '203.0.113.7' }] }),
    'admitted',
    'a Gateway address inside the CIDR',
  );
  create(
    'strict',
    s.gateway('x2-gateway-address-outside', { addresses: [{ type: 'IPAddress', value: '8.8.8.8' }] }),
    'X2',
    'a Gateway address outside the CIDRs',
  );
  create(
    'strict',
    s.gateway('x2-gateway-address-untyped', { addresses: [{ value: '8.8.4.4' }] }),
    'X2',
    'a Gateway address without type (IPAddress) outside the CIDRs',
  );
  create(
    'strict',
    s.gateway('x2-gateway-address-named', { addresses: [{ type: 'NamedAddress', value: 'shared-pool' }] }),
    'X2',
    'a Gateway address of another type',
  );
  create(
    'strict',
    s.gateway('x2-gateway-address-custom-type', { addresses: [{ type: 'example.com/pool', value: 'public' }] }),
    'X2',
    "a Gateway address of an implementation's own type",
  );
  create(
    'strict',
    s.gateway('x2-gateway-address-mapped', { addresses: [{ type: 'IPAddress', value: '::ffff:203.0.113.5' }] }),
    'X2',
    'an IPv4-mapped IPv6 address (an IPv6 address, outside the IPv4 CIDR)',
  );
  create(
    'strict',
    s.gateway('x2-gateway-address-garbage', { addresses: [{ type: 'IPAddress', value: 'not-an-address' }] }),
    'X2',
    'an IPAddress that is no address',
  );
  create(
    'strict',
    s.gateway('x2-gateway-address-leading-zero', { addresses: [{ type: 'IPAddress', value: '203.0.113.05' }] }),
    'X2',
    'an address with a leading zero (ambiguous: octal or decimal)',
  );
  create(
    'strict',
    s.gateway('x2-gateway-address-cidr', { addresses: [{ type: 'IPAddress', value: '203.0.113.0/28' }] }),
    'X2',
    'a CIDR where an address is asked for (the allowed CIDR itself)',
  );
  create(
    'strict',
    s.gateway('x2-gateway-address-host-cidr', { addresses: [{ type: 'IPAddress', value: '203.0.113.5/32' }] }),
    'X2',
    'an address written as a /32 CIDR',
  );
  create(
    'open',
    o.gateway('x2-open-gateway-address', { addresses: [{ type: 'IPAddress', value: '203.0.113.7' }] }),
    'X2',
    'a Gateway address where the project lists no CIDR',
  );
  {
    const gw = s.gateway('u-h4-changed');
    update(
      'strict',
      gw,
      changed(gw, (g) => (g.spec.gatewayClassName = 'internal')),
      'H4',
      'an update to a GatewayClass not listed',
    );
    const internal = s.gateway('u-h4-kept', { gatewayClassName: 'internal' });
    update('strict', internal, relabelled(internal), 'admitted', 'a Gateway of a delisted class is relabelled');
    const addressed = s.gateway('u-x2-gateway-address');
    update(
      'strict',
      addressed,
      changed(addressed, (g) => (g.spec.addresses = [{ type: 'IPAddress', value: '8.8.8.8' }])),
      'X2',
      'an update adding a Gateway address outside the CIDRs',
    );
    const staleAddress = s.gateway('u-x2-gateway-address-kept', {
      addresses: [{ type: 'IPAddress', value: '8.8.8.8' }],
    });
    update(
      'strict',
      staleAddress,
      changed(staleAddress, (g) => (g.spec.addresses as Json[]).push({ type: 'IPAddress', value: '203.0.113.8' })),
      'admitted',
      'an update adding an allowed address beside one admitted before',
    );
  }
  return cases;
}

/** The rules every case of the corpus is about, each of which must be refused and admitted on CREATE and UPDATE. */
export const CORPUS_RULES: readonly RuleId[] = [
  'X1',
  'X2',
  'X3',
  'X4',
  'X5',
  'X6',
  'X7',
  'X8',
  'X9',
  'X10',
  'H1',
  'H2',
  'H4',
];

/** The rule a case is about: its expected rule, or for an admitted case the rule its id names (`x8-…`). */
export function ruleOfCase(c: AllowListCase): RuleId {
  if (c.expected !== 'admitted') return c.expected;
  const id = /^(?:u-)?([xh]\d+)-/.exec(c.id)?.[1]?.toUpperCase();
  if (!id || !(CORPUS_RULES as readonly string[]).includes(id))
    throw new Error(`corpus case ${c.id}: its id names no rule of ${CORPUS_RULES.join(', ')}`);
  return id as RuleId;
}

export const namespaceOf = (n: CorpusNames, c: AllowListCase): string =>
  c.project === 'strict' ? n.strictNamespace : n.openNamespace;

/** The offline form's verdict: 'admitted', the rule refused, or the rules joined by + (a corpus bug). */
export function offlineVerdict(n: CorpusNames, c: AllowListCase): string {
  const subject = allowSubject(corpusConfig(n), corpusProjects(n)[c.project], c.kind, namespaceOf(n, c), c.id);
  const rules = [...new Set(allowListViolations(subject, c.kind as AllowListKind, c.object, c.old).map((v) => v.rule))];
  return rules.length === 0 ? 'admitted' : rules.join('+');
}
