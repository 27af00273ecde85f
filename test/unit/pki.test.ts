import { X509Certificate, createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { createCA, signCert, type KeyPair } from '../../src/certs/pki.js';
import { TEST_NOW } from '../support/instant.js';

const curveOf = (pem: string) => new X509Certificate(pem).publicKey.asymmetricKeyDetails?.namedCurve;

/** An RSA CA as node-forge made them before (what an earlier version left on disk), by the openssl command line. */
function rsaCa(): KeyPair {
  const dir = mkdtempSync(join(tmpdir(), 'tg-pki-'));
  const keyPem = generateKeyPairSync('rsa', { modulusLength: 2048 })
    .privateKey.export({ type: 'pkcs1', format: 'pem' })
    .toString();
  writeFileSync(join(dir, 'ca.key'), keyPem);
  execFileSync('openssl', [
    'req',
    '-x509',
    '-key',
    join(dir, 'ca.key'),
    '-out',
    join(dir, 'ca.crt'),
    '-days',
    '2',
    '-subj',
    '/CN=old-rsa-ca',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return { keyPem, certPem: readFileSync(join(dir, 'ca.crt'), 'utf8') };
}

describe('certificates (src/certs/pki.ts)', () => {
  it('a CA and a serving certificate it signs: ECDSA P-256 keys, the names, usages and issuer asked for, verifiable by the CA', async () => {
    // pki.ts stamps validity from Date.now(): signed on a fake Date at TEST_NOW, the dates are exact.
    vi.useFakeTimers({ now: TEST_NOW, toFake: ['Date'] });
    let ca: KeyPair, serving: KeyPair;
    try {
      ca = await createCA('test-ca', 30);
      serving = await signCert(ca, {
        commonName: 'svc.ns.svc',
        organization: ['acme, inc'],
        dnsNames: ['svc.ns.svc', 'localhost'],
        ipAddresses: ['127.0.0.1'],
        usage: 'server',
        days: 10,
      });
    } finally {
      vi.useRealTimers();
    }
    expect(curveOf(ca.certPem)).toBe('prime256v1');
    expect(curveOf(serving.certPem)).toBe('prime256v1');
    expect(createPrivateKey(serving.keyPem).asymmetricKeyType).toBe('ec');
    const caCert = new X509Certificate(ca.certPem);
    const cert = new X509Certificate(serving.certPem);
    expect(caCert.ca).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.subject).toContain('CN=svc.ns.svc');
    // Node prints the comma escaped: the value is one organization, "acme, inc".
    expect(cert.subject.split('\n')).toEqual(['CN=svc.ns.svc', 'O=acme\\, inc']);
    expect(cert.subjectAltName).toBe('DNS:svc.ns.svc, DNS:localhost, IP Address:127.0.0.1');
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(cert.checkPrivateKey(createPrivateKey(serving.keyPem))).toBe(true);
    expect(Date.parse(cert.validTo)).toBe(TEST_NOW + 10 * 86_400_000);
    expect(Date.parse(cert.validFrom)).toBe(TEST_NOW - 5 * 60_000); // five minutes of clock skew
    expect(Date.parse(caCert.validTo)).toBe(TEST_NOW + 30 * 86_400_000);
    // PEM blocks end with a newline, so a bundle is their concatenation.
    expect(ca.certPem.endsWith('-----END CERTIFICATE-----\n')).toBe(true);
  });

  it('client and both: the extended key usages follow the request', async () => {
    const ca = await createCA();
    expect(new X509Certificate((await signCert(ca, { commonName: 'c', usage: 'client' })).certPem).keyUsage).toEqual([
      '1.3.6.1.5.5.7.3.2',
    ]);
    expect(new X509Certificate((await signCert(ca, { commonName: 'b', usage: 'both' })).certPem).keyUsage).toEqual([
      '1.3.6.1.5.5.7.3.1',
      '1.3.6.1.5.5.7.3.2',
    ]);
  });

  it('a CA with an RSA key, as an earlier version made, still signs (the new certificate has an ECDSA key)', async () => {
    const ca = rsaCa();
    const leaf = await signCert(ca, { commonName: 'after-upgrade', usage: 'server', dnsNames: ['localhost'] });
    const cert = new X509Certificate(leaf.certPem);
    expect(cert.verify(new X509Certificate(ca.certPem).publicKey)).toBe(true);
    expect(curveOf(leaf.certPem)).toBe('prime256v1');
  });
});
