/**
 * The fleet's hub on one real control plane (docs/fleet.md, docs/adr/0039-fleet-budgets.md): the FleetBudget
 * CRD, the namespace tenantgate-fleet, the members' and the operator's RBAC and the
 * ValidatingAdmissionPolicy tenantgate-fleet-shares, installed as `helm template` of the chart renders
 * them with fleet.hub.enabled. Member clusters write as their ServiceAccounts (impersonated); what
 * src/fleet/shares.ts allows is stored, the rest refused inside the API server with its rule id; then
 * `kubectl tenantgate fleet release` as the operator, and the finalizer.
 *
 * The steps run in order on one FleetBudget: each builds on the ledger the previous one left.
 */
import { execa } from 'execa';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { helmTemplate } from '../../hack/chart-manifests.js';
import {
  FLEET_FINALIZER,
  FLEET_NAMESPACE,
  type FleetBudgetObject,
  type FleetBudgetStatus,
} from '../../src/fleet/fleet-budget-object.js';
import { MEMBER_USER_PREFIX } from '../../src/fleet/fleet-shares-policy.js';
import { heartbeatLeaseName, renewedLease, type HeartbeatLease } from '../../src/fleet/member-heartbeat.js';
import { LeanHubClient, loadHubKubeConfig } from '../../src/fleet/hub-client.js';
import { applyOnHub } from '../../src/fleet/hub-transaction.js';
import {
  giveBack,
  offer,
  requestGrowth,
  withdrawOffer,
  type Applied,
  type ShareRecord,
} from '../../src/fleet/shares.js';
import { parseResources } from '../../src/validate/resource-lists.js';
import { Quantity } from '../../src/quantity/quantity.js';
import { kubeconfigWithContexts } from '../support/fleet.js';
import { cluster, eventually, kubectl, uniqueName } from '../support/cluster.js';
import { REPO_ROOT } from '../support/paths.js';

const SFX = uniqueName('h').slice(2);
const [EU, US, AP] = ['eu', 'us', 'ap'].map((c) => `${c}-${SFX}`) as [string, string, string];
const PROJECT = `web-${SFX}`;
const OPERATOR = `system:serviceaccount:${FLEET_NAMESPACE}:tenantgate-fleet-operator`;
const TSX = join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
const PLUGIN = join(REPO_ROOT, 'src', 'cli', 'kubectl-plugin.ts');
const FB = 'fleetbudgets.tenantgate.io';

const member = (name: string) => `${MEMBER_USER_PREFIX}${name}`;

interface K8sObject {
  kind: string;
  metadata: { name: string };
}

async function read(): Promise<FleetBudgetObject> {
  return JSON.parse(
    (await kubectl('admin', ['get', FB, PROJECT, '-n', FLEET_NAMESPACE, '-o', 'json'])).stdout,
  ) as FleetBudgetObject;
}

/** The test's own identity (system:masters), not impersonated. */
const ADMIN = 'admin';

/** Reads the FleetBudget, lets `change` edit its status, and PUTs it to fleetbudgets/status as `user` (with the resourceVersion read). */
async function writeStatus(user: string, change: (status: FleetBudgetStatus) => void) {
  const object = await read();
  const status = structuredClone(object.status ?? {});
  change(status);
  const as = user === ADMIN ? [] : ['--as', user];
  return kubectl('admin', ['replace', '--subresource=status', ...as, '-f', '-'], {
    input: JSON.stringify({ ...object, status }),
    reject: false,
  });
}

const entry = (status: FleetBudgetStatus, name: string) =>
  ((status.members ??= {})[name] ??= { share: {}, lendable: {} });
const cpuShares = async () =>
  Object.fromEntries(
    Object.entries((await read()).status?.members ?? {}).map(([n, e]) => [
      n,
      `${e.share?.['requests.cpu'] ?? 0}/${e.lendable?.['requests.cpu'] ?? 0}`,
    ]),
  );

async function plugin(args: string[]) {
  const info = cluster();
  const result = await execa(TSX, [PLUGIN, ...args, '--kubeconfig', info.kubeconfigs.admin!], {
    env: { TENANTGATE_KUBECTL: join(info.binDir, 'kubectl') },
    reject: false,
    timeout: 60_000,
  });
  return { stdout: String(result.stdout), stderr: String(result.stderr), exitCode: result.exitCode };
}

