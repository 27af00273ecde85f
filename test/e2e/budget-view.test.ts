/**
 * The budget view (view.tenantgate.io/v1alpha1) through the real kube-apiserver's aggregation layer:
 * the controller serves it (src/view/), an APIService registers it, and kubectl reads it as tenants
 * (impersonated with --as/--as-group). On a control plane of its own: an APIService is cluster-wide
 * (other test files' clients would discover it, and one that stops answering stalls namespace deletion).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlPlane, type ClusterInfo } from '../support/devcluster/controlplane.js';
import { installBase } from '../support/devcluster/tenantgate.js';
import {
  APISERVICE,
  apiWrites,
  applyChartTemplates,
  run,
  startControllerWithView,
  type LocalView,
} from '../support/view.js';
import { caBundleOf, replacePair, serialOf, servedSerial, SteadyTraffic } from '../support/rotation.js';
import { createCA, signCert, webhookDnsNames } from '../../src/certs/pki.js';
import { readFile } from 'node:fs/promises';
import { helmTemplate } from '../../hack/chart-manifests.js';
import { parseAllDocuments } from 'yaml';
import { eventually, uniqueName } from '../support/cluster.js';
import type { NamespaceObject, Project, ResourceQuotaObject } from '../../src/validate/types.js';

let cp: ControlPlane;
let info: ClusterInfo;
let view: LocalView;

const p1 = uniqueName('pay');
const p2 = uniqueName('web');
const p3 = uniqueName('grp');
const ns1a = `${p1}-a`;
const ns1b = `${p1}-b`;
const ns2 = `${p2}-a`;
const ns3 = `${p3}-a`;

const as = (user: string, groups: string[]) => [`--as=${user}`, ...groups.map((g) => `--as-group=${g}`)];
const ALICE = as('alice', ['acme:payments-admins', 'tenants']);
const BOB = as('bob', ['globex:admins', 'tenants']);
const CAROL = as('carol', ['acme:web-admins', 'tenants']);

function project(
  name: string,
  tenant: string,
  owners: Project['spec']['owners'],
  hard: Record<string, string>,
): Project {
  return {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name },
    spec: { tenant, owners, quota: { hard } },
  };
}
function namespace(name: string, proj: string, tenant: string): NamespaceObject {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { 'tenantgate.io/project': proj, 'tenantgate.io/tenant': tenant } },
  };
}
function quota(ns: string, hard: Record<string, string>): ResourceQuotaObject {
  return {
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: { name: 'tenantgate-quota', namespace: ns },
    spec: { hard },
  };
}

async function json<T>(args: string[]): Promise<T> {
  const r = await run(info, [...args, '-o', 'json']);
  if (r.exitCode !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

/**
 * What the view must say of p1, worked out by hand from the objects beforeAll applies: budget 4 CPUs and
 * 8Gi; ns1a's quota 1500m and 2Gi, ns1b's 1 and 1Gi, so 2500m and 3Gi allocated, 1500m and 5Gi left; no
 * pods, so the quota controller reports 0 used of each.
 */
const P1_RESOURCES = [
  { resource: 'requests.cpu', budget: '4', allocated: '2500m', used: '0', headroom: '1500m' },
  { resource: 'requests.memory', budget: '8Gi', allocated: '3Gi', used: '0', headroom: '5Gi' },
];
const P1_NAMESPACES = [
  {
    namespace: ns1a,
    allocated: { 'requests.cpu': '1500m', 'requests.memory': '2Gi' },
    used: { 'requests.cpu': '0', 'requests.memory': '0' },
    hard: { 'requests.cpu': '1500m', 'requests.memory': '2Gi' },
    defaulted: false,
  },
  {
    namespace: ns1b,
    allocated: { 'requests.cpu': '1', 'requests.memory': '1Gi' },
    used: { 'requests.cpu': '0', 'requests.memory': '0' },
    hard: { 'requests.cpu': '1', 'requests.memory': '1Gi' },
    defaulted: false,
  },
];

