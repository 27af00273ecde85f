/**
 * The allow-lists' two forms kept equal (docs/adr/0095-allow-lists-in-the-api-server.md, "One definition per
 * rule, two forms kept equal by a test"): every case of the corpus (test/support/allow-lists-corpus.ts) goes
 * through the real API server as alice (a tenant) with `--dry-run=server`, judged by the shipped
 * ValidatingAdmissionPolicies and the AllowList `allowListParams` computes for its Project, and through the
 * offline form (`allowListViolations`). For each the two verdicts must be the same and the one written in
 * the corpus: 'admitted', or refused with that rule id, the API server's message starting `[RULE] `.
 *
 * Nothing of tenantgate runs: no webhook, no controller; only the policies, their parameters and the CRDs.
 * An UPDATE's old object is stored first under wider parameters (the lists before they were narrowed, so
 * that objects a narrowed list refuses can exist), then the project's own parameters are applied and the
 * new object is sent with `kubectl replace --dry-run=server`: its body is the stored object with the
 * case's change (old → new) applied, so what the update adds is what the case adds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { join } from 'node:path';
import {
  allowListFor,
  allowListParams,
  ALLOW_LIST_NAME,
  type AllowListObject,
} from '../../src/validate/allow-list-params.js';
import { LABEL_PROJECT } from '../../src/validate/types.js';
import {
  applyOwnerBindings,
  installBase,
  MANIFESTS,
  unheld,
  unregisterWebhooks,
} from '../support/devcluster/tenantgate.js';
import { cluster, eventually, kubectl, uniqueName } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';
import { REPO_ROOT } from '../support/paths.js';
import {
  allowListCorpus,
  CORPUS_RULES,
  corpusConfig,
  corpusProjects,
  namespaceOf,
  offlineVerdict,
  PROJECT_OWNERS_GROUP,
  ruleOfCase,
  WIDER_CONFIG,
  widerProject,
  type AllowListCase,
  type CorpusNames,
} from '../support/allow-lists-corpus.js';

type Json = Record<string, unknown>;

const strictProject = uniqueName('adiff-strict');
const openProject = uniqueName('adiff-open');
const NAMES: CorpusNames = {
  strictProject,
  openProject,
  strictNamespace: `${strictProject}-app`,
  openNamespace: `${openProject}-app`,
  batchClass: uniqueName('adiff-batch'),
  otherClass: uniqueName('adiff-other'),
  gvisor: uniqueName('adiff-gvisor'),
  kata: uniqueName('adiff-kata'),
};
const CORPUS = allowListCorpus(NAMES);
const SENT = CORPUS.filter((c) => !c.offlineOnly);
const POLICIES = [
  join(MANIFESTS, 'policies', 'allow-lists.yaml'),
  join(MANIFESTS, 'policies', 'allow-list-params-policy.yaml'),
];
const ALLOW_LIST_CRD = join(MANIFESTS, 'crd', 'allowlists.tenantgate.io.yaml');
const GATEWAY_FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'gateway-api');

/** What this file installed cluster-wide and removes again (a cluster that had them keeps them). */
const installed: string[][] = [];

/** The API server's verdict: 'admitted', the rule id its `[RULE] ` message starts with, or `error: …`. */
interface ApiVerdict {
  verdict: string;
  message: string;
}

const byName = (objects: readonly object[]) => objects.map((o) => JSON.stringify(o)).join('\n');
const nameOf = (o: Json): string => (o.metadata as { name: string }).name;
const RULE_MESSAGE = /denied request: \[([A-Z]+\d+)\] (.*)$/;

/** kubectl's stderr without the API server's warnings (deprecated fields: externalIPs, loadBalancerIP). */
const withoutWarnings = (stderr: string): string =>
  stderr
    .split('\n')
    .filter((l) => !l.startsWith('Warning: '))
    .join('\n');

function verdictOf(exitOk: boolean, stderr: string): ApiVerdict {
  if (exitOk) return { verdict: 'admitted', message: '' };
  const text = withoutWarnings(stderr);
  const rule = RULE_MESSAGE.exec(text);
  if (rule) return { verdict: rule[1]!, message: `[${rule[1]}] ${rule[2]}` };
  return { verdict: `error: ${text.trim().split('\n')[0] ?? ''}`, message: text.trim() };
}

/**
 * Sends `objects` in one kubectl call (`args` + `-f -`, `-o name`) and reads each object's verdict: a
 * success names it in stdout, a refusal in one line of stderr. An object neither names is sent alone.
 */
