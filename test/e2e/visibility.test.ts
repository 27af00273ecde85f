/**
 * tenantgate.yaml `visibility: own` on a real control plane of its own (it changes cluster-wide tenant
 * RBAC): the chart's tenant and controller RBAC rendered with config.visibility=own, the controller
 * keeping per-project ClusterRoles/ClusterRoleBindings. Tenants (impersonated) cannot list Projects or
 * namespaces, can get their own, not others'; the objects are repaired, follow owners and namespaces,
 * go with their Project (garbage collector), and tenants cannot write such objects themselves.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlPlane, type ClusterInfo } from '../support/devcluster/controlplane.js';
import { installBase, serviceAccountKubeConfig, startLocalWebhook } from '../support/devcluster/tenantgate.js';
import { apiWrites, applyChartTemplates, run } from '../support/view.js';
import { eventually, uniqueName } from '../support/cluster.js';
import { startController, type RunningController } from '../../src/controller/controller.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { Project } from '../../src/validate/types.js';

let cp: ControlPlane;
let info: ClusterInfo;
let controller: RunningController;

const p1 = uniqueName('own');
const p2 = uniqueName('other');
const ns1 = `${p1}-a`;
const ns2 = `${p2}-a`;
const role1 = `tenantgate:project:${p1}`;
const role2 = `tenantgate:project:${p2}`;

const ALICE = ['--as=alice', '--as-group=acme:payments-admins', '--as-group=tenants'];
const BOB = ['--as=bob', '--as-group=globex:admins', '--as-group=tenants'];
const CAROL = ['--as=carol', '--as-group=acme:web-admins', '--as-group=tenants'];

const RESYNC_SECONDS = 3;

/** The controller's "reconciled" log lines, with when each reconcile started (its end less its `ms`). */
const reconciled: Array<{ project: string; result: string; startedAt: number }> = [];
function logLine(message: string, fields?: Record<string, unknown>): void {
  if (message === 'reconciled' && typeof fields?.ms === 'number')
    reconciled.push({
      project: String(fields.project),
      result: String(fields.result),
      startedAt: Date.now() - fields.ms,
    });
}

function project(name: string, tenant: string, owners: Project['spec']['owners']): Project {
  return { apiVersion: 'tenantgate.io/v1alpha1', kind: 'Project', metadata: { name }, spec: { tenant, owners } };
}
const namespace = (name: string, proj: string) => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, labels: { 'tenantgate.io/project': proj } },
});

async function apply(objects: unknown[]): Promise<void> {
  const r = await run(info, ['apply', '-f', '-'], objects.map((o) => JSON.stringify(o)).join('\n'));
  if (r.exitCode !== 0) throw new Error(r.stderr);
}

async function expectAllowed(args: string[]): Promise<string> {
  const r = await run(info, args);
  expect(r.exitCode, `kubectl ${args.join(' ')}: ${r.stderr}`).toBe(0);
  return r.stdout;
}

async function expectForbidden(args: string[]): Promise<string> {
  const r = await run(info, args);
  expect(r.exitCode, `kubectl ${args.join(' ')} should be refused`).not.toBe(0);
  // The authorizer's refusal, as kubectl get ("Error from server (Forbidden): … is forbidden: User …") and
  // kubectl create ("error: failed to create …: … is forbidden: User …") print it; a webhook's or a
  // policy's Forbidden names no missing permission and does not match.
  expect(r.stderr).toMatch(/is forbidden: User "alice" cannot [a-z]+ resource "[a-z]+"/);
  return r.stderr;
}

beforeAll(async () => {
  const started = Date.now();
  cp = await ControlPlane.start();
  info = cp.info;
  await installBase(info);
  await applyChartTemplates(info, ['rbac/self-service.yaml', 'controller/rbac.yaml'], ['config.visibility=own']);
  await apply([
    project(p1, 'acme', [{ kind: 'User', name: 'alice' }]),
    project(p2, 'globex', [{ kind: 'User', name: 'bob' }]),
    namespace(ns1, p1),
    namespace(ns2, p2),
  ]);
  controller = await startController({
    kubeConfig: await serviceAccountKubeConfig(info, DEFAULT_CONFIG.systemNamespace, 'tenantgate-controller'),
    // A resync every few seconds, so that "a resync writes nothing" happens inside its test.
    config: { ...DEFAULT_CONFIG, visibility: 'own', resyncPeriodSeconds: RESYNC_SECONDS },
    metricsPort: 0,
    metricsHost: '127.0.0.1',
    leaderElection: false,
    log: logLine,
  });
  await eventually(
    async () => {
      for (const name of [role1, role2]) {
        const r = await run(info, ['get', 'clusterrolebinding', name]);
        if (r.exitCode !== 0) throw new Error(r.stderr);
      }
    },
    { what: 'the per-project ClusterRoleBindings' },
  );
  process.stderr.write(`[visibility] own control plane and controller ready in ${Date.now() - started} ms\n`);
});

