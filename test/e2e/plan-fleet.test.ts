/**
 * `tenantgate plan --hub` (the CLI as users run it) over a fleet budget, against the real local control
 * plane serving as both the member cluster `local` (its live state) and the fleet's hub (the FleetBudget
 * CRD from the chart, a FleetBudget whose status holds the members' shares). Lowering the fleet budget
 * below the shares held is refused with [F2] and exit 1; once a member gave share back, the same change
 * plans clean; without --hub the shares are not read; a namespace declared above the fleet budget across
 * the members is [F1]; an unknown hub context is a usage error.
 */
import { processNow } from '../../src/clock.js';
import { execa } from 'execa';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { fleetBudgetFor } from '../../src/fleet/fleet-budget-object.js';
import type { Plan } from '../../src/plan/types.js';
import type { Project } from '../../src/validate/types.js';
import { cluster, ensureProjectCrd, kubectl, uniqueName } from '../support/cluster.js';
import { LocalGitRepo } from '../support/git-repo.js';
import { REPO_ROOT } from '../support/paths.js';

const CLI = [
  `--import=${pathToFileURL(join(REPO_ROOT, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs')).href}`,
  join(REPO_ROOT, 'src', 'cli', 'main.ts'),
];
const FLEET_CRD = join(REPO_ROOT, 'charts', 'tenantgate', 'files', 'crd', 'fleetbudgets.tenantgate.io.yaml');
const RUN = uniqueName('plf');
const NAME = `${RUN}-web`;
const ADMIN_KUBECONFIG = () => cluster().kubeconfigs.admin!;

let repo: LocalGitRepo;
let file = '';

/** web shares `fleet` CPUs between local and remote (each bounded by 8); `a` on local, `b` on remote. */
function web(fleet: string, b = '3'): Project {
  return {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: NAME },
    spec: {
      tenant: 'acme',
      fleet: { quota: { hard: { 'requests.cpu': fleet } }, clusters: ['local', 'remote'] },
      quota: { hard: { 'requests.cpu': '8' } },
      namespaces: [
        { name: `${NAME}-a`, cluster: 'local', quota: { hard: { 'requests.cpu': '4' } } },
        { name: `${NAME}-b`, cluster: 'remote', quota: { hard: { 'requests.cpu': b } } },
      ],
    },
  };
}

async function tenantgate(args: string[]) {
  const result = await execa(process.execPath, [...CLI, ...args], {
    cwd: repo.dir,
    reject: false,
    env: { NO_COLOR: '1' },
    timeout: 120_000,
  });
  return { exitCode: result.exitCode, stdout: String(result.stdout), stderr: String(result.stderr) };
}

/** The members' shares as they would have written them (status subresource, as a member's PUT does). */
async function setShares(shares: Record<string, string>): Promise<void> {
  const members = Object.fromEntries(
    Object.entries(shares).map(([m, cpu]) => [m, { share: { 'requests.cpu': cpu }, lendable: {} }]),
  );
  await kubectl('admin', [
    '-n',
    'tenantgate-fleet',
    'patch',
    'fleetbudget',
    NAME,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({ status: { members } }),
  ]);
}

const planFlags = () => [
  'plan',
  'gitops',
  '--base',
  'HEAD',
  '--cluster',
  'local=admin',
  '--kubeconfig',
  ADMIN_KUBECONFIG(),
  '--output',
  'json',
];

beforeAll(async () => {
  await ensureProjectCrd();
  await kubectl('admin', ['apply', '--server-side', '--force-conflicts', '-f', FLEET_CRD]);
  await kubectl('admin', ['wait', '--for=condition=Established', '--timeout=60s', 'crd/fleetbudgets.tenantgate.io']);
  await kubectl('admin', ['create', 'namespace', 'tenantgate-fleet'], { reject: false });
  repo = await LocalGitRepo.init(join(cluster().dir, `git-${RUN}`));
  await repo.commit('fleet web at 12', {
    'gitops/tenantgate.yaml': stringify({ clusterName: 'local' }),
    'gitops/web.yaml': stringify(web('12')),
  });
  file = join(repo.dir, 'gitops', 'web.yaml');
  // The hub's FleetBudget as render makes it for the hub (spec), its status as the members left it.
  await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(fleetBudgetFor(web('12'), processNow())) });
  await setShares({ local: '7', remote: '4' });
}, 120_000);

