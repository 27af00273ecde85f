/**
 * `npm run bench -- allow-lists`: what judging the allow-lists costs a pod create, where they are judged
 * (docs/adr/0095-allow-lists-in-the-api-server.md). One control plane, the webhook in this process, one
 * project with allow-lists (priority and runtime classes, storage classes, a node selector, a registry) and a
 * namespace of it with its AllowList (written as the controller writes it: no last-applied annotation, no
 * managedFields);
 * alice (a tenant) creates pods every list admits, BENCH_ALLOW_PODS per round at concurrency
 * BENCH_ALLOW_CONCURRENCY. The pods are stored, as a create stores them (no scheduler or kubelet runs, so
 * they stay pending), and deleted after each round, outside its measurement; BENCH_ALLOW_DRY_RUN=1 sends
 * them with `dryRun=All` instead (admission in full, nothing stored: the smallest denominator). Three arms,
 * interleaved by rounds in one run (bench/lib/interleaved.ts), BENCH_ALLOW_ROUNDS of each:
 *  - policies: the shipped registrations (their allow entry matches no pods) and the shipped allow-list
 *    ValidatingAdmissionPolicies (manifests/policies/allow-lists.yaml) with the namespace's parameters;
 *  - webhook: the entry as it was before ADR 0095: the shipped registrations with `pods` added back to
 *    `allow.tenantgate.io` (the webhook still judges a Pod it is sent), no policies;
 *  - neither: the shipped registrations, no policies.
 * Each arm is switched on and its effect awaited with a probe pod without the node selector: refused [X8]
 * by a policy, refused [X8] by the webhook, or admitted. Per round: the client's latency (p50, p99), the CPU
 * seconds of kube-apiserver above its idle rate (measured for a second before the round) and of this process
 * (the webhook and the client) per 1,000 creates, and the webhook's reviews of pods per create (its decisions,
 * counted in process). Judged (`--check`, bench/lib/judge.ts): AL1, with the policies no webhook review per
 * pod create; AL2, with the policies the API server's CPU per create at most 1.10 × neither's (the median
 * of each round's own ratio).
 *
 * BENCH_ALLOW_FLOOR=1 adds a fourth arm: one policy on pods, bound like the shipped ones, with one check
 * (what a policy costs before its rules); BENCH_ALLOW_FLOOR=2 a fifth as well: that policy without
 * parameters (what a policy costs before its parameters). BENCH_ALLOW_MANAGED=1 adds the shipped policies
 * with the AllowList carrying managedFields (one entry, as a create or an apply writes it): what the
 * controller saves by writing it without them.
 *
 *   npm run bench -- allow-lists
 *   BENCH_ALLOW_PODS=400 BENCH_ALLOW_ROUNDS=3 BENCH_ALLOW_CONCURRENCY=4 BENCH_ALLOW_FLOOR=0 BENCH_ALLOW_DRY_RUN=0
 *   BENCH_ALLOW_MANAGED=0
 */
import * as k8s from '@kubernetes/client-node';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { AdmissionDecision } from '../../src/webhook/server.js';
import { ALLOW_LIST_NAME, allowListFor } from '../../src/validate/allow-list-params.js';
import { LABEL_PROJECT } from '../../src/validate/types.js';
import { ControlPlane, REPO_ROOT } from '../../test/support/devcluster/controlplane.js';
import {
  installBase,
  unheld,
  kubectlAs,
  localWebhookConfigurations,
  MANIFESTS,
  startLocalWebhook,
  unregisterWebhooks,
} from '../../test/support/devcluster/tenantgate.js';
import {
  ALLOW_BENCH_NAMESPACE,
  ALLOW_BENCH_POOL,
  ALLOW_BENCH_PROJECT,
  ALLOW_BENCH_PROJECT_NAME,
} from '../lib/allow-list-project.js';
import { interleaved } from '../lib/interleaved.js';
import { judgeTargets, type TargetJudgement } from '../lib/judge.js';
import { env, log, median, stats, table } from '../lib/measure.js';
import { runIfMain } from '../lib/entry.js';

