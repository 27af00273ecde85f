/**
 * X10 on the PersistentVolume binder's write (docs/adr/0095-allow-lists-in-the-api-server.md): on the real
 * control plane, with kube-controller-manager's persistentvolume-binder-controller under its own
 * ServiceAccount and the shipped WebhookConfigurations (entry allow.tenantgate.io) with the webhook in
 * this process. alice's claim (no selector, no volumeName) matches only a volume labelled for another
 * project: the binder's claimRef write is refused, so the volume stays Available and the claim Pending;
 * a volume of her own project then binds. An administrator's pre-binding across projects is refused with
 * the message; a volume created with a claimRef and no label (as a provisioner makes it) is never sent.
 *
 * The volumes are of a class with no StorageClass object (Immediate binding, no scheduler needed), unique
 * to this run, so no other file's claims or volumes meet them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startController, type RunningController } from '../../src/controller/controller.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import type { AdmissionDecision } from '../../src/webhook/server.js';
import {
  installBase,
  serviceAccountKubeConfig,
  startLocalWebhook,
  type LocalWebhook,
} from '../support/devcluster/tenantgate.js';
import { cluster, eventually, kubectl, uniqueName } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';

const PROJECT = uniqueName('bind').replace(/[^a-z0-9-]/g, '');
const NS = `${PROJECT}-data`;
const OTHER_PROJECT = 'shop';
const CLASS = uniqueName('bind-class');
const THEIRS = uniqueName('bind-pv-theirs');
const MINE = uniqueName('bind-pv-mine');
const PRE_BOUND = uniqueName('bind-pv-prebound');
const PROVISIONED = uniqueName('bind-pv-provisioned');
const BINDER = 'system:serviceaccount:kube-system:persistent-volume-binder';

let hook: LocalWebhook;
let controller: RunningController;
const decisions: AdmissionDecision[] = [];

interface StoredVolume {
  metadata: { name: string };
  spec: { claimRef?: { namespace?: string; name?: string; uid?: string } };
  status?: { phase?: string };
}

/**
 * A volume as the platform provisions one statically: `size` (the binder picks the smallest that fits),
 * labelled for `project` when given, pre-bound to `claimRef` when given.
 */
const volume = (name: string, size: string, project?: string, claimRef?: { namespace: string; name: string }) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name, ...(project ? { labels: { 'tenantgate.io/project': project } } : {}) },
  spec: {
    capacity: { storage: size },
    accessModes: ['ReadWriteOnce'],
    storageClassName: CLASS,
    persistentVolumeReclaimPolicy: 'Retain',
    hostPath: { path: `/tmp/${name}` },
    ...(claimRef ? { claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', ...claimRef } } : {}),
  },
});

const claim = (name: string) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name },
  spec: { storageClassName: CLASS, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
});

async function storedVolume(name: string): Promise<StoredVolume> {
  return JSON.parse((await kubectl('admin', ['get', 'persistentvolume', name, '-o', 'json'])).stdout) as StoredVolume;
}

interface StoredClaim {
  spec: { volumeName?: string };
  status?: { phase?: string };
}

async function claimOf(name: string): Promise<StoredClaim> {
  const result = await kubectl('admin', ['-n', NS, 'get', 'persistentvolumeclaim', name, '-o', 'json']);
  return JSON.parse(result.stdout) as StoredClaim;
}

const createAsAdmin = (object: unknown) =>
  kubectl('admin', ['create', '-f', '-'], { input: JSON.stringify(object), reject: false });

/** The webhook's decisions on PersistentVolume `name` (by `user`, when given). */
const decisionsOn = (name: string, user?: string) =>
  decisions.filter((d) => d.kind === 'PersistentVolume' && d.name === name && (user === undefined || d.user === user));

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  hook = await startLocalWebhook(info, {}, { onDecision: (d) => decisions.push(d) });
  const kubeConfig = await serviceAccountKubeConfig(info, 'tenantgate-system', 'tenantgate-controller');
  controller = await startController({ kubeConfig, config: DEFAULT_CONFIG, leaderElection: false, log: () => {} });
  const project = {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: PROJECT },
    spec: { tenant: 'acme', owners: [{ kind: 'Group', name: 'acme:payments-admins' }] },
  };
  await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(project) });
  await eventually(
    async () => {
      const created = await kubectl('alice', ['create', 'namespace', NS], { reject: false });
      if (created.exitCode !== 0) expect(created.stderr).toContain('AlreadyExists');
    },
    { what: `alice creates ${NS} (the webhook has seen the Project)` },
  );
  await eventually(async () => kubectl('alice', ['-n', NS, 'get', 'persistentvolumeclaims']), {
    what: `${NS}: owners' RoleBinding from the controller`,
  });
  await eventually(async () => expect(hook.webhook.cache.snapshot.namespace(NS)).toBeDefined(), {
    what: `the webhook's cache has ${NS}`,
  });
}, 300_000);

