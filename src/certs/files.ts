/** Writes certificates to a directory (the I/O edge of pki.ts). */
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import {
  admissionConfiguration,
  admissionKubeconfig,
  APISERVER_CLIENT_NAME,
  webhookAdmissionPlugins,
} from './admission-client.js';
import { createCA, signCert, webhookDnsNames, type KeyPair } from './pki.js';
import { WEBHOOK_SERVICE_NAME } from './webhook-service.js';
import { DEFAULT_CONFIG } from '../config/config.js';

export interface WebhookCertFiles {
  caCert: string;
  caKey: string;
  cert: string;
  key: string;
  caBundle: string;
}

export async function writeKeyPair(dir: string, base: string, pair: KeyPair): Promise<{ cert: string; key: string }> {
  await mkdir(dir, { recursive: true });
  const cert = join(dir, `${base}.pem`);
  const key = join(dir, `${base}-key.pem`);
  await writeFile(cert, pair.certPem);
  await writeFile(key, pair.keyPem, { mode: 0o600 });
  return { cert, key };
}

export async function generateWebhookCerts(
  dir: string,
  opts: { service?: string; namespace?: string; extraDns?: string[]; ips?: string[] } = {},
): Promise<WebhookCertFiles> {
  const service = opts.service ?? WEBHOOK_SERVICE_NAME;
  const namespace = opts.namespace ?? DEFAULT_CONFIG.systemNamespace;
  const ca = await createCA('tenantgate-webhook-ca');
  const serving = await signCert(ca, {
    commonName: `${service}.${namespace}.svc`,
    dnsNames: [...webhookDnsNames(service, namespace), ...(opts.extraDns ?? [])],
    ipAddresses: opts.ips ?? ['127.0.0.1'],
    usage: 'server',
  });
  const caFiles = await writeKeyPair(dir, 'ca', ca);
  const servingFiles = await writeKeyPair(dir, 'tls', serving);
  return {
    caCert: caFiles.cert,
    caKey: caFiles.key,
    cert: servingFiles.cert,
    key: servingFiles.key,
    caBundle: Buffer.from(ca.certPem).toString('base64'),
  };
}

export interface WebhookClientFiles {
  /** The CA the webhook verifies callers with (`--client-ca`, the chart's webhook.clientCA). */
  clientCaCert: string;
  clientCaKey: string;
  /** The apiserver's client certificate (common name APISERVER_CLIENT_NAME) and key. */
  cert: string;
  key: string;
  /** The kubeconfig naming that certificate for the webhook's hosts. */
  kubeconfig: string;
  /** An AdmissionConfiguration for `--admission-control-config-file` using that kubeconfig. */
  admissionConfig: string;
  /** The certificate's common name. */
  name: string;
}

/**
 * A client CA and the certificate the apiserver presents to the webhook with it, plus the kubeconfig
 * and AdmissionConfiguration that make the apiserver present it to `hosts` (ADR 0034). The kubeconfig
 * names the certificate and key files by absolute path, so replacing those files rotates the
 * apiserver's certificate without a restart (ADR 0034).
 */
export async function generateWebhookClientCerts(dir: string, hosts: readonly string[]): Promise<WebhookClientFiles> {
  const ca = await createCA('tenantgate-webhook-client-ca');
  const client = await signCert(ca, { commonName: APISERVER_CLIENT_NAME, usage: 'client' });
  const caFiles = await writeKeyPair(dir, 'client-ca', ca);
  const written = await writeKeyPair(dir, 'apiserver-webhook-client', client);
  const clientFiles = { cert: resolve(written.cert), key: resolve(written.key) };
  const kubeconfig = resolve(dir, 'webhook-client.kubeconfig');
  await writeFile(kubeconfig, stringify(admissionKubeconfig(clientFiles, hosts)), { mode: 0o600 });
  const admissionConfig = resolve(dir, 'admission-configuration.yaml');
  await writeFile(admissionConfig, stringify(admissionConfiguration(webhookAdmissionPlugins(kubeconfig))));
  return {
    clientCaCert: caFiles.cert,
    clientCaKey: caFiles.key,
    cert: clientFiles.cert,
    key: clientFiles.key,
    kubeconfig,
    admissionConfig,
    name: APISERVER_CLIENT_NAME,
  };
}
