/**
 * `tenantgate render` output for examples/gitops, against reviewed golden files (test/golden/render/),
 * and the apply order (Projects, then Namespaces, then what lives in them). `UPDATE_GOLDEN=1 npx vitest run --project unit render-golden`
 * rewrites the golden files from the current output: review the diff before committing it.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { renderDirectory } from '../../src/cli/render.js';

const ROOT = join(import.meta.dirname, '..', '..');
const GITOPS = join(ROOT, 'examples', 'gitops');
const GOLDEN = join(ROOT, 'test', 'golden', 'render');
const UPDATE = process.env.UPDATE_GOLDEN === '1';

/** cluster ('' = unnamed) → golden file. */
const GOLDEN_FILES: Record<string, string> = {
  '': 'gitops.yaml',
  'prod-eu': 'gitops-prod-eu.yaml',
  'prod-us': 'gitops-prod-us.yaml',
};

function expectGolden(name: string, actual: string): void {
  const file = join(GOLDEN, name);
  if (UPDATE) {
    mkdirSync(GOLDEN, { recursive: true });
    writeFileSync(file, actual);
    return;
  }
  if (!existsSync(file))
    throw new Error(
      `golden file ${file} is missing: run UPDATE_GOLDEN=1 npx vitest run --project unit render-golden, and review it`,
    );
  // toBe, not toEqual: the output must be byte-identical (Argo CD diffs it)
  expect(actual, `render differs from ${file} (UPDATE_GOLDEN=1 rewrites it)`).toBe(readFileSync(file, 'utf8'));
}

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [k: string]: unknown;
}

function objects(stream: string): Obj[] {
  const docs = parseAllDocuments(stream);
  const list = Array.isArray(docs) ? docs : [docs];
  for (const d of list) expect(d.errors).toEqual([]);
  return list.map((d) => d.toJS() as Obj);
}

async function render(cluster: string): Promise<string> {
  const result = await renderDirectory(GITOPS, cluster ? { ARGOCD_ENV_CLUSTER: cluster } : {});
  expect(result.errors).toEqual([]);
  expect(result.output).toBeDefined();
  return result.output!;
}

const wave = (o: Obj) => o.metadata.annotations?.['argocd.argoproj.io/sync-wave'];

