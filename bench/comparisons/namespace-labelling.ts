/**
 * `npm run bench -- namespace-labelling`: should the namespace labelling (project, tenant, Pod Security)
 * move from the mutating webhook to a MutatingAdmissionPolicy (on by default from Kubernetes 1.36)?
 *
 * On its own control plane (the pinned Kubernetes), the tenant alice creates namespaces of her project with
 * `dryRun=All` at a fixed rate, twice per project count, interleaved:
 *   - webhook: the shipped mutating and validating webhooks (in this process, as the tests run them);
 *   - policy: the validating webhook only, the labels set by a MutatingAdmissionPolicy whose parameters are
 *     the Projects. A policy cannot look a Project up by the namespace's prefix, so its binding selects every
 *     Project (`paramRef.selector: {}`) and each one's mutation checks the prefix: the API server evaluates
 *     it once per Project for every namespace created. It sets the project and tenant labels only (the
 *     webhook also sets Pod Security levels and the project-uid annotation): a lower bound of its cost.
 * Both must give the same labels: each row checks one created namespace's labels first.
 * Reported per row: latency p50/p99, the API server's CPU per create (above its idle rate) and this process's
 * (the client, and the webhook, which runs in it), with the load average at start and end (the loop: bench/lib/interleaved.ts). Results in bench/results/namespace-labelling.json. No target: a comparison.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ControlPlane } from '../../test/support/devcluster/controlplane.js';
import {
  installBase,
  kubectlAs,
  registerWebhooks,
  startLocalWebhook,
} from '../../test/support/devcluster/tenantgate.js';
import { apiAs, type Api } from '../lib/api.js';
import { interleaved } from '../lib/interleaved.js';
import { HERE, log, median, round1, round3, sleep, stats } from '../lib/measure.js';
import { runIfMain } from '../lib/entry.js';

const PROJECT_COUNTS = (process.env.BENCH_LABELLING_PROJECTS ?? '10,300').split(',').map(Number);
const RATE = Number(process.env.BENCH_LABELLING_RATE ?? 20);
const SECONDS = Number(process.env.BENCH_LABELLING_SECONDS ?? 20);
const ROUNDS = Number(process.env.BENCH_LABELLING_ROUNDS ?? 2);
const POLICY = 'tenantgate-namespace-labels';

type Mode = 'webhook' | 'policy';
interface Row {
  mode: Mode;
  projects: number;
  round: number;
  sent: number;
  admitted: number;
  p50: number;
  p99: number;
  apiserverCpuMsPerCreate: number;
  benchProcessCpuMsPerCreate: number;
  load: [number, number];
}

const projectDoc = (name: string) => ({
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: { name, labels: { 'bench.tenantgate.io/labelling': 'true' } },
  spec: {
    tenant: 'acme',
    owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
    quota: { hard: { 'requests.cpu': '1' } },
    namespaceDefaults: { quota: { hard: { 'requests.cpu': '100m' } } },
  },
});

/** The policy: project and tenant from the Project whose prefix the name carries, and the Pod Security labels the webhook gave (`podSecurity`). */
const policyDocs = (podSecurity: Record<string, string>) => [
  {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingAdmissionPolicy',
    metadata: { name: POLICY },
    spec: {
      paramKind: { apiVersion: 'tenantgate.io/v1alpha1', kind: 'Project' },
      matchConstraints: {
        resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['namespaces'] }],
      },
      failurePolicy: 'Fail',
      reinvocationPolicy: 'Never',
      mutations: [
        {
          patchType: 'ApplyConfiguration',
          applyConfiguration: {
            expression: `object.metadata.name.startsWith(params.metadata.name + "-") ? Object{ metadata: Object.metadata{ labels: {"tenantgate.io/project": string(params.metadata.name), "tenantgate.io/tenant": string(params.spec.tenant)${Object.entries(
              podSecurity,
            )
              .map(([k, v]) => `, ${JSON.stringify(k)}: ${JSON.stringify(v)}`)
              .join('')}} } } : Object{}`,
          },
        },
      ],
    },
  },
  {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingAdmissionPolicyBinding',
    metadata: { name: POLICY },
    spec: {
      policyName: POLICY,
      paramRef: {
        selector: { matchLabels: { 'bench.tenantgate.io/labelling': 'true' } },
        parameterNotFoundAction: 'Allow',
      },
    },
  },
];

