/**
 * tenantgate on the oldest supported Kubernetes minor (ADR 0077): a control plane of its own whose
 * kube-apiserver, kube-controller-manager and kubectl are that release's (built from
 * test/cluster/gobuild-1.35; etcd is the pinned one), kubeadm-style like the others (PodSecurity on,
 * controllers under their own ServiceAccounts). A focused subset: the webhook's rules, PodSecurity
 * labels, the controller's default quotas, status and cascade, the budget view through aggregation, the
 * allow-lists in the API server (the ValidatingAdmissionPolicies installBase applies, with the parameters
 * the controller writes into each project namespace, docs/adr/0095-allow-lists-in-the-api-server.md) —
 * and a terminating namespace whose pods still run: the namespace controller deletes pods before
 * quotas (ordered namespace deletion, locked on since 1.34), and the namespace keeps counting what its
 * pods use until it is gone.
 */
import { execa } from 'execa';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlPlane, type ClusterInfo } from '../support/devcluster/controlplane.js';
import { oldestSupported, type KubernetesBuild } from '../support/devcluster/kubernetes-versions.js';
import { installBase, startLocalWebhook, type LocalWebhook } from '../support/devcluster/tenantgate.js';
import { applyChartTemplates, startControllerWithView, type LocalView } from '../support/view.js';
import { eventually, uniqueName } from '../support/cluster.js';
import type { Project, ResourceQuotaObject } from '../../src/validate/types.js';
import { confirmDeletions } from '../support/leftovers.js';
import { parseEntries } from '../../src/ledger/ledger-format.js';

let build: KubernetesBuild;
let cp: ControlPlane;
let info: ClusterInfo;
let webhook: LocalWebhook;
let view: LocalView;

const p = uniqueName('old');
const nsA = `${p}-a`;
const nsB = `${p}-b`;
const NODE = `${p}-node`;
const ALICE_AS = ['--as=alice', '--as-group=acme:payments-admins', '--as-group=tenants'];
const PAUSE = 'registry.k8s.io/pause:3.10';
const FOREIGN_IMAGE = 'docker.io/library/busybox:1.36';

/** kubectl of the old release as one of the control plane's users (a token of its own, not impersonation). */
async function kubectl(user: string, args: string[], input?: string) {
  return execa(join(info.binDir, 'kubectl'), args, {
    env: { KUBECONFIG: info.kubeconfigs[user] ?? '' },
    reject: false,
    timeout: 60_000,
    encoding: 'utf8',
    ...(input !== undefined ? { input } : {}),
  });
}
async function ok(user: string, args: string[], input?: string): Promise<string> {
  const r = await kubectl(user, args, input);
  if (r.exitCode !== 0) throw new Error(`kubectl ${args.join(' ')} as ${user}: ${r.stderr}`);
  return r.stdout;
}
async function getJson<T>(args: string[]): Promise<T> {
  return JSON.parse(await ok('admin', [...args, '-o', 'json'])) as T;
}
const quotaOf = (ns: string) => getJson<ResourceQuotaObject>(['-n', ns, 'get', 'resourcequota', 'tenantgate-quota']);
function setQuota(ns: string, cpu: string, memory: string) {
  return kubectl(
    'alice',
    ['-n', ns, 'apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: 'tenantgate-quota', namespace: ns },
      spec: { hard: { 'requests.cpu': cpu, 'requests.memory': memory } },
    }),
  );
}
const projectStatus = async () => (await getJson<Project>(['get', 'project', p])).status;

/**
 * A pod for the Node object (no scheduler, no kubelet). A project's pod may not set spec.nodeName itself
 * ([X8]): it is created unscheduled, then bound as the scheduler binds (bindPod). Deleting it then leaves
 * it Terminating for its grace period.
 */
function slowToStopPod(ns: string, cpu: string) {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'slow-to-stop', namespace: ns },
    spec: {
      terminationGracePeriodSeconds: 3600,
      containers: [
        {
          name: 'c',
          image: PAUSE,
          resources: { requests: { cpu, memory: '1Gi' } },
          securityContext: {
            allowPrivilegeEscalation: false,
            capabilities: { drop: ['ALL'] },
            runAsNonRoot: true,
            seccompProfile: { type: 'RuntimeDefault' },
          },
        },
      ],
    },
  });
}

