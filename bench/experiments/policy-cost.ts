/**
 * `npm run bench -- policy-cost`: what the allow-list policy on pods costs the API server per pod create,
 * measured in the API server's own code and nothing else, so that a change to a policy or to its parameters
 * is judged in minutes and without the spread of a whole create (the allow-lists bench's rounds differ by
 * as much as the 10 % it judges). A Go benchmark (bench/experiments/policy-cost/policy_cost_test.go, built
 * in the control plane's module: the k8s.io/apiserver that kube-apiserver is built from) compiles each case's policy as the policy plugin
 * does and calls its Validate on a pod create, as the plugin does for every request the policy matches.
 *
 * The pod is the allow-lists bench's as the API server stores it (defaults, the service account's token
 * volume, the two not-ready/unreachable tolerations); the parameters are its project's AllowList
 * (allowListFor) with the metadata the API server adds. Cases, interleaved by rounds (BENCH_POLICY_ROUNDS,
 * default 5, each case for BENCH_POLICY_SECONDS, default 1, per round):
 *  - shipped: tenantgate-allow-pods with the AllowList as the controller writes it (no managedFields);
 *  - with managedFields: the same AllowList with the one managedFields entry a create or an apply writes;
 *  - kubectl apply: the same with an apply's last-applied annotation as well (client-side apply);
 *  - pod lists only: a parameter object holding only the lists the pods policy reads;
 *  - parameters read in place: the shipped AllowList handed over so that the API server's conversion reads
 *    its content instead of writing it to JSON and parsing it back (what a change to k8s.io/apiserver would
 *    save; the Go side wraps it in a type with ToUnstructured);
 *  - no messageExpression: the policy without its messages (what the guarded messages cost);
 *  - one check: one validation reading the pod and the parameters; one check, no parameters: without
 *    paramKind (what a policy costs before its rules and before its parameters).
 * Reported: time per request on one CPU (GOMAXPROCS=1, so the Go runtime's garbage collection is in it),
 * allocations per request, and each case ÷ shipped, the median of the rounds' own ratios.
 * Results: bench/results/policy-cost.json.
 *
 *   npm run bench -- policy-cost
 *   BENCH_POLICY_ROUNDS=5 BENCH_POLICY_SECONDS=1
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { allowListFor, type AllowListObject } from '../../src/validate/allow-list-params.js';
import { allowListPolicyObjects } from '../../src/validate/policies/allow-lists-policy.js';
import { LABEL_PROJECT } from '../../src/validate/types.js';
import {
  ALLOW_BENCH_NAMESPACE,
  ALLOW_BENCH_POOL,
  ALLOW_BENCH_PROJECT,
  ALLOW_BENCH_PROJECT_NAME,
} from '../lib/allow-list-project.js';
import { runIfMain } from '../lib/entry.js';
import { HERE, ROOT, env, log, median, table } from '../lib/measure.js';

const MODULE = join(HERE, 'experiments', 'policy-cost');
const SOURCE = 'policy_cost_test.go';
const CONTROL_PLANE_MODULE = join(ROOT, 'test', 'cluster', 'gobuild');
const RESULTS = join(HERE, 'results', 'policy-cost.json');
const PROJECT = ALLOW_BENCH_PROJECT_NAME;
const NS = ALLOW_BENCH_NAMESPACE;
const SHIPPED = 'shipped';

interface PolicyObject {
  kind: string;
  metadata: { name: string };
  spec: {
    paramKind?: object;
    validations: Array<{ expression: string; messageExpression?: string; message?: string }>;
    [field: string]: unknown;
  };
}

interface Case {
  name: string;
  policy: PolicyObject;
  params: object | null;
  /** The parameters read in place, not written to JSON and parsed back (what the API server does now). */
  paramsAsContent: boolean;
  pod: object;
  namespace: object;
}

