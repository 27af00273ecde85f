/**
 * C1 on the real control plane (docs/budgets.md#cost): the webhook, registered with the apiserver and
 * configured with a price sheet, refuses a tenant's quota raise that would take the project's monthly
 * cost beyond spec.costBudget and admits one within it; the controller, with the same price sheet,
 * exports the cost and the cost budget as tenantgate_project_cost_monthly and
 * tenantgate_project_cost_budget_monthly, which the dashboard's cost panel selects.
 */
import * as k8s from '@kubernetes/client-node';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, parseConfig } from '../../src/config/config.js';
import type { RunningController } from '../../src/controller/controller.js';
import { API_GROUP, type Project } from '../../src/validate/types.js';
import {
  controllerKubeconfigFile,
  metricsTarget,
  metricsText,
  startTestController,
} from '../support/controller-kit.js';
import {
  applyOwnerBindings,
  installBase,
  startLocalWebhook,
  type LocalWebhook,
} from '../support/devcluster/tenantgate.js';
import { dashboardQueries, exportedNames, metricNames } from '../support/monitoring.js';
import { cluster, eventually, kubectl, uniqueName } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';

const RUN = uniqueName('cost');
const SELECTOR_LABEL = 'e2e.tenantgate.io/run';
const PROJECT = uniqueName('costly');
const SERVING = `${PROJECT}-serving`;
const TRAIN = `${PROJECT}-train`;
const SCRAPER = `prom-${RUN}`;
// 1 CPU costs 0.0575 × 500 = $28.75 a month, 1Gi 0.00671875 × 500 = $3.359375.
const { pricing } = parseConfig(`pricing:
  currency: USD
  hoursPerMonth: 500
  perHour:
    requests.cpu: {price: "0.0575"}
    requests.memory: {price: "0.00671875", per: 1Gi}
`);

const project: Project = {
  apiVersion: `${API_GROUP}/v1alpha1`,
  kind: 'Project',
  metadata: { name: PROJECT, labels: { [SELECTOR_LABEL]: RUN } },
  spec: {
    tenant: 'acme',
    owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
    quota: { hard: { 'requests.cpu': '80', 'requests.memory': '320Gi' } },
    namespaceDefaults: { quota: { hard: { 'requests.cpu': '2', 'requests.memory': '8Gi' } } },
    costBudget: { monthly: '1500' },
  },
};

const quota = (namespace: string, cpu: string) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: { name: 'tenantgate-quota', namespace },
    spec: { hard: { 'requests.cpu': cpu, 'requests.memory': '64Gi' } },
  });

let hook: LocalWebhook;
let controller: RunningController;
let scraperToken: string;

/** This project's cost series: metric name → {value, labels}. */
async function costSeries(): Promise<Record<string, { value: number; currency: string }>> {
  const out: Record<string, { value: number; currency: string }> = {};
  const text = await metricsText(metricsTarget(controller, scraperToken));
  for (const m of text.matchAll(/^(tenantgate_project_cost_[a-z_]+)\{([^}]*)\} (\S+)$/gm)) {
    if (!m[2]!.includes(`project="${PROJECT}"`)) continue;
    out[m[1]!] = { value: Number(m[3]), currency: /currency="([^"]*)"/.exec(m[2]!)?.[1] ?? '' };
  }
  return out;
}

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  hook = await startLocalWebhook(info, { pricing });
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
    config: { ...DEFAULT_CONFIG, resyncPeriodSeconds: 30, ...(pricing ? { pricing } : {}) },
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

  await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(project) });
  await eventually(async () => {
    if (!hook.webhook.cache.snapshot.project(PROJECT)) throw new Error('project not in the webhook cache');
  });
  // Two namespaces of 16 CPU and 64Gi each: $460 + $215 = $675 apiece, $1,350 of the $1,500.
  for (const ns of [SERVING, TRAIN]) {
    await kubectl('admin', ['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: ns, labels: { 'tenantgate.io/project': PROJECT, 'tenantgate.io/tenant': 'acme' } },
      }),
    });
    await kubectl('admin', ['apply', '-f', '-'], { input: quota(ns, '16') });
  }
  await applyOwnerBindings(info, project, [SERVING, TRAIN]);
  await eventually(async () => {
    for (const ns of [SERVING, TRAIN])
      if (![...hook.webhook.cache.snapshot.quotasInNamespace(ns)].length)
        throw new Error(`${ns}'s quota not in the webhook cache`);
  });
}, 180_000);

