/**
 * The Helm chart installed for real with the built helm, on a control plane of its own (the shared one
 * already holds the objects installBase applied with kubectl): `helm install`, with the webhook
 * configurations pointed at `tenantgate webhook` and `tenantgate controller` processes started from
 * dist/ under the ServiceAccounts and with the ConfigMap the chart made (no kubelet runs the
 * Deployments here); then the boundary smoke (a denial, an admission, a cascade), `helm upgrade` with
 * changed values, and `helm uninstall`, which leaves nothing of tenantgate but the CRD (kept by policy,
 * so the Projects survive).
 */
import { execa } from 'execa';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHART_DIR, helmBinary } from '../../hack/chart-manifests.js';
import { generateWebhookCerts, type WebhookCertFiles } from '../../src/certs/files.js';
import { ControlPlane } from '../support/devcluster/controlplane.js';
import { httpsGet } from '../support/devcluster/https-get.js';
import { freePort } from '../support/devcluster/ports.js';
import { startProcess, type Managed } from '../support/devcluster/processes.js';
import { serviceAccountKubeconfigFile } from '../support/devcluster/tenantgate.js';
import { REPO_ROOT } from '../support/paths.js';
import { eventually } from '../support/cluster.js';
import { metricsText } from '../support/controller-kit.js';

const CLI = join(REPO_ROOT, 'dist', 'cli', 'main.js');
const NAMESPACE = 'tenantgate-system';
let cp: ControlPlane;
let helm: string;
let certs: WebhookCertFiles;
let webhookPort: number;
const processes: Managed[] = [];

const kubectl = (user: string, args: string[], input?: string) =>
  execa(join(cp.info.binDir, 'kubectl'), args, {
    env: { KUBECONFIG: cp.info.kubeconfigs[user] ?? '' },
    reject: false,
    timeout: 60_000,
    ...(input !== undefined ? { input } : {}),
  });
const helmRun = (args: string[]) =>
  execa(helm, [...args, '--kubeconfig', cp.info.kubeconfigs.admin!], { reject: false, timeout: 120_000 });
const releaseValues = (extra: string[] = []) => [
  '--set',
  'namespace.create=false',
  '--set',
  `webhook.url=https://127.0.0.1:${webhookPort}`,
  '--set',
  `certificates.caBundle=${certs.caBundle}`,
  ...extra,
];

async function json<T>(args: string[]): Promise<T | undefined> {
  const r = await kubectl('admin', ['get', ...args, '-o', 'json', '--ignore-not-found']);
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout.trim() ? (JSON.parse(r.stdout) as T) : undefined;
}

beforeAll(async () => {
  cp = await ControlPlane.start();
  helm = await helmBinary();
  certs = await generateWebhookCerts(join(cp.info.dir, 'chart-certs'));
  webhookPort = await freePort();
}, 180_000);

afterAll(async () => {
  for (const p of processes.reverse()) await p.stop(10_000);
  await cp?.stop();
});