describe.each(Object.entries(GOLDEN_FILES))('render examples/gitops for cluster %j', (cluster, golden) => {
  it(`matches test/golden/render/${golden}`, async () => {
    expectGolden(golden, await render(cluster));
  });

  it('is byte-identical on a second run', async () => {
    expect(await render(cluster)).toBe(await render(cluster));
  });

  it('is in apply order: Projects (-2), Namespaces (-1), then per namespace ResourceQuota, LimitRange, RoleBinding, NetworkPolicy, AllowList (0)', async () => {
    const all = objects(await render(cluster));
    const projects = all.filter((o) => o.kind === 'Project');
    const namespaces = all.filter((o) => o.kind === 'Namespace');
    expect(all.slice(0, projects.length)).toEqual(projects);
    expect(all.slice(projects.length, projects.length + namespaces.length)).toEqual(namespaces);
    expect(projects.map((p) => p.metadata.name)).toEqual([
      'data',
      'ml',
      'payments',
      'reports',
      'tools',
      'vision',
      'web',
    ]);
    for (const p of projects) expect(wave(p)).toBe('-2');
    for (const n of namespaces) {
      expect(wave(n)).toBe('-1');
      const project = projects.find((p) => n.metadata.name.startsWith(`${p.metadata.name}-`))!;
      expect(n.metadata.labels).toMatchObject({
        'tenantgate.io/project': project.metadata.name,
        'tenantgate.io/tenant': (project.spec as { tenant: string }).tenant,
        'app.kubernetes.io/managed-by': 'tenantgate',
      });
    }
    const rest = all.slice(projects.length + namespaces.length);
    const kindOrder = ['ResourceQuota', 'LimitRange', 'RoleBinding', 'NetworkPolicy', 'AllowList'];
    // grouped by namespace, in the order of the Namespaces, each group in kind order
    const groups: string[] = [];
    rest.forEach((o, i) => {
      expect(wave(o)).toBe('0');
      expect(kindOrder).toContain(o.kind);
      const ns = o.metadata.namespace!;
      if (groups[groups.length - 1] !== ns) groups.push(ns);
      const prev = rest[i - 1];
      // Several ResourceQuotas in a namespace of a project with priority tiers (its tier quotas), sorted by name.
      if (prev && prev.metadata.namespace === ns && prev.kind === o.kind)
        expect(o.kind === 'ResourceQuota' && prev.metadata.name < o.metadata.name).toBe(true);
      else if (prev && prev.metadata.namespace === ns)
        expect(kindOrder.indexOf(o.kind)).toBeGreaterThan(kindOrder.indexOf(prev.kind));
    });
    expect(groups).toEqual(namespaces.map((n) => n.metadata.name));
    // Every namespace has its allow-list parameters (without them it admits none of the objects the policies judge).
    expect(rest.filter((o) => o.kind === 'AllowList').map((o) => `${o.metadata.namespace}/${o.metadata.name}`)).toEqual(
      namespaces.map((n) => `${n.metadata.name}/tenantgate-allow`),
    );
    for (const o of all) expect(o.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('tenantgate');
    for (const o of rest) {
      expect(o.metadata.labels?.['tenantgate.io/project']).toBe(
        namespaces.find((n) => n.metadata.name === o.metadata.namespace)!.metadata.labels!['tenantgate.io/project'],
      );
      if (o.kind === 'RoleBinding')
        expect(o.roleRef).toEqual({
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: 'tenantgate-project-owner',
        });
      // tenantgate-quota, and with priority tiers (project reports) tenantgate-quota-<tier> and tenantgate-quota-other-tiers.
      if (o.kind === 'ResourceQuota')
        expect(o.metadata.name).toMatch(
          o.metadata.namespace!.startsWith('reports-')
            ? /^tenantgate-quota(-production|-other-tiers)?$/
            : /^tenantgate-quota$/,
        );
    }
  });
});

describe('placement and content', () => {
  it('renders namespaces without cluster everywhere, and those with cluster only on it', async () => {
    const names = async (cluster: string) =>
      objects(await render(cluster))
        .filter((o) => o.kind === 'Namespace')
        .map((o) => o.metadata.name);
    const unnamed = await names('');
    expect(unnamed).not.toContain('payments-api');
    expect(unnamed).not.toContain('data-ingest-eu');
    expect(await names('prod-eu')).toEqual([...unnamed, 'data-ingest-eu', 'payments-api'].sort());
    expect(await names('prod-us')).toEqual([...unnamed, 'data-ingest-us'].sort());
  });

  it('gives a namespace its declared quota, else namespaceDefaults; labels of the declaration are kept', async () => {
    const all = objects(await render('prod-eu'));
    const q = (ns: string) => all.find((o) => o.kind === 'ResourceQuota' && o.metadata.namespace === ns)!.spec;
    expect(q('payments-api')).toEqual({
      hard: { 'limits.cpu': '16', pods: '50', 'requests.cpu': '8', 'requests.memory': '16Gi' },
    });
    expect(q('payments-batch')).toEqual({
      hard: { 'limits.cpu': '4', pods: '20', 'requests.cpu': '2', 'requests.memory': '4Gi' },
    });
    expect(all.find((o) => o.kind === 'Namespace' && o.metadata.name === 'payments-api')!.metadata.labels).toEqual({
      team: 'api',
      // the Pod Security levels of examples/gitops/tenantgate.yaml (the webhook and the controller set the same)
      'pod-security.kubernetes.io/enforce': 'baseline',
      'pod-security.kubernetes.io/warn': 'restricted',
      'pod-security.kubernetes.io/audit': 'restricted',
      'tenantgate.io/project': 'payments',
      'tenantgate.io/tenant': 'acme',
      'app.kubernetes.io/managed-by': 'tenantgate',
    });
    const binding = all.find((o) => o.kind === 'RoleBinding' && o.metadata.namespace === 'payments-api')!;
    expect(binding.subjects).toEqual([
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'acme:payments-admins' },
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice@acme.example' },
      { kind: 'ServiceAccount', name: 'deployer', namespace: 'ci' },
    ]);
    // networkIsolation only where declared
    expect(all.filter((o) => o.kind === 'NetworkPolicy').map((o) => o.metadata.namespace)).toEqual([
      'ml-serving',
      'ml-training',
      'payments-api',
      'payments-batch',
      'payments-ledger',
    ]);
  });
});
