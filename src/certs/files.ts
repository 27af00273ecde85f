/** Writes certificates to a directory (the I/O edge of pki.ts). */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createCA, signCert, webhookDnsNames, type KeyPair } from './pki.js';

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

export async function generateWebhookCerts(dir: string, opts: { service?: string; namespace?: string; extraDns?: string[]; ips?: string[] } = {}): Promise<WebhookCertFiles> {
  const service = opts.service ?? 'tenantgate-webhook';
  const namespace = opts.namespace ?? 'tenantgate-system';
  const ca = createCA('tenantgate-webhook-ca');
  const serving = signCert(ca, {
    commonName: `${service}.${namespace}.svc`,
    dnsNames: [...webhookDnsNames(service, namespace), ...(opts.extraDns ?? [])],
    ipAddresses: opts.ips ?? ['127.0.0.1'],
    usage: 'server',
  });
  const caFiles = await writeKeyPair(dir, 'ca', ca);
  const servingFiles = await writeKeyPair(dir, 'tls', serving);
  return { caCert: caFiles.cert, caKey: caFiles.key, cert: servingFiles.cert, key: servingFiles.key, caBundle: Buffer.from(ca.certPem).toString('base64') };
}
