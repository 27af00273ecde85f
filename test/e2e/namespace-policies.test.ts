/**
 * Every project namespace gets what its Project declares, self-service ones included: the controller
 * (under its ServiceAccount, with the chart's RBAC) creates the LimitRange and the isolation
 * NetworkPolicy, repairs them when a tenant deletes or someone edits them, removes them when the
 * Project stops declaring them, and puts the Pod Security labels back. Shipped configuration: two
 * webhook processes on the ledger, a kubeadm-style control plane (docs/testing.md).
 */
import * as k8s from '@kubernetes/client-node';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateWebhookCerts } from '../../src/certs/files.js';
import { startController, type RunningController } from '../../src/controller/controller.js';
import { reconcileWrites } from '../../src/controller/metrics.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { LIMITRANGE_NAME, NETWORK_POLICY_NAME } from '../../src/render/namespace-policies.js';
import { installBase, serviceAccountKubeConfig } from '../support/devcluster/tenantgate.js';
import { startWebhookReplicas, type WebhookReplicas } from '../support/devcluster/replicas.js';
import { cluster, eventually, kubeConfig, kubectl } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';

const OWNERS = [{ kind: 'Group', name: 'acme:payments-admins' }];
const LIMITS = {
  default: { cpu: '500m', memory: '256Mi' },
  defaultRequest: { cpu: '100m', memory: '64Mi' },
  max: { cpu: '2', memory: '1Gi' },
};

let webhooks: WebhookReplicas;
let controller: RunningController;
const core = () => kubeConfig('admin').makeApiClient(k8s.CoreV1Api);

/**
 * Creates or updates the Project and waits until the controller has reconciled the generation just
 * applied (status.observedGeneration, src/controller/status.ts) and both webhook replicas cache every
 * Project: after an update, the old generation's status does not count.
 */
async function applyProject(name: string, spec: Record<string, unknown>): Promise<void> {
  const applied = JSON.parse(
    (
      await kubectl('admin', ['apply', '-f', '-', '-o', 'json'], {
        input: JSON.stringify({
          apiVersion: 'tenantgate.io/v1alpha1',
          kind: 'Project',
          metadata: { name },
          spec: { tenant: 'acme', owners: OWNERS, ...spec },
        }),
      })
    ).stdout,
  ) as { metadata: { generation: number } };
  const generation = applied.metadata.generation;
  expect(generation, `${name}: metadata.generation of the applied object`).toBeGreaterThan(0);
  await eventually(async () => {
    const live = JSON.parse((await kubectl('admin', ['get', 'project', name, '-o', 'json'])).stdout) as {
      status?: { observedGeneration?: number };
    };
    expect(live.status?.observedGeneration ?? 0, `${name}: status.observedGeneration`).toBeGreaterThanOrEqual(
      generation,
    );
    expect(controller.informers.snapshot.project(name)?.metadata.generation ?? 0).toBeGreaterThanOrEqual(generation);
    const projects = (await kubectl('admin', ['get', 'projects', '-o', 'name'])).stdout.trim().split('\n').length;
    expect(await webhooks.scrape(/^tenantgate_webhook_cache_objects\{kind="Project"\}/)).toEqual(
      webhooks.replicas.map(() => projects),
    );
  });
}

const spec = (networkIsolation: boolean) => ({
  quota: { hard: { 'requests.cpu': '4', 'requests.memory': '4Gi', pods: '20' } },
  namespaceDefaults: {
    quota: { hard: { 'requests.cpu': '1', 'requests.memory': '1Gi', pods: '5' } },
    limitRange: LIMITS,
  },
  networkIsolation,
  network: { allowFrom: { namespaces: ['ingress-nginx'] }, egress: { cidrs: ['198.51.100.0/24'] } },
});

/**
 * The isolation policy ppol's spec asks for, written out (docs/network.md): ingress from the project and
 * ingress-nginx; egress to the project, DNS in kube-system and the declared CIDR.
 */
const ISOLATION_SPEC = {
  podSelector: {},
  policyTypes: ['Ingress', 'Egress'],
  ingress: [
    {
      from: [
        { namespaceSelector: { matchLabels: { 'tenantgate.io/project': 'ppol' } } },
        { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } },
      ],
    },
  ],
  egress: [
    { to: [{ namespaceSelector: { matchLabels: { 'tenantgate.io/project': 'ppol' } } }] },
    {
      to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } } }],
      ports: [
        { protocol: 'UDP', port: 53 },
        { protocol: 'TCP', port: 53 },
      ],
    },
    { to: [{ ipBlock: { cidr: '198.51.100.0/24' } }] },
  ],
};

