/**
 * Allow-lists while tenantgate is down (docs/adr/0095-allow-lists-in-the-api-server.md): the checks run
 * in the API server (the ValidatingAdmissionPolicies installBase applies, with each project namespace's
 * `tenantgate-allow` parameters), so with every webhook replica stopped — its registration kept,
 * failurePolicy Fail — a project's workloads still get their pods, and a pod breaking an allow-list is
 * still refused with its rule id. With the controller stopped too, namespaces that have their parameters
 * keep working; one created meanwhile admits no pod (the bindings' `parameterNotFoundAction: Deny`) until
 * the controller is back and writes them — the webhook still down.
 *
 * The real control plane: the shipped registrations (startLocalWebhook), the controller as its
 * ServiceAccount, Kubernetes' own Deployment and ReplicaSet controllers creating the pods.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningController } from '../../src/controller/start.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import {
  installBase,
  serviceAccountKubeConfig,
  startLocalWebhook,
  type LocalWebhook,
} from '../support/devcluster/tenantgate.js';
import { startTestController } from '../support/controller-kit.js';
import { cluster, eventually, kubectl, uniqueName } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';

const PROJECT = uniqueName('down').replace(/[^a-z0-9-]/g, '');
/** Declared in the Project, created by the platform (as Argo CD would). */
const DECLARED = `${PROJECT}-declared`;
/** Created by alice, an owner (self-service). */
const OWN = `${PROJECT}-own`;
/** Created by alice while the controller is stopped. */
const LATE = `${PROJECT}-late`;
const BATCH = uniqueName('down-batch');
const OTHER_CLASS = uniqueName('down-other');
const FOREIGN_IMAGE = 'docker.io/library/busybox:1.36';
/** The allow-list policies' parameters in a project namespace. */
const PARAMS = 'allowlist.tenantgate.io/tenantgate-allow';
const NO_PARAMS = 'no params found for policy binding with `Deny` parameterNotFoundAction';

let hook: LocalWebhook;
let webhookUp = false;
let controller: RunningController | undefined;

const pause = { name: 'pause', image: 'registry.k8s.io/pause:3.10' };
const pod = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: { containers: [pause], ...spec },
});
const foreignPod = (name: string) => pod(name, { containers: [{ name: 'c', image: FOREIGN_IMAGE }] });

async function create(user: string, ns: string, object: unknown) {
  return kubectl(user, ['-n', ns, 'create', '-f', '-'], { input: JSON.stringify(object), reject: false });
}

async function admitted(user: string, ns: string, object: unknown): Promise<void> {
  const result = await create(user, ns, object);
  expect(result.exitCode, result.stderr).toBe(0);
}

async function notStored(ns: string, name: string): Promise<void> {
  const stored = await kubectl('admin', ['-n', ns, 'get', 'pod', name], { reject: false });
  expect(stored.exitCode, `pod ${ns}/${name} is not stored`).not.toBe(0);
}

type Named = { metadata: { name: string } };

async function refusedWithRule(user: string, ns: string, object: Named, rule: string, what: string): Promise<void> {
  const result = await create(user, ns, object);
  expect(result.exitCode, `refused with [${rule}]`).not.toBe(0);
  expect(result.stderr).toContain(`[${rule}] Pod ${ns}/${object.metadata.name}: ${what}`);
  expect(result.stderr).toContain(`is not allowed for project ${PROJECT}; allowed: `);
  await notStored(ns, object.metadata.name);
}

async function startOurController(): Promise<void> {
  const kubeConfig = await serviceAccountKubeConfig(cluster(), DEFAULT_CONFIG.systemNamespace, 'tenantgate-controller');
  controller = await startTestController({ kubeConfig });
}

async function stopOurController(): Promise<void> {
  await controller?.stop();
  controller = undefined;
}

/** Starts a webhook replica and points the shipped registrations at it. */
async function startOurWebhook(): Promise<void> {
  hook = await startLocalWebhook(cluster());
  webhookUp = true;
}

/** Stops the replica and leaves its registrations in place (failurePolicy Fail): the outage. */
async function stopWebhookKeepRegistration(): Promise<void> {
  await hook.webhook.stop();
  webhookUp = false;
}

/** Creates a namespace, or finds it already created by an earlier attempt. */
async function createNamespace(user: string, name: string): Promise<void> {
  const created = await kubectl(user, ['create', 'namespace', name], { reject: false });
  if (created.exitCode !== 0) expect(created.stderr).toContain('AlreadyExists');
}

/** What the ReplicaSet controller reported when it could not create a pod (its FailedCreate events). */
async function failedCreates(ns: string): Promise<string[]> {
  type Events = { items: Array<{ reason?: string; message?: string }> };
  const events = JSON.parse((await kubectl('admin', ['-n', ns, 'get', 'events', '-o', 'json'])).stdout) as Events;
  return events.items.filter((e) => e.reason === 'FailedCreate').map((e) => e.message ?? '');
}