afterAll(async () => {
  await controller?.stop();
  await cp?.stop();
});

describe('visibility: own', () => {
  it('the controller keeps a ClusterRole and binding per Project: get on it and its namespaces, for its owners, owned by the Project', async () => {
    const role = JSON.parse(await expectAllowed(['get', 'clusterrole', role1, '-o', 'json'])) as {
      metadata: { labels: Record<string, string>; ownerReferences: Array<{ kind: string; name: string; uid: string }> };
      rules: unknown[];
    };
    const uid = (await expectAllowed(['get', 'project', p1, '-o', 'jsonpath={.metadata.uid}'])).trim();
    expect(role.metadata.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'tenantgate',
      'tenantgate.io/project': p1,
    });
    expect(role.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Project', name: p1, uid, controller: true }),
    ]);
    expect(role.rules).toEqual([
      { apiGroups: ['tenantgate.io'], resources: ['projects'], resourceNames: [p1], verbs: ['get'] },
      { apiGroups: [''], resources: ['namespaces'], resourceNames: [ns1], verbs: ['get'] },
    ]);
    const binding = JSON.parse(await expectAllowed(['get', 'clusterrolebinding', role1, '-o', 'json'])) as {
      roleRef: { name: string };
      subjects: unknown[];
    };
    expect(binding.roleRef.name).toBe(role1);
    expect(binding.subjects).toEqual([{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }]);
  });

  it("a tenant: kubectl get projects is forbidden, its own project allowed, another tenant's forbidden", async () => {
    await expectForbidden(['get', 'projects', ...ALICE]);
    expect(await expectAllowed(['get', 'project', p1, '-o', 'name', ...ALICE])).toContain(p1);
    await expectForbidden(['get', 'project', p2, ...ALICE]);
    expect(await expectAllowed(['get', 'project', p2, '-o', 'name', ...BOB])).toContain(p2);
  });

  it("a tenant: kubectl get namespaces is forbidden, its own namespace allowed, another tenant's forbidden", async () => {
    expect(await expectForbidden(['get', 'namespaces', ...ALICE])).toContain('cannot list resource "namespaces"');
    expect(await expectAllowed(['get', 'namespace', ns1, '-o', 'name', ...ALICE])).toContain(ns1);
    await expectForbidden(['get', 'namespace', ns2, ...ALICE]);
  });

  it('tenants cannot write ClusterRoles or ClusterRoleBindings (none of these grants theirs)', async () => {
    for (const verb of ['create', 'update', 'delete']) {
      for (const resource of ['clusterroles', 'clusterrolebindings'])
        expect((await run(info, ['auth', 'can-i', verb, resource, ...ALICE])).stdout.trim()).toBe('no');
    }
    await expectForbidden([
      'create',
      'clusterrolebinding',
      'steal',
      `--clusterrole=${role2}`,
      '--user=alice',
      ...ALICE,
    ]);
    await expectForbidden(['delete', 'clusterrolebinding', role1, ...ALICE]);
  });

  it('an edited binding is repaired; a new owner and a new namespace are granted; a resync at rest writes nothing', async () => {
    type Binding = { metadata: { resourceVersion: string }; subjects: unknown[] };
    const edited = JSON.parse(
      await expectAllowed([
        'patch',
        'clusterrolebinding',
        role1,
        '--type=json',
        '-o',
        'json',
        '-p',
        '[{"op":"replace","path":"/subjects","value":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"mallory"}]}]',
      ]),
    ) as Binding;
    expect(edited.subjects).toEqual([{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'mallory' }]);
    // The controller writes the binding back: alice again, in a version newer than the edit.
    const repaired = await eventually(
      async () => {
        const b = JSON.parse(await expectAllowed(['get', 'clusterrolebinding', role1, '-o', 'json'])) as Binding;
        expect(b.subjects).toEqual([{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }]);
        return b;
      },
      { what: 'the binding repaired' },
    );
    expect(BigInt(repaired.metadata.resourceVersion)).toBeGreaterThan(BigInt(edited.metadata.resourceVersion));
    expect(await expectAllowed(['get', 'project', p1, '-o', 'name', ...ALICE])).toContain(p1);

    await expectAllowed([
      'patch',
      'project',
      p1,
      '--type=merge',
      '-p',
      JSON.stringify({
        spec: {
          owners: [
            { kind: 'User', name: 'alice' },
            { kind: 'Group', name: 'acme:web-admins' },
          ],
        },
      }),
    ]);
    await apply([namespace(`${p1}-b`, p1)]);
    await eventually(
      async () => {
        for (const args of [
          ['get', 'project', p1],
          ['get', 'namespace', `${p1}-b`],
        ]) {
          const r = await run(info, [...args, '-o', 'name', ...CAROL]);
          if (r.exitCode !== 0) throw new Error(r.stderr);
        }
      },
      { what: 'carol (group owner) reads the project and its new namespace' },
    );
    expect(await expectAllowed(['get', 'namespace', `${p1}-b`, '-o', 'name', ...ALICE])).toContain(`${p1}-b`);

    let before = -1;
    await eventually(
      async () => {
        const now = await apiWrites(controller, info);
        const settled = now === before;
        before = now;
        if (!settled) throw new Error(`writes still moving (${now})`);
      },
      { intervalMs: 2_000, what: 'the controller idle' },
    );
    // A resync (every RESYNC_SECONDS) reconciles every Project at rest: each compares and writes nothing.
    const restingSince = Date.now();
    await eventually(
      async () => {
        for (const p of [p1, p2])
          expect(
            reconciled.some((r) => r.project === p && r.result === 'done' && r.startedAt >= restingSince),
            `a reconcile of ${p} started after ${restingSince}`,
          ).toBe(true);
      },
      { timeoutMs: 4 * RESYNC_SECONDS * 1000, what: 'a resync of every Project' },
    );
    expect(await apiWrites(controller, info)).toBe(before);
  });

  it('deleting a Project removes its ClusterRole and binding (garbage collector, ownerReference)', async () => {
    // A Project without namespaces: its cascade has nothing to wait for, the garbage collector is what is tested.
    const p3 = uniqueName('gone');
    const role3 = `tenantgate:project:${p3}`;
    await apply([project(p3, 'acme', [{ kind: 'User', name: 'dave' }])]);
    await eventually(
      async () => {
        const r = await run(info, ['get', 'clusterrolebinding', role3]);
        if (r.exitCode !== 0) throw new Error(r.stderr);
      },
      { what: `the binding of ${p3}` },
    );
    await expectAllowed(['delete', 'project', p3, '--wait=false']);
    await eventually(
      async () => {
        for (const kind of ['clusterrole', 'clusterrolebinding']) {
          const r = await run(info, ['get', kind, role3]);
          if (r.exitCode === 0 || !r.stderr.includes('NotFound')) throw new Error(`${kind} ${role3} still there`);
        }
      },
      { timeoutMs: 90_000, what: `the ClusterRole and binding of ${p3} gone` },
    );
  });

  it("the webhook's denial to a non-owner names neither the project's tenant nor its owners, and says what the caller owns", async () => {
    const hook = await startLocalWebhook(info, { visibility: 'own' });
    try {
      const DAVE = ['--as=dave', '--as-group=tenants'];
      const refused = async (as: string[]) => {
        const r = await run(info, ['create', 'namespace', `${p2}-x`, ...as]);
        expect(r.exitCode, r.stdout).not.toBe(0);
        expect(r.stderr).toContain('[T4]');
        expect(r.stderr).not.toMatch(/globex|\bbob\b|tenant |owners are/);
        return r.stderr;
      };
      expect(await refused(ALICE)).toContain(`user "alice" owns project ${p1} (namespaces starting with "${p1}-")`);
      expect(await refused(DAVE)).toContain('user "dave" owns no project; ask the platform team');
    } finally {
      await hook.stop();
    }
  });
});
