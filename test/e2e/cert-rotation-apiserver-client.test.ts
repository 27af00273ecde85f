/**
 * The apiserver's client certificate to the webhook rotates with its CA, under traffic, with no restart
 * of either (docs/adr/0034-certificates-and-client-identity.md): the webhook's `--client-ca` bundle holds old+new CA
 * → the files the admission kubeconfig names (client-certificate/client-key paths, not -data) hold a
 * certificate from the new CA → the bundle holds only the new CA. kube-apiserver read the kubeconfig once
 * at start, but client-go re-reads certificate files named by path when it opens a connection; when the
 * webhook drops the old CA it closes the connections made with the old certificate, so the apiserver's
 * next connection presents the new one. A tenant's kubectl runs at a fixed rate throughout. Every call
 * gets its verdict except, at the last step, the call(s) client-go itself cuts: when it notices the new
 * certificate it closes all its connections, the one being handshaken included (kube-apiserver's
 * behaviour, not the webhook's; the ADR says how operators live with it), and a request client-go writes
 * on an idle connection just as the webhook closes it. Once settled, every call
 * succeeds, which it only can with the new certificate (the old one would be answered 401).
 *
 * On a control plane of its own: its admission configuration differs from the shared one's.
 */
import { execa } from 'execa';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  admissionConfiguration,
  admissionKubeconfig,
  APISERVER_CLIENT_NAME,
  webhookAdmissionPlugins,
} from '../../src/certs/admission-client.js';
import { generateWebhookCerts, writeKeyPair } from '../../src/certs/files.js';
import { createCA, signCert } from '../../src/certs/pki.js';
import type { RunningWebhook } from '../../src/webhook/start.js';
import { eventually } from '../support/cluster.js';
import { ControlPlane, type ClusterInfo } from '../support/devcluster/controlplane.js';
import { installBase, startLocalWebhook } from '../support/devcluster/tenantgate.js';
import { REPO_ROOT } from '../support/paths.js';
import { replaceFile, replacePair, seedTenantProject, SteadyTraffic, tenantCallFor } from '../support/rotation.js';

const PROJECT = 'rotclient';

let cp: ControlPlane;
let info: ClusterInfo;
let webhook: RunningWebhook;
let clientCaFile: string;
let clientFiles: { cert: string; key: string };
const oldClientCa = await createCA('apiserver-webhook-client-ca-1');
const logs: string[] = [];

const kubectl = (user: string, args: string[], input?: string) =>
  execa(join(info.binDir, 'kubectl'), args, {
    env: { KUBECONFIG: info.kubeconfigs[user] ?? '' },
    reject: false,
    timeout: 60_000,
    ...(input !== undefined ? { input } : {}),
  });

const tenantCall = tenantCallFor(kubectl, PROJECT);

beforeAll(async () => {
  await mkdir(join(REPO_ROOT, '.run'), { recursive: true });
  const dir = await mkdtemp(join(REPO_ROOT, '.run', 'cluster-'));
  const pki = join(dir, 'rotation');
  // The apiserver's client certificate as files the admission kubeconfig names by path.
  clientFiles = await writeKeyPair(
    pki,
    'apiserver-webhook-client',
    await signCert(oldClientCa, { commonName: APISERVER_CLIENT_NAME, usage: 'client' }),
  );
  clientCaFile = join(pki, 'client-ca.pem');
  await writeFile(clientCaFile, oldClientCa.certPem);
  const kubeconfig = join(pki, 'webhook-client.kubeconfig');
  await writeFile(kubeconfig, stringify(admissionKubeconfig(clientFiles, ['*'])), { mode: 0o600 });
  const admission = join(pki, 'admission.yaml');
  await writeFile(admission, stringify(admissionConfiguration(webhookAdmissionPlugins(kubeconfig))));
  // The last --admission-control-config-file wins over the control plane's own.
  cp = await ControlPlane.start({ dir, apiserverArgs: [`--admission-control-config-file=${admission}`] });
  info = cp.info;
  await installBase(info);
  const certs = await generateWebhookCerts(join(pki, 'webhook'));
  webhook = (
    await startLocalWebhook(
      info,
      {},
      { certs, log: (m) => logs.push(m), clientCa: { file: clientCaFile, allowedNames: [APISERVER_CLIENT_NAME] } },
    )
  ).webhook;
  await seedTenantProject(info, webhook.cache, kubectl, PROJECT);
}, 240_000);

