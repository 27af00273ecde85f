/**
 * One HTTPS server's TLS material kept current without a restart (docs/adr/0034-certificates-and-client-identity.md):
 * the certificate, key and optional CA bundle files are polled; when one changes, all are read again,
 * checked (the key matches the certificate, every PEM block parses) and swapped in with
 * `setSecureContext`. A pair that is half-written or invalid is ignored, the previous material kept and
 * a line logged; the next change retries. Connections made before a swap stay open until their next
 * request, which is answered with `Connection: close`, so the request after it handshakes with the new
 * material; after a client CA change that request is judged by the new bundle (the peer certificate is
 * verified again). An idle connection is closed by a swap only when the new client CA bundle no longer
 * trusts its certificate: a client may be sending on it at that moment, and a POST lost that way is
 * not retried (the apiserver's admission call would fail), but that request would be refused anyway.
 * Shared by the webhook, the budget view and the controller's /metrics.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync, unwatchFile, watchFile, type Stats } from 'node:fs';
import type { ServerResponse } from 'node:http';
import type { Server } from 'node:https';
import type { SecureContextOptions, TLSSocket } from 'node:tls';

/** Paths of PEM files: serving certificate (chain), its key, and optionally a CA bundle to verify clients with. */
export interface TlsFiles {
  cert: string;
  key: string;
  ca?: string;
}

/** The PEM text of those files. */
export interface TlsMaterial {
  cert: string;
  key: string;
  ca?: string;
}

/** Where a serving certificate comes from: files (reloaded when they change) or PEM text (fixed for the process). */
export type ServingCertificate = { certFile: string; keyFile: string } | { cert: string; key: string };

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;

/** The certificates of a PEM bundle; throws naming `what` when one is cut off or does not parse, or there is none. */
function pemCertificates(text: string, what: string): X509Certificate[] {
  const blocks = [...text.matchAll(PEM_BLOCK)].map((m) => m[0]);
  const begins = text.match(/-----BEGIN /g)?.length ?? 0;
  if (begins !== blocks.length)
    throw new Error(
      `${what}: ${begins - blocks.length} PEM block(s) without an END line (file cut off or still being written)`,
    );
  const certs = blocks.filter((b) => b.startsWith('-----BEGIN CERTIFICATE-----'));
  if (certs.length === 0) throw new Error(`${what}: no PEM CERTIFICATE block`);
  return certs.map((pem, i) => {
    try {
      return new X509Certificate(pem);
    } catch (err) {
      throw new Error(`${what}: certificate ${i + 1} of ${certs.length} does not parse: ${(err as Error).message}`);
    }
  });
}

/**
 * Checks material before it is served (pure): the certificate parses and its key matches, the CA bundle parses. Throws
 * naming the file.
 */
function checkTlsMaterial(m: TlsMaterial, files: TlsFiles): void {
  const [leaf] = pemCertificates(m.cert, files.cert);
  let key;
  try {
    key = createPrivateKey(m.key);
  } catch (err) {
    throw new Error(`${files.key}: not a PEM private key: ${(err as Error).message}`);
  }
  if (!leaf!.checkPrivateKey(key))
    throw new Error(
      `${files.key} is not the key of the certificate in ${files.cert} (serial ${leaf!.serialNumber}): a pair ` +
        `half-written or mixed up`,
    );
  if (m.ca !== undefined) pemCertificates(m.ca, files.ca!);
}

/** Reads and checks the files; throws naming the file that is missing or wrong. */
export function readTlsFiles(files: TlsFiles): TlsMaterial {
  const read = (path: string) => {
    try {
      return readFileSync(path, 'utf8');
    } catch (err) {
      throw new Error(`cannot read ${path}: ${(err as Error).message}`);
    }
  };
  const m: TlsMaterial = { cert: read(files.cert), key: read(files.key), ...(files.ca ? { ca: read(files.ca) } : {}) };
  checkTlsMaterial(m, files);
  return m;
}

/** The material of a serving certificate, and the files to keep it current from when it came from files. */
export function loadServingCertificate(c: ServingCertificate): { material: TlsMaterial; files?: TlsFiles } {
  if ('certFile' in c) {
    const files = { cert: c.certFile, key: c.keyFile };
    return { material: readTlsFiles(files), files };
  }
  return { material: { cert: c.cert, key: c.key } };
}

export interface ReloadingTls {
  /** The material being served. */
  current(): TlsMaterial;
  /** Reads the files now; true when they were swapped in, false when kept (logged). */
  reloadNow(): boolean;
  /** Applies the current material again (e.g. after what `contextOptions` adds changed). */
  apply(): void;
  /** Stops polling (also done when the server closes). */
  stop(): void;
}

export interface ReloadOptions {
  log?: (message: string) => void;
  /** How often each file is stat'ed. */
  pollMs?: number;
  /** The secure context for the material (default: cert, key and ca as they are). */
  contextOptions?: (m: TlsMaterial) => SecureContextOptions;
}

const GENERATION = Symbol('tls generation');

