/**
 * A rolling upgrade of the webhook under steady traffic, as the chart runs it: two `tenantgate webhook`
 * processes (dist/, ledger on, client certificates required, the chart's 5 s shutdown delay) behind the
 * round-robin proxy registered with the apiserver, the controller under its ServiceAccount. Tenants
 * write at a fixed 10 per second (namespace creates, quota growths, writes the rules deny) while each
 * replica in turn is replaced as a Deployment's rolling update does (test/support/devcluster/replicas.ts
 * roll(): the new one ready and added to the proxy, the old one removed and sent SIGTERM). Every write
 * gets the webhook's verdict (no "failed calling webhook", no "not ready"), the old processes exit 0
 * with nothing cut, each new one serves, and the project's budget holds on every sample
 * (docs/adr/0004-webhook.md).
 */
import * as k8s from '@kubernetes/client-node';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateWebhookCerts } from '../../src/certs/files.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { RunningController } from '../../src/controller/start.js';
import { loadKubeConfig } from '../../src/kube/kubeconfig.js';
import { DEFAULT_QUOTA_NAME } from '../../src/validate/types.js';
import { startTestController } from '../support/controller-kit.js';
import { startWebhookReplicas, type WebhookReplicas } from '../support/devcluster/replicas.js';
import { installBase, kubectlAs, serviceAccountKubeConfig } from '../support/devcluster/tenantgate.js';
import { classifyOutcome, type Outcome } from '../support/replica-race/attempts.js';
import { checkHeadroomInvariant, type BudgetProject } from '../support/budget-invariant.js';
import { removeProject } from '../support/replica-race/run.js';
import { cluster, eventually, uniqueName } from '../support/cluster.js';

const RATE_PER_SECOND = 10;
/** Concurrent writes sent at once while a new replica has served nothing yet. */
const BURST = 12;
const CPU = 'requests.cpu';

let webhooks: WebhookReplicas | undefined;
let controller: RunningController | undefined;
/** The test's Project: other files count the projects alice owns, so it goes (with its namespaces) before the webhooks and controller stop. */
let projectName: string | undefined;

afterAll(async () => {
  if (projectName)
    await removeProject(cluster(), projectName, (line) => process.stderr.write(`[webhook-rolling] ${line}\n`));
  await webhooks?.stop();
  await controller?.stop();
}, 180_000);

function messageOf(err: unknown): { status: number; message: string } {
  const e = err as { code?: unknown; body?: unknown; message?: unknown };
  const status = typeof e?.code === 'number' ? e.code : 0;
  let message = typeof e?.message === 'string' ? e.message : String(err);
  if (typeof e?.body === 'string') {
    try {
      message = (JSON.parse(e.body) as { message?: string }).message ?? e.body;
    } catch {
      message = e.body;
    }
  } else if (e?.body && typeof (e.body as { message?: unknown }).message === 'string')
    message = (e.body as { message: string }).message;
  return { status, message };
}

async function outcomeOf(call: Promise<unknown>): Promise<Outcome & { message?: string }> {
  try {
    await call;
    return classifyOutcome(200, '');
  } catch (err) {
    const { status, message } = messageOf(err);
    return { ...classifyOutcome(status, message), message };
  }
}