beforeAll(async () => {
  const started = Date.now();
  cp = await ControlPlane.start();
  info = cp.info;
  await installBase(info);
  await applyChartTemplates(info, ['view/rbac.yaml', 'rbac/self-service.yaml'], ['view.enabled=true']);
  await run(
    info,
    ['apply', '-f', '-'],
    [
      project(p1, 'acme', [{ kind: 'User', name: 'alice' }], { 'requests.cpu': '4', 'requests.memory': '8Gi' }),
      project(p2, 'globex', [{ kind: 'User', name: 'bob' }], { 'requests.cpu': '2' }),
      project(p3, 'acme', [{ kind: 'Group', name: 'acme:web-admins' }], { 'requests.cpu': '1' }),
      namespace(ns1a, p1, 'acme'),
      namespace(ns1b, p1, 'acme'),
      namespace(ns2, p2, 'globex'),
      namespace(ns3, p3, 'acme'),
    ]
      .map((o) => JSON.stringify(o))
      .join('\n'),
  );
  await run(
    info,
    ['apply', '-f', '-'],
    [
      quota(ns1a, { 'requests.cpu': '1500m', 'requests.memory': '2Gi' }),
      quota(ns1b, { 'requests.cpu': '1', 'requests.memory': '1Gi' }),
      quota(ns2, { 'requests.cpu': '1' }),
    ]
      .map((o) => JSON.stringify(o))
      .join('\n'),
  );
  view = await startControllerWithView(info);
  // The owners' RoleBindings (controller) and the aggregated budgets rule (clusterrole-aggregation controller).
  await eventually(
    async () => {
      const r = await run(info, ['-n', ns1a, 'auth', 'can-i', 'list', 'budgets.view.tenantgate.io', ...ALICE]);
      if (r.stdout.trim() !== 'yes')
        throw new Error(`alice may not list budgets in ${ns1a} yet: ${r.stdout} ${r.stderr}`);
    },
    { what: 'alice reads budgets in her namespace' },
  );
  process.stderr.write(
    `[budget-view] own control plane, tenantgate and the view ready in ${Date.now() - started} ms\n`,
  );
});

afterAll(async () => {
  await view?.stop();
  await cp?.stop();
});

