/**
 * `npm run bench -- allow-lists`: what the allow-lists' webhook entry (allow.tenantgate.io, rules
 * X1–X9, H1, H2, docs/adr/0073-allow-lists-in-the-webhook.md) adds to a pod create. One control plane, the
 * webhook in this process (as review-count.ts), one project with allow-lists and a namespace of it;
 * alice (a tenant, no privilege) creates pods that every list admits, `dryRun=All` (admission runs in
 * full, nothing is stored, the scheduler never sees them), BENCH_ALLOW_PODS per round at concurrency
 * BENCH_ALLOW_CONCURRENCY. Rounds alternate the shipped registrations with and without the allow entry,
 * BENCH_ALLOW_ROUNDS of each, in one run; per round: the client's latency (p50, p99) and the CPU seconds
 * of kube-apiserver (above its idle rate, measured for a second before each round) and of this process
 * (the webhook and the client) per 1,000 creates. The loop is bench/lib/interleaved.ts.
 *
 *   npm run bench -- allow-lists        BENCH_ALLOW_PODS=400 BENCH_ALLOW_ROUNDS=3 BENCH_ALLOW_CONCURRENCY=4
 */
import * as k8s from '@kubernetes/client-node';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { ControlPlane, REPO_ROOT } from '../../test/support/devcluster/controlplane.js';
import { installBase, kubectlAs, localWebhookConfigurations, startLocalWebhook, unregisterWebhooks } from '../../test/support/devcluster/tenantgate.js';
import { interleaved } from '../lib/interleaved.js';
import { env, log, median, stats, table } from '../lib/measure.js';
import { runIfMain } from '../lib/entry.js';