/** The allow-lists bench's pod as the API server stores it: defaulted, with the admission plugins' additions. */
const POD = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'b0-1', namespace: NS },
  spec: {
    nodeSelector: ALLOW_BENCH_POOL,
    containers: [
      {
        name: 'pause',
        image: 'registry.k8s.io/pause:3.10',
        imagePullPolicy: 'IfNotPresent',
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'File',
        volumeMounts: [
          {
            name: 'kube-api-access-x7k2q',
            mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
            readOnly: true,
          },
        ],
      },
    ],
    volumes: [
      {
        name: 'kube-api-access-x7k2q',
        projected: {
          defaultMode: 420,
          sources: [
            { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
            { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
          ],
        },
      },
    ],
    restartPolicy: 'Always',
    terminationGracePeriodSeconds: 30,
    dnsPolicy: 'ClusterFirst',
    serviceAccountName: 'default',
    securityContext: {},
    schedulerName: 'default-scheduler',
    enableServiceLinks: true,
    preemptionPolicy: 'PreemptLowerPriority',
    priority: 0,
    tolerations: ['not-ready', 'unreachable'].map((condition) => ({
      key: `node.kubernetes.io/${condition}`,
      operator: 'Exists',
      effect: 'NoExecute',
      tolerationSeconds: 300,
    })),
  },
};

const NAMESPACE = {
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name: NS, labels: { [LABEL_PROJECT]: PROJECT, 'kubernetes.io/metadata.name': NS } },
};

const STORED_METADATA = {
  uid: '6f1c2a64-9a7e-4d0b-8f0e-1f6b7e2f9a11',
  resourceVersion: '123456',
  generation: 1,
  creationTimestamp: '2026-12-07T20:00:00Z',
};

/** managedFields' set of fields of `value` (FieldsV1): `f:<key>` for every key, down to the leaves. */
function fieldsOf(value: unknown): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return {};
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [`f:${k}`, fieldsOf(v)]));
}

/** The one managedFields entry an update by `manager` of every field of `object` records (a create's is one). */
function managedFieldsEntry(object: AllowListObject, manager: string): object {
  const metadata: Record<string, unknown> = {
    'f:finalizers': { '.': {}, ...Object.fromEntries(object.metadata.finalizers.map((f) => [`v:"${f}"`, {}])) },
    'f:labels': { '.': {}, ...fieldsOf(object.metadata.labels) },
  };
  if (object.metadata.annotations) metadata['f:annotations'] = { '.': {}, ...fieldsOf(object.metadata.annotations) };
  return {
    apiVersion: object.apiVersion,
    fieldsType: 'FieldsV1',
    fieldsV1: { 'f:metadata': metadata, 'f:spec': { '.': {}, ...fieldsOf(object.spec) } },
    manager,
    operation: 'Update',
    time: STORED_METADATA.creationTimestamp,
  };
}

/** The AllowList variants: as the controller writes it, with managedFields, as `kubectl apply` leaves it. */
function allowLists(pods: PolicyObject): Record<'controller' | 'managed' | 'applied' | 'podLists', object> {
  const written = allowListFor(DEFAULT_CONFIG, ALLOW_BENCH_PROJECT, NS);
  const controller: AllowListObject = { ...written, metadata: { ...written.metadata, ...STORED_METADATA } };
  const managed = {
    ...controller,
    metadata: { ...controller.metadata, managedFields: [managedFieldsEntry(controller, 'tenantgate')] },
  };
  const lastApplied = `${JSON.stringify(written)}\n`;
  const annotated: AllowListObject = {
    ...controller,
    metadata: {
      ...controller.metadata,
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': lastApplied },
    },
  };
  const applied = {
    ...annotated,
    metadata: {
      ...annotated.metadata,
      managedFields: [managedFieldsEntry(annotated, 'kubectl-client-side-apply')],
    },
  };
  return { controller, managed, applied, podLists: podListsOnly(controller, pods) };
}

/** The parameters with only the spec fields policy `pods` reads (`params.spec.<field>` in its CEL). */
function podListsOnly(allowList: AllowListObject, pods: PolicyObject): object {
  const cel = JSON.stringify(pods.spec);
  const read = Object.entries(allowList.spec).filter(([field]) => cel.includes(`params.spec.${field}`));
  return { ...allowList, spec: Object.fromEntries(read) };
}

