/** New certificate files are served without a restart. */
import { mkdtemp, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { createCA, signCert } from '../../src/certs/pki.js';
import { writeKeyPair } from '../../src/certs/files.js';
import { APISERVER_IDLE_TIMEOUT_MS, serveHttps } from '../../src/webhook/tls.js';

function servedSerial(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const serial = socket.getPeerCertificate().serialNumber;
      socket.end();
      resolve(serial);
    });
    socket.on('error', reject);
  });
}

describe('certificate reload', () => {
  it('serves the new certificate after the files change, without a restart', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tg-tls-'));
    const ca = await createCA();
    const first = await signCert(ca, { commonName: 'first', ipAddresses: ['127.0.0.1'], usage: 'server' });
    const files = await writeKeyPair(dir, 'tls', first);
    const logs: string[] = [];
    const server = serveHttps(
      files,
      (_req, res) => res.end('ok'),
      (m) => logs.push(m),
      100,
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    const before = await servedSerial(port);

    const second = await signCert(ca, { commonName: 'second', ipAddresses: ['127.0.0.1'], usage: 'server' });
    // Write the new pair the way a Secret volume update lands: new files renamed into place.
    await writeFile(join(dir, 'new-key.pem'), second.keyPem);
    await writeFile(join(dir, 'new.pem'), second.certPem);
    await rename(join(dir, 'new-key.pem'), files.key);
    await rename(join(dir, 'new.pem'), files.cert);

    let after = before;
    for (let i = 0; i < 50 && after === before; i++) {
      await new Promise((r) => setTimeout(r, 100));
      after = await servedSerial(port);
    }
    server.close();
    expect(after).not.toBe(before);
    const { X509Certificate } = await import('node:crypto');
    expect(after.toLowerCase()).toBe(new X509Certificate(second.certPem).serialNumber.toLowerCase());
    expect(logs.some((l) => l.startsWith('reloaded TLS certificate'))).toBe(true);
  });
});

describe('idle connections', () => {
  it("outlive the apiserver's own idle timeout, so the apiserver closes them first (no POST lost to a closing connection)", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tg-tls-'));
    const ca = await createCA();
    const files = await writeKeyPair(
      dir,
      'tls',
      await signCert(ca, { commonName: 'idle', ipAddresses: ['127.0.0.1'], usage: 'server' }),
    );
    const server = serveHttps(files, (_req, res) => res.end('ok'));
    try {
      expect(server.keepAliveTimeout).toBeGreaterThan(APISERVER_IDLE_TIMEOUT_MS);
      // Node applies only the keep-alive timeout to an idle connection, not the headers or request timeouts.
      expect(server.headersTimeout).toBeLessThanOrEqual(server.requestTimeout);
    } finally {
      server.close();
    }
  });
});
