/**
 * How many admission reviews the webhook receives for a fixed workload, under two versions of the
 * shipped registrations (manifests/webhook/webhook-configurations.yaml): the working tree's and a
 * commit's (BENCH_COUNT_BASE, default HEAD~1). A count, not a time: it does not move with the load of a
 * shared machine. One control plane (kube-controller-manager with its quota controller), the webhook
 * in this process (no ledger), the registrations taking turns, each round on the same namespace:
 *
 *   - BENCH_COUNT_PODS (30) pods created by an administrator in a project namespace under a quota
 *     (the apiserver's quota admission writes the quota's status for each), until the quota counts them;
 *   - 5 label updates of the namespace and one change of the quota's spec;
 *   - the pods deleted, until the quota controller has counted them out.
 *
 * Every review is recorded (path, operation, kind, who: Kubernetes' own components or not) and counted.
 *
 *   npm run bench -- review-count          BENCH_COUNT_BASE=<commit>  BENCH_COUNT_ROUNDS=2
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { loadavg } from 'node:os';
import { ControlPlane, REPO_ROOT } from '../../test/support/devcluster/controlplane.js';
import {
  applyAllowListParams,
  installBase,
  kubectlAs,
  localWebhookConfigurations,
  startLocalWebhook,
  unregisterWebhooks,
} from '../../test/support/devcluster/tenantgate.js';
import type { Project } from '../../src/validate/types.js';
import type { AdmissionDecision } from '../../src/webhook/server.js';
import { env, log, table } from '../lib/measure.js';
import { runIfMain } from '../lib/entry.js';

const RESULTS = join(REPO_ROOT, 'bench', 'results', 'review-count.json');
const FILE = 'manifests/webhook/webhook-configurations.yaml';
const NS = 'rc-work';
const QUOTA = 'budget';

const who = (d: AdmissionDecision) =>
  d.user === 'system:apiserver' ||
  d.user === 'system:kube-controller-manager' ||
  d.user.startsWith('system:serviceaccount:kube-system:')
    ? 'kubernetes'
    : 'admin';

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`review-count: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export async function main(): Promise<string[]> {
  const baseRef = process.env.BENCH_COUNT_BASE ?? 'HEAD~1';
  const pods = env('BENCH_COUNT_PODS', 30);
  const rounds = env('BENCH_COUNT_ROUNDS', 2);
  const baseSha = execFileSync('git', ['rev-parse', '--short', baseRef], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
  const versions = [
    {
      name: `${baseRef} (${baseSha})`,
      text: execFileSync('git', ['show', `${baseRef}:${FILE}`], { cwd: REPO_ROOT, encoding: 'utf8' }),
    },
    { name: 'working tree', text: execFileSync('cat', [join(REPO_ROOT, FILE)], { encoding: 'utf8' }) },
  ];
  const load0 = loadavg()[0]!.toFixed(2);
  const cp = await ControlPlane.start({ log });
  const decisions: AdmissionDecision[] = [];
  const results: Array<{
    version: string;
    round: number;
    reviews: number;
    perPod: number;
    byKind: Record<string, number>;
    load: string;
  }> = [];
  try {
    const info = cp.info;
    const kubectl = (args: string[], input?: string) => kubectlAs(info, 'admin', args, input);
    await installBase(info);
    const hook = await startLocalWebhook(info, {}, { register: false, onDecision: (d) => decisions.push(d) });
    const register = async (text: string) =>
      kubectl(['apply', '-f', '-'], await localWebhookConfigurations(hook.url, hook.certs.caBundle, text));
    await register(versions[1]!.text);
    const project = {
      apiVersion: 'tenantgate.io/v1alpha1',
      kind: 'Project',
      metadata: { name: 'rc' },
      spec: {
        tenant: 'acme',
        owners: [{ kind: 'User', name: 'alice' }],
        quota: { hard: { 'requests.cpu': '100', pods: '1000' } },
      },
    };
    await kubectl(['apply', '-f', '-'], JSON.stringify(project));
    await until(
      'the Project in the webhook cache',
      async () => hook.webhook.cache.snapshot.project('rc') !== undefined,
    );
    await kubectl(['create', 'namespace', NS]);
    // No controller here: the allow-list policies' parameters as it writes them (without them no pod is admitted).
    await applyAllowListParams(info, project as Project, [NS]);
    await kubectl(['-n', NS, 'create', 'quota', QUOTA, '--hard=requests.cpu=50,pods=500']);
    await until(
      'the default ServiceAccount',
      async () =>
        (
          await kubectl(['-n', NS, 'get', 'serviceaccount', 'default', '--ignore-not-found', '-o', 'name'])
        ).stdout.trim() !== '',
    );
    const usedPods = async () =>
      Number(
        (
          JSON.parse((await kubectl(['-n', NS, 'get', 'quota', QUOTA, '-o', 'json'])).stdout) as {
            status?: { used?: { pods?: string } };
          }
        ).status?.used?.pods ?? -1,
      );
    await until('the quota counted', async () => (await usedPods()) === 0);
    const podList = JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: Array.from({ length: pods }, (_, i) => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `p${i}`, namespace: NS },
        spec: {
          containers: [
            {
              name: 'pause',
              image: 'registry.k8s.io/pause:3.10',
              resources: { requests: { cpu: '100m' }, limits: { cpu: '100m' } },
            },
          ],
        },
      })),
    });
    for (let round = 1; round <= rounds; round++) {
      for (const version of versions) {
        await register(version.text);
        await new Promise((r) => setTimeout(r, 2000)); // the apiserver picks up the registration
        const load = loadavg()[0]!.toFixed(2);
        const mark = decisions.length;
        await kubectl(['create', '-f', '-'], podList);
        await until(`${pods} pods counted`, async () => (await usedPods()) === pods);
        for (let i = 0; i < 5; i++) await kubectl(['label', 'namespace', NS, `rc-step=${round}-${i}`, '--overwrite']);
        await kubectl([
          '-n',
          NS,
          'patch',
          'quota',
          QUOTA,
          '--type=merge',
          '-p',
          JSON.stringify({ spec: { hard: { pods: String(500 + round) } } }),
        ]);
        await kubectl(['-n', NS, 'delete', 'pods', '--all', '--grace-period=0', '--force', '--wait=false']);
        await until('the pods counted out', async () => (await usedPods()) === 0);
        await new Promise((r) => setTimeout(r, 3000));
        const seen = decisions.slice(mark);
        const byKind: Record<string, number> = {};
        for (const d of seen) {
          const key = `${d.path} ${d.operation} ${d.kind} by ${who(d)}`;
          byKind[key] = (byKind[key] ?? 0) + 1;
        }
        results.push({
          version: version.name,
          round,
          reviews: seen.length,
          perPod: Math.round((seen.length / pods) * 100) / 100,
          byKind,
          load,
        });
        log(
          `review-count: ${version.name}, round ${round} (load ${load}): ${seen.length} reviews for ${pods} pods, 5 namespace labels, 1 quota change: ${JSON.stringify(byKind)}`,
        );
      }
    }
    await unregisterWebhooks(info);
    await hook.webhook.stop();
  } finally {
    await cp.stop();
  }
  const keys = [...new Set(results.flatMap((r) => Object.keys(r.byKind)))].sort();
  const out = [
    `Reviews the webhook receives (load ${load0} at start): ${pods} pods created and deleted under a quota, 5 namespace label updates, 1 quota change; per round`,
    table(
      ['registration', 'round', 'load', 'reviews', 'per pod', ...keys],
      results.map((r) => [
        r.version,
        String(r.round),
        r.load,
        String(r.reviews),
        String(r.perPod),
        ...keys.map((k) => String(r.byKind[k] ?? 0)),
      ]),
    ),
  ];
  process.stdout.write(`${out.join('\n')}\n`);
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(
    RESULTS,
    `${JSON.stringify({ benchmark: 'review-count', base: { ref: baseRef, sha: baseSha }, pods, date: new Date().toISOString(), results }, null, 2)}\n`,
  );
  log(`results: ${RESULTS}`);
  return [];
}

runIfMain(import.meta.url, main);
