/**
 * Upgrading from the previous release (docs/releasing.md "Upgrading", ADR 0010), on a control plane of
 * its own: the chart of the previous release installed with the real helm, its `tenantgate webhook` and `tenantgate
 * controller` (built from that commit, test/support/previous-release.ts) running as in
 * chart-install.test.ts; tenants make Projects' namespaces and quotas through it; then `helm upgrade`
 * to the working tree's chart and the working tree's processes (dist/) take over.
 *
 * Afterwards every Project, namespace and quota made under it is unchanged (content; namespaces not
 * even rewritten), the CRD still serves and stores v1alpha1 only, the new controller reconciles the old
 * Projects without changing them, and the rules still hold on the old objects: an owner's namespace is
 * admitted within the budget, the next one and a quota growth past it are refused with [Q1], a
 * non-owner with [T4], and the controller gives the new namespace its quota and counts it.
 */
import { execa } from 'execa';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHART_DIR, helmBinary } from '../../hack/chart-manifests.js';
import { generateWebhookCerts, type WebhookCertFiles } from '../../src/certs/files.js';
import { eventually } from '../support/cluster.js';
import { ControlPlane } from '../support/devcluster/controlplane.js';
import { httpsGet } from '../support/devcluster/https-get.js';
import { freePort } from '../support/devcluster/ports.js';
import { startProcess, type Managed } from '../support/devcluster/processes.js';
import { serviceAccountKubeconfigFile } from '../support/devcluster/tenantgate.js';
import { REPO_ROOT } from '../support/paths.js';
import { buildPreviousRelease, PREVIOUS_RELEASE, type PreviousRelease } from '../support/previous-release.js';

const CURRENT_CLI = join(REPO_ROOT, 'dist', 'cli', 'main.js');
const NAMESPACE = 'tenantgate-system';
let cp: ControlPlane;
let helm: string;
let certs: WebhookCertFiles;
let webhookPort: number;
let previous: PreviousRelease;
let running: Managed[] = [];

const kubectl = (user: string, args: string[], input?: string) =>
  execa(join(cp.info.binDir, 'kubectl'), args, {
    env: { KUBECONFIG: cp.info.kubeconfigs[user] ?? '' },
    reject: false,
    timeout: 60_000,
    ...(input !== undefined ? { input } : {}),
  });
const helmRun = (args: string[]) =>
  execa(helm, [...args, '--kubeconfig', cp.info.kubeconfigs.admin!], { reject: false, timeout: 120_000 });
const releaseValues = () => [
  '--set',
  'namespace.create=false',
  '--set',
  `webhook.url=https://127.0.0.1:${webhookPort}`,
  '--set',
  `certificates.caBundle=${certs.caBundle}`,
];