const RESULTS = join(REPO_ROOT, 'bench', 'results', 'allow-lists.json');
const POLICIES = join(MANIFESTS, 'policies', 'allow-lists.yaml');
const ALLOW_LIST_CRD = join(MANIFESTS, 'crd', 'allowlists.tenantgate.io.yaml');
const PROJECT = ALLOW_BENCH_PROJECT_NAME;
const NS = ALLOW_BENCH_NAMESPACE;
const POOL = ALLOW_BENCH_POOL;
/** AL2: the policies' API server CPU per create against neither's. */
export const MAX_CPU_RATIO = 1.1;

export const ARMS = ['policies', 'webhook', 'neither'] as const;
/** With BENCH_ALLOW_FLOOR=1: one policy on pods bound like the shipped ones, whose one check is a field's presence. */
export const FLOOR_ARM = 'one-check policy' as const;
/** With BENCH_ALLOW_FLOOR=2: the same policy without parameters (no paramKind, no paramRef). */
export const BARE_FLOOR_ARM = 'one-check policy, no parameters' as const;
/** With BENCH_ALLOW_MANAGED=1: the shipped policies, the AllowList with managedFields. */
export const MANAGED_ARM = 'policies, AllowList with managedFields' as const;
export type Arm = (typeof ARMS)[number] | typeof FLOOR_ARM | typeof BARE_FLOOR_ARM | typeof MANAGED_ARM;

const FLOOR_POLICY = 'bench-allow-floor';
const BARE_FLOOR_POLICY = 'bench-allow-floor-bare';
/**
 * The floor of a policy: matched, bound and parametrised like tenantgate-allow-pods (the same namespaces,
 * the namespace's AllowList), with one validation reading the object and the parameters. What the
 * policies cost beyond it is their rules' CEL. Not `parametrised`: the same policy with neither
 * parameters nor a reference to them, its check reading the object alone.
 */