beforeAll(async () => {
  // The chart's hub mode, as helm renders it: the CRD first, then the hub's objects.
  const rendered = await helmTemplate([
    '--set',
    'fleet.hub.enabled=true',
    '--set',
    `fleet.hub.members={${EU},${US},${AP}}`,
    '--set',
    'webhook.enabled=false',
    '--set',
    'controller.enabled=false',
  ]);
  const objects = parseAllDocuments(rendered)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
  const crd = objects.filter((o) => o.kind === 'CustomResourceDefinition' && o.metadata.name === FB);
  const hub = objects.filter(
    (o) =>
      [
        'Namespace',
        'Role',
        'RoleBinding',
        'ServiceAccount',
        'ValidatingAdmissionPolicy',
        'ValidatingAdmissionPolicyBinding',
      ].includes(o.kind) &&
      (o.kind !== 'Namespace' || o.metadata.name === FLEET_NAMESPACE),
  );
  expect(crd).toHaveLength(1);
  expect(
    hub
      .filter((o) => o.kind === 'ServiceAccount')
      .map((o) => o.metadata.name)
      .sort(),
  ).toEqual([`member-${AP}`, `member-${EU}`, `member-${US}`, 'tenantgate-fleet-operator'].sort());
  const apply = (list: K8sObject[]) =>
    kubectl('admin', ['apply', '--server-side', '--force-conflicts', '--field-manager', 'fleet-hub-test', '-f', '-'], {
      input: list.map((o) => JSON.stringify(o)).join('\n'),
    });
  await apply(crd);
  await kubectl('admin', ['wait', '--for=condition=Established', '--timeout=60s', `crd/${FB}`]);
  await apply(hub);

  const budget: FleetBudgetObject = {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'FleetBudget',
    metadata: { name: PROJECT, namespace: FLEET_NAMESPACE, finalizers: [FLEET_FINALIZER] },
    spec: {
      budget: { 'requests.cpu': '10', 'requests.memory': '8Gi' },
      members: [EU, US, AP],
      bounds: { [EU]: { 'requests.cpu': '6' } },
    },
  };
  await kubectl('admin', ['create', '-f', '-'], { input: JSON.stringify(budget) });
  // The policy and its binding take effect a moment after they are created: wait until the API server
  // refuses an unmistakable overspend (and nothing was stored while waiting).
  await eventually(
    async () => {
      const r = await writeStatus(
        member(EU),
        (s) => void ((entry(s, EU).share = { 'requests.cpu': '6' }), (entry(s, US).share = { 'requests.cpu': '100' })),
      );
      if (r.exitCode === 0) throw new Error('stored: the policy is not in force yet');
      if (!r.stderr.includes('[F3]')) throw new Error(r.stderr);
    },
    { what: 'policy tenantgate-fleet-shares in force' },
  ).catch(async (err) => {
    throw new Error(`${(err as Error).message}; status now ${JSON.stringify((await read()).status)}`);
  });
  // Whatever the first attempts stored before the policy was in force (if anything) is cleared by the admin.
  const cleared = await writeStatus(ADMIN, (s) => void delete s.members);
  expect(cleared.exitCode, cleared.stderr).toBe(0);
  expect((await read()).status?.members ?? {}).toEqual({});
}, 180_000);

// The control plane is shared with the other files: leave no cluster-wide policy (a later file counts
// what tenantgate left behind) and no FleetBudget held by a finalizer. The FleetBudget CRD stays, as the
// Project CRD does.
afterAll(async () => {
  await kubectl('admin', [
    'delete',
    'validatingadmissionpolicybinding,validatingadmissionpolicy',
    'tenantgate-fleet-shares',
    '--ignore-not-found',
  ]);
  await kubectl(
    'admin',
    ['patch', FB, PROJECT, '-n', FLEET_NAMESPACE, '--type=merge', '-p', '{"metadata":{"finalizers":null}}'],
    { reject: false },
  );
  await kubectl('admin', ['delete', 'namespace', FLEET_NAMESPACE, '--ignore-not-found', '--wait=false']);
}, 60_000);

