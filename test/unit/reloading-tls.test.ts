/**
 * The shared reloading-TLS helper (src/certs/reloading-tls.ts): a changed pair is served on the next
 * handshake, a half-written or invalid one is ignored (the previous kept, a line logged), a client CA
 * bundle is reloaded with it, and a connection kept alive across a swap is closed after its response.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rename, writeFile } from 'node:fs/promises';
import { request as httpsRequest, createServer, Agent, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { writeKeyPair } from '../../src/certs/files.js';
import { createCA, signCert, type KeyPair } from '../../src/certs/pki.js';
import { readTlsFiles, reloadOnChange, type TlsFiles } from '../../src/certs/reloading-tls.js';
import { KEEP_ALIVE_TIMEOUT_MS } from '../../src/webhook/tls.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

const serialOf = (pair: KeyPair) => new X509Certificate(pair.certPem).serialNumber.toLowerCase();

/** The serial of the certificate a fresh TLS handshake gets, and whether the server accepted `client` (when given). */
function handshake(port: number, client?: KeyPair): Promise<{ serial: string; socketAuthorizedByServer?: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = connect(
      {
        host: '127.0.0.1',
        port,
        rejectUnauthorized: false,
        ...(client ? { cert: client.certPem, key: client.keyPem } : {}),
      },
      () => {
        const serial = socket.getPeerCertificate().serialNumber.toLowerCase();
        socket.end();
        resolve({ serial });
      },
    );
    socket.on('error', reject);
  });
}

/** GET / with a client certificate: the server answers whether TLS verified it against its client CA. */
function authorizedAs(port: number, client: KeyPair): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path: '/',
        rejectUnauthorized: false,
        cert: client.certPem,
        key: client.keyPem,
        agent: false,
      },
      (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve(body));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`never: ${what}`);
}

/** An HTTPS server on the files, reloaded by the helper every 50 ms; answers "authorized" or "unauthorized". */
async function serve(files: TlsFiles, logs: string[]): Promise<{ server: Server; port: number }> {
  const initial = readTlsFiles(files);
  const server = createServer(
    { ...initial, ...(files.ca ? { requestCert: true, rejectUnauthorized: false } : {}) },
    (req, res) => {
      res.end((req.socket as unknown as { authorized: boolean }).authorized ? 'authorized' : 'unauthorized');
    },
  );
  reloadOnChange(server, files, initial, { log: (m) => logs.push(m), pollMs: 50 });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { server, port: (server.address() as { port: number }).port };
}

/** Writes a file the way a Secret volume update lands: written beside it, renamed into place. */
async function replace(path: string, text: string): Promise<void> {
  await writeFile(`${path}.new`, text);
  await rename(`${path}.new`, path);
}

/** A fresh directory holding a serving pair `first` (written as tls.crt/tls.key) and an unwritten `second` from the same CA. */
async function servingPairs(): Promise<{ first: KeyPair; second: KeyPair; files: TlsFiles }> {
  const dir = await mkdtemp(join(tmpdir(), 'tg-reload-'));
  const ca = await createCA();
  const first = await signCert(ca, { commonName: 'first', ipAddresses: ['127.0.0.1'], usage: 'server' });
  const second = await signCert(ca, { commonName: 'second', ipAddresses: ['127.0.0.1'], usage: 'server' });
  return { first, second, files: await writeKeyPair(dir, 'tls', first) };
}

/**
 * A fresh directory with a serving pair and a client CA bundle file holding `oldCa` only; `newCa` is
 * not written. Clients of both CAs, named as the apiserver's.
 */