function podsPolicy(): PolicyObject {
  const policy = (allowListPolicyObjects() as unknown as PolicyObject[]).find(
    (o) => o.kind === 'ValidatingAdmissionPolicy' && o.metadata.name === 'tenantgate-allow-pods',
  );
  if (!policy) throw new Error('policy-cost bench: no ValidatingAdmissionPolicy tenantgate-allow-pods');
  return policy;
}

/** `policy` with its validations replaced. */
const withValidations = (policy: PolicyObject, validations: PolicyObject['spec']['validations']): PolicyObject => ({
  ...policy,
  spec: { ...policy.spec, validations },
});

export function cases(): Case[] {
  const pods = podsPolicy();
  const params = allowLists(pods);
  const { paramKind: _unused, ...specWithoutParams } = pods.spec;
  const oneCheck = withValidations(pods, [
    { expression: "has(object.spec.nodeSelector) || params.spec.project == ''", message: 'one check' },
  ]);
  const oneCheckBare: PolicyObject = {
    ...pods,
    spec: {
      ...specWithoutParams,
      validations: [{ expression: 'has(object.spec.nodeSelector)', message: 'one check' }],
    },
  };
  const withoutMessages = withValidations(
    pods,
    pods.spec.validations.map(({ messageExpression: _message, ...rest }) => rest),
  );
  const of = (name: string, policy: PolicyObject, p: object | null, paramsAsContent = false): Case => ({
    name,
    policy,
    params: p,
    paramsAsContent,
    pod: POD,
    namespace: NAMESPACE,
  });
  return [
    of(SHIPPED, pods, params.controller),
    of('with-managedFields', pods, params.managed),
    of('kubectl-apply', pods, params.applied),
    of('pod-lists-only', pods, params.podLists),
    of('parameters-read-in-place', pods, params.controller, true),
    of('no-messageExpression', withoutMessages, params.controller),
    of('one-check', oneCheck, params.controller),
    of('one-check-no-parameters', oneCheckBare, null),
  ];
}

/**
 * The Go benchmark, built once per control-plane module and source (.cache/policy-cost/<key>/). It is built
 * in the control plane's own module (test/cluster/gobuild: the k8s.io/apiserver and dependencies of the
 * kube-apiserver the tests run), copied beside the benchmark's source under another module name.
 */
async function build(): Promise<string> {
  const goMod = readFileSync(join(CONTROL_PLANE_MODULE, 'go.mod'), 'utf8');
  const goSum = readFileSync(join(CONTROL_PLANE_MODULE, 'go.sum'), 'utf8');
  const source = readFileSync(join(MODULE, SOURCE));
  const version = /k8s\.io\/apiserver (v\S+)/.exec(goMod)?.[1] ?? 'unknown';
  const key = createHash('sha256').update(goMod).update(goSum).update(source).digest('hex').slice(0, 12);
  const dir = join(ROOT, '.cache', 'policy-cost', `${version}-${key}`);
  const binary = join(dir, 'policy-cost.test');
  if (existsSync(binary)) return binary;
  const src = join(dir, 'src');
  mkdirSync(src, { recursive: true });
  writeFileSync(join(src, 'go.mod'), goMod.replace(/^module .*$/m, 'module tenantgate.io/bench/policycost'));
  writeFileSync(join(src, 'go.sum'), goSum);
  writeFileSync(join(src, SOURCE), source);
  log(`building the policy-cost benchmark (k8s.io/apiserver ${version}) ...`);
  await execa('go', ['test', '-c', '-o', binary, '.'], {
    cwd: src,
    env: { CGO_ENABLED: '0', GOFLAGS: '-mod=mod' },
    stdio: 'inherit',
  });
  return binary;
}

export interface Measured {
  name: string;
  nsPerOp: number;
  allocsPerOp: number;
  bytesPerOp: number;
}

