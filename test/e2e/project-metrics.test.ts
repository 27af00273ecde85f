/**
 * The per-project budget metrics scraped from a running controller, and the names the dashboard and the
 * alerts use checked against what a running controller and webhook export, all against the real control
 * plane: the webhook registered with the apiserver (it labels alice's namespace and denies her reserved
 * one), the controller under its ServiceAccount with the shipped RBAC (it creates the default quota and
 * runs the cascade). Values are read from /metrics as Prometheus would: over HTTPS with the token of a
 * ServiceAccount bound to the chart's ClusterRole tenantgate-metrics-reader; without a token, or with a
 * tenant's, the controller answers 401 or 403 and nothing of the projects.
 */
import * as k8s from '@kubernetes/client-node';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningController } from '../../src/controller/controller.js';
import { API_GROUP } from '../../src/validate/types.js';
import { helmBinary } from '../../hack/chart-manifests.js';
import {
  clients,
  controllerKubeconfigFile,
  getMetrics,
  metricsTarget,
  metricsText,
  setQuota,
  type Clients,
  startTestController,
} from '../support/controller-kit.js';
import { httpsGet } from '../support/devcluster/https-get.js';
import { installBase, startLocalWebhook, type LocalWebhook } from '../support/devcluster/tenantgate.js';
import { dashboardQueries, exportedNames, metricNames, renderedRuleGroups } from '../support/monitoring.js';
import { cluster, eventually, kubeConfig, kubectl, uniqueName } from '../support/cluster.js';
import { confirmDeletions, projectsLabelled, removeProjects } from '../support/leftovers.js';

/** The bursts' series (src/controller/burst-metrics.ts), checked with a burst by test/e2e/bursts.test.ts. */
const isBurstSeries = (n: string) =>
  n.startsWith('tenantgate_project_burst_') || n === 'tenantgate_project_over_budget_after_burst';
const RUN = uniqueName('pm');
const SELECTOR_LABEL = 'e2e.tenantgate.io/run';
const HOLD = 'e2e.tenantgate.io/hold';
// Not "shop-…": tenancy-boundary.test.ts has a Project shop on the same cluster, and N4 refuses overlapping prefixes.
const PROJECT = uniqueName('metered');
const NS = `${PROJECT}-dev`;

let c: Clients;
let hook: LocalWebhook;
let controller: RunningController;
/** The token of a ServiceAccount bound to tenantgate-metrics-reader, as Prometheus' would be. */
let scraperToken: string;
const SCRAPER = `prom-${RUN}`;

interface Series {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parseExposition(text: string): Series[] {
  const out: Series[] = [];
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

async function controllerText(): Promise<string> {
  return metricsText(metricsTarget(controller, scraperToken));
}

async function webhookText(): Promise<string> {
  const res = await httpsGet(`https://127.0.0.1:${hook.webhook.port}/metrics`, {
    ca: await readFile(hook.certs.caCert),
  });
  expect(res.status).toBe(200);
  return res.body;
}

/** The example project's tenantgate_project_* series: "name resource|phase" → value. */
async function projectMetrics(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const s of parseExposition(await controllerText())) {
    if (!s.name.startsWith('tenantgate_project_') || s.labels.project !== PROJECT) continue;
    expect(s.labels.tenant).toBe('acme');
    expect(s.labels.cluster).toBe('');
    const detail = s.labels.resource ?? s.labels.phase;
    out[detail ? `${s.name} ${detail}` : s.name] = s.value;
  }
  return out;
}

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  hook = await startLocalWebhook(info);
  c = clients(kubeConfig('admin'));
  const controllerKc = new k8s.KubeConfig();
  controllerKc.loadFromFile(
    await controllerKubeconfigFile(
      (args) => kubectl('admin', args),
      info.server,
      info.caFile,
      join(info.dir, `controller-${RUN}.kubeconfig`),
    ),
  );
  controller = await startTestController({
    kubeConfig: controllerKc,
    projectSelector: `${SELECTOR_LABEL}=${RUN}`,
    log: (m) => {
      if (process.env.TG_DEBUG) process.stderr.write(`[controller] ${m}\n`);
    },
  });
  await eventually(async () => {
    if (!controller.isLeader()) throw new Error('controller not reconciling yet');
  });
  await kubectl('admin', ['-n', 'default', 'create', 'serviceaccount', SCRAPER]);
  await kubectl('admin', [
    'create',
    'clusterrolebinding',
    SCRAPER,
    '--clusterrole=tenantgate-metrics-reader',
    `--serviceaccount=default:${SCRAPER}`,
  ]);
  scraperToken = (await kubectl('admin', ['-n', 'default', 'create', 'token', SCRAPER, '--duration=1h'])).stdout.trim();
}, 180_000);