export function floorPolicy(parametrised = true): object[] {
  const name = parametrised ? FLOOR_POLICY : BARE_FLOOR_POLICY;
  const namespaceSelector = {
    matchExpressions: [
      { key: LABEL_PROJECT, operator: 'Exists' },
      { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'tenantgate-system'] },
    ],
  };
  const validation = {
    expression: parametrised
      ? "has(object.spec.nodeSelector) || params.spec.project == ''"
      : 'has(object.spec.nodeSelector)',
    message: "[X8] a pod without a node selector (the bench's one-check policy)",
  };
  const resourceRules = [
    { apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], operations: ['CREATE', 'UPDATE'] },
  ];
  return [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name },
      spec: {
        failurePolicy: 'Fail',
        ...(parametrised ? { paramKind: { apiVersion: 'tenantgate.io/v1alpha1', kind: 'AllowList' } } : {}),
        matchConstraints: { matchPolicy: 'Equivalent', namespaceSelector, resourceRules },
        validations: [validation],
      },
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name },
      spec: {
        policyName: name,
        ...(parametrised ? { paramRef: { name: 'tenantgate-allow', parameterNotFoundAction: 'Deny' } } : {}),
        validationActions: ['Deny'],
      },
    },
  ];
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > end) throw new Error(`allow-lists bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

interface WebhookEntry {
  name: string;
  rules: Array<{
    apiGroups: string[];
    apiVersions: string[];
    operations: string[];
    resources: string[];
    scope?: string;
  }>;
}

/** The shipped registrations; with `podsInAllow`, `pods` added back to the allow entry (the webhook arm). */
export function registrations(text: string, podsInAllow: boolean): string {
  if (!podsInAllow) return text;
  return parseAllDocuments(text)
    .map((d) => {
      const doc = d.toJS() as { kind: string; webhooks: WebhookEntry[] };
      if (doc.kind === 'ValidatingWebhookConfiguration') {
        const entry = doc.webhooks.find((w) => w.name === 'allow.tenantgate.io');
        if (!entry)
          throw new Error(
            'allow-lists bench: the shipped ValidatingWebhookConfiguration has no entry allow.tenantgate.io',
          );
        if (!entry.rules.some((r) => r.apiGroups.includes('') && r.resources.includes('pods'))) {
          entry.rules.push({
            apiGroups: [''],
            apiVersions: ['v1'],
            operations: ['CREATE', 'UPDATE'],
            resources: ['pods'],
            scope: 'Namespaced',
          });
        }
      }
      return `---\n${stringify(doc)}`;
    })
    .join('');
}

export interface Round {
  arm: Arm;
  round: number;
  loadStart: number;
  loadEnd: number;
  p50: number;
  p99: number;
  apiserverCpuPer1000: number;
  benchProcessCpuPer1000: number;
  /** The webhook's reviews of pods per create. */
  webhookCallsPerCreate: number;
  errors: number;
}

/** An arm's medians over its rounds: a round's numbers without what only a round has. */
export type ArmSummary = Omit<Round, 'round' | 'loadStart' | 'loadEnd'>;

const of = (rounds: readonly Round[], arm: Arm, pick: (r: Round) => number) =>
  median(rounds.filter((r) => r.arm === arm).map(pick));

/** Medians over the rounds of each arm. */
export function summarise(rounds: readonly Round[]): ArmSummary[] {
  const floors = [FLOOR_ARM, BARE_FLOOR_ARM, MANAGED_ARM].filter((arm) => rounds.some((r) => r.arm === arm));
  const arms: Arm[] = [...ARMS, ...floors];
  return arms.map((arm) => ({
    arm,
    p50: of(rounds, arm, (r) => r.p50),
    p99: of(rounds, arm, (r) => r.p99),
    apiserverCpuPer1000: of(rounds, arm, (r) => r.apiserverCpuPer1000),
    benchProcessCpuPer1000: of(rounds, arm, (r) => r.benchProcessCpuPer1000),
    webhookCallsPerCreate: of(rounds, arm, (r) => r.webhookCallsPerCreate),
    errors: rounds.filter((r) => r.arm === arm).reduce((n, r) => n + r.errors, 0),
  }));
}

/** Each round's policies ÷ neither API server CPU per create (rounds where both arms ran), in round order. */
export function cpuRatios(rounds: readonly Round[]): number[] {
  const out: number[] = [];
  for (const round of [...new Set(rounds.map((r) => r.round))].sort((a, b) => a - b)) {
    const policies = rounds.find((r) => r.round === round && r.arm === 'policies');
    const neither = rounds.find((r) => r.round === round && r.arm === 'neither');
    if (policies && neither && neither.apiserverCpuPer1000 > 0)
      out.push(policies.apiserverCpuPer1000 / neither.apiserverCpuPer1000);
  }
  return out;
}

/** AL1 and AL2 over the rounds of a run. */
export function allowListTargets(rounds: readonly Round[]): TargetJudgement[] {
  const policyRounds = rounds.filter((r) => r.arm === 'policies');
  const calls = policyRounds.reduce((n, r) => Math.max(n, r.webhookCallsPerCreate), 0);
  const ratios = cpuRatios(rounds);
  const al1: TargetJudgement = policyRounds.length
    ? {
        id: 'AL1',
        target: 'policies: no webhook call per pod create',
        judged: true,
        met: calls === 0,
        value: `${calls.toFixed(3)} per create (the most of ${policyRounds.length} rounds)`,
      }
    : {
        id: 'AL1',
        target: 'policies: no webhook call per pod create',
        judged: false,
        met: false,
        note: 'no policies round',
      };
  const target = `policies: API server CPU per create ≤ ${MAX_CPU_RATIO.toFixed(2)} × neither`;
  const ratio = median(ratios);
  const each = ratios.map((r) => r.toFixed(2)).join(', ');
  const al2: TargetJudgement = ratios.length
    ? {
        id: 'AL2',
        target,
        judged: true,
        met: ratio <= MAX_CPU_RATIO,
        value: `${ratio.toFixed(3)} × (median of ${ratios.length} rounds: ${each})`,
      }
    : {
        id: 'AL2',
        target,
        judged: false,
        met: false,
        note: 'no round with both arms and a positive CPU for neither',
      };
  return [al1, al2];
}

export async function main(): Promise<string[]> {
  const pods = Math.max(10, Math.round(env('BENCH_ALLOW_PODS', 400)));
  const rounds = Math.max(1, Math.round(env('BENCH_ALLOW_ROUNDS', 3)));
  const concurrency = Math.max(1, Math.round(env('BENCH_ALLOW_CONCURRENCY', 4)));
  const floors = env('BENCH_ALLOW_FLOOR', 0);
  const arms: Arm[] = [
    ...ARMS,
    ...(floors > 0 ? [FLOOR_ARM] : []),
    ...(floors > 1 ? [BARE_FLOOR_ARM] : []),
    ...(env('BENCH_ALLOW_MANAGED', 0) > 0 ? [MANAGED_ARM] : []),
  ];
  const dryRun = env('BENCH_ALLOW_DRY_RUN', 0) > 0;
  const loadAtStart = loadavg();
  log(`load average at start ${loadAtStart.map((l) => l.toFixed(2)).join(' ')}`);
  const cp = await ControlPlane.start({ log });
  const results: Round[] = [];
  try {
    const info = cp.info;
    const kubectl = (args: string[], input?: string) => kubectlAs(info, 'admin', args, input);
    await installBase(info);
    await kubectl(['apply', '--server-side', '--force-conflicts', '-f', ALLOW_LIST_CRD]);
    await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/allowlists.tenantgate.io']);
    let podReviews = 0;
    const countPods = (d: AdmissionDecision) => {
      if (d.kind === 'Pod' && d.path === 'validate') podReviews++;
    };
    const hook = await startLocalWebhook(info, {}, { register: false, onDecision: countPods });
    const shipped = await localWebhookConfigurations(hook.url, hook.certs.caBundle);
    await kubectl(['apply', '-f', '-'], registrations(shipped, false));
    const project = ALLOW_BENCH_PROJECT;
    await kubectl(['apply', '-f', '-'], JSON.stringify(project));
    await until(
      'the Project in the webhook cache',
      async () => hook.webhook.cache.snapshot.project(PROJECT) !== undefined,
    );
    await kubectl(['create', 'namespace', NS]);
    const labels = JSON.parse(
      (await kubectl(['get', 'namespace', NS, '-o', 'jsonpath={.metadata.labels}'])).stdout || '{}',
    ) as Record<string, string>;
    if (labels[LABEL_PROJECT] !== PROJECT)
      throw new Error(
        `allow-lists bench: namespace ${NS} has ${LABEL_PROJECT}=${labels[LABEL_PROJECT] ?? '(none)'}; ` +
          `the mutating webhook labels it ${PROJECT}`,
      );
    // Created as the controller writes it: `kubectl apply` would add a last-applied annotation, and the
    // managedFields are dropped (managedFieldsOf), as the controller drops them: both repeat the lists, which
    // the API server converts with the parameters on every evaluation.
    const allowList = JSON.stringify(unheld(allowListFor(DEFAULT_CONFIG, project, NS)));
    await kubectl(['create', '-f', '-'], allowList);
    /** The AllowList with one managedFields entry (an apply's) or none. */
    const managedFieldsOf = async (wanted: boolean) => {
      const shown = async () =>
        JSON.parse(
          (await kubectl(['-n', NS, 'get', 'allowlist', ALLOW_LIST_NAME, '-o', 'json', '--show-managed-fields']))
            .stdout,
        ) as { metadata: { managedFields?: unknown[] } };
      const stored = await shown();
      if ((stored.metadata.managedFields?.length ?? 0) > 0 === wanted) return;
      if (wanted) await kubectl(['apply', '--server-side', '--field-manager=bench-allow-lists', '-f', '-'], allowList);
      else
        await kubectl(
          ['replace', '-f', '-'],
          JSON.stringify({ ...stored, metadata: { ...stored.metadata, managedFields: [{}] } }),
        );
      const now = (await shown()).metadata.managedFields?.length ?? 0;
      if (now > 0 !== wanted)
        throw new Error(`allow-lists bench: the AllowList has ${now} managedFields entries; wanted ${wanted ? 1 : 0}`);
    };
    await managedFieldsOf(false);
    await kubectl(['-n', NS, 'create', 'rolebinding', 'bench-alice', '--clusterrole=admin', '--user=alice']);
    await until(
      'the default ServiceAccount',
      async () =>
        (
          await kubectl(['-n', NS, 'get', 'serviceaccount', 'default', '--ignore-not-found', '-o', 'name'])
        ).stdout.trim() !== '',
    );
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(info.kubeconfigs.alice!);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const body = (name: string): k8s.V1Pod => ({
      metadata: { name },
      spec: { nodeSelector: POOL, containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.10' }] },
    });
    /** Who judges a pod create now: its probe (no node selector) refused by a policy, by the webhook, or admitted. */
    const judgedBy = async (): Promise<Arm | 'unknown'> => {
      try {
        await core.createNamespacedPod({
          namespace: NS,
          dryRun: 'All',
          body: {
            metadata: { name: 'probe' },
            spec: { containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.10' }] },
          },
        });
        return 'neither';
      } catch (err) {
        const message = String((err as Error).message);
        if (!message.includes('[X8]')) return 'unknown';
        if (message.includes(`ValidatingAdmissionPolicy '${FLOOR_POLICY}'`)) return FLOOR_ARM;
        if (message.includes(`ValidatingAdmissionPolicy '${BARE_FLOOR_POLICY}'`)) return BARE_FLOOR_ARM;
        if (message.includes('ValidatingAdmissionPolicy')) return 'policies';
        return message.includes('allow.tenantgate.io') ? 'webhook' : 'unknown';
      }
    };
    const floorOf = (arm: Arm) =>
      floorPolicy(arm !== BARE_FLOOR_ARM)
        .map((o) => JSON.stringify(o))
        .join('\n');
    const enter = async (arm: Arm) => {
      await managedFieldsOf(arm === MANAGED_ARM);
      await kubectl(['delete', '--ignore-not-found', '-f', POLICIES]);
      await kubectl(['delete', '--ignore-not-found', '-f', '-'], floorOf(FLOOR_ARM));
      await kubectl(['delete', '--ignore-not-found', '-f', '-'], floorOf(BARE_FLOOR_ARM));
      await kubectl(['apply', '-f', '-'], registrations(shipped, arm === 'webhook'));
      const first = arm === 'webhook' ? 'webhook' : 'neither';
      // The apiserver picks registrations and policies up from its informers: awaited, not assumed.
      await until(
        `pod creates judged by ${first === 'webhook' ? 'the webhook' : 'nothing'}`,
        async () => (await judgedBy()) === first,
      );
      if (arm === 'webhook' || arm === 'neither') return;
      const shippedPolicies = arm === 'policies' || arm === MANAGED_ARM;
      await kubectl(['apply', '-f', shippedPolicies ? POLICIES : '-'], shippedPolicies ? undefined : floorOf(arm));
      const judge = arm === MANAGED_ARM ? 'policies' : arm;
      await until(`pod creates judged by the ${judge}`, async () => (await judgedBy()) === judge);
    };
    let bursts = 0;
    const burst = async (): Promise<{ latencies: number[]; errors: number; reviews: number }> => {
      const prefix = `b${bursts++}-`;
      const latencies: number[] = [];
      let errors = 0;
      let next = 0;
      const reviewsBefore = podReviews;
      const worker = async () => {
        while (next < pods) {
          const i = next++;
          const started = performance.now();
          try {
            await core.createNamespacedPod({
              namespace: NS,
              body: body(`${prefix}${i}`),
              ...(dryRun ? { dryRun: 'All' } : {}),
            });
            latencies.push(performance.now() - started);
          } catch {
            errors++;
          }
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
      return { latencies, errors, reviews: podReviews - reviewsBefore };
    };
    /** After a round, outside its measurement: the stored pods go (unscheduled pods are removed at once). */
    const clear = async () => {
      if (dryRun) return;
      await kubectl(['-n', NS, 'delete', 'pods', '--all', '--wait=true', '--timeout=120s']);
    };
    // Warm-up of every arm: caches, connections, compiled CEL, the JIT of both sides.
    for (const arm of arms) {
      await enter(arm);
      await burst();
      await clear();
    }
    await interleaved(
      {
        arms,
        rounds,
        apiserverPid: cp.pid('kube-apiserver'),
        idleSeconds: dryRun ? 1 : 2,
        enter: async (arm) => enter(arm),
        leave: () => clear(),
        load: () => burst(),
      },
      (m) => {
        const s = stats(m.load.latencies.sort((a, b) => a - b));
        const r: Round = {
          arm: m.arm,
          round: m.round + 1,
          loadStart: m.loadAverage[0],
          loadEnd: m.loadAverage[1],
          p50: s.p50,
          p99: s.p99,
          apiserverCpuPer1000: (m.apiserverCpuSeconds / pods) * 1000,
          benchProcessCpuPer1000: (m.benchProcessCpuSeconds / pods) * 1000,
          webhookCallsPerCreate: m.load.reviews / pods,
          errors: m.load.errors,
        };
        results.push(r);
        log(
          `${r.arm}, round ${r.round} (load ${r.loadStart.toFixed(2)} → ${r.loadEnd.toFixed(2)}): ` +
            `p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, ` +
            `kube-apiserver ${r.apiserverCpuPer1000.toFixed(2)} CPU s / 1000 creates above its idle rate, ` +
            `this process ${r.benchProcessCpuPer1000.toFixed(2)}, ` +
            `${r.webhookCallsPerCreate.toFixed(3)} webhook calls per create, ${r.errors} errors`,
        );
      },
    );
    await unregisterWebhooks(info);
    await hook.webhook.stop();
  } finally {
    await cp.stop();
  }
  const loadAtEnd = loadavg();
  const summary = summarise(results);
  const targets = allowListTargets(results);
  const judged = judgeTargets(targets);
  const ratios = cpuRatios(results);
  const fixed = (x: number, digits = 2) => x.toFixed(digits);
  process.stdout.write(
    `${[
      `Pod creates by a tenant (${dryRun ? 'dryRun=All' : 'stored'}, ${pods} per round, concurrency ${concurrency}), ` +
        `medians over ${rounds} rounds of each arm, interleaved in one run; ` +
        `load average ${fixed(loadAtStart[0]!)} at start, ${fixed(loadAtEnd[0]!)} at the end`,
      table(
        [
          'arm',
          'p50 ms',
          'p99 ms',
          'kube-apiserver CPU s / 1000',
          'webhook + client CPU s / 1000',
          'webhook calls / create',
          'errors',
        ],
        summary.map((a) => [
          a.arm,
          fixed(a.p50),
          fixed(a.p99),
          fixed(a.apiserverCpuPer1000),
          fixed(a.benchProcessCpuPer1000),
          fixed(a.webhookCallsPerCreate, 3),
          String(a.errors),
        ]),
      ),
      `API server CPU per create, policies ÷ neither, per round: ${ratios.map((r) => fixed(r, 3)).join(', ')}`,
      table(
        ['arm', 'round', 'load', 'p50 ms', 'p99 ms', 'apiserver', 'this process', 'webhook calls', 'errors'],
        results.map((r) => [
          r.arm,
          String(r.round),
          `${fixed(r.loadStart)}→${fixed(r.loadEnd)}`,
          fixed(r.p50),
          fixed(r.p99),
          fixed(r.apiserverCpuPer1000),
          fixed(r.benchProcessCpuPer1000),
          fixed(r.webhookCallsPerCreate, 3),
          String(r.errors),
        ]),
      ),
      ...judged.lines,
    ].join('\n')}\n`,
  );
  mkdirSync(dirname(RESULTS), { recursive: true });
  const document = {
    benchmark: 'allow-lists',
    pods,
    rounds,
    concurrency,
    stored: !dryRun,
    date: new Date().toISOString(),
    loadAverage: { start: loadAtStart, end: loadAtEnd },
    summary,
    cpuRatios: ratios,
    targets,
    results,
  };
  writeFileSync(RESULTS, `${JSON.stringify(document, null, 2)}\n`);
  log(`results: ${RESULTS}`);
  const errors = results.reduce((n, r) => n + r.errors, 0);
  return [...judged.missed, ...(errors > 0 ? [`${errors} pod creates failed (an allowed pod must be admitted)`] : [])];
}

runIfMain(import.meta.url, main);
