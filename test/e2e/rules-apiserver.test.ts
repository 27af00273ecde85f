/**
 * Rules and webhook behaviours that unit tests cover, shown once more through the real apiserver and
 * the real kubectl: S1, N1, N3, N4, T1, T2 as a denial, the maxNamespaces form of Q1, T4 on a
 * namespace DELETE that RBAC lets through, readiness before the caches sync, 400/413/404 over HTTPS, and
 * a certificate swapped while the apiserver is calling. After each denial the stored object is re-read.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { generateWebhookCerts } from '../../src/certs/files.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { httpsCall, httpsGet } from '../support/devcluster/https-get.js';
import {
  applyOwnerBindings,
  installBase,
  registerWebhooks,
  startLocalWebhook,
  type LocalWebhook,
} from '../support/devcluster/tenantgate.js';
import type { Project } from '../../src/validate/types.js';
import { startWebhook } from '../../src/webhook/start.js';
import { cluster, eventually, kubectl } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';

let hook: LocalWebhook;

const project = (name: string, extra: Record<string, unknown> = {}, spec: Record<string, unknown> = {}) => ({
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: { name, ...extra },
  spec: {
    tenant: 'acme',
    owners: [{ kind: 'Group', name: 'acme:payments-admins' }],
    quota: { hard: { pods: '100' } },
    namespaceDefaults: { quota: { hard: { pods: '10' } } },
    ...spec,
  },
});

async function apply(user: string, object: unknown, dryRun = false) {
  return kubectl(user, ['apply', '-f', '-', ...(dryRun ? ['--dry-run=server'] : [])], {
    input: JSON.stringify(object),
    reject: false,
  });
}

/** Denied the same way with and without --dry-run=server, with `pattern` in the message. */
async function expectRefused(user: string, object: unknown, pattern: RegExp): Promise<void> {
  for (const dryRun of [true, false]) {
    const result = await apply(user, object, dryRun);
    expect(result.exitCode, `${dryRun ? 'dry run' : 'real'}: ${result.stdout}`).not.toBe(0);
    expect(result.stderr).toMatch(pattern);
  }
}

async function stored(args: string[]): Promise<string> {
  return (await kubectl('admin', ['get', ...args, '--ignore-not-found', '-o', 'json'])).stdout.trim();
}

beforeAll(async () => {
  await installBase(cluster());
  hook = await startLocalWebhook(cluster());
  await apply('admin', project('rulesa', {}, { namespaces: [{ name: 'rulesa-api' }], maxNamespaces: 2 }));
  await eventually(async () => expect(hook.webhook.cache.snapshot.project('rulesa')).toBeDefined());
});

afterAll(async () => {
  // No controller here: the Project goes at once and its namespaces are deleted after it.
  await removeProjects(['rulesa'], { cascadeMs: 0 });
  await hook?.stop();
});

describe('Project rules at the apiserver (S1, N1, N3, N4, T1)', () => {
  it("S1: a Project that does not match its schema is refused by the CRD's schema before any webhook, and nothing is stored", async () => {
    const bad = project('rulesbad');
    (bad.spec.owners as Array<{ kind: string }>)[0]!.kind = 'Robot';
    // The apiserver validates against the CRD's OpenAPI schema before validating admission: the
    // refusal is the CRD's own, and the webhook never sees the object (S1 is its second layer,
    // test/unit/schema.test.ts and the offline validate).
    await expectRefused(
      'admin',
      bad,
      /The Project "rulesbad" is invalid: \n\* spec\.owners\[0\]\.kind: Unsupported value: "Robot": supported values: "User", "Group", "ServiceAccount"/,
    );
    expect(await stored(['project', 'rulesbad'])).toBe('');
    expect((await apply('admin', bad, true)).stderr).not.toMatch(/admission webhook/);
  });

  it('N1: a name longer than 40 characters (valid for the apiserver) is refused by the webhook', async () => {
    const name = `r${'x'.repeat(40)}`;
    await expectRefused('admin', project(name), /\[N1\]/);
    expect(await stored(['project', name])).toBe('');
  });

  it('N3: a namespace another Project declares is refused', async () => {
    await expectRefused(
      'admin',
      project('rulesb', {}, { namespaces: [{ name: 'rulesa-api' }] }),
      /\[N3\] namespace rulesa-api is already declared by project rulesa/,
    );
    expect(await stored(['project', 'rulesb'])).toBe('');
  });

  it('N4: a Project whose prefix overlaps an existing one is refused', async () => {
    await expectRefused('admin', project('rulesa-eu'), /\[N4\]/);
    expect(await stored(['project', 'rulesa-eu'])).toBe('');
  });

  it('T1: spec.tenant cannot change, even for an administrator', async () => {
    await expectRefused(
      'admin',
      project('rulesa', {}, { tenant: 'globex', namespaces: [{ name: 'rulesa-api' }], maxNamespaces: 2 }),
      /\[T1\]/,
    );
    expect((await kubectl('admin', ['get', 'project', 'rulesa', '-o', 'jsonpath={.spec.tenant}'])).stdout).toBe('acme');
  });
});