describe('the hub refuses member writes that src/fleet/shares.ts would not make', () => {
  it('a member grows its share from the pool: stored', async () => {
    const r = await writeStatus(
      member(EU),
      (s) => void Object.assign(entry(s, EU), { share: { 'requests.cpu': '4' }, lastRequest: `${EU}-1` }),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const r2 = await writeStatus(
      member(US),
      (s) =>
        void Object.assign(entry(s, US), {
          share: { 'requests.cpu': '6', 'requests.memory': '2Gi' },
          lastRequest: `${US}-1`,
        }),
    );
    expect(r2.exitCode, r2.stderr).toBe(0);
    expect(await cpuShares()).toEqual({ [EU]: '4/0', [US]: '6/0' });
  });

  it('a growth above the fleet budget: refused [F3], naming the budget and who holds it', async () => {
    const r = await writeStatus(
      member(AP),
      (s) => void Object.assign(entry(s, AP), { share: { 'requests.cpu': '1' }, lastRequest: `${AP}-1` }),
    );
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain(
      `[F3] FleetBudget ${FLEET_NAMESPACE}/${PROJECT}: the shares would sum above the fleet budget (requests.cpu 10, held by `,
    );
    const holders = /held by ([^)]*)\) in a write by (\S+)/.exec(r.stderr);
    expect(holders?.[1]?.split(', ').sort()).toEqual([`${AP} 1`, `${EU} 4`, `${US} 6`].sort());
    expect(holders?.[2]).toBe(AP);
    expect(await cpuShares()).toEqual({ [EU]: '4/0', [US]: '6/0' });
  });

  it("a member lowering another member's share: refused [F3]", async () => {
    const r = await writeStatus(member(US), (s) => {
      entry(s, EU).share = { 'requests.cpu': '2' };
      entry(s, US).share = { 'requests.cpu': '8', 'requests.memory': '2Gi' };
    });
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain(
      `[F3] FleetBudget ${FLEET_NAMESPACE}/${PROJECT}: member ${US} may change only its own entry; the entries of ${EU} changed otherwise than by taking room they offered`,
    );
    // Nor may it touch another member's lastRequest.
    const r2 = await writeStatus(member(US), (s) => void (entry(s, EU).lastRequest = 'forged'));
    expect(r2.exitCode).not.toBe(0);
    expect(r2.stderr).toContain(`the entries of ${EU} changed`);
    expect(await cpuShares()).toEqual({ [EU]: '4/0', [US]: '6/0' });
  });

  it('taking room another member offered: stored (share and lendable of the lender fall together)', async () => {
    const offer = await writeStatus(
      member(EU),
      (s) => void Object.assign(entry(s, EU), { lendable: { 'requests.cpu': '2' }, lastRequest: `${EU}-2` }),
    );
    expect(offer.exitCode, offer.stderr).toBe(0);
    // Taking more than was offered is lowering the lender's share.
    const tooMuch = await writeStatus(member(US), (s) => {
      Object.assign(entry(s, EU), { share: { 'requests.cpu': '1' }, lendable: {} });
      Object.assign(entry(s, US), { share: { 'requests.cpu': '9', 'requests.memory': '2Gi' } });
    });
    expect(tooMuch.exitCode).not.toBe(0);
    expect(tooMuch.stderr).toContain(`the entries of ${EU} changed`);
    const take = await writeStatus(member(US), (s) => {
      Object.assign(entry(s, EU), { share: { 'requests.cpu': '2000m' }, lendable: {} });
      Object.assign(entry(s, US), { share: { 'requests.cpu': '8', 'requests.memory': '2Gi' }, lastRequest: `${US}-2` });
    });
    expect(take.exitCode, take.stderr).toBe(0);
    expect(await cpuShares()).toEqual({ [EU]: '2000m/0', [US]: '8/0' });
  });

  it('taking more than another member offered by driving its lendable below 0, or writing an entry for a member that has none: refused [F3]', async () => {
    // EU holds 2000m and offers nothing. Lowering its share and its lendable together (2000m/0 → 1/-1)
    // looks like "taking what it offered", but it offered nothing: the lendable would be negative.
    const belowZero = await writeStatus(member(US), (s) => {
      Object.assign(entry(s, EU), { share: { 'requests.cpu': '1' }, lendable: { 'requests.cpu': '-1' } });
      Object.assign(entry(s, US), { share: { 'requests.cpu': '9', 'requests.memory': '2Gi' } });
    });
    expect(belowZero.exitCode).not.toBe(0);
    expect(belowZero.stderr).toContain(`the entries of ${EU} changed`);
    // A negative entry for AP (which has none) would let US's own share grow past the budget while Σ stays at 10.
    const forgedEntry = await writeStatus(member(US), (s) => {
      Object.assign(entry(s, AP), { share: { 'requests.cpu': '-1' }, lendable: { 'requests.cpu': '-1' } });
      Object.assign(entry(s, US), { share: { 'requests.cpu': '9', 'requests.memory': '2Gi' } });
    });
    expect(forgedEntry.exitCode).not.toBe(0);
    expect(forgedEntry.stderr).toContain(`the entries of ${AP} changed`);
    // Nor an empty entry: a member creates no entry but its own.
    const emptyEntry = await writeStatus(member(US), (s) => void entry(s, AP));
    expect(emptyEntry.exitCode).not.toBe(0);
    expect(emptyEntry.stderr).toContain(`the entries of ${AP} changed`);
    expect(await cpuShares()).toEqual({ [EU]: '2000m/0', [US]: '8/0' });
  });

  it('a growth beyond the member’s bound: refused [F3]; within it: stored', async () => {
    const giveBack = await writeStatus(
      member(US),
      (s) =>
        void Object.assign(entry(s, US), {
          share: { 'requests.cpu': '3', 'requests.memory': '2Gi' },
          lastRequest: `${US}-3`,
        }),
    );
    expect(giveBack.exitCode, giveBack.stderr).toBe(0);
    const beyond = await writeStatus(
      member(EU),
      (s) => void Object.assign(entry(s, EU), { share: { 'requests.cpu': '7' }, lastRequest: `${EU}-3` }),
    );
    expect(beyond.exitCode).not.toBe(0);
    expect(beyond.stderr).toContain(
      `[F3] FleetBudget ${FLEET_NAMESPACE}/${PROJECT}: the share of ${EU} grows beyond its bound or outside the fleet budget: requests.cpu 7 > bound 6 (spec.bounds[${EU}])`,
    );
    const outside = await writeStatus(
      member(EU),
      (s) => void Object.assign(entry(s, EU), { share: { 'requests.cpu': '2', pods: '5' }, lastRequest: `${EU}-3` }),
    );
    expect(outside.exitCode).not.toBe(0);
    expect(outside.stderr).toContain('pods 5 (not in spec.budget)');
    const lendsTooMuch = await writeStatus(
      member(EU),
      (s) => void Object.assign(entry(s, EU), { lendable: { 'requests.cpu': '3' } }),
    );
    expect(lendsTooMuch.exitCode).not.toBe(0);
    expect(lendsTooMuch.stderr).toContain(`every entry must keep 0 <= lendable <= share: ${EU} requests.cpu`);
    const within = await writeStatus(
      member(EU),
      (s) => void Object.assign(entry(s, EU), { share: { 'requests.cpu': '6' }, lastRequest: `${EU}-3` }),
    );
    expect(within.exitCode, within.stderr).toBe(0);
    expect(await cpuShares()).toEqual({ [EU]: '6/0', [US]: '3/0' });
  });

  it('the patch verb is not granted to members (RBAC): every member write is a PUT with a resourceVersion', async () => {
    const canI = (verb: string, subresource: string) =>
      kubectl(
        'admin',
        ['auth', 'can-i', verb, FB, `--subresource=${subresource}`, '-n', FLEET_NAMESPACE, '--as', member(EU)],
        { reject: false },
      );
    expect((await canI('update', 'status')).stdout.trim()).toBe('yes');
    expect((await canI('patch', 'status')).stdout.trim()).toBe('no');
    expect((await canI('patch', '')).stdout.trim()).toBe('no');
    expect((await canI('update', '')).stdout.trim()).toBe('no');
    const r = await kubectl(
      'admin',
      [
        'patch',
        FB,
        PROJECT,
        '-n',
        FLEET_NAMESPACE,
        '--type=merge',
        '-p',
        JSON.stringify({ status: { members: { [EU]: { lastRequest: 'x' } } } }),
        '--as',
        member(EU),
      ],
      {
        reject: false,
      },
    );
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain(`cannot patch resource "fleetbudgets" in API group "tenantgate.io"`);
    // A PUT computed from an older read gets 409 (the precondition every member write carries).
    const stale = await read();
    expect((await writeStatus(member(EU), (s) => void (entry(s, EU).lastRequest = `${EU}-4`))).exitCode).toBe(0);
    const r2 = await kubectl('admin', ['replace', '--subresource=status', '--as', member(EU), '-f', '-'], {
      input: JSON.stringify(stale),
      reject: false,
    });
    expect(r2.stderr).toMatch(/the object has been modified|Conflict/);
  });

  it('status.released: refused for a member, allowed for the operator (recorded under its own name); a released member may write nothing', async () => {
    const byMember = await writeStatus(
      member(EU),
      (s) => void (s.released = { [AP]: { at: '2026-11-25T10:00:00Z', by: member(EU) } }),
    );
    expect(byMember.exitCode).not.toBe(0);
    expect(byMember.stderr).toContain(
      `[F3] FleetBudget ${FLEET_NAMESPACE}/${PROJECT}: member ${EU} may not change status.released`,
    );
    const forged = await writeStatus(
      OPERATOR,
      (s) => void (s.released = { [AP]: { at: '2026-11-25T10:00:00Z', by: 'someone-else' } }),
    );
    expect(forged.exitCode).not.toBe(0);
    expect(forged.stderr).toContain('may not write status.released this way');
    // Someone who may write the status (RBAC) but not release: carol, given update on fleetbudgets/status
    // here and nothing more, so her write reaches the policy, which refuses it for want of the verb.
    const role = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'status-writer-carol', namespace: FLEET_NAMESPACE },
      rules: [{ apiGroups: ['tenantgate.io'], resources: ['fleetbudgets/status'], verbs: ['update'] }],
    };
    const binding = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'status-writer-carol', namespace: FLEET_NAMESPACE },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'status-writer-carol' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'carol' }],
    };
    await kubectl('admin', ['apply', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [role, binding] }),
    });
    const carolCan = (verb: string, subresource: string) =>
      kubectl(
        'admin',
        [
          'auth',
          'can-i',
          verb,
          FB,
          ...(subresource ? [`--subresource=${subresource}`] : []),
          '-n',
          FLEET_NAMESPACE,
          '--as',
          'carol',
        ],
        { reject: false },
      );
    await eventually(
      async () => {
        if ((await carolCan('update', 'status')).stdout.trim() !== 'yes')
          throw new Error('carol may not update fleetbudgets/status yet');
      },
      { what: 'carol allowed to write the status' },
    );
    expect((await carolCan('release', '')).stdout.trim()).toBe('no');
    const byNobody = await writeStatus(
      'carol',
      (s) => void (s.released = { [AP]: { at: '2026-11-25T10:00:00Z', by: 'carol' } }),
    );
    expect(byNobody.exitCode).not.toBe(0);
    expect(byNobody.stderr).toContain(
      `[F3] FleetBudget ${FLEET_NAMESPACE}/${PROJECT}: carol may not write status.released this way: only a subject allowed the verb release on fleetbudgets`,
    );
    expect((await read()).status?.released ?? {}).toEqual({});
    const byOperator = await writeStatus(
      OPERATOR,
      (s) => void (s.released = { [AP]: { at: '2026-11-25T10:00:00Z', by: OPERATOR } }),
    );
    expect(byOperator.exitCode, byOperator.stderr).toBe(0);
    expect((await read()).status?.released?.[AP]).toEqual({ at: '2026-11-25T10:00:00Z', by: OPERATOR });
    const unrelease = await writeStatus(OPERATOR, (s) => void delete s.released);
    expect(unrelease.exitCode).not.toBe(0);
    const afterRelease = await writeStatus(
      member(AP),
      (s) => void Object.assign(entry(s, AP), { share: { 'requests.cpu': '1' } }),
    );
    expect(afterRelease.exitCode).not.toBe(0);
    expect(afterRelease.stderr).toContain(`member ${AP} was released by an operator`);
  });

  it('a spec budget below what the members hold: refused [F2] below-shares, naming the shares', async () => {
    const r = await kubectl(
      'admin',
      [
        'patch',
        FB,
        PROJECT,
        '-n',
        FLEET_NAMESPACE,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { budget: { 'requests.cpu': '8' } } }),
      ],
      { reject: false },
    );
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain(
      `[F2] FleetBudget ${FLEET_NAMESPACE}/${PROJECT}: spec.budget is below what the members hold (below-shares): requests.cpu 8 < held by `,
    );
    expect(r.stderr).toMatch(new RegExp(`held by (${EU} 6, ${US} 3|${US} 3, ${EU} 6)`));
    const fits = await kubectl(
      'admin',
      [
        'patch',
        FB,
        PROJECT,
        '-n',
        FLEET_NAMESPACE,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { budget: { 'requests.cpu': '9' } } }),
      ],
      { reject: false },
    );
    expect(fits.exitCode, fits.stderr).toBe(0);
  });

  it('a cluster dropped from spec.members may only lower its share', async () => {
    const members = (list: string[]) =>
      kubectl('admin', [
        'patch',
        FB,
        PROJECT,
        '-n',
        FLEET_NAMESPACE,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { members: list } }),
      ]);
    await members([EU, AP]);
    const grow = await writeStatus(
      member(US),
      (s) =>
        void Object.assign(entry(s, US), {
          share: { 'requests.cpu': '3500m', 'requests.memory': '2Gi' },
          lastRequest: `${US}-4`,
        }),
    );
    expect(grow.exitCode).not.toBe(0);
    expect(grow.stderr).toContain(
      `[F3] FleetBudget ${FLEET_NAMESPACE}/${PROJECT}: ${US} is not in spec.members (${EU}, ${AP}); a cluster outside the fleet may only lower a share it still holds`,
    );
    const lower = await writeStatus(
      member(US),
      (s) =>
        void Object.assign(entry(s, US), {
          share: { 'requests.cpu': '2500m', 'requests.memory': '2Gi' },
          lastRequest: `${US}-4`,
        }),
    );
    expect(lower.exitCode, lower.stderr).toBe(0);
    await members([EU, US, AP]);
    const back = await writeStatus(
      member(US),
      (s) =>
        void Object.assign(entry(s, US), {
          share: { 'requests.cpu': '3', 'requests.memory': '2Gi' },
          lastRequest: `${US}-5`,
        }),
    );
    expect(back.exitCode, back.stderr).toBe(0);
    expect(await cpuShares()).toEqual({ [EU]: '6/0', [US]: '3/0' });
  });

  it("an operator's view: kubectl get fleetbudgets prints budget, members and releases", async () => {
    const table = (await kubectl('admin', ['get', FB, PROJECT, '-n', FLEET_NAMESPACE])).stdout;
    expect(table.split('\n')[0]).toMatch(/^NAME\s+BUDGET\s+MEMBERS\s+RELEASED\s+AGE$/);
    expect(table).toContain('"requests.cpu":"9"');
    expect(table).toContain(`"${AP}":{"at":"2026-11-25T10:00:00Z","by":"${OPERATOR}"}`);
    expect(
      (await kubectl('admin', ['get', FB, PROJECT, '-n', FLEET_NAMESPACE, '-o', 'wide'])).stdout.split('\n')[0],
    ).toContain('HOLDERS');
  });

  it('the finalizer stays while a share is held', async () => {
    const r = await kubectl(
      'admin',
      ['patch', FB, PROJECT, '-n', FLEET_NAMESPACE, '--type=merge', '-p', '{"metadata":{"finalizers":null}}'],
      { reject: false },
    );
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain(
      `[F3] FleetBudget ${FLEET_NAMESPACE}/${PROJECT}: the finalizer ${FLEET_FINALIZER} stays while members hold a share`,
    );
  });
});