describe('rolling upgrade of the webhook under traffic', () => {
  it('10 writes per second while both replicas are replaced one by one: every write gets a verdict, the budget holds', async () => {
    const info = cluster();
    const name = uniqueName('roll');
    await installBase(info);
    const certs = await generateWebhookCerts(join(info.dir, `${name}-certs`));
    webhooks = await startWebhookReplicas(
      info,
      certs,
      {},
      { count: 2, name: `${name}-webhook`, shutdownDelaySeconds: 5 },
    );
    controller = await startTestController({
      kubeConfig: await serviceAccountKubeConfig(info, DEFAULT_CONFIG.systemNamespace, 'tenantgate-controller'),
    });
    const hooks = webhooks;
    const running = controller;
    const core = (user: string) => loadKubeConfig(info.kubeconfigs[user]!).makeApiClient(k8s.CoreV1Api);
    const alice = core('alice');
    const bob = core('bob');
    const admin = core('admin');

    const project: BudgetProject = { name, budget: { [CPU]: '6' }, defaults: { [CPU]: '100m' }, maxNamespaces: 30 };
    const spec = {
      tenant: 'acme',
      owners: [{ kind: 'User', name: 'alice' }],
      maxNamespaces: project.maxNamespaces,
      quota: { hard: project.budget },
      namespaceDefaults: { quota: { hard: project.defaults } },
    };
    projectName = name;
    await kubectlAs(
      info,
      'admin',
      ['apply', '-f', '-'],
      JSON.stringify({ apiVersion: 'tenantgate.io/v1alpha1', kind: 'Project', metadata: { name }, spec }),
    );
    await eventually(
      async () => {
        if (running.informers.snapshot.project(name) === undefined)
          throw new Error('controller has not seen the project');
        const projects = (await kubectlAs(info, 'admin', ['get', 'projects', '-o', 'name'])).stdout
          .trim()
          .split('\n').length;
        const seen = await hooks.scrape(/^tenantgate_webhook_cache_objects\{kind="Project"\}/);
        if (!seen.every((n) => n === projects))
          throw new Error(`replicas see ${seen.join('/')} projects, the apiserver has ${projects}`);
      },
      { what: 'the project in both replicas and the controller', timeoutMs: 60_000 },
    );

    // Namespaces the quota growths go to, made before the traffic starts.
    const grown = [`${name}-g0`, `${name}-g1`, `${name}-g2`];
    for (const ns of grown) {
      await alice.createNamespace({ body: { metadata: { name: ns } } });
      await eventually(() => admin.readNamespacedResourceQuota({ name: DEFAULT_QUOTA_NAME, namespace: ns }), {
        what: `${ns}: default quota`,
      });
    }
    const milli = new Map(grown.map((ns) => [ns, 100]));

    // The traffic: one write every 100 ms, whatever the answers take.
    type Write = { kind: string; outcome: Outcome & { message?: string } };
    const writes: Array<Promise<Write>> = [];
    const violations: string[] = [];
    let samples = 0;
    let tick = 0;
    const op = (i: number): Promise<Write> => {
      switch (i % 4) {
        case 0: {
          const ns = `${name}-n${i}`;
          return outcomeOf(alice.createNamespace({ body: { metadata: { name: ns } } })).then((outcome) => ({
            kind: 'namespace create',
            outcome,
          }));
        }
        case 1: {
          const ns = grown[(i >> 2) % grown.length]!;
          const next = (milli.get(ns) ?? 100) + 100;
          milli.set(ns, next);
          const body = { spec: { hard: { [CPU]: `${next}m` } } };
          return outcomeOf(
            alice.patchNamespacedResourceQuota(
              { name: DEFAULT_QUOTA_NAME, namespace: ns, body },
              k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
            ),
          ).then((outcome) => ({ kind: 'quota growth', outcome }));
        }
        case 2: {
          const body = { spec: { hard: { [CPU]: '100' } } };
          return outcomeOf(
            alice.patchNamespacedResourceQuota(
              { name: DEFAULT_QUOTA_NAME, namespace: grown[0]!, body },
              k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
            ),
          ).then((outcome) => ({ kind: 'quota over the budget', outcome }));
        }
        default:
          return outcomeOf(bob.createNamespace({ body: { metadata: { name: `${name}-bob${i}` } } })).then(
            (outcome) => ({ kind: 'namespace by a non-owner', outcome }),
          );
      }
    };
    const timer = setInterval(() => writes.push(op(tick++)), 1000 / RATE_PER_SECOND);
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        try {
          const namespaces = await admin.listNamespace();
          const resourceVersion = namespaces.metadata?.resourceVersion ?? '';
          const quotas = await admin.listResourceQuotaForAllNamespaces({
            resourceVersion,
            resourceVersionMatch: 'Exact',
          });
          const sample = checkHeadroomInvariant(project, namespaces.items, quotas.items, resourceVersion);
          samples += 1;
          violations.push(...sample.violations);
        } catch {
          // a sample that could not be read is skipped (counted by `samples` not moving)
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    })();

    const exits: Array<{ code: number | null; signal: NodeJS.Signals | null }> = [];
    let served: number[] = [];
    try {
      await new Promise((r) => setTimeout(r, 3_000));
      for (const index of [0, 1]) {
        const startedAt = Date.now();
        exits.push(await hooks.roll(index));
        console.log(
          `[webhook-rolling] replica ${index} replaced in ${Date.now() - startedAt} ms (${tick} writes sent so far)`,
        );
      }
      // Traffic goes on through the new processes (the old ones are gone: these are the new ones'
      // counters), and each of them serves. At 10 a second the apiserver may keep a single connection
      // alive, which the proxy gave to one replica: a burst of concurrent writes (counted with the rest)
      // makes it open more, and the proxy hands new connections to the replicas in turn.
      await eventually(
        async () => {
          served = await hooks.scrape(/^tenantgate_webhook_requests_total\{[^}]*path="\/?validate"/);
          if (served.length === 2 && served.every((n) => n > 0) && served.reduce((a, b) => a + b, 0) >= 20) return;
          const burst = Array.from({ length: BURST }, () => op(tick++));
          writes.push(...burst);
          await Promise.all(burst);
          throw new Error(`validate requests per new replica: ${served.join('/')} (each must serve, 20 in all)`);
        },
        { what: 'each new replica serving', timeoutMs: 30_000, intervalMs: 1000 },
      );
    } finally {
      clearInterval(timer);
      sampling = false;
    }
    const results = await Promise.all(writes);
    await sampler;

    const byKind: Record<string, Record<string, number>> = {};
    for (const { kind, outcome } of results) {
      const label =
        outcome.kind === 'refused'
          ? `refused ${outcome.rules[0]}`
          : outcome.kind === 'fail-closed'
            ? `fail-closed ${outcome.why}`
            : outcome.kind === 'other'
              ? `other ${outcome.why}`
              : 'admitted';
      (byKind[kind] ??= {})[label] = (byKind[kind]![label] ?? 0) + 1;
    }
    console.log(
      `[webhook-rolling] ${results.length} writes at ${RATE_PER_SECOND}/s: ${JSON.stringify(byKind)}; ${samples} budget samples; old replicas exited ${JSON.stringify(exits)}; validate requests on the new replicas ${served.join('/')}`,
    );

    // Every write got the webhook's verdict: admitted, or denied naming a rule. No failed call, no
    // "not ready", nothing the apiserver answered without asking the webhook.
    const withoutVerdict = results
      .filter(({ outcome }) => outcome.kind === 'fail-closed' || outcome.kind === 'other')
      .map(({ kind, outcome }) => `${kind}: ${outcome.message ?? JSON.stringify(outcome)}`);
    expect(withoutVerdict).toEqual([]);
    // Not vacuous: writes were admitted and denied throughout.
    expect(results.length).toBeGreaterThan(100);
    expect(results.filter((w) => w.outcome.kind === 'admitted').length).toBeGreaterThan(10);
    expect(results.filter((w) => w.outcome.kind === 'refused').length).toBeGreaterThan(10);
    // Both new replicas served (the proxy spread the apiserver's connections over them).
    for (const [k, n] of served.entries())
      expect(n, `validate requests answered by new replica ${k} (per replica: ${served.join('/')})`).toBeGreaterThan(0);
    // The old processes stopped gracefully: exit 0 means no request was cut (src/webhook/start.ts).
    expect(exits).toEqual([
      { code: 0, signal: null },
      { code: 0, signal: null },
    ]);
    // Zero overspend at every sample.
    expect(samples).toBeGreaterThan(5);
    expect(violations).toEqual([]);
  }, 180_000);
});
