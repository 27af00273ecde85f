/**
 * Only the API server may spend headroom (ADR 0034): the webhook, started as the e2e tests start it
 * (accepting the local apiserver's client certificate only), answers 401 to reviews posted by anyone
 * else — without a certificate, or with one from another CA — and reserves nothing for them, while a
 * tenant's real `kubectl create namespace` through the apiserver is admitted and refused as before.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeKeyPair } from '../../src/certs/files.js';
import { createCA, signCert } from '../../src/certs/pki.js';
import { LABEL_PROJECT, LABEL_TENANT, LEDGER_PREFIX } from '../../src/validate/types.js';
import { cluster, eventually, kubectl } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';
import { httpsCall, httpsGet, type HttpsAnswer } from '../support/devcluster/https-get.js';
import { installBase, startLocalWebhook, type LocalWebhook } from '../support/devcluster/tenantgate.js';
import { twoNamespaceProject } from '../support/fixtures.js';

const PROJECT = 'guarded';
let hook: LocalWebhook;
let webhookCa: Buffer;

const project = twoNamespaceProject(PROJECT);

/** An AdmissionReview as the apiserver would send it for carol creating `name` (labelled by the mutating webhook): what an attacker forges. */
const forgedReview = (uid: string, name: string) =>
  JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: '', version: 'v1', kind: 'Namespace' },
      resource: { group: '', version: 'v1', resource: 'namespaces' },
      name,
      operation: 'CREATE',
      userInfo: { username: 'carol', groups: ['acme:web-admins', 'tenants', 'system:authenticated'] },
      object: {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, labels: { [LABEL_PROJECT]: PROJECT, [LABEL_TENANT]: 'acme' } },
      },
      dryRun: false,
    },
  });

function post(body: string, client?: { cert: Buffer; key: Buffer }): Promise<HttpsAnswer> {
  return httpsCall(`${hook.url}/validate?timeout=5s`, {
    method: 'POST',
    ca: webhookCa,
    client,
    headers: { 'content-type': 'application/json' },
    body,
  });
}

/** The webhook's pending reservations and refused requests, from its /metrics. */
async function scraped(): Promise<{ pending: number; refused401: number }> {
  const text = (await httpsGet(`${hook.url}/metrics`, { ca: webhookCa })).body;
  const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
  return {
    pending: value(/^tenantgate_webhook_cache_objects\{kind="pending"\} (\S+)$/m),
    refused401: value(/^tenantgate_webhook_bad_requests_total\{code="401"\} (\S+)$/m),
  };
}

const ledger = async () =>
  (
    await kubectl('admin', [
      '-n',
      'tenantgate-system',
      'get',
      'configmap',
      `${LEDGER_PREFIX}${PROJECT}`,
      '--ignore-not-found',
      '-o',
      'jsonpath={.data}',
    ])
  ).stdout;

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  hook = await startLocalWebhook(info);
  webhookCa = await readFile(hook.certs.caCert);
  await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(project) });
  await eventually(async () => {
    if (!hook.webhook.cache.snapshot.project(PROJECT)) throw new Error('project not in cache');
  });
});

afterAll(async () => {
  await hook?.stop();
  await kubectl('admin', [
    'delete',
    'namespace',
    `${PROJECT}-one`,
    `${PROJECT}-two`,
    '--ignore-not-found',
    '--wait=false',
  ]).catch(() => undefined);
  // No controller here: the Project's finalizer (the mutating webhook's) is removed, its other namespaces deleted after it.
  await removeProjects([PROJECT], { cascadeMs: 0 });
});

describe('who may send admission reviews', () => {
  it("admits the tenant's real namespace through the apiserver (its client certificate)", async () => {
    const created = await kubectl('carol', ['create', 'namespace', `${PROJECT}-one`], { reject: false });
    expect(created.exitCode, created.stderr).toBe(0);
  });

  it('answers 401 to a review without a client certificate and to one with a certificate from another CA, reserving nothing', async () => {
    const before = { ledger: await ledger(), metrics: await scraped() };
    const none = await post(forgedReview('forged-none', `${PROJECT}-forged`));
    expect(none.status).toBe(401);
    expect(JSON.parse(none.body).error).toMatch(/client certificate required/);
    const info = cluster();
    const foreign = await writeKeyPair(
      join(info.dir, 'foreign-client'),
      'client',
      await signCert(await createCA('not-the-apiservers-ca'), { commonName: info.webhookClient.name, usage: 'client' }),
    );
    const other = await post(forgedReview('forged-other-ca', `${PROJECT}-forged`), {
      cert: await readFile(foreign.cert),
      key: await readFile(foreign.key),
    });
    expect(other.status).toBe(401);
    expect(JSON.parse(other.body).error).toMatch(/not signed by the webhook's client CA/);
    const after = await scraped();
    expect(after.pending).toBe(before.metrics.pending);
    expect(after.refused401).toBe(before.metrics.refused401 + 2);
    expect(await ledger()).toBe(before.ledger);
  });

  it("50 forged reviews naming the project's namespaces change no verdict: the owner's next namespace within budget is admitted, the one past it refused with [Q1]", async () => {
    const pendingBefore = (await scraped()).pending;
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => post(forgedReview(`forged-${i}`, `${PROJECT}-f${i}`))),
    );
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 50 }, () => 401));
    // Reservations only ever come from the apiserver's reviews: none were added (one may have been released).
    expect((await scraped()).pending).toBeLessThanOrEqual(pendingBefore);
    const second = await kubectl('carol', ['create', 'namespace', `${PROJECT}-two`], { reject: false });
    expect(second.exitCode, second.stderr).toBe(0);
    const third = await kubectl('carol', ['create', 'namespace', `${PROJECT}-three`], { reject: false });
    expect(third.exitCode).not.toBe(0);
    expect(third.stderr).toContain('[Q1]');
  });
});