interface Stored {
  metadata: { uid: string; labels?: Record<string, string> };
  spec: Record<string, any>;
}

/** The object as stored, on the wire (kubectl's JSON, not client-node's models), or undefined. */
async function stored(namespace: string, resource: string, name: string): Promise<Stored | undefined> {
  const got = await kubectl('admin', ['-n', namespace, 'get', resource, name, '--ignore-not-found', '-o', 'json']);
  return got.stdout.trim() ? (JSON.parse(got.stdout) as Stored) : undefined;
}

const limitRange = (namespace: string) => stored(namespace, 'limitrange', LIMITRANGE_NAME);
const isolation = (namespace: string) => stored(namespace, 'networkpolicy', NETWORK_POLICY_NAME);

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

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  const certs = await generateWebhookCerts(join(info.dir, 'policies-certs'));
  webhooks = await startWebhookReplicas(info, certs, {}, { name: 'policies-webhook' });
  controller = await startController({
    kubeConfig: await serviceAccountKubeConfig(info, 'tenantgate-system', 'tenantgate-controller'),
    config: DEFAULT_CONFIG,
    leaderElection: false,
    log: logLine,
  });
}, 300_000);

afterAll(async () => {
  // While the controller runs, so that its finalizer takes the namespaces with the Project.
  await removeProjects(['ppol']);
  await controller?.stop();
  await webhooks?.stop();
});