afterAll(async () => {
  await kubectl(
    'admin',
    ['-n', 'tenantgate-fleet', 'delete', 'fleetbudget', NAME, '--ignore-not-found', '--wait=false'],
    { reject: false },
  );
});

describe('tenantgate plan over a fleet budget, shares read from the hub', () => {
  it('a fleet budget lowered below the shares the members hold: [F2] and exit 1 with --hub; not checked without it', async () => {
    await writeFile(file, stringify(web('10')));
    const withHub = await tenantgate([...planFlags(), '--hub', 'admin']);
    expect(withHub.exitCode, withHub.stderr).toBe(1);
    const plan = JSON.parse(withHub.stdout) as Plan;
    expect(plan.fleet.map((f) => [f.project, f.hub, f.members])).toEqual([[NAME, 'read', ['local', 'remote']]]);
    expect(plan.fleet[0]!.resources[0]).toMatchObject({
      resource: 'requests.cpu',
      budgetBefore: '12',
      budgetAfter: '10',
      shares: '11',
      pool: '-1',
      allocated: '7',
      perMember: {
        local: { allocated: '4', counted: 'live', share: '7' },
        remote: { allocated: '3', counted: 'declared', share: '4' },
      },
    });
    expect(plan.fleet[0]!.findings.map((f) => f.message)).toEqual([
      `project ${NAME}: the fleet budget cannot go below what the member clusters hold: requests.cpu 1 too low (held by local 7, remote 4); lower it after they give unused share back`,
    ]);
    expect(plan.fleet[0]!.findings[0]!.rule).toBe('F2');

    const table = await tenantgate([
      'plan',
      'gitops',
      '--base',
      'HEAD',
      '--cluster',
      'local=admin',
      '--kubeconfig',
      ADMIN_KUBECONFIG(),
      '--hub',
      'admin',
    ]);
    expect(table.exitCode).toBe(1);
    expect(table.stdout).toContain(`✗ fleet ${NAME} on local + remote — shares from the hub`);
    expect(table.stdout).toContain('[F2] project');
    process.stderr.write(`[plan-fleet] table:\n${table.stdout}\n`);

    const withoutHub = await tenantgate(planFlags());
    expect(withoutHub.exitCode, withoutHub.stderr + withoutHub.stdout).toBe(0);
    expect((JSON.parse(withoutHub.stdout) as Plan).fleet[0]!.hub).toBe('not-read');
  });

  it('once a member gave share back, the same change plans clean', async () => {
    await writeFile(file, stringify(web('10')));
    await setShares({ local: '6', remote: '4' });
    const r = await tenantgate([...planFlags(), '--hub', 'admin']);
    expect(r.exitCode, r.stderr + r.stdout).toBe(0);
    expect((JSON.parse(r.stdout) as Plan).fleet[0]!.resources[0]).toMatchObject({
      shares: '10',
      pool: '0',
      headroom: '3',
    });
  });

  it('[F1]: the namespaces on the members would hold more than the fleet budget (checked before any cluster is read)', async () => {
    await writeFile(file, stringify(web('10', '7')));
    const r = await tenantgate([...planFlags(), '--hub', 'admin']);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain('[F1]');
    expect(r.stderr).toContain('the fleet budget is 10');
  });

  it('an unknown hub context is a usage error naming the flag', async () => {
    await writeFile(file, stringify(web('12')));
    const r = await tenantgate([...planFlags(), '--hub', 'nosuch']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('--hub "nosuch": no such context "nosuch"');
  });
});