afterAll(async () => {
  // While the controller runs, so that its finalizer takes their namespaces with the Projects.
  await removeProjects(await projectsLabelled(`${SELECTOR_LABEL}=${RUN}`));
  await controller?.stop();
  await hook?.stop();
  await kubectl('admin', ['delete', 'clusterrolebinding', SCRAPER, '--ignore-not-found'], { reject: false });
  await kubectl('admin', ['-n', 'default', 'delete', 'serviceaccount', SCRAPER, '--ignore-not-found'], {
    reject: false,
  });
});

describe("who may read the controller's /metrics (HTTPS, TokenReview, SubjectAccessReview)", () => {
  it("no token: 401; a tenant's token: 403; a ServiceAccount bound to tenantgate-metrics-reader: 200 with the project series", async () => {
    const seen = uniqueName('seen');
    await kubectl('admin', ['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: `${API_GROUP}/v1alpha1`,
        kind: 'Project',
        metadata: { name: seen, labels: { [SELECTOR_LABEL]: RUN } },
        spec: { tenant: 'acme', quota: { hard: { pods: '3' } } },
      }),
    });
    try {
      const target = metricsTarget(controller, scraperToken);
      await eventually(
        async () =>
          expect(await metricsText(target)).toContain(`tenantgate_project_budget{project="${seen}",tenant="acme"`),
        { what: 'the project in the metrics' },
      );

      const none = await getMetrics({ port: target.port, ...(target.ca ? { ca: target.ca } : {}) });
      expect(none.status).toBe(401);
      expect(none.body).toContain('Authorization: Bearer <token>');
      const forged = await getMetrics({ ...target, token: 'not-a-token' });
      expect(forged.status).toBe(401);
      const tenant = await getMetrics({ ...target, token: cluster().tokens.alice! });
      expect(tenant.status).toBe(403);
      expect(tenant.body).toContain('user "alice" may not get /metrics');
      for (const refused of [none, forged, tenant]) {
        expect(refused.body).not.toContain(seen);
        expect(refused.body).not.toContain('tenantgate_');
        expect(refused.body).not.toContain('acme');
      }
      // The binding goes: a token not seen before is refused (one seen already keeps its allowed answer
      // for up to 60 s, docs/adr/0033-observability.md).
      await kubectl('admin', ['delete', 'clusterrolebinding', SCRAPER]);
      const fresh = (
        await kubectl('admin', ['-n', 'default', 'create', 'token', SCRAPER, '--duration=1h'])
      ).stdout.trim();
      await eventually(async () => expect((await getMetrics({ ...target, token: fresh })).status).toBe(403), {
        what: 'the unbound scraper refused',
      });
      // Refusals are not cached: bound again, the same token is let in as soon as the apiserver's RBAC has the binding.
      await kubectl('admin', [
        'create',
        'clusterrolebinding',
        SCRAPER,
        '--clusterrole=tenantgate-metrics-reader',
        `--serviceaccount=default:${SCRAPER}`,
      ]);
      await eventually(async () => expect((await getMetrics({ ...target, token: fresh })).status).toBe(200), {
        what: 'the bound scraper let in',
      });
    } finally {
      await kubectl('admin', ['delete', 'project', seen, '--wait=false'], { reject: false });
    }
  });
});