/** Keeps `server` serving the files' current material; `initial` is what it was created with. */
export function reloadOnChange(
  server: Server,
  files: TlsFiles,
  initial: TlsMaterial,
  o: ReloadOptions = {},
): ReloadingTls {
  const log = o.log ?? (() => {});
  const contextOptions =
    o.contextOptions ??
    ((m: TlsMaterial) => ({ cert: m.cert, key: m.key, ...(m.ca !== undefined ? { ca: m.ca } : {}) }));
  let current = initial;
  let generation = 0;
  const inFlight = new Set<ServerResponse>();
  const closeAfter = (res: ServerResponse) => {
    if (!res.headersSent) res.setHeader('connection', 'close');
  };
  /**
   * The generation whose material first carried the current client CA bundle, and that bundle's certificates (parsed
   * once per change).
   */
  let caGeneration = 0;
  let clientCas: X509Certificate[] = [];
  const apply = () => {
    server.setSecureContext({ ...contextOptions(current), minVersion: 'TLSv1.2' });
    generation++;
    // Kept-alive connections were made with the old material and keep it as long as the client keeps
    // using them: busy ones answer `Connection: close` now, idle ones on their next request (the
    // request listener below), so the client does not reuse them and its next request handshakes anew.
    // Idle ones are not closed here: the client may be writing a request on one right now.
    for (const res of inFlight) closeAfter(res);
  };
  const connections = new Set<TLSSocket>();
  server.on('secureConnection', (socket: TLSSocket & { [GENERATION]?: number }) => {
    socket[GENERATION] = generation;
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  /**
   * After a client CA change: an idle connection whose certificate the new bundle does not trust is
   * closed (its next request would be refused; closed, the client reconnects with the certificate it
   * has now). Trusted idle ones stay open; busy ones are judged on their next request (none: they were
   * told to close).
   */
  const closeUntrustedIdle = () => {
    const busy = new Set([...inFlight].map((res) => res.socket));
    for (const socket of connections) {
      if (busy.has(socket)) continue;
      judgeByCurrentBundle(socket, clientCas);
      if (!socket.authorized && socket.getPeerX509Certificate()) socket.destroy();
    }
  };
  server.prependListener('request', (req, res) => {
    const socket = req.socket as TLSSocket & { [GENERATION]?: number };
    const made = socket[GENERATION] ?? generation;
    if (made < generation) closeAfter(res);
    if (made < caGeneration && current.ca !== undefined) judgeByCurrentBundle(socket, clientCas);
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
  });
  const reloadNow = () => {
    let next: TlsMaterial;
    try {
      next = readTlsFiles(files);
    } catch (err) {
      log(`keeping the previous TLS certificate (serial ${serial(current.cert)}): ${(err as Error).message}`);
      return false;
    }
    if (next.cert === current.cert && next.key === current.key && next.ca === current.ca) return false;
    const caChanged = next.ca !== current.ca;
    current = next;
    try {
      apply();
      if (caChanged) {
        caGeneration = generation;
        // Parsed and checked by readTlsFiles already: this cannot throw here.
        clientCas = current.ca !== undefined ? pemCertificates(current.ca, files.ca ?? 'client CA bundle') : [];
        if (current.ca !== undefined) closeUntrustedIdle();
      }
    } catch (err) {
      log(`keeping the previous TLS certificate: ${(err as Error).message}`);
      return false;
    }
    const caCount = files.ca ? pemCertificates(current.ca ?? '', files.ca).length : 0;
    const ca = files.ca ? `, client CA bundle ${files.ca} with ${caCount} certificate(s)` : '';
    log(`reloaded TLS certificate from ${files.cert} (serial ${serial(current.cert)}${ca})`);
    return true;
  };
  // A Secret volume update swaps a symlink: the inode changes even when size and mtime do not.
  const onChange = (curr: Stats, prev: Stats) => {
    if (
      curr.mtimeMs !== prev.mtimeMs ||
      curr.ino !== prev.ino ||
      curr.size !== prev.size ||
      curr.ctimeMs !== prev.ctimeMs
    )
      reloadNow();
  };
  const watched = [files.cert, files.key, ...(files.ca ? [files.ca] : [])];
  for (const file of watched) watchFile(file, { interval: o.pollMs ?? 1000 }, onChange);
  const stop = () => {
    for (const file of watched) unwatchFile(file, onChange);
  };
  server.on('close', stop);
  return { current: () => current, reloadNow, apply, stop };
}

/**
 * Why `leaf` is not trusted by `bundle` at `atMs` (undefined: trusted): a certificate of the bundle
 * issued and signed it, and it is within its validity. A chain through an intermediate is not trusted
 * here (the handshake of a new connection verifies those). Pure.
 */
function untrustedBecause(leaf: X509Certificate, bundle: readonly X509Certificate[], atMs: number): string | undefined {
  if (atMs < Date.parse(leaf.validFrom) || atMs > Date.parse(leaf.validTo))
    return `CERT_NOT_VALID_NOW (${leaf.validFrom} to ${leaf.validTo})`;
  return bundle.some((ca) => leaf.checkIssued(ca) && leaf.verify(ca.publicKey))
    ? undefined
    : 'UNABLE_TO_VERIFY_LEAF_SIGNATURE (not signed by a certificate of the current client CA bundle)';
}

/**
 * A connection made before the client CA bundle changed: what its handshake verified is set to what the
 * current bundle says of its certificate, so readers of `socket.authorized` (the webhook's client
 * authentication, the budget view) judge its request by the bundle in force.
 */
function judgeByCurrentBundle(socket: TLSSocket, bundle: readonly X509Certificate[]): void {
  const leaf = socket.getPeerX509Certificate();
  if (!leaf) return;
  const reason = untrustedBecause(leaf, bundle, Date.now());
  socket.authorized = reason === undefined;
  if (reason !== undefined) socket.authorizationError = new Error(reason);
}

function serial(certPem: string): string {
  try {
    return new X509Certificate(certPem).serialNumber;
  } catch {
    return 'unreadable';
  }
}