async function apply(cp: ControlPlane, docs: unknown[]): Promise<void> {
  const r = await kubectlAs(
    cp.info,
    'admin',
    ['apply', '--server-side', '-f', '-'],
    docs.map((d) => JSON.stringify(d)).join('\n'),
  );
  if (r.exitCode !== 0) throw new Error(`apply: ${r.stderr}`);
}

/** Creates namespaces of `project` at RATE per second for SECONDS (open loop, dryRun=All). */
async function load(
  alice: Api,
  project: string,
  tag: string,
): Promise<{ sent: number; admitted: number; latencies: number[] }> {
  const ms: number[] = [];
  let admitted = 0;
  const total = RATE * SECONDS;
  const started = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(
      alice
        .call('POST', '/api/v1/namespaces?dryRun=All', {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name: `${project}-${tag}-${i}` },
        })
        .then((r) => {
          ms.push(r.ms);
          if (r.status === 201 || r.status === 200) admitted++;
        }),
    );
  }
  await Promise.all(pending);
  return { sent: total, admitted, latencies: ms };
}

/** The labels a dry-run create as alice gets: both modes must set the same project and tenant labels. */
async function labelsOf(alice: Api, project: string): Promise<Record<string, string>> {
  const r = await alice.call('POST', '/api/v1/namespaces?dryRun=All', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: `${project}-probe` },
  });
  if (r.status !== 201 && r.status !== 200)
    throw new Error(`probe create of ${project}-probe: ${r.status} ${r.text.slice(0, 300)}`);
  return (JSON.parse(r.text) as { metadata: { labels?: Record<string, string> } }).metadata.labels ?? {};
}