/** `BenchmarkPolicyCost/03-name-2   1000   123 ns/op   45 B/op   6 allocs/op` lines of a run. */
export function parseBenchmarkLines(output: string): Measured[] {
  const out: Measured[] = [];
  const line =
    /^BenchmarkPolicyCost\/\d+-(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns\/op\s+([\d.]+) B\/op\s+([\d.]+) allocs\/op/;
  for (const text of output.split('\n')) {
    const m = line.exec(text.trim());
    if (m) out.push({ name: m[1]!, nsPerOp: Number(m[2]), bytesPerOp: Number(m[3]), allocsPerOp: Number(m[4]) });
  }
  return out;
}

/** Each round's case ÷ the shipped case, median over the rounds, by case. */
export function ratiosToShipped(rounds: readonly Measured[][]): Map<string, number> {
  const byCase = new Map<string, number[]>();
  for (const round of rounds) {
    const shipped = round.find((m) => m.name === SHIPPED);
    if (!shipped || shipped.nsPerOp <= 0) continue;
    for (const m of round) byCase.set(m.name, [...(byCase.get(m.name) ?? []), m.nsPerOp / shipped.nsPerOp]);
  }
  return new Map([...byCase].map(([name, ratios]) => [name, median(ratios)]));
}

export async function main(): Promise<string[]> {
  const rounds = Math.max(1, Math.round(env('BENCH_POLICY_ROUNDS', 5)));
  const seconds = Math.max(0.1, env('BENCH_POLICY_SECONDS', 1));
  const binary = await build();
  const file = join(mkdtempSync(join(tmpdir(), 'tenantgate-policy-cost-')), 'cases.json');
  const all = cases();
  writeFileSync(file, JSON.stringify(all));
  const [loadAtStart = 0] = loadavg();
  log(`load average at start ${loadAtStart.toFixed(2)}; ${all.length} cases × ${rounds} rounds of ${seconds} s`);
  const measured: Measured[][] = [];
  for (let round = 0; round < rounds; round++) {
    const run = await execa(
      binary,
      ['-test.run', '^$', '-test.bench', '^BenchmarkPolicyCost$', '-test.benchtime', `${seconds}s`, '-test.cpu', '1'],
      { env: { POLICY_COST_CASES: file }, reject: false },
    );
    const found = parseBenchmarkLines(run.stdout);
    if (run.exitCode !== 0 || found.length !== all.length)
      throw new Error(
        `policy-cost bench: round ${round + 1} measured ${found.length} of ${all.length} cases:\n${run.stdout}\n${run.stderr}`,
      );
    measured.push(found);
    log(`round ${round + 1}: ${found.map((m) => `${m.name} ${(m.nsPerOp / 1000).toFixed(1)} µs`).join(', ')}`);
  }
  const [loadAtEnd = 0] = loadavg();
  const ratios = ratiosToShipped(measured);
  const rows = all.map((c) => {
    const of = (pick: (m: Measured) => number) =>
      median(
        measured
          .map((round) => round.find((m) => m.name === c.name))
          .filter((m) => m !== undefined)
          .map(pick),
      );
    return {
      case: c.name,
      usPerRequest: Number((of((m) => m.nsPerOp) / 1000).toFixed(1)),
      allocsPerRequest: of((m) => m.allocsPerOp),
      kbPerRequest: Number((of((m) => m.bytesPerOp) / 1024).toFixed(1)),
      parameterBytes: c.params === null ? 0 : JSON.stringify(c.params).length,
      ratioToShipped: Number((ratios.get(c.name) ?? Number.NaN).toFixed(3)),
    };
  });
  log(
    `\n${table(
      ['case', 'µs / request', 'allocations', 'KiB allocated', 'parameter bytes', '÷ shipped'],
      rows.map((r) => [r.case, r.usPerRequest, r.allocsPerRequest, r.kbPerRequest, r.parameterBytes, r.ratioToShipped]),
    )}`,
  );
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(
    RESULTS,
    `${JSON.stringify({ date: new Date().toISOString(), loadAtStart, loadAtEnd, rounds, seconds, rows }, null, 2)}\n`,
  );
  log(`load average at end ${loadAtEnd.toFixed(2)}; results in ${RESULTS}`);
  return [];
}

runIfMain(import.meta.url, main);