afterAll(async () => {
  // While the controller runs, so that its finalizer takes the namespaces with the Project.
  await removeProjects([PROJECT]);
  await controller?.stop();
  await hook?.stop();
  await kubectl('admin', ['delete', 'namespace', SERVING, TRAIN, '--wait=false', '--ignore-not-found'], {
    reject: false,
  });
  await kubectl('admin', ['delete', 'clusterrolebinding', SCRAPER, '--ignore-not-found'], { reject: false });
  await kubectl('admin', ['-n', 'default', 'delete', 'serviceaccount', SCRAPER, '--ignore-not-found'], {
    reject: false,
  });
});

describe('C1: a project allocation priced by tenantgate.yaml stays within spec.costBudget', () => {
  it('refuses a tenant raising a quota beyond the cost budget with [C1], and admits a raise within it', async () => {
    const before = (
      await kubectl('admin', [
        '-n',
        SERVING,
        'get',
        'quota',
        'tenantgate-quota',
        '-o',
        'jsonpath={.spec.hard.requests\\.cpu}',
      ])
    ).stdout;
    for (const dryRun of [['--dry-run=server'], []]) {
      const refused = await kubectl('alice', ['apply', '-f', '-', ...dryRun], {
        input: quota(SERVING, '24'),
        reject: false,
      });
      expect(refused.exitCode, refused.stdout).not.toBe(0);
      expect(refused.stderr).toContain('denied the request');
      expect(refused.stderr).toContain(
        `[C1] ResourceQuota ${SERVING}/tenantgate-quota asks requests.cpu 24: project ${PROJECT}'s allocation would cost $1,580.00/month, its cost budget is $1,500.00/month, $1,350.00 is allocated`,
      );
      // Q1 has room for it (80 CPU): the cost budget alone refuses it.
      expect(refused.stderr).not.toContain('[Q1]');
    }
    expect(
      (
        await kubectl('admin', [
          '-n',
          SERVING,
          'get',
          'quota',
          'tenantgate-quota',
          '-o',
          'jsonpath={.spec.hard.requests\\.cpu}',
        ])
      ).stdout,
    ).toBe(before);
    // +5 CPU: $1,493.75 of $1,500.
    const admitted = await kubectl('alice', ['apply', '-f', '-'], { input: quota(SERVING, '21'), reject: false });
    expect(admitted.exitCode, admitted.stderr).toBe(0);
    expect(
      (
        await kubectl('admin', [
          '-n',
          SERVING,
          'get',
          'quota',
          'tenantgate-quota',
          '-o',
          'jsonpath={.spec.hard.requests\\.cpu}',
        ])
      ).stdout,
    ).toBe('21');
    // One more CPU ($28.75) no longer fits the $6.25 left.
    const more = await kubectl('alice', ['apply', '-f', '-'], { input: quota(TRAIN, '17'), reject: false });
    expect(more.stderr).toContain(
      `[C1] ResourceQuota ${TRAIN}/tenantgate-quota asks requests.cpu 17: project ${PROJECT}'s allocation would cost $1,522.50/month, its cost budget is $1,500.00/month, $1,493.75 is allocated`,
    );
  });

  it('exports the cost and the cost budget with the currency, as the dashboard selects them', async () => {
    const series = await eventually(
      async () => {
        const s = await costSeries();
        if (s.tenantgate_project_cost_monthly?.value !== 1493.75)
          throw new Error(`cost not updated yet: ${JSON.stringify(s)}`);
        return s;
      },
      { what: 'tenantgate_project_cost_monthly 1493.75' },
    );
    expect(series).toEqual({
      tenantgate_project_cost_monthly: { value: 1493.75, currency: 'USD' },
      tenantgate_project_cost_budget_monthly: { value: 1500, currency: 'USD' },
    });
    const exported = exportedNames(await metricsText(metricsTarget(controller, scraperToken)));
    const costQueries = (await dashboardQueries()).filter((q) =>
      [...metricNames(q.expr)].some((n) => n.startsWith('tenantgate_project_cost_')),
    );
    expect(costQueries.length).toBe(2);
    for (const q of costQueries) for (const n of metricNames(q.expr)) expect(exported, `${q.panel}: ${n}`).toContain(n);
  });
});