describe('budget view: view.tenantgate.io through the kube-apiserver', () => {
  it('discovery: kubectl api-resources lists budgets (namespaced, short name budget) and ownedprojects (cluster-scoped), verbs get and list', async () => {
    const r = await run(info, ['api-resources', '--api-group=view.tenantgate.io', '-o', 'wide']);
    expect(r.exitCode, r.stderr).toBe(0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.split(/\s+/).filter(Boolean));
    expect(lines).toContainEqual(['budgets', 'budget', 'view.tenantgate.io/v1alpha1', 'true', 'Budget', 'get,list']);
    expect(lines).toContainEqual(['ownedprojects', 'view.tenantgate.io/v1alpha1', 'false', 'OwnedProject', 'get,list']);
  });

  it("a tenant owner: kubectl -n <ns> get budget prints RESOURCE/BUDGET/ALLOCATED/USED/HEADROOM with the project's numbers", async () => {
    const r = await run(info, ['-n', ns1a, 'get', 'budget', ...ALICE]);
    expect(r.exitCode, r.stderr).toBe(0);
    process.stderr.write(`[budget-view] kubectl -n ${ns1a} get budget --as=alice:\n${r.stdout}`);
    const [header, ...rows] = r.stdout
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s+/));
    expect(header).toEqual(['RESOURCE', 'BUDGET', 'ALLOCATED', 'USED', 'HEADROOM']);
    expect(rows).toEqual([
      ['requests.cpu', '4', '2500m', '0', '1500m'],
      ['requests.memory', '8Gi', '3Gi', '0', '5Gi'],
    ]);
  });

  it("-o json: one Budget named after the project, its namespace share and every namespace, with the project's numbers", async () => {
    // kubectl -o json wraps a list as kind List; the server's own answer is a BudgetList.
    const raw = JSON.parse(
      (await run(info, ['get', '--raw', `/apis/view.tenantgate.io/v1alpha1/namespaces/${ns1b}/budgets`, ...ALICE]))
        .stdout,
    ) as { kind: string; items: unknown[] };
    expect(raw.kind).toBe('BudgetList');
    const list = JSON.parse((await run(info, ['-n', ns1b, 'get', 'budgets', '-o', 'json', ...ALICE])).stdout) as {
      kind: string;
      items: Array<Record<string, unknown>>;
    };
    expect(list.items).toEqual(raw.items);
    expect(list.items).toHaveLength(1);
    const one = await json<Record<string, unknown>>(['-n', ns1b, 'get', 'budget', p1, ...ALICE]);
    expect(one).toEqual(list.items[0]);
    expect(one).toEqual({
      apiVersion: 'view.tenantgate.io/v1alpha1',
      kind: 'Budget',
      metadata: { name: p1, namespace: ns1b },
      project: p1,
      tenant: 'acme',
      cluster: '',
      resources: P1_RESOURCES,
      namespace: P1_NAMESPACES[1],
      namespaces: P1_NAMESPACES,
    });
  });

  it('RBAC: a tenant without access is refused by the apiserver (Forbidden), for list and get', async () => {
    for (const args of [
      ['get', 'budgets'],
      ['get', 'budget', p1],
    ]) {
      const r = await run(info, ['-n', ns1a, ...args, ...BOB]);
      expect(r.exitCode).not.toBe(0);
      expect(r.stderr).toContain('Error from server (Forbidden)');
      expect(r.stderr).toContain('User "bob" cannot');
      expect(r.stderr).toContain('resource "budgets" in API group "view.tenantgate.io" in the namespace');
    }
  });

  it('outside projects: list is empty, get is NotFound naming the namespace', async () => {
    const list = await run(info, ['-n', 'default', 'get', 'budgets']);
    expect(list.exitCode, list.stderr).toBe(0);
    expect(list.stderr).toContain('No resources found in default namespace.');
    const get = await run(info, ['-n', 'default', 'get', 'budget', 'anything']);
    expect(get.exitCode).not.toBe(0);
    expect(get.stderr).toContain(
      'Error from server (NotFound): budgets.view.tenantgate.io "anything" not found: namespace default belongs to no project',
    );
  });

  it('ownedprojects: each tenant lists only the projects it owns (by user or by group)', async () => {
    const names = async (who: string[]) =>
      (await json<{ items: Array<{ metadata: { name: string } }> }>(['get', 'ownedprojects', ...who])).items.map(
        (i) => i.metadata.name,
      );
    expect(await names(ALICE)).toEqual([p1]);
    expect(await names(BOB)).toEqual([p2]);
    expect(await names(CAROL)).toEqual([p3]);
    const mine = await json<Record<string, unknown>>(['get', 'ownedproject', p1, ...ALICE]);
    expect(mine).toMatchObject({
      kind: 'OwnedProject',
      metadata: { name: p1 },
      tenant: 'acme',
      owners: [{ kind: 'User', name: 'alice' }],
      namespaces: [ns1a, ns1b],
      resources: P1_RESOURCES,
    });
    const other = await run(info, ['get', 'ownedproject', p1, ...BOB]);
    expect(other.stderr).toContain(`Error from server (NotFound): ownedprojects.view.tenantgate.io "${p1}" not found`);
    const table = await run(info, ['get', 'ownedprojects', ...ALICE]);
    expect(
      table.stdout
        .split('\n')[0]!
        .trim()
        .split(/\s{2,}/),
    ).toEqual(['NAME', 'TENANT', 'NAMESPACES', 'PHASE', 'BUDGET USE']);
  });

  it('costs nothing at rest: repeated gets make no API writes (tenantgate_controller_api_writes_total unchanged)', async () => {
    // Let the controller finish its own reconciles first (default quotas, bindings, status).
    let before = -1;
    await eventually(
      async () => {
        const now = await apiWrites(view.controller, info);
        const settled = now === before;
        before = now;
        if (!settled) throw new Error(`writes still moving (${now})`);
      },
      { intervalMs: 2_000, what: 'the controller idle' },
    );
    for (let i = 0; i < 5; i++) {
      expect((await run(info, ['-n', ns1a, 'get', 'budget', ...ALICE])).exitCode).toBe(0);
      expect((await run(info, ['get', 'ownedprojects', ...BOB])).exitCode).toBe(0);
    }
    expect(await apiWrites(view.controller, info)).toBe(before);
  });

  it('the chart with view.enabled: the apiserver accepts every object (server dry run); the controller serves on the view port, the APIService points at tenantgate-view', async () => {
    const yaml = await helmTemplate([
      '--set',
      'view.enabled=true',
      '--set',
      'config.visibility=own',
      '--set',
      `certificates.caBundle=${Buffer.from('test').toString('base64')}`,
    ]);
    const docs = parseAllDocuments(yaml)
      .map((d) => d.toJS() as { kind: string; metadata: { name: string }; spec?: Record<string, unknown> })
      .filter(Boolean);
    const apiService = docs.find((d) => d.kind === 'APIService')!;
    expect(apiService.metadata.name).toBe('v1alpha1.view.tenantgate.io');
    expect(apiService.spec).toMatchObject({
      group: 'view.tenantgate.io',
      version: 'v1alpha1',
      service: { name: 'tenantgate-view', namespace: 'tenantgate-system', port: 443 },
    });
    const deployment = docs.find(
      (d) => d.kind === 'Deployment' && d.metadata.name === 'tenantgate-controller',
    ) as unknown as { spec: { template: { spec: { containers: Array<{ args: string[] }> } } } };
    expect(deployment.spec.template.spec.containers[0]!.args).toEqual(
      expect.arrayContaining(['--view-port=8443', '--view-cert=/certs/tls.crt', '--view-key=/certs/tls.key']),
    );
    const dry = await run(info, ['apply', '--dry-run=server', '-f', '-'], yaml);
    expect(dry.exitCode, dry.stderr).toBe(0);
    // The test's own APIService is registered already: the chart's is an update of it.
    expect(dry.stdout).toMatch(
      /apiservice\.apiregistration\.k8s\.io\/v1alpha1\.view\.tenantgate\.io (created|configured|unchanged) \(server dry run\)/,
    );
    expect(dry.stdout).toMatch(
      /clusterrole\.rbac\.authorization\.k8s\.io\/tenantgate-view-budgets (created|configured|unchanged) \(server dry run\)/,
    );
  });

  it('certificate rotation (ADR 0034): APIService caBundle old+new CA → serving certificate from the new CA → only the new CA, while a tenant reads budgets at a fixed rate; every read answers, each step serves the expected certificate', async () => {
    const port = view.controller.viewPort!;
    const setCaBundle = async (bundle: string) => {
      const r = await run(info, [
        'patch',
        'apiservice',
        APISERVICE,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { caBundle: bundle } }),
      ]);
      if (r.exitCode !== 0) throw new Error(`patch apiservice: ${r.stderr}`);
    };
    const oldCa = await readFile(view.certs.caCert, 'utf8');
    const first = await readFile(view.certs.cert, 'utf8');
    const traffic = new SteadyTraffic(async () => {
      const r = await run(info, ['-n', ns1a, 'get', 'budget', ...ALICE]);
      return { ok: r.exitCode === 0 && r.stdout.includes('requests.cpu'), detail: `exit ${r.exitCode} ${r.stderr}` };
    });
    traffic.start();
    try {
      await traffic.finishedInStep(3);
      expect(await servedSerial(view.address, port)).toBe(serialOf(first));

      const newCa = await createCA('tenantgate-view-ca-2');
      traffic.enter('caBundle old+new');
      await setCaBundle(caBundleOf(oldCa, newCa.certPem));
      await traffic.finishedInStep(3);

      const next = await signCert(newCa, {
        commonName: 'tenantgate-view.tenantgate-system.svc',
        dnsNames: webhookDnsNames('tenantgate-view', 'tenantgate-system'),
        ipAddresses: [view.address, '127.0.0.1'],
        usage: 'server',
      });
      traffic.enter('certificate from the new CA');
      await replacePair(view.certs, next);
      await eventually(async () => expect(await servedSerial(view.address, port)).toBe(serialOf(next.certPem)), {
        what: 'the view serves the new certificate',
      });
      await traffic.finishedInStep(4);

      traffic.enter('caBundle new only');
      await setCaBundle(caBundleOf(newCa.certPem));
      await traffic.finishedInStep(4);
      expect(await servedSerial(view.address, port)).toBe(serialOf(next.certPem));
    } finally {
      await traffic.stop();
    }
    process.stderr.write(
      `[budget-view] rotation: ${traffic.outcomes.length} budget reads over 4 steps, ${traffic.failures().length} failed\n`,
    );
    expect(traffic.failures()).toEqual([]);
    expect(new Set(traffic.outcomes.map((o) => o.step)).size).toBe(4);
    const available = await run(info, [
      'get',
      'apiservice',
      APISERVICE,
      '-o',
      'jsonpath={.status.conditions[?(@.type=="Available")].status}',
    ]);
    expect(available.stdout).toBe('True');
  }, 300_000);
});