const RESULTS = join(REPO_ROOT, 'bench', 'results', 'allow-lists.json');
const PROJECT = 'ballow';
const NS = `${PROJECT}-app`;
const POOL = { pool: PROJECT };

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > end) throw new Error(`allow-lists bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The shipped registrations, without the allow entry when `withAllow` is false. */
function registrations(text: string, withAllow: boolean): string {
  if (withAllow) return text;
  return parseAllDocuments(text)
    .map((d) => {
      const doc = d.toJS() as { kind: string; webhooks: Array<{ name: string }> };
      if (doc.kind === 'ValidatingWebhookConfiguration') doc.webhooks = doc.webhooks.filter((w) => w.name !== 'allow.tenantgate.io');
      return `---\n${stringify(doc)}`;
    })
    .join('');
}

interface Round {
  mode: 'with allow-lists' | 'without';
  round: number;
  load: string;
  p50: number;
  p99: number;
  apiserverCpuPer1000: number;
  benchProcessCpuPer1000: number;
  errors: number;
}

export async function main(): Promise<string[]> {
  const pods = Math.max(10, Math.round(env('BENCH_ALLOW_PODS', 400)));
  const rounds = Math.max(1, Math.round(env('BENCH_ALLOW_ROUNDS', 3)));
  const concurrency = Math.max(1, Math.round(env('BENCH_ALLOW_CONCURRENCY', 4)));
  const cp = await ControlPlane.start({ log });
  const results: Round[] = [];
  try {
    const info = cp.info;
    const kubectl = (args: string[], input?: string) => kubectlAs(info, 'admin', args, input);
    await installBase(info);
    const hook = await startLocalWebhook(info, {}, { register: false });
    const shipped = await localWebhookConfigurations(hook.url, hook.certs.caBundle);
    const register = async (withAllow: boolean) => kubectl(['apply', '-f', '-'], registrations(shipped, withAllow));
    await register(true);
    const project = {
      apiVersion: 'tenantgate.io/v1alpha1',
      kind: 'Project',
      metadata: { name: PROJECT },
      spec: {
        tenant: 'acme',
        owners: [{ kind: 'User', name: 'alice' }],
        allow: { priorityClasses: ['bench-batch'], runtimeClasses: ['gvisor'], storageClasses: ['standard'], nodePlacement: { nodeSelector: POOL }, registries: ['registry.k8s.io/'] },
      },
    };
    await kubectl(['apply', '-f', '-'], JSON.stringify(project));
    await until('the Project in the webhook cache', async () => hook.webhook.cache.snapshot.project(PROJECT) !== undefined);
    await kubectl(['create', 'namespace', NS]);
    await kubectl(['-n', NS, 'create', 'rolebinding', 'bench-alice', '--clusterrole=admin', '--user=alice']);
    await until('the default ServiceAccount', async () => (await kubectl(['-n', NS, 'get', 'serviceaccount', 'default', '--ignore-not-found', '-o', 'name'])).stdout.trim() !== '');
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(info.kubeconfigs.alice!);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const body = (i: number): k8s.V1Pod => ({ metadata: { name: `p${i}` }, spec: { nodeSelector: POOL, containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.10' }] } });
    const refusedProbe = async () => {
      try {
        await core.createNamespacedPod({ namespace: NS, dryRun: 'All', body: { metadata: { name: 'probe' }, spec: { containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.10' }] } } });
        return false;
      } catch (err) {
        return String((err as Error).message).includes('[X8]');
      }
    };
    const apiserverPid = cp.pid('kube-apiserver');
    const burst = async (): Promise<{ latencies: number[]; errors: number }> => {
      const latencies: number[] = [];
      let errors = 0;
      let next = 0;
      const worker = async () => {
        while (next < pods) {
          const i = next++;
          const started = performance.now();
          try {
            await core.createNamespacedPod({ namespace: NS, dryRun: 'All', body: body(i) });
            latencies.push(performance.now() - started);
          } catch {
            errors++;
          }
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
      return { latencies, errors };
    };
    // Warm-up: caches, connections, the JIT of both sides.
    await burst();
    await interleaved(
      {
        arms: ['with allow-lists', 'without'] as const,
        rounds,
        apiserverPid,
        idleSeconds: 1,
        enter: async (mode) => {
          const withAllow = mode === 'with allow-lists';
          await register(withAllow);
          // The apiserver picks the registration up from its informer: the probe (no node selector) is refused exactly when the entry is on.
          await until(`registration ${withAllow ? 'with' : 'without'} the allow entry in effect`, async () => (await refusedProbe()) === withAllow);
        },
        load: () => burst(),
      },
      (m) => {
        const s = stats(m.load.latencies.sort((a, b) => a - b));
        const r: Round = {
          mode: m.arm,
          round: m.round + 1,
          load: m.loadAverage[0].toFixed(2),
          p50: s.p50,
          p99: s.p99,
          apiserverCpuPer1000: (m.apiserverCpuSeconds / pods) * 1000,
          benchProcessCpuPer1000: (m.benchProcessCpuSeconds / pods) * 1000,
          errors: m.load.errors,
        };
        results.push(r);
        log(`${r.mode}, round ${r.round} (load ${r.load}): p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, kube-apiserver ${r.apiserverCpuPer1000.toFixed(2)} CPU s / 1000 creates above its idle rate, this process ${r.benchProcessCpuPer1000.toFixed(2)}, ${r.errors} errors`);
      },
    );
    await unregisterWebhooks(info);
    await hook.webhook.stop();
  } finally {
    await cp.stop();
  }
  const of = (mode: Round['mode'], pick: (r: Round) => number) => median(results.filter((r) => r.mode === mode).map(pick));
  const summary = (['with allow-lists', 'without'] as const).map((mode) => [mode, of(mode, (r) => r.p50).toFixed(2), of(mode, (r) => r.p99).toFixed(2), of(mode, (r) => r.apiserverCpuPer1000).toFixed(2), of(mode, (r) => r.benchProcessCpuPer1000).toFixed(2)]);
  process.stdout.write(
    `${[
      `Pod creates by a tenant (dryRun=All, ${pods} per round, concurrency ${concurrency}), medians over ${rounds} rounds of each, alternating in one run`,
      table(['registration', 'p50 ms', 'p99 ms', 'kube-apiserver CPU s / 1000', 'webhook + client CPU s / 1000'], summary),
      table(['registration', 'round', 'load', 'p50 ms', 'p99 ms', 'apiserver', 'this process', 'errors'], results.map((r) => [r.mode, String(r.round), r.load, r.p50.toFixed(2), r.p99.toFixed(2), r.apiserverCpuPer1000.toFixed(2), r.benchProcessCpuPer1000.toFixed(2), String(r.errors)])),
    ].join('\n')}\n`,
  );
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(RESULTS, `${JSON.stringify({ benchmark: 'allow-lists', pods, rounds, concurrency, date: new Date().toISOString(), results }, null, 2)}\n`);
  log(`results: ${RESULTS}`);
  const errors = results.reduce((n, r) => n + r.errors, 0);
  return errors > 0 ? [`${errors} pod creates failed (an allowed pod must be admitted)`] : [];
}

runIfMain(import.meta.url, main);