async function batchVerdicts(user: string, args: string[], objects: Json[]): Promise<Map<string, ApiVerdict>> {
  const out = new Map<string, ApiVerdict>();
  if (objects.length === 0) return out;
  const result = await kubectl(user, [...args, '-o', 'name', '-f', '-'], { input: byName(objects), reject: false });
  const names = new Set(objects.map(nameOf));
  for (const line of result.stdout.split('\n')) {
    const name = line.trim().split('/').pop() ?? '';
    if (names.has(name)) out.set(name, verdictOf(true, ''));
  }
  for (const line of withoutWarnings(result.stderr).split('\n')) {
    const name = [...line.matchAll(/"([a-z0-9.-]+)"/g)].map((m) => m[1]!).find((n) => names.has(n) && !out.has(n));
    if (name) out.set(name, verdictOf(false, line));
  }
  for (const object of objects.filter((o) => !out.has(nameOf(o)))) {
    const alone = await kubectl(user, [...args, '-f', '-'], { input: JSON.stringify(object), reject: false });
    out.set(nameOf(object), verdictOf(alone.exitCode === 0, alone.stderr));
  }
  return out;
}

/** RFC 7386 merge patch taking `from` to `to` (arrays and scalars are replaced whole). */
function mergeDiff(from: unknown, to: unknown): unknown {
  const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(from) || !isObject(to)) return to;
  const patch: Json = {};
  for (const key of new Set([...Object.keys(from), ...Object.keys(to)])) {
    if (!(key in to)) patch[key] = null;
    else if (JSON.stringify(from[key]) !== JSON.stringify(to[key]))
      patch[key] = isObject(from[key]) && isObject(to[key]) ? mergeDiff(from[key], to[key]) : to[key];
  }
  return patch;
}

function applyMerge(target: unknown, patch: unknown): unknown {
  const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(patch)) return patch;
  const out: Json = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = applyMerge(out[key], value);
  }
  return out;
}

/** The body of an update: the stored object, without status and managedFields, with the case's change. */
function updateBody(stored: Json, c: AllowListCase): Json {
  const { status: _status, ...rest } = stored;
  const metadata = { ...(rest.metadata as Json) };
  delete metadata.managedFields;
  return applyMerge({ ...rest, metadata }, mergeDiff(c.old, c.object)) as Json;
}

/** The old object as it is created: a pod the case binds later has no nodeName yet. */
function oldToCreate(c: AllowListCase): Json {
  const old = structuredClone(c.old!);
  if (c.bindTo) delete (old.spec as Json).nodeName;
  return old;
}

/** Applies the objects as admin; AllowLists without their finalizer (no controller runs here to take it off). */
async function apply(objects: ReadonlyArray<object | AllowListObject>): Promise<void> {
  const isAllowList = (o: object): o is AllowListObject => (o as { kind?: string }).kind === 'AllowList';
  await kubectl('admin', ['apply', '-f', '-'], { input: byName(objects.map((o) => (isAllowList(o) ? unheld(o) : o))) });
}

/** The objects of a manifest file, as `kind.group/name`. */
async function objectsOf(file: string): Promise<string[]> {
  return (await kubectl('admin', ['create', '--dry-run=client', '-o', 'name', '-f', file])).stdout
    .split('\n')
    .filter(Boolean);
}

/**
 * Applies `file`; when the cluster had none of its objects, remembers to delete them afterwards (a
 * cluster with tenantgate's policies installed keeps its own).
 */
async function install(file: string): Promise<void> {
  const names = await objectsOf(file);
  const present = (await kubectl('admin', ['get', ...names, '--ignore-not-found', '-o', 'name'])).stdout
    .split('\n')
    .filter(Boolean);
  if (present.length === 0) installed.push(['-f', file]);
  await kubectl('admin', ['apply', '--server-side', '--force-conflicts', '-f', file]);
}

/** The Gateway API CRDs of test/fixtures/gateway-api/ the cluster lacks (it keeps its own), each once. */
async function installGatewayApi(): Promise<string[]> {
  const crds = new Map<string, Json>();
  for (const file of readdirSync(GATEWAY_FIXTURES)
    .filter((f) => f.endsWith('.yaml'))
    .sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(GATEWAY_FIXTURES, file), 'utf8'))) {
      const crd = doc.toJS() as Json | null;
      if (crd && !crds.has(nameOf(crd))) crds.set(nameOf(crd), crd);
    }
  }
  for (const [name, crd] of crds) {
    if ((await kubectl('admin', ['get', 'crd', name], { reject: false })).exitCode === 0) continue;
    await kubectl('admin', ['create', '-f', '-'], { input: JSON.stringify(crd) });
    installed.push(['crd', name]);
  }
  return [...crds.keys()].map((name) => `crd/${name}`);
}

