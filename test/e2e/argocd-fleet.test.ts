/**
 * A fleet behind one real Argo CD (ADR 0001): two more control planes, prod-eu and prod-us, each with
 * tenantgate's webhook and controller (clusterName = the cluster), registered as Argo CD clusters on the
 * shared control plane, where Argo CD and argocd-applicationset-controller run. One ApplicationSet (cluster
 * generator) renders examples/gitops per cluster through the tenantgate plugin; `tenantgate plan` reads
 * both clusters and rolls each project up across the fleet.
 */
import { processNow } from '../../src/clock.js';
import { execa } from 'execa';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { renderDirectory } from '../../src/cli/render.js';
import { budgetOf } from '../../src/validate/budget/layers.js';
import { Quantity } from '../../src/quantity/quantity.js';
import type { Plan } from '../../src/plan/types.js';
import type { Project, ResourceQuotaObject } from '../../src/validate/types.js';
import { quotaTier, splitTierKey } from '../../src/validate/tiers.js';
import { ARGOCD_NAMESPACE } from '../support/argocd.js';
import { comparisonError, getApplication, refreshHard, waitForApp, type Application } from '../support/argocd-app.js';
import { cluster, eventually, kubectl, uniqueName } from '../support/cluster.js';
import { kubectlAs } from '../support/devcluster/tenantgate.js';
import { FLEET_CLUSTERS, fleetApplicationSet, startFleet, type Fleet, type FleetMember } from '../support/fleet.js';
import { LocalGitRepo } from '../support/git-repo.js';
import { REPO_ROOT } from '../support/paths.js';

/** The CLI from its sources (as test/e2e/plan.test.ts runs it). */
const CLI = [
  `--import=${pathToFileURL(join(REPO_ROOT, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs')).href}`,
  join(REPO_ROOT, 'src', 'cli', 'main.ts'),
];
const RUN = uniqueName('fleet');
const APPSET = 'tenantgate-projects';
const GITOPS = join(REPO_ROOT, 'examples', 'gitops');
let fleet: Fleet;
let repo: LocalGitRepo;
const timings: string[] = [];

interface Obj {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: { hard?: Record<string, string> };
}

async function rendered(clusterName: string, dir = GITOPS): Promise<Obj[]> {
  const result = await renderDirectory(dir, { ARGOCD_ENV_CLUSTER: clusterName });
  expect(result.errors).toEqual([]);
  return parseAllDocuments(result.output!).map((d) => d.toJS() as Obj);
}

async function getJson<T>(m: FleetMember, args: string[]): Promise<T> {
  return JSON.parse((await kubectlAs(m.info, 'admin', ['get', ...args, '-o', 'json'])).stdout) as T;
}

/** A quota's `hard` as the apiserver stores it (canonical quantities: `1.5` reads back as `1500m`). */
const canonical = (hard: Record<string, string> | undefined) =>
  Object.fromEntries(Object.entries(hard ?? {}).map(([r, q]) => [r, Quantity.parse(q).toString()]));

const appName = (clusterName: string) => `${APPSET}-${clusterName}`;

/** examples/gitops/globex.yaml with data-ingest-us's requests.cpu replaced. */
async function globexWithIngestUsCpu(cpu: string): Promise<string> {
  const text = await readFile(join(GITOPS, 'globex.yaml'), 'utf8');
  const docs = parseAllDocuments(text).map((d) => d.toJS() as Project);
  const data = docs.find((d) => d.metadata.name === 'data')!;
  const ns = data.spec.namespaces!.find((n) => n.name === 'data-ingest-us')!;
  ns.quota!.hard!['requests.cpu'] = cpu;
  return docs.map((d) => stringify(d)).join('---\n');
}

const syncedAt = (revision: string) => (a: Application) =>
  a.status?.sync?.status === 'Synced' &&
  a.status.sync.revision === revision &&
  a.status.health?.status === 'Healthy' &&
  a.status.operationState?.phase === 'Succeeded' &&
  a.status.operationState.syncResult?.revision === revision
    ? a
    : undefined;