async function json<T>(args: string[]): Promise<T> {
  const r = await kubectl('admin', ['get', ...args, '-o', 'json']);
  expect(r.exitCode, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T;
}

/** Two Projects as a platform team would have them under the previous release. */
const PROJECTS = [
  {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: 'upa' },
    spec: {
      tenant: 'acme',
      owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
      quota: { hard: { 'requests.cpu': '3', pods: '30' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', pods: '10' } } },
    },
  },
  {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: 'upb', labels: { team: 'web' } },
    spec: {
      tenant: 'acme',
      displayName: 'Web',
      owners: [{ kind: 'Group', name: 'acme:web-admins' }],
      quota: { hard: { 'requests.cpu': '4', 'requests.memory': '8Gi' } },
      maxNamespaces: 3,
      networkIsolation: true,
      podSecurity: { enforce: 'restricted' },
      namespaceDefaults: {
        quota: { hard: { 'requests.cpu': '1', 'requests.memory': '2Gi' } },
        limitRange: { defaultRequest: { cpu: '100m', memory: '128Mi' } },
      },
    },
  },
];

interface Obj {
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    ownerReferences?: unknown[];
    resourceVersion: string;
    generation?: number;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/** What must survive an upgrade: the stored content of every Project, its namespaces and their quotas. */
async function snapshot() {
  const projects = (await json<{ items: Obj[] }>(['projects'])).items.map((p) => {
    const status = (p.status ?? {}) as {
      phase?: string;
      namespaceCount?: number;
      allocated?: unknown;
      namespaces?: unknown;
      budgetUse?: string;
      conditions?: Array<Record<string, unknown>>;
    };
    return {
      name: p.metadata.name,
      labels: p.metadata.labels,
      finalizers: p.metadata.finalizers,
      generation: p.metadata.generation,
      spec: p.spec,
      status: {
        phase: status.phase,
        namespaceCount: status.namespaceCount,
        allocated: status.allocated,
        namespaces: status.namespaces,
        budgetUse: status.budgetUse,
        conditions: status.conditions?.map(({ type, status: s, reason, message }) => ({
          type,
          status: s,
          reason,
          message,
        })),
      },
    };
  });
  const namespaces = (await json<{ items: Obj[] }>(['namespaces', '-l', 'tenantgate.io/project'])).items.map((n) => ({
    name: n.metadata.name,
    labels: n.metadata.labels,
    annotations: n.metadata.annotations,
    finalizers: n.metadata.finalizers,
    ownerReferences: n.metadata.ownerReferences,
    resourceVersion: n.metadata.resourceVersion,
  }));
  const quotas = [];
  for (const ns of namespaces) {
    for (const q of (await json<{ items: Obj[] }>(['-n', ns.name, 'resourcequotas'])).items) {
      quotas.push({
        namespace: ns.name,
        name: q.metadata.name,
        labels: q.metadata.labels,
        annotations: q.metadata.annotations,
        finalizers: q.metadata.finalizers,
        ownerReferences: q.metadata.ownerReferences,
        spec: q.spec,
      });
    }
  }
  return { projects, namespaces, quotas };
}

/** Starts `tenantgate webhook` and `tenantgate controller` of `cli` the way chart-install.test.ts does, with the chart's ConfigMap. */
async function startComponents(cli: string, tag: string): Promise<Managed[]> {
  const config = await kubectl('admin', [
    '-n',
    NAMESPACE,
    'get',
    'configmap',
    'tenantgate-config',
    '-o',
    'jsonpath={.data.tenantgate\\.yaml}',
  ]);
  expect(config.exitCode, config.stderr).toBe(0);
  const configFile = join(cp.info.dir, `${tag}-tenantgate.yaml`);
  await writeFile(configFile, config.stdout);
  const webhookKubeconfig = await serviceAccountKubeconfigFile(cp.info, NAMESPACE, 'tenantgate-webhook');
  const webhook = startProcess(
    `${tag}-webhook`,
    process.execPath,
    [
      cli,
      'webhook',
      `--config=${configFile}`,
      `--kubeconfig=${webhookKubeconfig}`,
      `--cert=${certs.cert}`,
      `--key=${certs.key}`,
      `--port=${webhookPort}`,
      '--host=127.0.0.1',
    ],
    join(cp.info.dir, `${tag}-webhook.log`),
  );
  const ca = await readFile(certs.caCert);
  await eventually(
    async () => expect((await httpsGet(`https://127.0.0.1:${webhookPort}/readyz`, { ca })).status).toBe(200),
    { timeoutMs: 60_000, what: `${tag} webhook ready` },
  ).catch(withLog(webhook));
  const [metrics, probes] = [await freePort(), await freePort()];
  const controllerKubeconfig = await serviceAccountKubeconfigFile(cp.info, NAMESPACE, 'tenantgate-controller');
  const controller = startProcess(
    `${tag}-controller`,
    process.execPath,
    [
      cli,
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
    join(cp.info.dir, `${tag}-controller.log`),
  );
  await eventually(async () => expect((await fetch(`http://127.0.0.1:${probes}/readyz`)).status).toBe(200), {
    timeoutMs: 60_000,
    what: `${tag} controller ready`,
  }).catch(withLog(controller));
  return [webhook, controller];
}

/** Rethrows with the end of the process's log: the cluster's folder (and the log) goes at the end. */
const withLog =
  (p: Managed) =>
  async (err: unknown): Promise<never> => {
    const tail = (await readFile(p.logFile, 'utf8').catch(() => '(no log)')).split('\n').slice(-15).join('\n');
    throw new Error(
      `${err instanceof Error ? err.message : String(err)}\n${p.name} exited: ${p.child.exitCode ?? p.child.signalCode ?? 'no'}; its log ends:\n${tail}`,
    );
  };

async function stopComponents(): Promise<void> {
  for (const p of running.reverse()) await p.stop(15_000);
  running = [];
}

/** The Projects a controller log says it reconciled to the end ("reconciled", result done). */
async function reconciledIn(logFile: string): Promise<Set<string>> {
  const done = new Set<string>();
  for (const line of (await readFile(logFile, 'utf8')).split('\n')) {
    if (!line.includes('"reconciled"')) continue;
    try {
      const record = JSON.parse(line) as { msg?: string; project?: string; result?: string };
      if (record.msg === 'reconciled' && record.result === 'done' && record.project) done.add(record.project);
    } catch {
      // not a JSON record
    }
  }
  return done;
}

const createNamespace = (user: string, name: string) => kubectl(user, ['create', 'namespace', name]);
const growQuota = (user: string, namespace: string, cpu: string) =>
  kubectl(user, [
    '-n',
    namespace,
    'patch',
    'resourcequota',
    'tenantgate-quota',
    '--type=merge',
    '-p',
    JSON.stringify({ spec: { hard: { 'requests.cpu': cpu } } }),
  ]);

beforeAll(async () => {
  [previous, cp, helm] = await Promise.all([buildPreviousRelease(), ControlPlane.start(), helmBinary()]);
  certs = await generateWebhookCerts(join(cp.info.dir, 'upgrade-certs'));
  webhookPort = await freePort();
  process.stderr.write(
    `[upgrade] previous release ${previous.version} at ${previous.commit} (found by ${previous.foundBy})\n`,
  );
}, 600_000);

afterAll(async () => {
  await stopComponents();
  await cp?.stop();
  if (previous) await rm(join(previous.chartDir, '..', '..'), { recursive: true, force: true });
});

describe(`helm upgrade from the previous release`, () => {
  let before: Awaited<ReturnType<typeof snapshot>>;

  it(`${PREVIOUS_RELEASE.tag} installed with its chart; tenants make namespaces and grow quotas through its webhook and controller`, async () => {
    expect((await kubectl('admin', ['create', 'namespace', NAMESPACE])).exitCode).toBe(0);
    expect(
      (await kubectl('admin', ['label', 'namespace', NAMESPACE, 'pod-security.kubernetes.io/enforce=restricted']))
        .exitCode,
    ).toBe(0);
    const installed = await helmRun(['install', 'tenantgate', previous.chartDir, '-n', NAMESPACE, ...releaseValues()]);
    expect(installed.exitCode, installed.stderr).toBe(0);
    expect(installed.stdout).toMatch(/STATUS: deployed/);
    const chart = await helmRun(['list', '-n', NAMESPACE, '-o', 'json']);
    expect((JSON.parse(chart.stdout) as Array<{ chart: string }>)[0]!.chart).toBe(`tenantgate-${previous.version}`);
    running = await startComponents(previous.cli, PREVIOUS_RELEASE.tag);

    for (const project of PROJECTS)
      expect((await kubectl('admin', ['apply', '-f', '-'], JSON.stringify(project))).exitCode).toBe(0);
    await eventually(
      async () => {
        const r = await createNamespace('alice', 'upa-1');
        expect(r.exitCode, r.stderr).toBe(0);
      },
      { what: `the ${PREVIOUS_RELEASE.tag} webhook knows upa` },
    );
    expect((await createNamespace('alice', 'upa-2')).exitCode).toBe(0);
    await eventually(async () => expect((await createNamespace('carol', 'upb-web')).exitCode).toBe(0), {
      what: `the ${PREVIOUS_RELEASE.tag} webhook knows upb`,
    });
    await eventually(
      async () => {
        for (const ns of ['upa-1', 'upa-2', 'upb-web'])
          expect((await kubectl('admin', ['-n', ns, 'get', 'resourcequota', 'tenantgate-quota'])).exitCode).toBe(0);
      },
      { what: `${PREVIOUS_RELEASE.tag}'s controller made the default quotas` },
    );
    // A growth within the budget, and one past it (refused by the previous release too).
    await eventually(
      async () => {
        const grown = await growQuota('carol', 'upb-web', '3');
        expect(grown.exitCode, grown.stderr).toBe(0);
      },
      { what: "carol's quota growth (the owners' RoleBinding first)" },
    );
    const refused = await growQuota('alice', 'upa-1', '5');
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toContain('[Q1]');
    await eventually(
      async () => {
        const [a, b] = [await json<Obj>(['project', 'upa']), await json<Obj>(['project', 'upb'])];
        expect(a.status).toMatchObject({ namespaceCount: 2, allocated: { 'requests.cpu': '2', pods: '20' } });
        expect(b.status).toMatchObject({
          namespaceCount: 1,
          allocated: { 'requests.cpu': '3', 'requests.memory': '2Gi' },
        });
        for (const ns of ['upa-1', 'upa-2', 'upb-web'])
          expect((await json<Obj>(['-n', ns, 'resourcequota', 'tenantgate-quota'])).status?.used).toBeDefined();
      },
      { what: `${PREVIOUS_RELEASE.tag} settled (project status, quota usage)` },
    );
    before = await snapshot();
    expect(before.projects.map((p) => p.name)).toEqual(['upa', 'upb']);
    expect(before.namespaces.map((n) => n.name)).toEqual(['upa-1', 'upa-2', 'upb-web']);
  }, 300_000);

  it('helm upgrade to this tree: the release is upgraded and the CRD still serves and stores v1alpha1 only', async () => {
    const upgraded = await helmRun(['upgrade', 'tenantgate', CHART_DIR, '-n', NAMESPACE, ...releaseValues()]);
    expect(upgraded.exitCode, upgraded.stderr).toBe(0);
    expect(upgraded.stdout).toMatch(/REVISION: 2/);
    // The Deployments roll: the old processes stop, the new ones start with the upgraded ConfigMap.
    await stopComponents();
    running = await startComponents(CURRENT_CLI, 'current');
    const crd = await json<{
      spec: { versions: Array<{ name: string; served: boolean; storage: boolean }>; conversion?: { strategy: string } };
      status: { storedVersions: string[] };
    }>(['crd', 'projects.tenantgate.io']);
    expect(crd.spec.versions.map((v) => [v.name, v.served, v.storage])).toEqual([['v1alpha1', true, true]]);
    expect(crd.spec.conversion?.strategy ?? 'None').toBe('None');
    expect(crd.status.storedVersions).toEqual(['v1alpha1']);
  }, 240_000);

  it(`every Project, namespace and quota made under ${PREVIOUS_RELEASE.tag} is unchanged once the new controller has reconciled them`, async () => {
    const controllerLog = running[1]!.logFile;
    await eventually(async () => expect([...(await reconciledIn(controllerLog))].sort()).toEqual(['upa', 'upb']), {
      timeoutMs: 90_000,
      what: 'the new controller reconciled both Projects',
    });
    const after = await snapshot();
    expect(after.quotas).toEqual(before.quotas);
    expect(after.namespaces).toEqual(before.namespaces);
    expect(after.projects).toEqual(before.projects);
  }, 180_000);

  it('the rules still hold on the old objects: an owner admitted within the budget, Q1 past it, T4 for others; the controller reconciles the new namespace', async () => {
    const admitted = await createNamespace('alice', 'upa-3');
    expect(admitted.exitCode, admitted.stderr).toBe(0);
    const labels = (await json<Obj>(['namespace', 'upa-3'])).metadata.labels;
    expect(labels).toMatchObject({ 'tenantgate.io/project': 'upa', 'tenantgate.io/tenant': 'acme' });
    const full = await createNamespace('alice', 'upa-4');
    expect(full.exitCode).not.toBe(0);
    expect(full.stderr).toContain('[Q1]');
    const growth = await growQuota('alice', 'upa-1', '5');
    expect(growth.exitCode).not.toBe(0);
    expect(growth.stderr).toContain('[Q1]');
    const other = await createNamespace('bob', 'upa-bob');
    expect(other.exitCode).not.toBe(0);
    expect(other.stderr).toContain('[T4]');
    for (const ns of ['upa-4', 'upa-bob'])
      expect((await kubectl('admin', ['get', 'namespace', ns, '--ignore-not-found', '-o', 'name'])).stdout.trim()).toBe(
        '',
      );
    expect((await json<Obj>(['-n', 'upa-1', 'resourcequota', 'tenantgate-quota'])).spec).toEqual({
      hard: { 'requests.cpu': '1', pods: '10' },
    });
    await eventually(
      async () => {
        expect((await json<Obj>(['-n', 'upa-3', 'resourcequota', 'tenantgate-quota'])).spec).toEqual({
          hard: { 'requests.cpu': '1', pods: '10' },
        });
        expect((await json<Obj>(['project', 'upa'])).status).toMatchObject({
          namespaceCount: 3,
          allocated: { 'requests.cpu': '3', pods: '30' },
        });
      },
      { what: 'the new controller gave upa-3 its quota and counted it' },
    );
  }, 180_000);
});