describe('helm install, upgrade, uninstall', () => {
  it('helm install: the release is deployed, and the webhook and controller run from its ServiceAccounts and ConfigMap', async () => {
    // As docs/install.md says: Helm keeps its release record in the release namespace, so that namespace
    // exists first (with its Pod Security label) and the chart does not make it.
    expect((await kubectl('admin', ['create', 'namespace', NAMESPACE])).exitCode).toBe(0);
    expect(
      (await kubectl('admin', ['label', 'namespace', NAMESPACE, 'pod-security.kubernetes.io/enforce=restricted']))
        .exitCode,
    ).toBe(0);
    const installed = await helmRun(['install', 'tenantgate', CHART_DIR, '-n', NAMESPACE, ...releaseValues()]);
    expect(installed.exitCode, installed.stderr).toBe(0);
    expect(installed.stdout).toMatch(/STATUS: deployed/);
    const config = await kubectl('admin', [
      '-n',
      NAMESPACE,
      'get',
      'configmap',
      'tenantgate-config',
      '-o',
      'jsonpath={.data.tenantgate\\.yaml}',
    ]);
    expect(config.stdout).toMatch(/podSecurity/);
    const configFile = join(cp.info.dir, 'chart-tenantgate.yaml');
    await writeFile(configFile, config.stdout);

    const webhookKubeconfig = await serviceAccountKubeconfigFile(cp.info, NAMESPACE, 'tenantgate-webhook');
    processes.push(
      startProcess(
        'chart-webhook',
        process.execPath,
        [
          CLI,
          'webhook',
          `--config=${configFile}`,
          `--kubeconfig=${webhookKubeconfig}`,
          `--cert=${certs.cert}`,
          `--key=${certs.key}`,
          `--port=${webhookPort}`,
          '--host=127.0.0.1',
        ],
        join(cp.info.dir, 'chart-webhook.log'),
      ),
    );
    const ca = await readFile(certs.caCert);
    await eventually(
      async () => expect((await httpsGet(`https://127.0.0.1:${webhookPort}/readyz`, { ca })).status).toBe(200),
      { timeoutMs: 60_000, what: 'webhook ready' },
    );

    const metrics = await freePort();
    const probes = await freePort();
    const controllerKubeconfig = await serviceAccountKubeconfigFile(cp.info, NAMESPACE, 'tenantgate-controller');
    processes.push(
      startProcess(
        'chart-controller',
        process.execPath,
        [
          CLI,
          'controller',
          `--config=${configFile}`,
          `--kubeconfig=${controllerKubeconfig}`,
          `--metrics-port=${metrics}`,
          '--metrics-host=127.0.0.1',
          `--metrics-cert=${certs.cert}`,
          `--metrics-key=${certs.key}`,
          `--probe-port=${probes}`,
          '--probe-host=127.0.0.1',
          '--no-leader-election',
        ],
        join(cp.info.dir, 'chart-controller.log'),
      ),
    );
    await eventually(async () => expect((await fetch(`http://127.0.0.1:${probes}/readyz`)).status).toBe(200), {
      timeoutMs: 60_000,
      what: 'controller ready',
    });
    // The chart's RBAC as installed: the controller may review tokens (the admin's is allowed /metrics).
    expect(
      (await metricsText({ port: metrics, token: cp.info.tokens.admin!, ca: await readFile(certs.caCert, 'utf8') }))
        .length,
    ).toBeGreaterThan(0);
    // The tenants' binding came last, as a post-install hook.
    expect(await json(['clusterrolebinding', 'tenantgate-self-service'])).toBeDefined();
  }, 240_000);

  it('the boundary as installed: a denial with its rule id, an owner admitted and mutated, a cascade', async () => {
    const project = {
      apiVersion: 'tenantgate.io/v1alpha1',
      kind: 'Project',
      metadata: { name: 'pchart' },
      spec: {
        tenant: 'acme',
        owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
        quota: { hard: { 'requests.cpu': '2', pods: '20' } },
        namespaceDefaults: { quota: { hard: { 'requests.cpu': '500m', pods: '5' } } },
      },
    };
    const applied = await kubectl('admin', ['apply', '-f', '-'], JSON.stringify(project));
    expect(applied.exitCode, applied.stderr).toBe(0);
    const denied = await eventually(
      async () => {
        const r = await kubectl('bob', ['create', 'namespace', 'pchart-bob']);
        expect(r.stderr).toContain('[T4]');
        return r;
      },
      { what: 'the webhook knows pchart' },
    );
    expect(denied.exitCode).not.toBe(0);
    expect(await json(['namespace', 'pchart-bob'])).toBeUndefined();
    const created = await kubectl('alice', ['create', 'namespace', 'pchart-a']);
    expect(created.exitCode, created.stderr).toBe(0);
    const ns = await json<{ metadata: { labels: Record<string, string> } }>(['namespace', 'pchart-a']);
    expect(ns?.metadata.labels).toMatchObject({
      'tenantgate.io/project': 'pchart',
      'pod-security.kubernetes.io/enforce': 'baseline',
    });
    await eventually(
      async () => {
        expect(await json(['-n', 'pchart-a', 'rolebinding', 'tenantgate-owners'])).toBeDefined();
        expect(await json(['-n', 'pchart-a', 'resourcequota', 'tenantgate-quota'])).toBeDefined();
      },
      { what: "the controller's owners binding and default quota" },
    );
    expect((await kubectl('admin', ['delete', 'project', 'pchart', '--wait=false'])).exitCode).toBe(0);
    await eventually(
      async () => {
        expect(await json(['namespace', 'pchart-a'])).toBeUndefined();
        expect(await json(['project', 'pchart'])).toBeUndefined();
      },
      { timeoutMs: 90_000, what: 'pchart cascaded' },
    );
  }, 180_000);

  it('helm upgrade with changed values changes what they configure', async () => {
    const upgraded = await helmRun([
      'upgrade',
      'tenantgate',
      CHART_DIR,
      '-n',
      NAMESPACE,
      ...releaseValues(['--set', 'webhook.timeoutSeconds=7', '--set-json', 'config={"headroomWarningThreshold":0.25}']),
    ]);
    expect(upgraded.exitCode, upgraded.stderr).toBe(0);
    expect(upgraded.stdout).toMatch(/REVISION: 2/);
    const validating = await json<{ webhooks: Array<{ timeoutSeconds: number }> }>([
      'validatingwebhookconfiguration',
      'tenantgate',
    ]);
    // validate, objects and allow (.tenantgate.io): every one takes the value.
    expect(validating?.webhooks.map((w) => w.timeoutSeconds)).toEqual([7, 7, 7]);
    const config = await kubectl('admin', [
      '-n',
      NAMESPACE,
      'get',
      'configmap',
      'tenantgate-config',
      '-o',
      'jsonpath={.data.tenantgate\\.yaml}',
    ]);
    expect(config.stdout).toMatch(/^headroomWarningThreshold: 0\.25$/m);
    expect(await json(['clusterrolebinding', 'tenantgate-self-service'])).toBeDefined();
  }, 180_000);

  it('helm uninstall leaves nothing of tenantgate but the CRD, which keeps the Projects', async () => {
    const kept = {
      apiVersion: 'tenantgate.io/v1alpha1',
      kind: 'Project',
      metadata: { name: 'pkept' },
      spec: { tenant: 'acme' },
    };
    expect((await kubectl('admin', ['apply', '-f', '-'], JSON.stringify(kept))).exitCode).toBe(0);
    const uninstalled = await helmRun(['uninstall', 'tenantgate', '-n', NAMESPACE, '--wait', '--timeout', '90s']);
    expect(uninstalled.exitCode, uninstalled.stderr).toBe(0);
    for (const p of processes.splice(0).reverse()) await p.stop(10_000);
    const kinds =
      'clusterroles,clusterrolebindings,validatingwebhookconfigurations,mutatingwebhookconfigurations,validatingadmissionpolicies,validatingadmissionpolicybindings';
    const left = await kubectl('admin', ['get', kinds, '-o', 'name']);
    expect(left.exitCode, left.stderr).toBe(0);
    process.stderr.write(
      `[chart-install] left after uninstall: ${left.stdout
        .split('\n')
        .filter((l) => /tenantgate/.test(l))
        .join(', ')}\n`,
    );
    expect(left.stdout.split('\n').filter((l) => /tenantgate/.test(l))).toEqual([]);
    // In the release namespace only what Kubernetes itself puts in every namespace is left.
    const inNamespace = await kubectl('admin', [
      '-n',
      NAMESPACE,
      'get',
      'all,configmaps,secrets,serviceaccounts,roles,rolebindings,leases,poddisruptionbudgets',
      '-o',
      'name',
    ]);
    expect(inNamespace.stdout.split('\n').filter(Boolean).sort()).toEqual([
      'configmap/kube-root-ca.crt',
      'serviceaccount/default',
    ]);
    const crd = await json<{ metadata: { annotations?: Record<string, string> } }>(['crd', 'projects.tenantgate.io']);
    expect(crd?.metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');
    expect(await json(['project', 'pkept'])).toBeDefined();
  }, 240_000);
});