describe('kubectl tenantgate fleet release', () => {
  it('refuses a FleetBudget or a member that does not exist', async () => {
    const noObject = await plugin(['fleet', 'release', `nope-${SFX}`, EU, '--as', OPERATOR]);
    expect(noObject.exitCode).toBe(1);
    expect(noObject.stderr).toContain(`FleetBudget ${FLEET_NAMESPACE}/nope-${SFX} does not exist`);
    const noMember = await plugin(['fleet', 'release', PROJECT, 'nowhere', '--as', OPERATOR]);
    expect(noMember.exitCode).toBe(1);
    expect(noMember.stderr).toContain(
      `cluster nowhere is neither in spec.members (${EU}, ${US}, ${AP}) nor holds a share (${EU}, ${US}); nothing released`,
    );
    const asMember = await plugin(['fleet', 'release', PROJECT, US, '--as', member(EU)]);
    expect(asMember.exitCode).toBe(1);
    expect(await cpuShares()).toEqual({ [EU]: '6/0', [US]: '3/0' });
  });

  it('refuses to release a member heard from recently (its heartbeat Lease on the hub), naming when; a member renews only its own heartbeat', async () => {
    const created = await kubectl('admin', ['create', '--as', member(US), '-f', '-'], {
      input: JSON.stringify(renewedLease(US, new Date(), 30)),
      reject: false,
    });
    expect(created.exitCode, created.stderr).toBe(0);
    const lease = JSON.parse(
      (await kubectl('admin', ['get', 'lease', heartbeatLeaseName(US), '-n', FLEET_NAMESPACE, '-o', 'json'])).stdout,
    ) as HeartbeatLease;
    const forged = await kubectl('admin', ['replace', '--as', member(EU), '-f', '-'], {
      input: JSON.stringify(renewedLease(US, new Date(), 30, lease)),
      reject: false,
    });
    expect(forged.exitCode).not.toBe(0);
    expect(forged.stderr).toContain('forbidden');
    const refused = await plugin(['fleet', 'release', PROJECT, US, '--as', OPERATOR]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toMatch(
      new RegExp(
        `FleetBudget ${FLEET_NAMESPACE}/${PROJECT}: cluster ${US} was heard from \\d+s ago \\(Lease ${FLEET_NAMESPACE}/member-${US} renewed at `,
      ),
    );
    expect(refused.stderr).toContain('or pass --force; nothing released');
    expect(await cpuShares()).toEqual({ [EU]: '6/0', [US]: '3/0' });
    expect((await read()).status?.released?.[US]).toBeUndefined();
    // US stops: its last heartbeat is 20 minutes old (the member renews its own Lease), so the next test releases it without --force.
    const stale = await kubectl('admin', ['replace', '--as', member(US), '-f', '-'], {
      input: JSON.stringify(renewedLease(US, new Date(Date.now() - 20 * 60_000), 30, lease)),
      reject: false,
    });
    expect(stale.exitCode, stale.stderr).toBe(0);
  });

  it('releases a member: its share returns to the pool, recorded with time and operator; its writes are refused', async () => {
    const r = await plugin(['fleet', 'release', PROJECT, US, '--as', OPERATOR]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain(`released ${US} from FleetBudget ${FLEET_NAMESPACE}/${PROJECT}`);
    expect(r.stdout).toContain('returned to the pool: requests.cpu 3, requests.memory 2Gi');
    expect(r.stdout).toContain('pool now: requests.cpu 3, requests.memory 8Gi');
    const object = await read();
    expect(Object.keys(object.status?.members ?? {})).toEqual([EU]);
    expect(object.status?.released?.[US]?.by).toBe(OPERATOR);
    const again = await plugin(['fleet', 'release', PROJECT, US, '--as', OPERATOR]);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout).toContain('was already released');
    const write = await writeStatus(
      member(US),
      (s) => void Object.assign(entry(s, US), { share: { 'requests.cpu': '1' } }),
    );
    expect(write.stderr).toContain(`member ${US} was released by an operator`);
  });

  it('a FleetBudget deleted while a share is held stays until nobody holds one; release then removes the finalizer', async () => {
    await kubectl('admin', ['delete', FB, PROJECT, '-n', FLEET_NAMESPACE, '--wait=false']);
    expect((await read()).metadata.deletionTimestamp).toBeTruthy();
    // EU still runs (heard from just now): refused, then released with --force.
    expect(
      (
        await kubectl('admin', ['create', '--as', member(EU), '-f', '-'], {
          input: JSON.stringify(renewedLease(EU, new Date(), 30)),
          reject: false,
        })
      ).exitCode,
    ).toBe(0);
    const alive = await plugin(['fleet', 'release', PROJECT, EU, '--as', OPERATOR]);
    expect(alive.exitCode).toBe(1);
    expect(alive.stderr).toContain(`cluster ${EU} was heard from`);
    const r = await plugin(['fleet', 'release', PROJECT, EU, '--as', OPERATOR, '--force']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain(`finalizer ${FLEET_FINALIZER} removed`);
    await eventually(async () => {
      const got = await kubectl('admin', ['get', FB, PROJECT, '-n', FLEET_NAMESPACE], { reject: false });
      if (got.exitCode === 0) throw new Error('still there');
    });
  });
});

describe("the members' own code (src/fleet/hub-transaction.ts) through the policy, with real ServiceAccount tokens", () => {
  const BUDGET2 = `api-${SFX}`;
  let dir: string;
  const clients: LeanHubClient[] = [];
  const cpu = (v: string) => parseResources({ 'requests.cpu': v });

  /** The member's hub client, as a member builds it from its mounted kubeconfig (a bound token, the hub's CA). */
  async function hubFor(name: string): Promise<LeanHubClient> {
    const info = cluster();
    const token = (
      await kubectl('admin', ['-n', FLEET_NAMESPACE, 'create', 'token', `member-${name}`, '--duration=1h'])
    ).stdout.trim();
    const file = join(dir, `hub-${name}.kubeconfig`);
    await writeFile(
      file,
      kubeconfigWithContexts([
        {
          context: 'hub',
          server: info.server,
          caPem: await readFile(info.caFile, 'utf8'),
          user: `member-${name}`,
          token,
        },
      ]),
      { mode: 0o600 },
    );
    const client = new LeanHubClient(loadHubKubeConfig(file));
    clients.push(client);
    return client;
  }
  const apply = <R extends Applied>(
    hub: LeanHubClient,
    name: string,
    key: string,
    transition: (l: ShareRecord) => R | ReturnType<typeof requestGrowth>,
  ) => applyOnHub(hub, BUDGET2, transition as (l: ShareRecord) => R, { member: name, key, deadlineMs: 20_000 });
  const shares = async () =>
    Object.fromEntries(
      Object.entries(
        (
          JSON.parse(
            (await kubectl('admin', ['get', FB, BUDGET2, '-n', FLEET_NAMESPACE, '-o', 'json'])).stdout,
          ) as FleetBudgetObject
        ).status?.members ?? {},
      ).map(([n, e]) => [n, `${e.share?.['requests.cpu'] ?? 0}/${e.lendable?.['requests.cpu'] ?? 0}`]),
    );

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fleet-hub-members-'));
    const budget: FleetBudgetObject = {
      apiVersion: 'tenantgate.io/v1alpha1',
      kind: 'FleetBudget',
      metadata: { name: BUDGET2, namespace: FLEET_NAMESPACE },
      spec: { budget: { 'requests.cpu': '10' }, members: [EU, US] },
    };
    await kubectl('admin', ['create', '-f', '-'], { input: JSON.stringify(budget) });
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('growth from the pool, an offer, taking the offer and a give-back are all stored', async () => {
    const [eu, us] = [await hubFor(EU), await hubFor(US)];
    expect((await apply(eu, EU, 'g1', (l) => requestGrowth(l, EU, { id: 'g1', need: cpu('3') }))).kind).toBe('stored');
    expect((await apply(us, US, 'g2', (l) => requestGrowth(l, US, { id: 'g2', need: cpu('7') }))).kind).toBe('stored');
    expect((await apply(eu, EU, 'o1', (l) => offer(l, EU, { id: 'o1', amount: cpu('2') }))).kind).toBe('stored');
    expect((await apply(us, US, 'g3', (l) => requestGrowth(l, US, { id: 'g3', need: cpu('1') }))).kind).toBe('stored');
    expect(await shares()).toEqual({ [EU]: '2/1', [US]: '8/0' });
    expect((await apply(eu, EU, 'b1', (l) => giveBack(l, EU, { id: 'b1', amount: cpu('1') }))).kind).toBe('stored');
    expect(await shares()).toEqual({ [EU]: '1/1', [US]: '8/0' });
    expect((await apply(eu, EU, 'w1', (l) => withdrawOffer(l, EU, { id: 'w1', amount: cpu('1') }))).kind).toBe(
      'stored',
    );
    expect(await shares()).toEqual({ [EU]: '1/0', [US]: '8/0' });
    // A growth the ledger itself refuses (pool 1, nothing offered) never reaches the hub.
    expect((await apply(us, US, 'g4', (l) => requestGrowth(l, US, { id: 'g4', need: cpu('2') }))).kind).toBe('refused');
  });

  it('a member whose code is wrong or hostile is rejected by the hub: another member lowered, the budget passed', async () => {
    const us = await hubFor(US);
    const lowerOther = await apply(us, US, 'x1', (l) => {
      const shares = new Map(l.shares);
      shares.set(EU, { share: new Map(), lendable: new Map() });
      shares.set(US, { ...shares.get(US)!, share: cpu('9'), lastRequest: 'x1' });
      return { ok: true, record: { ...l, shares }, duplicate: false } as Applied;
    });
    expect(lowerOther.kind).toBe('rejected');
    expect(lowerOther.kind === 'rejected' && lowerOther.problems.join(' ')).toContain(
      `[F3] FleetBudget ${FLEET_NAMESPACE}/${BUDGET2}: member ${US} may change only its own entry`,
    );
    const overBudget = await apply(us, US, 'x2', (l) => {
      const shares = new Map(l.shares);
      shares.set(US, {
        ...shares.get(US)!,
        share: new Map([['requests.cpu', Quantity.parse('9500m')]]),
        lastRequest: 'x2',
      });
      return { ok: true, record: { ...l, shares }, duplicate: false } as Applied;
    });
    expect(overBudget.kind).toBe('rejected');
    expect(overBudget.kind === 'rejected' && overBudget.problems.join(' ')).toContain(
      'the shares would sum above the fleet budget (requests.cpu 10',
    );
    expect(await shares()).toEqual({ [EU]: '1/0', [US]: '8/0' });
  });
});