describe('tenantgate_project_* from a running controller', () => {
  it('follows the example project: created, a namespace with its default quota, a quota raised, a pod using it, the cascade, deleted', async () => {
    await kubectl('admin', ['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: `${API_GROUP}/v1alpha1`,
        kind: 'Project',
        metadata: { name: PROJECT, labels: { [SELECTOR_LABEL]: RUN } },
        spec: {
          tenant: 'acme',
          owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
          quota: { hard: { 'requests.cpu': '10', 'requests.memory': '8Gi', pods: '20' } },
          namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', 'requests.memory': '1Gi', pods: '5' } } },
        },
      }),
    });
    // The budget is there before any namespace: nothing allocated, the whole budget as headroom.
    const empty = await eventually(
      async () => {
        const m = await projectMetrics();
        expect(m['tenantgate_project_phase Active']).toBe(1);
        return m;
      },
      { what: 'the project Active in the metrics' },
    );
    expect(empty).toMatchObject({
      'tenantgate_project_budget requests.cpu': 10,
      'tenantgate_project_budget requests.memory': 8 * 2 ** 30,
      'tenantgate_project_budget pods': 20,
      'tenantgate_project_allocated requests.cpu': 0,
      'tenantgate_project_headroom requests.cpu': 10,
      tenantgate_project_namespaces: 0,
      'tenantgate_project_phase Terminating': 0,
      'tenantgate_project_phase Degraded': 0,
      tenantgate_project_cascade_in_progress: 0,
      tenantgate_project_cascade_namespaces_remaining: 0,
    });

    // alice (an owner) creates a namespace through the webhook, which labels it; the controller gives it the default quota.
    await eventually(async () => {
      if (!hook.webhook.cache.snapshot.project(PROJECT)) throw new Error('project not in the webhook cache');
    });
    await kubectl('alice', ['create', 'namespace', NS]);
    const withNamespace = await eventually(
      async () => {
        const m = await projectMetrics();
        expect(m['tenantgate_project_namespaces']).toBe(1);
        expect(m['tenantgate_project_allocated requests.cpu']).toBe(2);
        return m;
      },
      { what: 'the default quota counted' },
    );
    expect(withNamespace).toMatchObject({
      'tenantgate_project_allocated requests.memory': 2 ** 30,
      'tenantgate_project_allocated pods': 5,
      'tenantgate_project_headroom requests.cpu': 8,
      'tenantgate_project_headroom pods': 15,
      'tenantgate_project_used requests.cpu': 0,
    });

    // The quota changes: the next scrape shows it (nothing is cached between scrapes).
    await setQuota(c, NS, { 'requests.cpu': '6', 'requests.memory': '2Gi', pods: '10' });
    await eventually(
      async () => {
        const m = await projectMetrics();
        expect(m['tenantgate_project_allocated requests.cpu']).toBe(6);
        expect(m['tenantgate_project_headroom requests.cpu']).toBe(4);
        expect(m['tenantgate_project_allocated requests.memory']).toBe(2 * 2 ** 30);
        expect(m['tenantgate_project_headroom pods']).toBe(10);
      },
      { what: 'the raised quota counted' },
    );

    // A pod (never scheduled: this control plane has no nodes) counts in the quota's status.used.
    const pod = {
      metadata: { name: 'app' },
      spec: {
        automountServiceAccountToken: false,
        securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
        containers: [
          {
            name: 'app',
            image: 'registry.example/app:1',
            resources: { requests: { cpu: '500m', memory: '256Mi' } },
            securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          },
        ],
      },
    };
    await eventually(() => c.core.createNamespacedPod({ namespace: NS, body: pod as k8s.V1Pod }), {
      what: 'a pod created (the default ServiceAccount may come later)',
    });
    await eventually(
      async () => {
        const m = await projectMetrics();
        expect(m['tenantgate_project_used requests.cpu']).toBe(0.5);
        expect(m['tenantgate_project_used requests.memory']).toBe(256 * 2 ** 20);
        expect(m['tenantgate_project_used pods']).toBe(1);
      },
      { what: 'the pod counted as used' },
    );
    if (process.env.TG_SHOW_METRICS)
      process.stderr.write(
        `${(await controllerText())
          .split('\n')
          .filter((l) => l.includes(`project="${PROJECT}"`))
          .join('\n')}\n`,
      );

    // Deleting the project: a ConfigMap's finalizer holds the namespace, so the cascade shows in progress.
    await c.core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'held', finalizers: [HOLD] } } });
    // The ConfigMap is what a tenant makes: a platform admin confirms the deletion (ADR 0096).
    await confirmDeletions([PROJECT]);
    await kubectl('admin', ['delete', 'project', PROJECT, '--wait=false']);
    await eventually(
      async () => {
        const m = await projectMetrics();
        expect(m['tenantgate_project_cascade_in_progress']).toBe(1);
        expect(m['tenantgate_project_cascade_namespaces_remaining']).toBe(1);
        expect(m['tenantgate_project_phase Terminating']).toBe(1);
        expect(m['tenantgate_project_phase Active']).toBe(0);
      },
      { what: 'the cascade in progress' },
    );

    await c.core.patchNamespacedConfigMap({
      name: 'held',
      namespace: NS,
      body: [{ op: 'remove', path: '/metadata/finalizers' }],
    });
    // The project is gone: so are all its series.
    await eventually(
      async () => {
        expect(await projectMetrics()).toEqual({});
      },
      { what: "the project's series gone", timeoutMs: 90_000 },
    );
    expect(await controllerText()).not.toContain(`project="${PROJECT}"`);
  });
});