/** What the scheduler does: the pods/binding subresource sets spec.nodeName (the policies do not judge it). */
async function bindPod(ns: string, name: string): Promise<void> {
  const binding = { apiVersion: 'v1', kind: 'Binding', metadata: { name }, target: { kind: 'Node', name: NODE } };
  await ok(
    'admin',
    ['create', '--raw', `/api/v1/namespaces/${ns}/pods/${name}/binding`, '-f', '-'],
    JSON.stringify(binding),
  );
}

beforeAll(async () => {
  const started = Date.now();
  build = oldestSupported();
  cp = await ControlPlane.start({
    binDir: build.binDir,
    etcdBinDir: build.etcdBinDir,
    ...(process.env.TG_K8S_OLDEST_BIN ? {} : { expectedVersion: build.version }),
  });
  info = cp.info;
  await installBase(info);
  await applyChartTemplates(info, ['view/rbac.yaml'], ['view.enabled=true']);
  // Reservations expire sooner than the default 30 s: the terminating-namespace test waits for one (ADR 0003).
  webhook = await startLocalWebhook(info, { reservationTtlSeconds: 5 });
  view = await startControllerWithView(info);
  const project: Project = {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: p },
    spec: {
      tenant: 'acme',
      owners: [{ kind: 'User', name: 'alice' }],
      quota: { hard: { 'requests.cpu': '4', 'requests.memory': '8Gi' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '1', 'requests.memory': '1Gi' } } },
      allow: { registries: ['registry.k8s.io/'] },
    },
  };
  await ok('admin', ['apply', '-f', '-'], JSON.stringify(project));
  process.stderr.write(
    `[older-kubernetes] Kubernetes ${build.version} control plane, tenantgate and the view ready in ${Date.now() - started} ms\n`,
  );
});

/** Pods bound to the Node never finish on their own here: forced out, so their namespaces can go. */
async function forceDeleteBoundPods(): Promise<void> {
  await kubectl('admin', [
    'delete',
    'pods',
    '--all-namespaces',
    '--field-selector',
    `spec.nodeName=${NODE}`,
    '--grace-period=0',
    '--force',
  ]);
  await kubectl('admin', ['annotate', 'namespace', nsA, '--overwrite', 'e2e.tenantgate.io/pod-gone=true']);
}

afterAll(async () => {
  if (info) await forceDeleteBoundPods();
  await view?.stop();
  await webhook?.stop();
  await cp?.stop();
});