/** Alice's dry-run create of `object` in `namespace`: its verdict. */
async function probe(namespace: string, object: Json): Promise<ApiVerdict> {
  const result = await kubectl('alice', ['-n', namespace, 'create', '--dry-run=server', '-f', '-'], {
    input: JSON.stringify(object),
    reject: false,
  });
  return verdictOf(result.exitCode === 0, result.stderr);
}

const probePod = (name: string, spec: Json): Json => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: {
    automountServiceAccountToken: false,
    nodeSelector: { pool: NAMES.strictProject },
    containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }],
    ...spec,
  },
});
/** Refused [X8] under any parameters: the policies are in effect in the namespace. */
const NODE_NAME_PROBE = probePod('probe-node-name', { nodeName: 'node-a' });
/** Admitted by the wider parameters, refused [X9] by the strict project's. */
const IMAGE_PROBE = probePod('probe-image', {
  containers: [{ name: 'main', image: 'docker.io/library/busybox:1.36' }],
});
/** Admitted by the wider parameters, refused [X2] by the open project's. */
const ADDRESS_PROBE: Json = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'probe-address' },
  spec: { ports: [{ port: 80 }], externalIPs: ['203.0.113.1'] },
};

async function paramsInEffect(what: string, checks: Array<[string, Json, string]>): Promise<void> {
  await eventually(
    async () => {
      for (const [namespace, object, expected] of checks) {
        const got = await probe(namespace, object);
        expect(got.verdict, `${namespace}: ${nameOf(object)}`).toBe(expected);
      }
    },
    { timeoutMs: 60_000, what },
  );
}

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  // Only the policies judge here: no tenantgate webhook is registered.
  await unregisterWebhooks(info);
  await install(ALLOW_LIST_CRD);
  const gatewayApi = await installGatewayApi();
  await kubectl('admin', [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/allowlists.tenantgate.io',
    ...gatewayApi,
  ]);
  for (const file of POLICIES) await install(file);
  await apply([
    ...[
      [NAMES.batchClass, 100],
      [NAMES.otherClass, 200],
    ].map(([name, value]) => ({
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name },
      value,
    })),
    ...[NAMES.gvisor, NAMES.kata].map((name) => ({
      apiVersion: 'node.k8s.io/v1',
      kind: 'RuntimeClass',
      metadata: { name },
      handler: 'runc',
    })),
  ]);
  const projects = corpusProjects(NAMES);
  for (const [project, namespace] of [
    [projects.strict, NAMES.strictNamespace],
    [projects.open, NAMES.openNamespace],
  ] as const) {
    await apply([
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {
          name: namespace,
          labels: { [LABEL_PROJECT]: project.metadata.name, 'tenantgate.io/tenant': project.spec.tenant },
        },
      },
    ]);
    await applyOwnerBindings(info, project, [namespace]);
    // Kubernetes' admin role does not cover Gateway API: the platform grants owners its kinds in their namespaces.
    const resources = [
      'gateways',
      'listenersets',
      'xlistenersets',
      'httproutes',
      'grpcroutes',
      'tlsroutes',
      'tcproutes',
      'udproutes',
    ];
    const rules = [
      {
        apiGroups: ['gateway.networking.k8s.io', 'gateway.networking.x-k8s.io'],
        resources,
        verbs: ['get', 'list', 'create', 'update', 'patch'],
      },
    ];
    await apply([
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'gateway-api', namespace },
        rules,
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'gateway-api', namespace },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'gateway-api' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: PROJECT_OWNERS_GROUP }],
      },
    ]);
    await eventually(async () => kubectl('admin', ['-n', namespace, 'get', 'serviceaccount', 'default']), {
      what: `${namespace}: default ServiceAccount`,
    });
  }
  // The old objects of the updates, stored under the lists before they were narrowed.
  const wider = allowListParams(WIDER_CONFIG, widerProject(NAMES));
  await apply(
    [NAMES.strictNamespace, NAMES.openNamespace].map((namespace) => ({
      ...allowListFor(WIDER_CONFIG, widerProject(NAMES), namespace),
      spec: wider,
    })),
  );
  await paramsInEffect('the wider parameters in effect', [
    [NAMES.strictNamespace, NODE_NAME_PROBE, 'X8'],
    [NAMES.strictNamespace, IMAGE_PROBE, 'admitted'],
    [NAMES.openNamespace, ADDRESS_PROBE, 'admitted'],
  ]);
  for (const namespace of [NAMES.strictNamespace, NAMES.openNamespace]) {
    const olds = SENT.filter((c) => c.old && namespaceOf(NAMES, c) === namespace).map(oldToCreate);
    if (olds.length === 0) continue;
    const created = await kubectl('admin', ['-n', namespace, 'create', '-o', 'name', '-f', '-'], {
      input: byName(olds),
      reject: false,
    });
    expect(withoutWarnings(created.stderr), 'every old object is stored under the wider parameters').toBe('');
  }
  for (const c of SENT.filter((x) => x.bindTo)) {
    const binding = {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: c.id },
      target: { apiVersion: 'v1', kind: 'Node', name: c.bindTo },
    };
    await kubectl(
      'admin',
      ['create', '--raw', `/api/v1/namespaces/${namespaceOf(NAMES, c)}/pods/${c.id}/binding`, '-f', '-'],
      { input: JSON.stringify(binding) },
    );
  }
  // The project's own parameters, as the controller and render write them.
  await apply([
    allowListFor(corpusConfig(NAMES), projects.strict, NAMES.strictNamespace),
    allowListFor(corpusConfig(NAMES), projects.open, NAMES.openNamespace),
  ]);
  await paramsInEffect("the projects' parameters in effect", [
    [NAMES.strictNamespace, IMAGE_PROBE, 'X9'],
    [NAMES.openNamespace, ADDRESS_PROBE, 'X2'],
  ]);
}, 300_000);