async function podsLabelled(ns: string, selector: string): Promise<number> {
  const pods = await kubectl('admin', ['-n', ns, 'get', 'pods', '-l', selector, '-o', 'json']);
  return (JSON.parse(pods.stdout) as { items: unknown[] }).items.length;
}

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  for (const [name, value] of [
    [BATCH, 100],
    [OTHER_CLASS, 200],
  ] as const) {
    const priorityClass = { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name }, value };
    await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(priorityClass) });
  }
  await startOurWebhook();
  await startOurController();
  const project = {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: PROJECT },
    spec: {
      tenant: 'acme',
      owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
      quota: { hard: { pods: '60' } },
      namespaceDefaults: { quota: { hard: { pods: '20' } } },
      namespaces: [{ name: DECLARED }],
      allow: { priorityClasses: [BATCH], registries: ['registry.k8s.io/'] },
    },
  };
  await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(project) });
  await eventually(() => createNamespace('admin', DECLARED), {
    what: `the platform creates ${DECLARED} (the webhook has seen the Project)`,
  });
  await eventually(() => createNamespace('alice', OWN), { what: `alice creates ${OWN}` });
  for (const ns of [DECLARED, OWN]) {
    await eventually(async () => kubectl('alice', ['-n', ns, 'get', 'quota', 'tenantgate-quota']), {
      what: `${ns}: owners' RoleBinding and quota from the controller`,
    });
    await eventually(async () => kubectl('admin', ['-n', ns, 'get', 'serviceaccount', 'default']), {
      what: `${ns}: default ServiceAccount`,
    });
    // Everything up: the namespace admits a pod once the controller has written its parameters.
    await eventually(
      async () => {
        const dryRun = ['-n', ns, 'create', '-f', '-', '--dry-run=server'];
        const r = await kubectl('alice', dryRun, { input: JSON.stringify(pod('ready')), reject: false });
        expect(r.exitCode, r.stderr).toBe(0);
      },
      { what: `${ns} admits a pod with tenantgate up` },
    );
  }
}, 300_000);

afterAll(async () => {
  // Cleanup needs both: the webhook admits the Project's deletion, the controller's finalizer takes its namespaces.
  if (hook && !webhookUp) await startOurWebhook();
  if (!controller) await startOurController();
  await removeProjects([PROJECT]);
  await stopOurController();
  await hook?.stop();
  await kubectl('admin', ['delete', 'priorityclass', BATCH, OTHER_CLASS, '--ignore-not-found'], { reject: false });
}, 180_000);

describe('allow-lists while tenantgate is down', () => {
  it(
    "every webhook replica down (registration kept, failurePolicy Fail): alice's Deployment gets its pods, " +
      'and a pod breaking an allow-list is refused with its rule id',
    async () => {
      await stopWebhookKeepRegistration();
      // The outage is real: what still needs the webhook (a namespace write) fails on the registration.
      const label = await kubectl('alice', ['label', 'namespace', OWN, 'e2e-down=1'], { reject: false });
      expect(label.exitCode).not.toBe(0);
      expect(label.stderr).toMatch(/failed calling webhook "(validate|mutate)\.tenantgate\.io"/);

      const template = { metadata: { labels: { app: 'web' } }, spec: { containers: [pause] } };
      const deployment = {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web' },
        spec: { replicas: 2, selector: { matchLabels: { app: 'web' } }, template },
      };
      await admitted('alice', OWN, deployment);
      await eventually(
        async () => {
          const reported = (await failedCreates(OWN)).slice(-1).join('') || 'nothing';
          const why = `pods of Deployment web; the ReplicaSet controller reported: ${reported}`;
          expect(await podsLabelled(OWN, 'app=web'), why).toBe(2);
        },
        { what: `the ReplicaSet controller creates the Deployment's pods in ${OWN}` },
      );

      await refusedWithRule('alice', DECLARED, foreignPod('foreign'), 'X9', `image "${FOREIGN_IMAGE}"`);
      const otherClass = pod('other-class', { priorityClassName: OTHER_CLASS });
      await refusedWithRule('alice', OWN, otherClass, 'X1', `priorityClassName "${OTHER_CLASS}"`);
    },
  );

  it('the controller stopped too: both namespaces keep admitting pods their allow-lists allow', async () => {
    await stopOurController();
    for (const ns of [DECLARED, OWN]) {
      await admitted('alice', ns, pod('still-plain'));
      await admitted('alice', ns, pod('still-batch', { priorityClassName: BATCH }));
      await refusedWithRule('alice', ns, foreignPod('still-foreign'), 'X9', `image "${FOREIGN_IMAGE}"`);
    }
  });

  it(
    'a namespace created while the controller was down admits no pod (no parameters: Deny) until the ' +
      'controller, back, writes them — the webhook still down',
    async () => {
      // The namespace create itself needs the webhook: up for it, then down again.
      await startOurWebhook();
      await eventually(() => createNamespace('alice', LATE), {
        what: `alice creates ${LATE} (controller down, webhook up)`,
      });
      await stopWebhookKeepRegistration();
      await eventually(async () => kubectl('admin', ['-n', LATE, 'get', 'serviceaccount', 'default']), {
        what: `${LATE}: default ServiceAccount`,
      });

      // No owners' RoleBinding yet (the controller writes it): the platform administrator tries, and is judged too.
      const early = await create('admin', LATE, pod('early'));
      expect(early.exitCode, 'a pod in a namespace without its parameters is refused').not.toBe(0);
      expect(early.stderr).toMatch(/ValidatingAdmissionPolicy 'tenantgate-allow-[a-z0-9-]+'/);
      expect(early.stderr).toContain(NO_PARAMS);
      await notStored(LATE, 'early');

      await startOurController();
      await eventually(
        async () => {
          const read = await kubectl('admin', ['-n', LATE, 'get', PARAMS, '-o', 'json']);
          const params = JSON.parse(read.stdout) as { spec: { project?: string; tenant?: string } };
          expect(params.spec).toMatchObject({ project: PROJECT, tenant: 'acme' });
        },
        { what: `the controller writes ${LATE}'s tenantgate-allow with the webhook down` },
      );
      await eventually(async () => admitted('admin', LATE, pod('late')), {
        what: `${LATE} admits a pod once its parameters exist`,
      });
      await refusedWithRule('admin', LATE, foreignPod('late-foreign'), 'X9', `image "${FOREIGN_IMAGE}"`);
    },
  );
});