afterAll(async () => {
  await webhook?.stop();
  await cp?.stop();
});

describe("the apiserver's client certificate rotates with its CA, no restart", () => {
  it("webhook trusts old+new CA → the apiserver's certificate files hold one from the new CA → webhook trusts only the new CA: the apiserver presents the new certificate; the only failed calls are the ones client-go cuts when it notices the new certificate", async () => {
    const newClientCa = await createCA('apiserver-webhook-client-ca-2');
    const traffic = new SteadyTraffic(tenantCall);
    traffic.start();
    try {
      await traffic.finishedInStep(4);

      traffic.enter('webhook trusts old+new');
      await replaceFile(clientCaFile, oldClientCa.certPem + newClientCa.certPem);
      await eventually(async () => expect(logs.some((l) => l.includes('with 2 certificate(s)'))).toBe(true), {
        what: 'the webhook reloads old+new',
      });
      await traffic.finishedInStep(4);

      // kube-apiserver keeps its connections (made with the old certificate) and does not notice yet.
      traffic.enter('apiserver certificate from the new CA');
      await replacePair(
        clientFiles,
        await signCert(newClientCa, { commonName: APISERVER_CLIENT_NAME, usage: 'client' }),
      );
      await traffic.finishedInStep(6);

      // The webhook closes the connections made with the old certificate; the apiserver's next handshake
      // reads the new one from the files, and client-go then closes every connection it has (in flight
      // too): that one call or a few fail, once.
      traffic.enter('webhook trusts only the new');
      const reloads = logs.length;
      await replaceFile(clientCaFile, newClientCa.certPem);
      await eventually(
        async () => expect(logs.slice(reloads).some((l) => l.includes('with 1 certificate(s)'))).toBe(true),
        { what: 'the webhook reloads new only' },
      );
      await traffic.finishedInStep(6);

      // Settled: the apiserver presents the new certificate (the old one would be answered 401).
      traffic.enter('settled');
      await traffic.finishedInStep(8);
    } finally {
      await traffic.stop();
    }
    const failures = traffic.failures();
    process.stderr.write(
      `[cert-rotation-apiserver-client] ${traffic.outcomes.length} tenant calls over 5 steps, ${failures.length} without their verdict${failures.length ? `: ${failures.map((f) => `${f.step}: ${f.detail.trim()}`).join(' | ')}` : ''}\n`,
    );
    expect(new Set(traffic.outcomes.map((o) => o.step)).size).toBe(5);
    expect(failures.filter((f) => f.step !== 'webhook trusts only the new')).toEqual([]);
    // The cut calls, one per event at most (the tenant's calls are one at a time): client-go closes its
    // connections when it loads the new certificate (a closed connection on its side), and the webhook's
    // close of an idle connection can race a request client-go is writing on it, which Go reports as a
    // reset, a broken pipe, an EOF or a closed idle connection. Never a refusal: a 401 or a TLS alert
    // would mean the apiserver presented a certificate the webhook no longer trusts.
    expect(failures.length).toBeLessThanOrEqual(2);
    for (const f of failures)
      expect(f.detail).toMatch(
        /use of closed network connection|connection reset by peer|broken pipe|\bEOF\b|server closed idle connection/,
      );
    expect(traffic.outcomes.filter((o) => o.step === 'settled').every((o) => o.ok)).toBe(true);
  }, 300_000);
});