afterAll(async () => {
  for (const namespace of [NAMES.strictNamespace, NAMES.openNamespace]) {
    // A pod bound to a node no kubelet runs would wait for that kubelet forever.
    await kubectl(
      'admin',
      ['-n', namespace, 'delete', 'pods', '--all', '--grace-period=0', '--force', '--ignore-not-found'],
      { reject: false },
    );
  }
  await removeProjects([NAMES.strictProject, NAMES.openProject]);
  await kubectl('admin', ['delete', 'priorityclass', NAMES.batchClass, NAMES.otherClass, '--ignore-not-found'], {
    reject: false,
  });
  await kubectl('admin', ['delete', 'runtimeclass', NAMES.gvisor, NAMES.kata, '--ignore-not-found'], {
    reject: false,
  });
  for (const args of installed.reverse())
    await kubectl('admin', ['delete', ...args, '--ignore-not-found', '--wait=false'], { reject: false });
});

interface Row {
  c: AllowListCase;
  offline: string;
  api: ApiVerdict;
}

/** The verdicts of every case the API server can be sent, CREATEs and UPDATEs batched per namespace. */
async function apiVerdicts(): Promise<Map<AllowListCase, ApiVerdict>> {
  const out = new Map<AllowListCase, ApiVerdict>();
  for (const namespace of [NAMES.strictNamespace, NAMES.openNamespace]) {
    const here = SENT.filter((c) => namespaceOf(NAMES, c) === namespace);
    const creates = here.filter((c) => !c.old);
    const created = await batchVerdicts(
      'alice',
      ['-n', namespace, 'create', '--dry-run=server'],
      creates.map((c) => c.object),
    );
    for (const c of creates) out.set(c, created.get(c.id)!);
    const updates = here.filter((c) => c.old);
    if (updates.length === 0) continue;
    const stored = JSON.parse(
      (
        await kubectl('admin', ['-n', namespace, 'get', '-o', 'json', '-f', '-'], {
          input: byName(updates.map((c) => c.old!)),
        })
      ).stdout,
    ) as { items?: Json[] } & Json;
    const storedByName = new Map((stored.items ?? [stored]).map((o) => [nameOf(o), o]));
    const whole = updates.filter((c) => !c.subresource);
    const replaced = await batchVerdicts(
      'alice',
      ['-n', namespace, 'replace', '--dry-run=server'],
      whole.map((c) => updateBody(storedByName.get(c.id)!, c)),
    );
    for (const c of whole) out.set(c, replaced.get(c.id)!);
    for (const c of updates.filter((x) => x.subresource)) {
      const path = `/api/v1/namespaces/${namespace}/pods/${c.id}/${c.subresource}?dryRun=All`;
      const result = await kubectl('alice', ['replace', '--raw', path, '-f', '-'], {
        input: JSON.stringify(updateBody(storedByName.get(c.id)!, c)),
        reject: false,
      });
      out.set(c, verdictOf(result.exitCode === 0, result.stderr));
    }
  }
  return out;
}