describe(`tenantgate on the oldest supported Kubernetes minor`, () => {
  it('runs against that release: kube-apiserver and kubectl report it', async () => {
    const { body } = await cp.get('/version');
    expect(JSON.parse(body)).toMatchObject({
      gitVersion: build.version,
      major: '1',
      minor: build.version.split('.')[1],
    });
    expect(await ok('admin', ['version', '--client', '-o', 'json'])).toContain(`"gitVersion": "${build.version}"`);
  });

  it("webhook: an owner's namespace is admitted and labelled (project, tenant, Pod Security); another tenant is refused with [T4]", async () => {
    await ok('alice', ['create', 'namespace', nsA]);
    const ns = await getJson<{ metadata: { labels: Record<string, string> } }>(['get', 'namespace', nsA]);
    expect(ns.metadata.labels).toMatchObject({
      'tenantgate.io/project': p,
      'tenantgate.io/tenant': 'acme',
      'pod-security.kubernetes.io/enforce': 'baseline',
      'pod-security.kubernetes.io/warn': 'restricted',
      'pod-security.kubernetes.io/audit': 'restricted',
    });
    const refused = await kubectl('bob', ['create', 'namespace', `${p}-bob`]);
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toMatch(
      new RegExp(`\\[T4\\] user "bob" may not create namespace ${p}-bob: it belongs to project ${p}`),
    );
  });

  it('PodSecurity admission enforces the level the webhook labelled: a privileged pod is refused', async () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'priv' },
      spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', securityContext: { privileged: true } }] },
    };
    const r = await kubectl('alice', ['-n', nsA, 'create', '-f', '-', '--dry-run=server'], JSON.stringify(pod));
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toMatch(/violates PodSecurity "baseline:latest": privileged/);
  });

  it('controller: the default quota (namespaceDefaults) and the project status count the namespace', async () => {
    await ok('alice', ['create', 'namespace', nsB]);
    for (const ns of [nsA, nsB]) {
      await eventually(
        async () => expect((await quotaOf(ns)).spec?.hard).toEqual({ 'requests.cpu': '1', 'requests.memory': '1Gi' }),
        { what: `default quota in ${ns}` },
      );
    }
    await eventually(
      async () => expect((await projectStatus())?.allocated).toEqual({ 'requests.cpu': '2', 'requests.memory': '2Gi' }),
      { what: 'project status counts both namespaces' },
    );
  });

  it(
    "allow-lists in the API server: the controller writes the namespace's parameters; a pod from another " +
      'registry is refused with [X9], one from the allowed registry admitted',
    async () => {
      type Params = { spec: { project: string; registries: unknown } };
      const params = await eventually(async () => getJson<Params>(['-n', nsA, 'get', 'allowlist/tenantgate-allow']), {
        what: `the controller writes ${nsA}'s tenantgate-allow`,
      });
      expect(params.spec).toMatchObject({ project: p, registries: { any: false, prefixes: ['registry.k8s.io/'] } });
      const restricted = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, runAsNonRoot: true };
      const seccompProfile = { type: 'RuntimeDefault' };
      // It asks CPU and memory: the namespace's quota counts them, and the apiserver refuses a pod asking neither.
      const resources = { requests: { cpu: '10m', memory: '16Mi' } };
      const securityContext = { ...restricted, seccompProfile };
      const container = (image: string) => ({ name: 'c', image, resources, securityContext });
      const pod = (name: string, image: string) =>
        JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [container(image)] } });
      await eventually(
        async () => {
          const admitted = await kubectl(
            'alice',
            ['-n', nsA, 'create', '-f', '-', '--dry-run=server'],
            pod('allowed', PAUSE),
          );
          expect(admitted.exitCode, admitted.stderr).toBe(0);
        },
        { what: `${nsA} admits a pod from registry.k8s.io/` },
      );
      const refused = await kubectl('alice', ['-n', nsA, 'create', '-f', '-'], pod('foreign', FOREIGN_IMAGE));
      expect(refused.exitCode).not.toBe(0);
      expect(refused.stderr).toContain(
        `[X9] Pod ${nsA}/foreign: image "${FOREIGN_IMAGE}" is not allowed for project ${p}; allowed: `,
      );
      const stored = await kubectl('admin', ['-n', nsA, 'get', 'pod', 'foreign']);
      expect(stored.exitCode, 'the refused pod is not stored').not.toBe(0);
    },
  );

  it('webhook: a quota growth past the budget is refused with [Q1]; one that fits is admitted', async () => {
    const refused = await setQuota(nsA, '3500m', '1Gi');
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toContain(
      `[Q1] ResourceQuota ${nsA}/tenantgate-quota asks requests.cpu 3500m, project ${p} has 4 of which 1 are allocated to other namespaces: at most 3 fits`,
    );
    const admitted = await setQuota(nsA, '3', '4Gi');
    expect(admitted.exitCode, admitted.stderr).toBe(0);
  });

  it("budget view through the aggregation layer: the owner reads the project's numbers with kubectl get budget", async () => {
    await eventually(
      async () => {
        const r = await kubectl('admin', ['-n', nsA, 'get', 'budget', ...ALICE_AS]);
        expect(r.exitCode, r.stderr).toBe(0);
        const [header, ...rows] = r.stdout
          .trim()
          .split('\n')
          .map((l) => l.trim().split(/\s+/));
        expect(header).toEqual(['RESOURCE', 'BUDGET', 'ALLOCATED', 'USED', 'HEADROOM']);
        expect(rows).toEqual([
          ['requests.cpu', '4', '4', '0', '0'],
          ['requests.memory', '8Gi', '5Gi', '0', '3Gi'],
        ]);
      },
      { what: 'alice reads her budget through the aggregated API' },
    );
  });

  it("a terminating namespace whose pods still run keeps its quota (ordered namespace deletion) and its pods' use: no other namespace of the project grows into it", async () => {
    await ok(
      'admin',
      ['apply', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE } }),
    );
    await ok('alice', ['apply', '-f', '-'], slowToStopPod(nsA, '2500m'));
    await bindPod(nsA, 'slow-to-stop');
    await eventually(async () => expect((await quotaOf(nsA)).status?.used?.['requests.cpu']).toBe('2500m'), {
      what: 'the quota counts the pod',
    });
    // Lowering the quota frees nothing while the pod runs (ADR 0002); it makes the window visible: nsA holds 2500m, not 1.
    expect((await setQuota(nsA, '1', '1Gi')).exitCode).toBe(0);

    await ok('alice', ['delete', 'namespace', nsA, '--wait=false']);
    // Since 1.34 the namespace controller deletes pods first and the rest (quotas included) only once they are
    // gone: the pod is Terminating (its grace period) and the quota still counts it.
    await eventually(
      async () => {
        const pod = await getJson<{ metadata: { deletionTimestamp?: string } }>([
          '-n',
          nsA,
          'get',
          'pod',
          'slow-to-stop',
        ]);
        expect(pod.metadata.deletionTimestamp).toBeDefined();
      },
      { what: `the namespace controller deletes ${nsA}'s pod` },
    );
    const quota = await quotaOf(nsA);
    expect(quota.status?.used?.['requests.cpu']).toBe('2500m');

    // nsB may grow to 1500m (4 − 2500m), not into the 2500m the terminating namespace's pod still holds (counted
    // by its quota's hard, 1, it could take 3). nsA's reservations from its changes above count until they
    // leave the ledger (settled, or expired: reservationTtlSeconds 5, ADR 0003): once none is left, the
    // answer counts what the pod holds, and nothing else.
    await eventually(
      async () => {
        const ledger = await getJson<{ data?: Record<string, string> }>([
          '-n',
          'tenantgate-system',
          'get',
          'configmap',
          `tenantgate-ledger-${p}`,
        ]);
        const now = Date.now();
        const live = parseEntries('the ledger', ledger.data?.reservations).filter(
          (e) => e.namespace === nsA && e.expires > now,
        );
        expect(live, `${nsA}'s live reservations`).toEqual([]);
      },
      { what: `${nsA}'s reservations left the ledger`, timeoutMs: 30_000 },
    );
    const refused = await setQuota(nsB, '2', '1Gi');
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toContain(
      `[Q1] ResourceQuota ${nsB}/tenantgate-quota asks requests.cpu 2, project ${p} has 4 of which 2500m are allocated to other namespaces: at most 1500m fits`,
    );
    await eventually(
      async () => {
        const r = await setQuota(nsB, '1500m', '1Gi');
        expect(r.exitCode, r.stderr).toBe(0);
      },
      { what: `${nsB} grows to what the pod leaves` },
    );
    expect((await setQuota(nsB, '1600m', '1Gi')).stderr).toContain(
      `[Q1] ResourceQuota ${nsB}/tenantgate-quota asks requests.cpu 1600m, project ${p} has 4 of which 2500m are allocated to other namespaces: at most 1500m fits`,
    );
    // Still there: the namespace controller waits for the pod before it deletes the quota.
    expect((await quotaOf(nsA)).status?.used?.['requests.cpu']).toBe('2500m');
    // The controller's status counts it too, as allocated and as used.
    await eventually(
      async () => {
        const status = await projectStatus();
        expect(status?.allocated?.['requests.cpu']).toBe('4');
        expect(status?.used?.['requests.cpu']).toBe('2500m');
      },
      { what: "project status counts the terminating namespace's pod" },
    );

    // The pod goes (a kubelet would confirm it; here it is forced), the namespace goes, the room is free.
    await ok('admin', ['-n', nsA, 'delete', 'pod', 'slow-to-stop', '--grace-period=0', '--force']);
    // The namespace controller looks again after the pod's grace period (its estimate), or on a namespace event: one now.
    await ok('admin', ['annotate', 'namespace', nsA, '--overwrite', 'e2e.tenantgate.io/pod-gone=true']);
    await eventually(
      async () => expect((await kubectl('admin', ['get', 'namespace', nsA])).stderr).toMatch(/NotFound/),
      { what: `${nsA} gone` },
    );
    await eventually(async () => expect((await setQuota(nsB, '4', '1Gi')).exitCode).toBe(0), {
      what: `${nsB} grows into the freed room`,
    });
  });

  it('controller: deleting the Project deletes its namespaces (cascade) and then the Project', async () => {
    await forceDeleteBoundPods(); // none when the test before passed
    // Its namespaces hold what tenants made: a platform admin confirms the deletion (ADR 0096), on this file's
    // own control plane.
    await confirmDeletions([p], async (user, args) => ({ stdout: await ok(user, args) }));
    await ok('admin', ['delete', 'project', p, '--wait=false']);
    await eventually(
      async () => expect((await kubectl('admin', ['get', 'namespace', nsB])).stderr).toMatch(/NotFound/),
      { what: `${nsB} deleted with the project` },
    );
    await eventually(async () => expect((await kubectl('admin', ['get', 'project', p])).stderr).toMatch(/NotFound/), {
      what: `project ${p} gone`,
    });
  });
});