describe('the dashboard and the alerts use only exported metrics', () => {
  it('every metric a dashboard query or an alert selects is exported by the running controller or webhook', async () => {
    // One denied request (N2: a reserved prefix) and the admitted namespace above put samples in the
    // webhook's labelled series (requests, latency histogram, denials): a family without samples does not count.
    const denied = await kubectl('alice', ['create', 'namespace', `kube-${RUN}`], { reject: false });
    expect(denied.exitCode).not.toBe(0);
    expect(denied.stderr).toContain('[N2]');
    // An unknown path is refused and counted (tenantgate_webhook_bad_requests_total{code="404"}).
    expect(
      (await httpsGet(`https://127.0.0.1:${hook.webhook.port}/no-such-path`, { ca: await readFile(hook.certs.caCert) }))
        .status,
    ).toBe(404);
    // The example project above is gone: one more keeps the per-project series present.
    const keep = uniqueName('keep');
    await kubectl('admin', ['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: `${API_GROUP}/v1alpha1`,
        kind: 'Project',
        metadata: { name: keep, labels: { [SELECTOR_LABEL]: RUN } },
        spec: { tenant: 'acme', quota: { hard: { pods: '3' } } },
      }),
    });
    const exported = await eventually(
      async () => {
        const names = new Set([...exportedNames(await controllerText()), ...exportedNames(await webhookText())]);
        for (const n of [
          'tenantgate_project_budget',
          'tenantgate_project_phase',
          'tenantgate_webhook_denials_total',
          'tenantgate_webhook_request_duration_seconds_bucket',
          'tenantgate_webhook_bad_requests_total',
        ]) {
          if (!names.has(n)) throw new Error(`${n} not exported yet`);
        }
        return names;
      },
      { what: 'the project and webhook series exported' },
    );
    expect(exported).toContain('tenantgate_webhook_request_duration_seconds_sum');
    expect(exported).toContain('tenantgate_webhook_request_duration_seconds_count');

    const queries = await dashboardQueries();
    expect(queries.length).toBeGreaterThan(10);
    const missing: string[] = [];
    for (const q of queries) {
      const names = metricNames(q.expr);
      if (names.size === 0) missing.push(`${q.panel}: selects no metric: ${q.expr}`);
      // The cost series need tenantgate.yaml's pricing, which this controller runs without: test/e2e/cost-budget.test.ts checks them.
      // The burst series exist only while a project has a burst (and one ends with pods above it): test/e2e/bursts.test.ts checks them.
      for (const n of names)
        if (!exported.has(n) && !n.startsWith('tenantgate_project_cost_') && !isBurstSeries(n))
          missing.push(`${q.panel}: ${n}`);
    }
    // Prometheus itself makes `up`; everything else comes from tenantgate.
    // The fleet groups select series only a fleet member's controller exports: test/e2e/fleet-giveback.test.ts checks those.
    // A waiting deletion's series exists only while a Project's deletion waits: test/e2e/deletion-lifecycle.test.ts checks it.
    const waitingSeries = (n: string) => n === 'tenantgate_project_deletion_waiting';
    for (const group of (await renderedRuleGroups(await helmBinary())).filter(
      (g) => !g.name.startsWith('tenantgate.fleet'),
    )) {
      for (const rule of group.rules)
        for (const n of metricNames(rule.expr))
          if (n !== 'up' && !exported.has(n) && !isBurstSeries(n) && !waitingSeries(n))
            missing.push(`alert ${rule.alert}: ${n}`);
    }
    expect(missing).toEqual([]);
    // The dashboard covers what it promises: budget use, headroom, denials by rule, admission latency.
    const all = new Set(queries.flatMap((q) => [...metricNames(q.expr)]));
    for (const n of [
      'tenantgate_project_allocated',
      'tenantgate_project_used',
      'tenantgate_project_budget',
      'tenantgate_project_headroom',
      'tenantgate_webhook_denials_total',
      'tenantgate_webhook_request_duration_seconds_bucket',
    ]) {
      expect(all, n).toContain(n);
    }
    await kubectl('admin', ['delete', 'project', keep, '--wait=false']);
  });

  it('metricNames finds the selected metrics and nothing else', () => {
    expect([
      ...metricNames(
        'histogram_quantile(0.99, sum by (le, path) (rate(tenantgate_webhook_request_duration_seconds_bucket{path=~"$p"}[$__rate_interval])))',
      ),
    ]).toEqual(['tenantgate_webhook_request_duration_seconds_bucket']);
    expect(
      [
        ...metricNames(
          'max by (project) (a_total) / on (project) b > 0.1 and absent(up{job=~"x"} == 1) or c offset 5m',
        ),
      ].sort(),
    ).toEqual(['a_total', 'b', 'c', 'up']);
    expect([...metricNames('1e9 * x')]).toEqual(['x']);
  });
});