describe('Namespace rules at the apiserver (T2, Q1 maxNamespaces, T4 on DELETE)', () => {
  it('T2: a namespace labelled for a project with the wrong tenant is refused', async () => {
    const ns = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: 'rulesa-wrong',
        labels: { 'tenantgate.io/project': 'rulesa', 'tenantgate.io/tenant': 'globex' },
      },
    };
    await expectRefused(
      'admin',
      ns,
      /\[T2\] Namespace rulesa-wrong of project rulesa must carry the labels tenantgate\.io\/tenant=acme \(has "globex"\)/,
    );
    expect(await stored(['namespace', 'rulesa-wrong'])).toBe('');
  });

  it('Q1: maxNamespaces counts the namespaces that exist', async () => {
    expect((await kubectl('alice', ['create', 'namespace', 'rulesa-one'], { reject: false })).exitCode).toBe(0);
    expect((await kubectl('alice', ['create', 'namespace', 'rulesa-two'], { reject: false })).exitCode).toBe(0);
    await eventually(async () => expect([...hook.webhook.cache.snapshot.namespacesOfProject('rulesa')].length).toBe(2));
    const third = await kubectl('alice', ['create', 'namespace', 'rulesa-three'], { reject: false });
    expect(third.exitCode).not.toBe(0);
    expect(third.stderr).toMatch(
      /\[Q1\] Namespace rulesa-three would be namespace 3 of project rulesa, whose maxNamespaces is 2/,
    );
    expect(await stored(['namespace', 'rulesa-three'])).toBe('');
  });

  it('T4 on DELETE: carol, to whom alice delegated her namespace through RBAC, still may not delete it', async () => {
    // What the controller does for self-service namespaces (this file runs without it).
    await applyOwnerBindings(cluster(), project('rulesa') as unknown as Project, ['rulesa-one', 'rulesa-two']);
    // alice (admin in rulesa-one through the owners' binding) hands carol the same role in that namespace.
    await kubectl('alice', [
      '-n',
      'rulesa-one',
      'create',
      'rolebinding',
      'delegate-carol',
      '--clusterrole=tenantgate-project-owner',
      '--user=carol',
    ]);
    const carol = await kubectl('carol', ['delete', 'namespace', 'rulesa-one', '--wait=false'], { reject: false });
    expect(carol.exitCode).not.toBe(0);
    expect(carol.stderr).toMatch(
      /\[T4\] user "carol" may not delete namespace rulesa-one: it belongs to project rulesa \(tenant acme\)/,
    );
    const dave = await kubectl('dave', ['delete', 'namespace', 'rulesa-one', '--wait=false'], { reject: false });
    expect(dave.stderr).toMatch(/User "dave" cannot delete resource "namespaces"/);
    expect(JSON.parse(await stored(['namespace', 'rulesa-one'])).metadata.deletionTimestamp).toBeUndefined();
  });
});