afterAll(async () => {
  await kubectl('admin', ['-n', NS, 'delete', 'persistentvolumeclaim', '--all', '--wait=false'], { reject: false });
  await removeProjects([PROJECT]);
  await controller?.stop();
  await hook?.stop();
  const volumes = [THEIRS, MINE, PRE_BOUND, PROVISIONED];
  const options = { reject: false };
  await kubectl('admin', ['delete', 'persistentvolume', ...volumes, '--ignore-not-found', '--wait=false'], options);
});

describe("the binder never binds another project's volume to alice's claim", () => {
  it("her claim matches only another project's volume: no claimRef is written, the claim stays Pending", async () => {
    // Larger than the request, so that her own (exact) volume, later, is the binder's first choice.
    expect((await createAsAdmin(volume(THEIRS, '2Gi', OTHER_PROJECT))).exitCode).toBe(0);
    const input = JSON.stringify(claim('data'));
    const created = await kubectl('alice', ['-n', NS, 'create', '-f', '-'], { input, reject: false });
    expect(created.exitCode, created.stderr).toBe(0);
    // The binder tries (and is refused by the webhook, with X10) ...
    await eventually(
      async () => {
        const refusal = decisionsOn(THEIRS, BINDER).find((d) => d.verdict === 'denied');
        expect(refusal?.rules).toEqual(['X10']);
      },
      { what: `the binder's claimRef write on ${THEIRS} refused with X10`, timeoutMs: 60_000 },
    );
    // ... and keeps being refused: for 20 s (past the binder's 15 s resync) nothing is bound.
    const until = Date.now() + 20_000;
    while (Date.now() < until) {
      const pv = await storedVolume(THEIRS);
      expect(pv.spec.claimRef, `${THEIRS} has no claimRef`).toBeUndefined();
      expect(pv.status?.phase).toBe('Available');
      const pvc = await claimOf('data');
      expect(pvc.spec.volumeName ?? '').toBe('');
      expect(pvc.status?.phase).toBe('Pending');
      await new Promise((r) => setTimeout(r, 2_000));
    }
    expect(decisionsOn(THEIRS, BINDER).filter((d) => d.verdict === 'denied').length).toBeGreaterThanOrEqual(2);
  }, 120_000);

  it("a volume of her own project binds: the binder writes its claimRef, then her claim's volumeName", async () => {
    expect((await createAsAdmin(volume(MINE, '1Gi', PROJECT))).exitCode).toBe(0);
    await eventually(
      async () => {
        const pvc = await claimOf('data');
        expect(pvc.spec.volumeName).toBe(MINE);
        expect(pvc.status?.phase).toBe('Bound');
      },
      { what: `claim data bound to ${MINE}`, timeoutMs: 90_000 },
    );
    const pv = await storedVolume(MINE);
    expect(pv.spec.claimRef).toMatchObject({ namespace: NS, name: 'data' });
    expect(decisionsOn(MINE, BINDER).map((d) => d.verdict)).toContain('allowed');
    expect((await storedVolume(THEIRS)).spec.claimRef).toBeUndefined();
  }, 120_000);
});

describe('claimRef writes by anyone, and what is not sent', () => {
  it("an administrator pre-binding another project's volume to alice's claim is refused, saying why", async () => {
    const refused = await createAsAdmin(volume(PRE_BOUND, '1Gi', OTHER_PROJECT, { namespace: NS, name: 'wanted' }));
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toContain(
      `[X10] PersistentVolume ${PRE_BOUND}: claimRef ${NS}/wanted (a claim of project ${PROJECT}) is not allowed for` +
        ` project ${OTHER_PROJECT} (label tenantgate.io/project=${OTHER_PROJECT});` +
        ` allowed: claims in the namespaces of project ${OTHER_PROJECT}`,
    );
    const stored = await kubectl('admin', ['get', 'persistentvolume', PRE_BOUND, '--ignore-not-found', '-o', 'name']);
    expect(stored.stdout.trim()).toBe('');
  });

  it('a volume created with a claimRef and no project label (as a provisioner makes one) is not sent', async () => {
    const created = await createAsAdmin(volume(PROVISIONED, '1Gi', undefined, { namespace: NS, name: 'provisioned' }));
    expect(created.exitCode, created.stderr).toBe(0);
    // A write that is sent (the pre-binding above) shows up at once; give this one the same chance.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(decisionsOn(PROVISIONED)).toEqual([]);
    expect(decisionsOn(PRE_BOUND).map((d) => d.verdict)).toEqual(['denied']);
  });
});
