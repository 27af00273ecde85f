/** Certificates for the webhook and the local control plane: a CA and certificates it signs. */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import forge from 'node-forge';

export interface KeyPair {
  keyPem: string;
  certPem: string;
}

export interface CertRequest {
  commonName: string;
  organization?: string[];
  dnsNames?: string[];
  ipAddresses?: string[];
  usage: 'server' | 'client' | 'both';
  days?: number;
}

export function generateKeyPem(bits = 2048): string {
  return generateKeyPairSync('rsa', { modulusLength: bits }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
}

function serial(): string {
  // Positive, 16 bytes: the high bit cleared.
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f;
  return bytes.toString('hex');
}

function validity(cert: forge.pki.Certificate, days: number): void {
  const now = Date.now();
  cert.validity.notBefore = new Date(now - 5 * 60 * 1000);
  cert.validity.notAfter = new Date(now + days * 24 * 3600 * 1000);
}

export function createCA(commonName = 'tenantgate-ca', days = 3650): KeyPair {
  const keyPem = generateKeyPem();
  const key = forge.pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey;
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
  cert.serialNumber = serial();
  validity(cert, days);
  const subject = [{ name: 'commonName', value: commonName }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(key, forge.md.sha256.create());
  return { keyPem, certPem: forge.pki.certificateToPem(cert) };
}

export function signCert(ca: KeyPair, req: CertRequest): KeyPair {
  const keyPem = generateKeyPem();
  const key = forge.pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey;
  const caCert = forge.pki.certificateFromPem(ca.certPem);
  const caKey = forge.pki.privateKeyFromPem(ca.keyPem);
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
  cert.serialNumber = serial();
  validity(cert, req.days ?? 825);
  cert.setSubject([{ name: 'commonName', value: req.commonName }, ...(req.organization ?? []).map((o) => ({ name: 'organizationName', value: o }))]);
  cert.setIssuer(caCert.subject.attributes);
  const altNames = [...(req.dnsNames ?? []).map((value) => ({ type: 2, value })), ...(req.ipAddresses ?? []).map((ip) => ({ type: 7, ip }))];
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: req.usage !== 'client', clientAuth: req.usage !== 'server' },
    ...(altNames.length ? [{ name: 'subjectAltName', altNames }] : []),
    { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(caKey, forge.md.sha256.create());
  return { keyPem, certPem: forge.pki.certificateToPem(cert) };
}

/** The webhook Service's DNS names, plus loopback for local runs. */
export function webhookDnsNames(service: string, namespace: string): string[] {
  return [service, `${service}.${namespace}`, `${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`, 'localhost'];
}