beforeAll(async () => {
  const info = cluster();
  const started = Date.now();
  fleet = await startFleet({
    host: info,
    dir: join(info.dir, RUN),
    id: RUN,
    log: (m) => process.env.TG_DEBUG && process.stderr.write(`[fleet] ${m}\n`),
  });
  timings.push(
    `fleet up (2 control planes with tenantgate, Argo CD with the ApplicationSet controller) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  repo = await LocalGitRepo.init(join(info.dir, `git-${RUN}`));
}, 300_000);

afterAll(async () => {
  await kubectl(
    'admin',
    ['-n', ARGOCD_NAMESPACE, 'delete', 'applicationset', APPSET, '--ignore-not-found', '--wait=true', '--timeout=60s'],
    { reject: false },
  );
  await fleet?.stop();
  process.stderr.write(`[argocd-fleet] ${timings.join('; ')}\n`);
}, 300_000);

describe('a fleet of two clusters behind one Argo CD with an ApplicationSet', () => {
  let first: string;

  it('the cluster generator makes one Application per registered cluster; each cluster gets exactly its namespaces and its per-cluster budget', async () => {
    const started = Date.now();
    await repo.copyIn(GITOPS, 'gitops');
    first = await repo.commit('examples/gitops');
    await kubectl('admin', ['apply', '-f', '-'], {
      input: JSON.stringify(fleetApplicationSet({ name: APPSET, fleet: fleet.id, repoURL: repo.url, path: 'gitops' })),
    });

    for (const name of FLEET_CLUSTERS) {
      const app = await waitForApp(
        appName(name),
        `Synced and Healthy at ${first.slice(0, 8)}`,
        syncedAt(first),
        240_000,
      );
      const spec = app.spec as {
        destination: { server: string };
        source: { plugin: { env: Array<{ name: string; value: string }> } };
      };
      expect(spec.destination.server).toBe(fleet.member(name).info.server);
      expect(spec.source.plugin.env).toEqual([{ name: 'CLUSTER', value: name }]);
    }
    const apps = JSON.parse(
      (await kubectl('admin', ['-n', ARGOCD_NAMESPACE, 'get', 'applications', '-o', 'json'])).stdout,
    ) as { items: Array<{ metadata: { name: string; ownerReferences?: Array<{ kind: string; name: string }> } }> };
    const owned = apps.items
      .filter((a) => a.metadata.ownerReferences?.some((o) => o.kind === 'ApplicationSet' && o.name === APPSET))
      .map((a) => a.metadata.name)
      .sort();
    expect(owned).toEqual(FLEET_CLUSTERS.map(appName).sort());
    timings.push(`first sync of both clusters in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    const placed = { 'prod-eu': ['data-ingest-eu', 'payments-api'], 'prod-us': ['data-ingest-us'] } as const;
    for (const m of fleet.members) {
      const objects = await rendered(m.name);
      const expected = objects
        .filter((o) => o.kind === 'Namespace')
        .map((o) => o.metadata.name)
        .sort();
      // Placed elsewhere: not rendered here, so never on this cluster.
      for (const [other, names] of Object.entries(placed))
        for (const ns of names) expect(expected.includes(ns), `${ns} rendered for ${m.name}`).toBe(other === m.name);
      const live = await getJson<{ items: Obj[] }>(m, ['namespaces', '-l', 'tenantgate.io/project']);
      expect(live.items.map((n) => n.metadata.name).sort(), `tenantgate's namespaces on ${m.name}`).toEqual(expected);

      const quotas = await getJson<{ items: Obj[] }>(m, ['resourcequotas', '-A', '-l', 'tenantgate.io/project']);
      for (const project of objects.filter((o) => o.kind === 'Project') as unknown as Project[]) {
        const name = project.metadata.name!;
        const renderedQuotas = objects.filter(
          (o) => o.kind === 'ResourceQuota' && o.metadata.labels?.['tenantgate.io/project'] === name,
        );
        const liveQuotas = quotas.items.filter((q) => q.metadata.labels?.['tenantgate.io/project'] === name);
        // By namespace and name: a project with priority tiers has a quota per tier in each namespace.
        const byName = (q: Obj) => `${q.metadata.namespace}/${q.metadata.name}`;
        expect(
          Object.fromEntries(liveQuotas.map((q) => [byName(q), q.spec?.hard])),
          `${name}'s quotas on ${m.name}`,
        ).toEqual(Object.fromEntries(renderedQuotas.map((q) => [byName(q), canonical(q.spec?.hard)])));
        const budget = budgetOf(project, m.name, processNow());
        const status = (await getJson<Project>(m, ['project', name])).status;
        for (const [key, limit] of budget) {
          // A tier key (requests.cpu@production, pods@*) is what the quotas of that tier hold.
          const { resource, tier } = splitTierKey(key);
          const counted = liveQuotas.filter((q) => quotaTier(q as ResourceQuotaObject) === (tier ?? ''));
          const sum = Quantity.addAll(counted.map((q) => Quantity.parse(q.spec?.hard?.[resource] ?? '0')));
          expect(
            sum.cmp(limit),
            `${name} on ${m.name}: ${key} ${sum.toString()} within ${limit.toString()}`,
          ).toBeLessThanOrEqual(0);
          expect(
            Quantity.parse(status?.allocated?.[key] ?? 'NaN').equals(sum),
            `${name} on ${m.name}: status.allocated.${key}`,
          ).toBe(true);
          expect(
            Quantity.parse(status?.headroom?.[key] ?? 'NaN').equals(limit.sub(sum)),
            `${name} on ${m.name}: status.headroom.${key} against its budget there`,
          ).toBe(true);
        }
      }
    }
    // The same Project, two budgets: payments has 12 cpu on prod-eu (spec.clusters) and its default 20 on prod-us.
    const payments = (m: string) =>
      getJson<Project>(fleet.member(m), ['project', 'payments']).then((p) => p.status?.headroom?.['requests.cpu']);
    expect(await payments('prod-eu')).toBe('0');
    expect(await payments('prod-us')).toBe('16');
  }, 360_000);

  it("a commit over prod-us's budget in git fails render for the whole fleet: both Applications show [Q1], neither cluster changes", async () => {
    // The Project object is the same on every cluster, and render checks every placement of it (all or nothing):
    // a declaration over one cluster's budget is an invalid Project, so no cluster takes it.
    const bad = await repo.commit('data-ingest-us: 20 cpu (prod-us budget 16)', {
      'gitops/globex.yaml': await globexWithIngestUsCpu('20'),
    });
    for (const name of FLEET_CLUSTERS) {
      await refreshHard(appName(name));
      const app = await waitForApp(appName(name), 'ComparisonError with [Q1]', (a) =>
        comparisonError(a)?.includes('[Q1]') ? a : undefined,
      );
      expect(comparisonError(app)).toMatch(/\[Q1\].*prod-us/s);
      expect(app.status?.operationState?.syncResult?.revision, `${name} did not sync ${bad.slice(0, 8)}`).toBe(first);
    }
    expect(
      (await getJson<Obj>(fleet.member('prod-us'), ['-n', 'data-ingest-us', 'resourcequota', 'tenantgate-quota'])).spec
        ?.hard?.['requests.cpu'],
    ).toBe('8');
  }, 360_000);

  it("a commit that fits in git but not on live prod-us: prod-eu syncs it (Synced, Healthy, new revision), prod-us's sync fails with [Q1] and keeps its quotas", async () => {
    const us = fleet.member('prod-us');
    const eu = fleet.member('prod-eu');
    // bob (globex:admins owns data) makes a self-service namespace on prod-us: its default quota (4 cpu)
    // fills data's prod-us budget (8 + 4 + 4 = 16).
    await kubectlAs(us.info, 'bob', ['create', 'namespace', 'data-scratch']);
    await eventually(
      async () =>
        expect(
          (await getJson<Obj>(us, ['-n', 'data-scratch', 'resourcequota', 'tenantgate-quota'])).spec?.hard?.[
            'requests.cpu'
          ],
        ).toBe('4'),
      { what: 'default quota in data-scratch on prod-us' },
    );
    const before = Object.fromEntries(
      await Promise.all(
        ['data-ingest-us', 'data-warehouse', 'data-scratch'].map(
          async (ns) =>
            [ns, (await getJson<Obj>(us, ['-n', ns, 'resourcequota', 'tenantgate-quota'])).spec?.hard] as const,
        ),
      ),
    );

    // 10 + 4 = 14 <= 16 in git (render passes for both clusters); 10 + 4 + 4 = 18 > 16 on prod-us.
    const files = { 'gitops/globex.yaml': await globexWithIngestUsCpu('10') };
    const renderedDir = join(repo.dir, 'gitops');
    const grow = await repo.commit('data-ingest-us: 10 cpu', files);
    for (const name of FLEET_CLUSTERS)
      expect((await renderDirectory(renderedDir, { ARGOCD_ENV_CLUSTER: name })).errors).toEqual([]);
    const started = Date.now();
    for (const name of FLEET_CLUSTERS) await refreshHard(appName(name));

    const euApp = await waitForApp(
      appName('prod-eu'),
      `Synced and Healthy at ${grow.slice(0, 8)}`,
      syncedAt(grow),
      240_000,
    );
    expect(comparisonError(euApp)).toBeUndefined();
    const euData = await getJson<Project>(eu, ['project', 'data']);
    expect(euData.spec.namespaces?.find((n) => n.name === 'data-ingest-us')?.quota?.hard?.['requests.cpu']).toBe('10');

    const usApp = await waitForApp(
      appName('prod-us'),
      `sync of ${grow.slice(0, 8)} Failed`,
      (a) => {
        const op = a.status?.operationState;
        return op?.operation?.sync?.revision === grow && op.phase === 'Failed' ? a : undefined;
      },
      240_000,
    );
    timings.push(
      `the split outcome (prod-eu synced, prod-us failed) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    const op = usApp.status!.operationState!;
    expect(op.message).toMatch(/denied the request: .*\[Q1\]/s);
    const quotaResult = op.syncResult?.resources?.find(
      (r) => r.kind === 'ResourceQuota' && r.namespace === 'data-ingest-us',
    );
    expect(quotaResult?.status).toBe('SyncFailed');
    expect(quotaResult?.message).toMatch(/\[Q1\]/);
    expect(
      us.decisions.some(
        (d) =>
          d.kind === 'ResourceQuota' &&
          d.namespace === 'data-ingest-us' &&
          d.verdict === 'denied' &&
          d.rules.includes('Q1'),
      ),
    ).toBe(true);
    expect(usApp.status?.sync?.status).toBe('OutOfSync');

    // prod-us keeps its quotas: nothing of the refused change landed.
    const after = Object.fromEntries(
      await Promise.all(
        Object.keys(before).map(
          async (ns) =>
            [ns, (await getJson<Obj>(us, ['-n', ns, 'resourcequota', 'tenantgate-quota'])).spec?.hard] as const,
        ),
      ),
    );
    expect(after).toEqual(before);
    // And prod-eu stays synced at the new revision (the automated sync does not retry prod-us's failed one).
    expect(syncedAt(grow)(await getApplication(appName('prod-eu')))).toBeDefined();
  }, 600_000);
});

describe('tenantgate plan against the live fleet', () => {
  it('rolls each project up per cluster and in total, and names the [Q1] prod-us would refuse (exit 1)', async () => {
    // The working tree is the commit prod-eu took and prod-us refused; live state from both clusters' contexts.
    const r = await execa(
      process.execPath,
      [
        ...CLI,
        'plan',
        join(repo.dir, 'gitops'),
        '--cluster',
        'prod-eu=prod-eu',
        '--cluster',
        'prod-us=prod-us',
        '--kubeconfig',
        fleet.kubeconfig,
        '--all',
        '--output',
        'json',
      ],
      { reject: false, env: { NO_COLOR: '1' }, timeout: 120_000 },
    );
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.exitCode).toBe(1);
    const plan = JSON.parse(r.stdout) as Plan;
    expect(plan.clusters.map((c) => c.name).sort()).toEqual([...FLEET_CLUSTERS].sort());
    const entry = (project: string, clusterName: string) =>
      plan.entries.find((e) => e.project === project && e.cluster === clusterName);
    expect(
      entry('data', 'prod-us')?.findings.some((f) => f.rule === 'Q1' && (f.object ?? '').includes('data-ingest-us')),
    ).toBe(true);
    expect(entry('data', 'prod-eu')?.findings).toEqual([]);
    // Every project placed on both clusters has a roll-up whose totals are the sums of its per-cluster lines.
    for (const project of ['data', 'payments']) {
      const up = plan.rollup.find((u) => u.project === project)!;
      expect([...up.clusters].sort(), project).toEqual([...FLEET_CLUSTERS].sort());
      for (const line of up.resources) {
        const perCluster = FLEET_CLUSTERS.map((c) =>
          entry(project, c)?.resources.find((x) => x.resource === line.resource),
        );
        const sum = (pick: (l: NonNullable<(typeof perCluster)[number]>) => string | undefined) =>
          Quantity.addAll(perCluster.map((l) => Quantity.parse((l && pick(l)) ?? '0')));
        expect(
          Quantity.parse(line.allocated).equals(sum((l) => l.allocatedAfter)),
          `${project} ${line.resource} allocated`,
        ).toBe(true);
        if (line.budget)
          expect(
            Quantity.parse(line.budget).equals(sum((l) => l.budgetAfter)),
            `${project} ${line.resource} budget`,
          ).toBe(true);
      }
    }
    // payments: 12 cpu on prod-eu (spec.clusters) + its default 20 on prod-us.
    expect(
      plan.rollup.find((u) => u.project === 'payments')?.resources.find((l) => l.resource === 'requests.cpu')?.budget,
    ).toBe('32');
    timings.push(`plan of the live fleet in ${r.durationMs ? (r.durationMs / 1000).toFixed(1) : '?'} s`);
  }, 180_000);
});

describe('the fleet harness', () => {
  it('exposes, per cluster, a kubeconfig path and a context name that reach that cluster', async () => {
    for (const m of fleet.members) {
      const single = parse(readFileSync(m.kubeconfig, 'utf8')) as { 'current-context': string };
      expect(single['current-context']).toBe(m.context);
      const viaMerged = await kubectlAs({ ...m.info, kubeconfigs: { fleet: fleet.kubeconfig } }, 'fleet', [
        '--context',
        m.context,
        'get',
        'namespace',
        'kube-system',
        '-o',
        'jsonpath={.metadata.name}',
      ]);
      expect(viaMerged.stdout).toBe('kube-system');
      const server = await kubectlAs({ ...m.info, kubeconfigs: { own: m.kubeconfig } }, 'own', [
        'config',
        'view',
        '--minify',
        '-o',
        'jsonpath={.clusters[0].cluster.server}',
      ]);
      expect(server.stdout).toBe(m.info.server);
    }
  });
});
