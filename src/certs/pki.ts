/**
 * Certificates for the webhook and the local control plane: a CA and certificates it signs. Keys are
 * ECDSA P-256: the apiserver opens a new connection to the webhook for every review beyond the 25 it
 * keeps idle, and each is a full TLS handshake, which costs the webhook about 30 % less CPU with an
 * ECDSA key than with RSA-2048 (docs/adr/0034-certificates-and-client-identity.md). A CA with an RSA
 * key (made by an earlier version) still signs.
 */
// @peculiar/x509 needs a Reflect metadata polyfill loaded before it.
import 'reflect-metadata';
import { createPrivateKey, generateKeyPairSync, randomBytes, webcrypto, type KeyObject } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

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

const ECDSA_P256 = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const RSA_SHA256 = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } as const;

/** An RSA key in PEM (PKCS#1): what a service-account signing key may be; certificates here use ECDSA. */
export function generateKeyPem(bits = 2048): string {
  return generateKeyPairSync('rsa', { modulusLength: bits })
    .privateKey.export({ type: 'pkcs1', format: 'pem' })
    .toString();
}

/** A new ECDSA P-256 key pair and its private key in PEM (PKCS#8). */
async function newKeys(): Promise<{ keys: webcrypto.CryptoKeyPair; keyPem: string }> {
  const keys = await webcrypto.subtle.generateKey(ECDSA_P256, true, ['sign', 'verify']);
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  return {
    keys,
    keyPem: createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })
      .export({ type: 'pkcs8', format: 'pem' })
      .toString(),
  };
}

/** The signing algorithm and key of a CA's private key in PEM (ECDSA, or RSA from an earlier version). */
async function signingKeyOf(
  keyPem: string,
): Promise<{ key: webcrypto.CryptoKey; algorithm: typeof ECDSA_P256 | typeof RSA_SHA256 }> {
  const key: KeyObject = createPrivateKey(keyPem);
  if (key.asymmetricKeyType !== 'rsa' && key.asymmetricKeyType !== 'ec')
    throw new Error(`a CA key of type ${key.asymmetricKeyType ?? 'unknown'}: allowed are ec (P-256) and rsa`);
  const algorithm = key.asymmetricKeyType === 'rsa' ? RSA_SHA256 : ECDSA_P256;
  return { key: key.toCryptoKey(algorithm, false, ['sign']), algorithm };
}

function serial(): string {
  // Positive, 16 bytes: the high bit cleared.
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f;
  return bytes.toString('hex');
}

function validity(days: number): { notBefore: Date; notAfter: Date } {
  const now = Date.now();
  return { notBefore: new Date(now - 5 * 60 * 1000), notAfter: new Date(now + days * 24 * 3600 * 1000) };
}

/** A distinguished name's value escaped for the string form (RFC 4514). */
const dnValue = (value: string) => value.replace(/([,+"\\<>;=])/g, '\\$1');

export async function createCA(commonName = 'tenantgate-ca', days = 3650): Promise<KeyPair> {
  const { keys, keyPem } = await newKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${dnValue(commonName)}`,
    ...validity(days),
    keys,
    signingAlgorithm: ECDSA_P256,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { keyPem, certPem: `${cert.toString('pem')}\n` };
}

export async function signCert(ca: KeyPair, req: CertRequest): Promise<KeyPair> {
  const { keys, keyPem } = await newKeys();
  const caCert = new x509.X509Certificate(ca.certPem);
  const caKey = await signingKeyOf(ca.keyPem);
  const subject = [`CN=${dnValue(req.commonName)}`, ...(req.organization ?? []).map((o) => `O=${dnValue(o)}`)].join(
    ', ',
  );
  const altNames = [
    ...(req.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(req.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const usages = [
    ...(req.usage !== 'client' ? [x509.ExtendedKeyUsage.serverAuth] : []),
    ...(req.usage !== 'server' ? [x509.ExtendedKeyUsage.clientAuth] : []),
  ];
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject,
    issuer: caCert.subject,
    ...validity(req.days ?? 825),
    publicKey: keys.publicKey,
    signingKey: caKey.key,
    signingAlgorithm: caKey.algorithm,
    extensions: [
      new x509.BasicConstraintsExtension(false),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension(usages),
      ...(altNames.length ? [new x509.SubjectAlternativeNameExtension(altNames)] : []),
      await x509.AuthorityKeyIdentifierExtension.create(caCert.publicKey),
    ],
  });
  return { keyPem, certPem: `${cert.toString('pem')}\n` };
}

/** The webhook Service's DNS names, plus loopback for local runs. */
export function webhookDnsNames(service: string, namespace: string): string[] {
  return [
    service,
    `${service}.${namespace}`,
    `${service}.${namespace}.svc`,
    `${service}.${namespace}.svc.cluster.local`,
    'localhost',
  ];
}