describe('the webhook over HTTPS', () => {
  /** A POST as the apiserver makes it: with its client certificate (the webhook accepts reviews from it only). */
  async function post(path: string, body: string | Buffer, ca: Buffer): Promise<{ status: number; body: string }> {
    const { certFile, keyFile } = cluster().webhookClient;
    const client = { cert: await readFile(certFile), key: await readFile(keyFile) };
    return httpsCall(`${hook.url}${path}`, {
      method: 'POST',
      ca,
      client,
      headers: { 'content-type': 'application/json' },
      body,
    });
  }

  it('answers 400 for a broken envelope, 413 over 3 MiB, 404 for an unknown path, each with a JSON error', async () => {
    const ca = await readFile(hook.certs.caCert);
    const bad = await post('/validate', '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}', ca);
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body).error).toMatch(/request is missing/);
    const big = await post('/validate', Buffer.alloc(3 * 1024 * 1024 + 10, 'a'), ca);
    expect(big.status).toBe(413);
    const unknown = await post('/nope', '{}', ca);
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body).error).toMatch(/not found/);
  });

  it('is not ready (503) and denies with 503 while its caches have not synced', async () => {
    const info = cluster();
    // A ServiceAccount token without the webhook's RBAC: the lists are refused, the caches never sync.
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(info.kubeconfigs.nobody!);
    const unsynced = await startWebhook({
      config: DEFAULT_CONFIG,
      kubeConfig: kc,
      cert: hook.certs.cert,
      key: hook.certs.key,
      port: 0,
      host: '127.0.0.1',
      log: () => {},
    });
    try {
      const ca = await readFile(hook.certs.caCert);
      expect((await httpsGet(`https://127.0.0.1:${unsynced.port}/readyz`, { ca })).status).toBe(503);
      const review = {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: {
          uid: 'u1',
          kind: { group: '', version: 'v1', kind: 'Namespace' },
          operation: 'CREATE',
          userInfo: { username: 'admin', groups: ['system:masters'] },
          object: { metadata: { name: 'x' } },
        },
      };
      const answer = await httpsCall(`https://127.0.0.1:${unsynced.port}/validate`, {
        method: 'POST',
        ca,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(review),
      });
      expect(answer.status).toBe(200);
      const response = JSON.parse(answer.body).response;
      expect(response).toMatchObject({ uid: 'u1', allowed: false, status: { code: 503 } });
    } finally {
      await unsynced.stop();
    }
  });

  it('swaps its certificate while the apiserver calls it: a certificate the apiserver does not trust fails closed, the trusted one works again, no restart', async () => {
    const info = cluster();
    const other = await generateWebhookCerts(join(info.dir, 'rules-other-ca'));
    const original = await generateWebhookCerts(join(info.dir, 'rules-original-copy'));
    await copyFile(hook.certs.cert, original.cert);
    await copyFile(hook.certs.key, original.key);
    const label = (value: string) =>
      kubectl('alice', ['label', 'namespace', 'rulesa-two', `e2e-cert=${value}`, '--overwrite'], { reject: false });
    expect((await label('a')).exitCode).toBe(0);
    // Another CA's certificate in place (as a renewal gone wrong would): the apiserver refuses to talk, so writes fail.
    await copyFile(other.key, hook.certs.key);
    await copyFile(other.cert, hook.certs.cert);
    // A new value on every try: the first may still be answered with the old certificate (the files are
    // polled once a second), and kubectl 1.37's `label` sends nothing when the value is already there.
    let attempt = 0;
    await eventually(
      async () => {
        const r = await label(`b${++attempt}`);
        expect(r.exitCode).not.toBe(0);
        expect(r.stderr).toMatch(/failed calling webhook.*(x509|certificate)/s);
      },
      { what: 'the apiserver rejects the untrusted certificate' },
    );
    // Register that CA: the very same process now serves a certificate the apiserver trusts.
    await registerWebhooks(info, hook.url, other.caBundle);
    await eventually(async () => expect((await label('c')).exitCode).toBe(0), { what: 'writes work again' });
    expect(JSON.parse(await stored(['namespace', 'rulesa-two'])).metadata.labels['e2e-cert']).toBe('c');
    // Back to the original pair and bundle for the rest of the file.
    await copyFile(original.key, hook.certs.key);
    await copyFile(original.cert, hook.certs.cert);
    await registerWebhooks(info, hook.url, hook.certs.caBundle);
    await eventually(async () => expect((await label('d')).exitCode).toBe(0), { what: 'original certificate back' });
  });
});