async function clientCaRotation(): Promise<{
  files: TlsFiles & { ca: string };
  oldCa: KeyPair;
  newCa: KeyPair;
  oldClient: KeyPair;
  newClient: KeyPair;
}> {
  const dir = await mkdtemp(join(tmpdir(), 'tg-reload-'));
  const servingCa = await createCA();
  const serving = await writeKeyPair(
    dir,
    'tls',
    await signCert(servingCa, { commonName: 'serving', ipAddresses: ['127.0.0.1'], usage: 'server' }),
  );
  const oldCa = await createCA('old-client-ca');
  const newCa = await createCA('new-client-ca');
  const caFile = join(dir, 'client-ca.pem');
  await writeFile(caFile, oldCa.certPem);
  return {
    files: { ...serving, ca: caFile },
    oldCa,
    newCa,
    oldClient: await signCert(oldCa, { commonName: 'apiserver', usage: 'client' }),
    newClient: await signCert(newCa, { commonName: 'apiserver', usage: 'client' }),
  };
}

/** Replaces key then certificate, the way a Secret volume update lands. */
async function replacePair(files: TlsFiles, pair: KeyPair): Promise<void> {
  await replace(files.key, pair.keyPem);
  await replace(files.cert, pair.certPem);
}

describe('reloading TLS', () => {
  it('a changed pair is served on the next handshake; the log names the new serial', async () => {
    const { first, second, files } = await servingPairs();
    const logs: string[] = [];
    const { port } = await serve(files, logs);
    expect((await handshake(port)).serial).toBe(serialOf(first));

    await replacePair(files, second);
    await until('the second certificate is served', async () => (await handshake(port)).serial === serialOf(second));
    expect(
      logs.some((l) => l.startsWith('reloaded TLS certificate') && l.toLowerCase().includes(serialOf(second))),
    ).toBe(true);
  }, 60_000);

  it('a half-written pair (new certificate, old key) and a truncated certificate are ignored: the old pair stays served, a line says why', async () => {
    const { first, second, files } = await servingPairs();
    const logs: string[] = [];
    const { port } = await serve(files, logs);

    // The certificate lands first; its key is not there yet.
    await replace(files.cert, second.certPem);
    await until('the mismatch is logged', async () =>
      logs.some(
        (l) => l.startsWith('keeping the previous TLS certificate') && l.includes('is not the key of the certificate'),
      ),
    );
    expect((await handshake(port)).serial).toBe(serialOf(first));

    // A certificate cut off mid-write, with the matching key (cut first: the new key beside the whole new
    // certificate would be a valid pair for a moment, and the watcher may load it).
    await replace(files.cert, second.certPem.slice(0, 200));
    await replace(files.key, second.keyPem);
    await until('the truncated certificate is logged', async () => logs.some((l) => l.includes('without an END line')));
    expect((await handshake(port)).serial).toBe(serialOf(first));
    expect(logs.some((l) => l.startsWith('reloaded TLS certificate'))).toBe(false);

    // The whole pair: served.
    await replace(files.cert, second.certPem);
    await until('the complete pair is served', async () => (await handshake(port)).serial === serialOf(second));
  }, 60_000);

  it("a client CA bundle rotates: old+new accepts both CAs' clients, new-only refuses the old one", async () => {
    const { files, oldCa, newCa, oldClient, newClient } = await clientCaRotation();
    const caFile = files.ca;
    const logs: string[] = [];
    const { port } = await serve(files, logs);
    expect(await authorizedAs(port, oldClient)).toBe('authorized');
    expect(await authorizedAs(port, newClient)).toBe('unauthorized');

    await replace(caFile, oldCa.certPem + newCa.certPem);
    await until('the new CA is trusted', async () => (await authorizedAs(port, newClient)) === 'authorized');
    expect(await authorizedAs(port, oldClient)).toBe('authorized');
    expect(logs.some((l) => l.includes('with 2 certificate(s)'))).toBe(true);

    await replace(caFile, newCa.certPem);
    await until(
      'the old CA is no longer trusted',
      async () => (await authorizedAs(port, oldClient)) === 'unauthorized',
    );
    expect(await authorizedAs(port, newClient)).toBe('authorized');
  }, 60_000);

  it('a connection kept alive across a swap is told to close after its next response, so the client handshakes with the new certificate', async () => {
    const { first, second, files } = await servingPairs();
    const initial = readTlsFiles(files);
    let release: (() => void) | undefined;
    const server = createServer(initial, (req, res) => {
      if (req.url === '/hold') release = () => res.end('held');
      else res.end('ok');
    });
    const tls = reloadOnChange(server, files, initial, { pollMs: 60_000 });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    const agent = new Agent({ keepAlive: true, maxSockets: 1, rejectUnauthorized: false });
    const get = (path: string) =>
      new Promise<{ serial: string; connection: string | undefined }>((resolve, reject) => {
        const req = httpsRequest({ host: '127.0.0.1', port, path, agent }, (res) => {
          const serial = (res.socket as unknown as { getPeerCertificate(): { serialNumber: string } })
            .getPeerCertificate()
            .serialNumber.toLowerCase();
          res.resume();
          res.on('end', () => resolve({ serial, connection: res.headers.connection }));
        });
        req.on('error', reject);
        req.end();
      });
    expect((await get('/')).serial).toBe(serialOf(first));
    // A request is in flight (the connection is busy, not idle) while the pair changes.
    const held = get('/hold');
    await until('the request is held', async () => release !== undefined);
    await replacePair(files, second);
    expect(tls.reloadNow()).toBe(true);
    release!();
    const answer = await held;
    expect(answer.serial).toBe(serialOf(first));
    expect(answer.connection).toBe('close');
    expect((await get('/')).serial).toBe(serialOf(second));
    agent.destroy();
  }, 60_000);

  it('a client CA swap leaves an idle connection the new bundle trusts open (told to close on its next request), and closes one it no longer trusts', async () => {
    const { files: paths, oldCa, newCa, oldClient } = await clientCaRotation();
    const caFile = paths.ca;
    const initial = readTlsFiles(paths);
    const server = createServer({ ...initial, requestCert: true, rejectUnauthorized: false }, (req, res) => {
      res.end((req.socket as unknown as { authorized: boolean }).authorized ? 'authorized' : 'unauthorized');
    });
    // As the webhook's (src/webhook/tls.ts): an idle connection is not closed by the keep-alive timeout meanwhile.
    server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
    const tls = reloadOnChange(server, paths, initial, { pollMs: 60_000 });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    const agent = new Agent({
      keepAlive: true,
      maxSockets: 1,
      rejectUnauthorized: false,
      cert: oldClient.certPem,
      key: oldClient.keyPem,
    });
    const get = () =>
      new Promise<{ body: string; localPort: number; connection: string | undefined }>((resolve, reject) => {
        const req = httpsRequest({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
          let body = '';
          const localPort = res.socket.localPort!;
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve({ body, localPort, connection: res.headers.connection }));
        });
        req.on('error', reject);
        req.end();
      });

    const idleInAgent = async () => Object.values(agent.freeSockets).flat().length === 1;
    const first = await get();
    expect(first).toMatchObject({ body: 'authorized', connection: 'keep-alive' });
    await until('the connection is idle in the agent', idleInAgent);
    // The bundle widens (old+new): the idle connection stays open and is still trusted.
    await replace(caFile, oldCa.certPem + newCa.certPem);
    expect(tls.reloadNow()).toBe(true);
    const widened = await get();
    expect(widened).toEqual({ body: 'authorized', localPort: first.localPort, connection: 'close' });
    // A new connection (the last was told to close); the bundle narrows to the new CA only.
    const reconnected = await get();
    expect(reconnected.localPort).not.toBe(first.localPort);
    await until('the new connection is idle in the agent', idleInAgent);
    await replace(caFile, newCa.certPem);
    expect(tls.reloadNow()).toBe(true);
    // The idle connection of a client the new bundle no longer trusts is closed by the swap: the next
    // request handshakes anew, and the handshake refuses the certificate.
    await until(
      'the client saw its idle connection closed',
      async () => Object.values(agent.freeSockets).flat().length === 0,
    );
    const narrowed = await get();
    expect(narrowed.localPort).not.toBe(reconnected.localPort);
    expect(narrowed.body).toBe('unauthorized');
    // A fresh handshake says the same.
    expect(await authorizedAs(port, oldClient)).toBe('unauthorized');
    agent.destroy();
  }, 60_000);
});