describe('a self-service namespace gets what the Project declares', () => {
  it('alice creates a namespace: the controller gives it the LimitRange and the isolation NetworkPolicy; a pod without requests gets the defaults', async () => {
    await applyProject('ppol', spec(true));
    const created = await kubectl('alice', ['create', 'namespace', 'ppol-a'], { reject: false });
    expect(created.exitCode, created.stderr).toBe(0);
    const lr = await eventually(
      async () => {
        const found = await limitRange('ppol-a');
        expect(found).toBeDefined();
        return found!;
      },
      { what: 'LimitRange in ppol-a' },
    );
    expect(lr.metadata.labels).toMatchObject({
      'tenantgate.io/project': 'ppol',
      'app.kubernetes.io/managed-by': 'tenantgate',
    });
    expect(lr.spec.limits[0]).toMatchObject({
      type: 'Container',
      max: { cpu: '2', memory: '1Gi' },
      default: { cpu: '500m', memory: '256Mi' },
      defaultRequest: { cpu: '100m', memory: '64Mi' },
    });
    const np = await eventually(
      async () => {
        const found = await isolation('ppol-a');
        expect(found).toBeDefined();
        return found!;
      },
      { what: 'NetworkPolicy in ppol-a' },
    );
    expect(np.spec).toEqual(ISOLATION_SPEC);
    // The LimitRange is in force: a pod that asks nothing gets the project's defaults (dry run: nothing stored).
    const podJson = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'bare' },
      spec: {
        containers: [
          {
            name: 'c',
            image: 'registry.k8s.io/pause:3.10',
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
    // Eventually: the controller writes the allow-list parameters after the NetworkPolicy; no pod is admitted before.
    const dryRun = ['-n', 'ppol-a', 'create', '-f', '-', '--dry-run=server', '-o', 'json'];
    const dry = await eventually(
      async () => {
        const r = await kubectl('alice', dryRun, { input: podJson, reject: false });
        expect(r.exitCode, r.stderr).toBe(0);
        return r;
      },
      { what: 'ppol-a admits the pod (dry run)' },
    );
    expect(JSON.parse(dry.stdout).spec.containers[0].resources).toEqual({
      requests: { cpu: '100m', memory: '64Mi' },
      limits: { cpu: '500m', memory: '256Mi' },
    });
  });

  it('a tenant deletes the isolation policy: it comes back; an edited LimitRange is set back; the rest of the objects keep their metadata', async () => {
    const first = (await isolation('ppol-a'))!.metadata!.uid!;
    const deleted = await kubectl('alice', ['-n', 'ppol-a', 'delete', 'networkpolicy', NETWORK_POLICY_NAME], {
      reject: false,
    });
    expect(deleted.exitCode, deleted.stderr).toBe(0); // owners hold Kubernetes' admin role in their namespaces
    await eventually(
      async () => {
        const back = await isolation('ppol-a');
        expect(back?.metadata?.uid).toBeDefined();
        expect(back!.metadata!.uid).not.toBe(first);
      },
      { timeoutMs: 30_000, what: 'NetworkPolicy recreated' },
    );

    // The tenant widens the policy (egress anywhere, ingress from every namespace): the controller sets it back.
    const widened = await kubectl(
      'alice',
      [
        '-n',
        'ppol-a',
        'patch',
        'networkpolicy',
        NETWORK_POLICY_NAME,
        '--type=json',
        '-p',
        JSON.stringify([
          { op: 'add', path: '/spec/egress/-', value: { to: [{ ipBlock: { cidr: '0.0.0.0/0' } }] } },
          { op: 'add', path: '/spec/ingress/0/from/-', value: { namespaceSelector: {} } },
        ]),
      ],
      { reject: false },
    );
    expect(widened.exitCode, widened.stderr).toBe(0);
    await eventually(async () => expect((await isolation('ppol-a'))?.spec).toEqual(ISOLATION_SPEC), {
      timeoutMs: 30_000,
      what: 'the widened NetworkPolicy set back',
    });

    // A privileged subject raises max and adds a label of its own: max is set back, the label stays.
    await kubectl('admin', [
      '-n',
      'ppol-a',
      'patch',
      'limitrange',
      LIMITRANGE_NAME,
      '--type=json',
      '-p',
      JSON.stringify([{ op: 'replace', path: '/spec/limits/0/max/cpu', value: '64' }]),
    ]);
    await kubectl('admin', ['-n', 'ppol-a', 'label', 'limitrange', LIMITRANGE_NAME, 'team=ops']);
    await eventually(
      async () => {
        const lr = await limitRange('ppol-a');
        expect(lr?.spec.limits[0]?.max).toEqual({ cpu: '2', memory: '1Gi' });
        expect(lr?.metadata?.labels?.team).toBe('ops');
      },
      { timeoutMs: 30_000, what: 'LimitRange max set back to 2' },
    );

    // Without our label the object leaves the controller's cache: it is found by name and set back too.
    await kubectl('admin', [
      '-n',
      'ppol-a',
      'label',
      'networkpolicy',
      NETWORK_POLICY_NAME,
      'app.kubernetes.io/managed-by-',
    ]);
    await eventually(
      async () =>
        expect((await isolation('ppol-a'))?.metadata?.labels?.['app.kubernetes.io/managed-by']).toBe('tenantgate'),
      { timeoutMs: 30_000, what: 'NetworkPolicy label set back' },
    );
  });

  it('Pod Security labels taken off by a privileged subject are put back', async () => {
    const ns = await core().readNamespace({ name: 'ppol-a' });
    expect(ns.metadata?.labels?.['pod-security.kubernetes.io/enforce']).toBe('baseline');
    await kubectl('admin', [
      'label',
      'namespace',
      'ppol-a',
      'pod-security.kubernetes.io/enforce-',
      'pod-security.kubernetes.io/warn=privileged',
      '--overwrite',
    ]);
    await eventually(
      async () => {
        const labels = (await core().readNamespace({ name: 'ppol-a' })).metadata?.labels ?? {};
        expect(labels['pod-security.kubernetes.io/enforce']).toBe('baseline');
        expect(labels['pod-security.kubernetes.io/warn']).toBe('restricted');
      },
      { timeoutMs: 30_000, what: 'Pod Security labels of ppol-a repaired' },
    );
  });

  it('once converged, another pass writes nothing', async () => {
    await eventually(async () => {
      expect(await isolation('ppol-a')).toBeDefined();
      expect((await limitRange('ppol-a'))?.spec.limits[0]?.max).toEqual({ cpu: '2', memory: '1Gi' });
    });
    // Every write the controller makes (namespace objects, quotas, the Project's status, ...), leases aside.
    const before = reconcileWrites(await controller.metrics.writes());
    const touchedAt = Date.now();
    // Touch the Project: a full reconcile of it, with every namespace object compared to its cache.
    await kubectl('admin', ['annotate', 'project', 'ppol', `e2e.tenantgate.io/touch=${touchedAt}`, '--overwrite']);
    await eventually(
      async () =>
        expect(
          reconciled.some((r) => r.project === 'ppol' && r.result === 'done' && r.startedAt >= touchedAt),
          'a reconcile of ppol that started after the touch finished',
        ).toBe(true),
      {
        timeoutMs: 30_000,
        what: 'the reconcile of the touched Project',
      },
    );
    expect(reconcileWrites(await controller.metrics.writes())).toBe(before);
  });

  it('the Project stops declaring isolation: the controller removes the policy, the LimitRange stays', async () => {
    await applyProject('ppol', spec(false));
    await eventually(async () => expect(await isolation('ppol-a')).toBeUndefined(), {
      timeoutMs: 30_000,
      what: 'NetworkPolicy removed',
    });
    expect(await limitRange('ppol-a')).toBeDefined();
  });
});