export async function main(): Promise<string[]> {
  const cp = await ControlPlane.start();
  const rows: Row[] = [];
  try {
    await installBase(cp.info);
    const webhook = await startLocalWebhook(cp.info);
    const alice = apiAs(cp.info.server, readFileSync(cp.info.caFile), cp.info.tokens.alice!);
    const apiserver = cp.pid('kube-apiserver');
    let made = 0;
    let podSecurity: Record<string, string> | undefined;
    for (const count of PROJECT_COUNTS) {
      const names: string[] = [];
      for (let i = made; i < count; i++) names.push(`lab${i}`);
      for (let i = 0; i < names.length; i += 100) await apply(cp, names.slice(i, i + 100).map(projectDoc));
      made = Math.max(made, count);
      await webhook.webhook.cache.waitSynced();
      await sleep(2000);
      const project = `lab${count - 1}`;
      await interleaved(
        {
          arms: ['webhook', 'policy'] as const,
          rounds: ROUNDS,
          apiserverPid: apiserver,
          idleSeconds: 3,
          enter: async (mode) => {
            if (mode === 'policy') {
              await kubectlAs(cp.info, 'admin', [
                'delete',
                'mutatingwebhookconfiguration/tenantgate',
                '--ignore-not-found',
              ]);
              await apply(cp, policyDocs(podSecurity!));
            }
            // The policy's binding and parameters reach the API server's informers asynchronously.
            let labels: Record<string, string> = {};
            // Until then the validating webhook refuses the probe ([T2]: labels missing): tried again for 30 s.
            let lastError: unknown;
            for (let i = 0; i < 60 && labels['tenantgate.io/project'] !== project; i++) {
              try {
                labels = await labelsOf(alice, project);
              } catch (err) {
                lastError = err;
              }
              if (labels['tenantgate.io/project'] !== project) await sleep(500);
            }
            if (labels['tenantgate.io/project'] !== project && lastError) throw lastError;
            if (labels['tenantgate.io/project'] !== project || labels['tenantgate.io/tenant'] !== 'acme')
              throw new Error(`${mode}: ${project}-probe got labels ${JSON.stringify(labels)}`);
            const levels = Object.fromEntries(
              Object.entries(labels).filter(([k]) => k.startsWith('pod-security.kubernetes.io/')),
            );
            if (mode === 'webhook') podSecurity = levels;
            else if (JSON.stringify(levels) !== JSON.stringify(podSecurity))
              throw new Error(
                `policy: Pod Security labels ${JSON.stringify(levels)}, the webhook's ${JSON.stringify(podSecurity)}`,
              );
          },
          leave: async (mode) => {
            if (mode !== 'policy') return;
            await kubectlAs(cp.info, 'admin', [
              'delete',
              'mutatingadmissionpolicybinding',
              POLICY,
              '--ignore-not-found',
            ]);
            await kubectlAs(cp.info, 'admin', ['delete', 'mutatingadmissionpolicy', POLICY, '--ignore-not-found']);
            await registerWebhooks(cp.info, webhook.url, webhook.certs.caBundle);
          },
          load: (mode, round) => load(alice, project, `${mode[0]}${round}`),
        },
        (r) => {
          const s = stats(r.load.latencies);
          const sent = r.load.sent;
          rows.push({
            mode: r.arm,
            projects: count,
            round: r.round,
            sent,
            admitted: r.load.admitted,
            p50: round3(s.p50),
            p99: round3(s.p99),
            apiserverCpuMsPerCreate: round3((r.apiserverCpuSeconds * 1000) / sent),
            benchProcessCpuMsPerCreate: round3((r.benchProcessCpuSeconds * 1000) / sent),
            load: [round1(r.loadAverage[0]), round1(r.loadAverage[1])],
          });
          log(`${r.arm} ${count} projects round ${r.round}: ${JSON.stringify(rows.at(-1))}`);
        },
      );
    }
    alice.close();
    await webhook.stop();
  } finally {
    await cp.stop();
  }
  const summary = PROJECT_COUNTS.flatMap((projects) =>
    (['webhook', 'policy'] as const).map((mode) => {
      const of = rows.filter((r) => r.mode === mode && r.projects === projects);
      return {
        mode,
        projects,
        p50: round1(median(of.map((r) => r.p50))),
        p99: round1(median(of.map((r) => r.p99))),
        apiserverCpuMsPerCreate: round1(median(of.map((r) => r.apiserverCpuMsPerCreate))),
        benchProcessCpuMsPerCreate: round1(median(of.map((r) => r.benchProcessCpuMsPerCreate))),
        admitted: of.map((r) => `${r.admitted}/${r.sent}`).join(', '),
      };
    }),
  );
  process.stderr.write(
    `\nnamespace labelling, ${RATE} dry-run creates/s for ${SECONDS} s per row, medians of ${ROUNDS} rounds\n`,
  );
  for (const s of summary)
    process.stderr.write(
      `  ${s.mode.padEnd(8)} ${String(s.projects).padStart(5)} projects: p50 ${s.p50} ms, p99 ${s.p99} ms, apiserver CPU ${s.apiserverCpuMsPerCreate} ms/create, this process (client + webhook) ${s.benchProcessCpuMsPerCreate} ms/create, admitted ${s.admitted}\n`,
    );
  mkdirSync(join(HERE, 'results'), { recursive: true });
  writeFileSync(
    join(HERE, 'results', 'namespace-labelling.json'),
    JSON.stringify({ rate: RATE, seconds: SECONDS, rounds: ROUNDS, rows, summary }, null, 2),
  );
  return [];
}

runIfMain(import.meta.url, main);
