/**
 * The webhook's certificates rotate while the apiserver calls it, with no restart and no failed
 * admission (docs/adr/0034-certificates-and-client-identity.md). A tenant's kubectl runs at a fixed rate throughout
 * — a label on an owned namespace (admitted) and a dry-run namespace past the budget (refused with
 * [Q1]) — and every call must get that verdict, never "failed calling webhook".
 *
 * Serving certificate, as cert-manager's CA injector rotates a CA: the caBundle holds old+new CA → a
 * serving certificate from the new CA is written to the files → the caBundle holds only the new CA.
 * After each step a fresh TLS connection is served the expected certificate (serial).
 *
 * Client CA (`--client-ca`): the webhook's bundle widens to old+new (a certificate from the new CA is
 * accepted, the apiserver's is still), then narrows again. The middle step — the apiserver presenting
 * a certificate from the new CA — is not done here but in cert-rotation-apiserver-client.test.ts, on a
 * control plane of its own (this one's client certificate is shared by every test file).
 */
import { copyFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateWebhookCerts, type WebhookCertFiles } from '../../src/certs/files.js';
import { createCA, signCert, webhookDnsNames, type KeyPair } from '../../src/certs/pki.js';
import type { RunningWebhook } from '../../src/webhook/start.js';
import { cluster, eventually, kubectl } from '../support/cluster.js';
import { removeProjects } from '../support/leftovers.js';
import { httpsCall } from '../support/devcluster/https-get.js';
import {
  installBase,
  registerWebhooks,
  startLocalWebhook,
  unregisterWebhooks,
} from '../support/devcluster/tenantgate.js';
import {
  caBundleOf,
  replaceFile,
  replacePair,
  serialOf,
  seedTenantProject,
  servedSerial,
  SteadyTraffic,
  tenantCallFor,
  type KubectlAs,
} from '../support/rotation.js';

const PROJECT = 'rotor';

let webhook: RunningWebhook;
let certs: WebhookCertFiles;
let oldCa: KeyPair;
let clientCaFile: string;
let url: string;
const logs: string[] = [];

const kubectlAs: KubectlAs = (user, args, input) =>
  kubectl(user, args, { reject: false, ...(input !== undefined ? { input } : {}) });
const tenantCall = tenantCallFor(kubectlAs, PROJECT);

const servingCert = (ca: KeyPair) =>
  signCert(ca, {
    commonName: 'tenantgate-webhook.tenantgate-system.svc',
    dnsNames: webhookDnsNames('tenantgate-webhook', 'tenantgate-system'),
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });

beforeAll(async () => {
  const info = cluster();
  await installBase(info);
  const dir = join(info.dir, 'rotation-webhook');
  certs = await generateWebhookCerts(dir);
  oldCa = { certPem: await readFile(certs.caCert, 'utf8'), keyPem: await readFile(certs.caKey, 'utf8') };
  // The webhook's own copy of the apiserver's client CA, so this file can rotate it.
  clientCaFile = join(dir, 'client-ca.pem');
  await copyFile(info.webhookClient.caFile, clientCaFile);
  const local = await startLocalWebhook(
    info,
    {},
    {
      register: false,
      certs,
      log: (m) => logs.push(m),
      clientCa: { file: clientCaFile, allowedNames: [info.webhookClient.name] },
    },
  );
  webhook = local.webhook;
  url = local.url;
  await registerWebhooks(info, url, caBundleOf(oldCa.certPem));
  await seedTenantProject(info, webhook.cache, kubectlAs, PROJECT);
}, 180_000);