/**
 * Whether a refusal's message has the ADR's shape:
 * `[RULE] Kind namespace/name: … is not allowed for project P; allowed: …`.
 */
function messageShaped(c: AllowListCase, message: string): boolean {
  const project = c.project === 'strict' ? NAMES.strictProject : NAMES.openProject;
  return (
    message.startsWith(`[${c.expected}] ${c.kind} ${namespaceOf(NAMES, c)}/${c.id}: `) &&
    message.includes(` is not allowed for project ${project}; allowed: `)
  );
}

function table(rows: Row[]): string {
  const head = ['case', 'kind', 'operation', 'expected', 'offline', 'API server', 'what'];
  const body = rows.map(({ c, offline, api }) => [
    c.id,
    c.kind,
    c.old ? `UPDATE${c.subresource ? `/${c.subresource}` : ''}` : 'CREATE',
    c.expected,
    offline,
    api.verdict,
    c.what,
  ]);
  const widths = head.map((h, i) => Math.min(60, Math.max(h.length, ...body.map((r) => r[i]!.length))));
  return [head, ...body].map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join(' | ')).join('\n');
}

describe("the allow-lists' two forms on the corpus", () => {
  it('sends every rule refused and admitted on CREATE and UPDATE, but the updates of immutable fields', () => {
    const unsent: string[] = [];
    for (const rule of CORPUS_RULES) {
      for (const operation of ['CREATE', 'UPDATE'] as const) {
        const of = SENT.filter((c) => ruleOfCase(c) === rule && (c.old !== undefined) === (operation === 'UPDATE'));
        if (!of.some((c) => c.expected === rule)) unsent.push(`${rule} ${operation} refused`);
        if (!of.some((c) => c.expected === 'admitted')) unsent.push(`${rule} ${operation} admitted`);
      }
    }
    // A pod's priority and runtime class, a ResourceClaim's spec, a claim's selector: immutable.
    expect(unsent).toEqual(['X1 UPDATE refused', 'X6 UPDATE refused', 'X7 UPDATE refused', 'X10 UPDATE refused']);
  });

  it('give every case the same verdict and rule id, the one written in the corpus', async () => {
    const api = await apiVerdicts();
    const rows: Row[] = SENT.map((c) => ({
      c,
      offline: offlineVerdict(NAMES, c),
      api: api.get(c) ?? { verdict: 'error: not sent', message: '' },
    }));
    const disagreements = rows.filter(({ c, offline, api: a }) => offline !== c.expected || a.verdict !== c.expected);
    const misshapen = rows.filter(
      ({ c, api: a }) => c.expected !== 'admitted' && a.verdict === c.expected && !messageShaped(c, a.message),
    );
    const report = [
      `${SENT.length} cases sent (${CORPUS.length - SENT.length} offline only: ` +
        `updates the API server's validation refuses first), ${disagreements.length} disagreements`,
      disagreements.length ? table(disagreements) : '',
      ...misshapen.map(({ c, api: a }) => `${c.id}: message not shaped as the ADR says: ${a.message}`),
      ...disagreements
        .filter(({ api: a }) => a.verdict.startsWith('error'))
        .map(({ c, api: a }) => `${c.id}: ${a.message}`),
    ]
      .filter(Boolean)
      .join('\n');
    const tally = new Map<string, number>();
    for (const { api: a } of rows) tally.set(a.verdict, (tally.get(a.verdict) ?? 0) + 1);
    process.stderr.write(
      `API server verdicts: ${[...tally]
        .sort()
        .map(([v, k]) => `${v} ${k}`)
        .join(', ')}\n${report}\n`,
    );
    expect(disagreements.length + misshapen.length, report).toBe(0);
  }, 180_000);

  it('refuses a namespace whose parameters are gone (fail closed), and admits again once they are back', async () => {
    const namespace = NAMES.openNamespace;
    const plain = probePod('probe-plain', { nodeSelector: undefined });
    expect((await probe(namespace, plain)).verdict).toBe('admitted');
    await kubectl('admin', ['-n', namespace, 'delete', 'allowlist', ALLOW_LIST_NAME]);
    await eventually(
      async () => expect((await probe(namespace, plain)).verdict).toMatch(/^error: .*(no params found|not found)/i),
      { what: 'a pod refused without parameters' },
    );
    await apply([allowListFor(corpusConfig(NAMES), corpusProjects(NAMES).open, namespace)]);
    await eventually(async () => expect((await probe(namespace, plain)).verdict).toBe('admitted'), {
      what: 'a pod admitted with parameters again',
    });
  }, 120_000);
});