afterAll(async () => {
  await unregisterWebhooks(cluster()).catch(() => undefined);
  await webhook?.stop();
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

describe('certificate rotation under traffic, no restart', () => {
  it('serving certificate and caBundle: old+new CA → a certificate from the new CA → only the new CA; every admission gets its verdict and each step serves the expected certificate', async () => {
    const info = cluster();
    const traffic = new SteadyTraffic(tenantCall);
    traffic.start();
    try {
      await traffic.finishedInStep(4);
      const first = await readFile(certs.cert, 'utf8');
      expect(await servedSerial('127.0.0.1', webhook.port)).toBe(serialOf(first));

      // 1. The CA injector adds the new CA to the bundle; the old certificate is still served.
      const newCa = await createCA('tenantgate-webhook-ca-2');
      traffic.enter('bundle old+new');
      await registerWebhooks(info, url, caBundleOf(oldCa.certPem, newCa.certPem));
      await traffic.finishedInStep(4);
      expect(await servedSerial('127.0.0.1', webhook.port)).toBe(serialOf(first));

      // 2. The serving certificate is reissued by the new CA: the same process serves it.
      const next = await servingCert(newCa);
      traffic.enter('certificate from the new CA');
      await replacePair(certs, next);
      await eventually(async () => expect(await servedSerial('127.0.0.1', webhook.port)).toBe(serialOf(next.certPem)), {
        what: 'the new certificate served',
      });
      await traffic.finishedInStep(6);

      // 3. The bundle drops the old CA.
      traffic.enter('bundle new only');
      await registerWebhooks(info, url, caBundleOf(newCa.certPem));
      await traffic.finishedInStep(4);
      expect(await servedSerial('127.0.0.1', webhook.port)).toBe(serialOf(next.certPem));
    } finally {
      await traffic.stop();
    }
    const steps = new Set(traffic.outcomes.map((o) => o.step));
    process.stderr.write(
      `[cert-rotation] serving: ${traffic.outcomes.length} tenant calls over ${steps.size} steps, ${traffic.failures().length} without their verdict\n`,
    );
    expect(
      traffic.failures(),
      traffic
        .failures()
        .map((f) => `${f.step}: ${f.detail}`)
        .join(' | '),
    ).toEqual([]);
    expect([...steps]).toEqual(['before', 'bundle old+new', 'certificate from the new CA', 'bundle new only']);
    expect(logs.some((l) => l.startsWith('reloaded TLS certificate'))).toBe(true);
  }, 300_000);

  it("client CA: widened to old+new (the new CA's client is accepted, the apiserver still is) and narrowed again, under traffic", async () => {
    const info = cluster();
    const apiserverCa = await readFile(info.webhookClient.caFile, 'utf8');
    const newClientCa = await createCA('tenantgate-webhook-client-ca-2');
    const newClient = await signCert(newClientCa, { commonName: info.webhookClient.name, usage: 'client' });
    // A review that is not one: authenticated callers get 400, unauthenticated ones 401 (nothing is decided or reserved either way).
    const statusAsNewClient = async () =>
      (
        await httpsCall(`${url}/validate`, {
          method: 'POST',
          client: { cert: Buffer.from(newClient.certPem), key: Buffer.from(newClient.keyPem) },
          headers: { 'content-type': 'application/json' },
          body: '{}',
        })
      ).status;
    expect(await statusAsNewClient()).toBe(401);

    const traffic = new SteadyTraffic(tenantCall);
    traffic.start();
    try {
      await traffic.finishedInStep(4);
      traffic.enter('client CA old+new');
      await replaceFile(clientCaFile, apiserverCa + newClientCa.certPem);
      await eventually(async () => expect(await statusAsNewClient()).toBe(400), {
        what: "the new CA's client accepted",
      });
      await traffic.finishedInStep(6);

      traffic.enter('client CA narrowed');
      await replaceFile(clientCaFile, apiserverCa);
      await eventually(async () => expect(await statusAsNewClient()).toBe(401), {
        what: "the new CA's client refused again",
      });
      await traffic.finishedInStep(6);
    } finally {
      await traffic.stop();
    }
    process.stderr.write(
      `[cert-rotation] client CA: ${traffic.outcomes.length} tenant calls, ${traffic.failures().length} without their verdict\n`,
    );
    expect(
      traffic.failures(),
      traffic
        .failures()
        .map((f) => `${f.step}: ${f.detail}`)
        .join(' | '),
    ).toEqual([]);
    expect(logs.some((l) => l.includes('client CA bundle') && l.includes('with 2 certificate(s)'))).toBe(true);
  }, 300_000);
});
