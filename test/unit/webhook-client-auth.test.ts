/**
 * Only the API server may send admission reviews (ADR 0034): the decision on a caller as a pure
 * function, and the webhook's HTTPS surface with a client CA — refused callers get 401/403 and no
 * decision runs; probes stay open; the apiserver's certificate is served as before.
 */
import { TEST_NOW } from '../support/instant.js';
import { mkdtemp, readFile } from 'node:fs/promises';
import { once } from 'node:events';
import type { Server } from 'node:https';
import { connect as connectTls } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  generateWebhookCerts,
  generateWebhookClientCerts,
  writeKeyPair,
  type WebhookClientFiles,
} from '../../src/certs/files.js';
import type { RuntimeOptions, WebhookCliOptions } from '../../src/cli/options.js';
import { registerWebhookCommand } from '../../src/cli/webhook.js';
import { createCA, signCert } from '../../src/certs/pki.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { authorizeClient, parseAllowedNames, peerIdentity, reservationTtlMs } from '../../src/webhook/client-auth.js';
import { WebhookMetrics } from '../../src/webhook/metrics.js';
import { createApp } from '../../src/webhook/server.js';
import {
  startWebhook,
  webhookServing,
  wireGuard,
  type RunningWebhook,
  type SnapshotSource,
} from '../../src/webhook/start.js';
import { serveHttps } from '../../src/webhook/tls.js';
import { httpsCall } from '../support/devcluster/https-get.js';
import { aNamespaceCreateRequest } from '../support/fixtures.js';

describe('authorizeClient (pure)', () => {
  const open = { allowedNames: [] };
  const named = { allowedNames: ['kube-apiserver-webhook-client'] };

  it('refuses a caller without a certificate with 401', () => {
    const result = authorizeClient({ presented: false, verified: false }, open);
    expect(result).toMatchObject({ ok: false, code: 401 });
    expect(!result.ok && result.error).toMatch(/client certificate required/);
  });

  it('refuses a certificate the client CA did not sign with 401, naming it and the reason', () => {
    const result = authorizeClient(
      { presented: true, verified: false, verifyError: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', commonName: 'mallory' },
      open,
    );
    expect(result).toMatchObject({ ok: false, code: 401 });
    expect(!result.ok && result.error).toMatch(
      /CN=mallory is not signed by the webhook's client CA \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\)/,
    );
  });

  it('accepts any verified certificate without allowed names, only the allowed names with them (else 403)', () => {
    expect(authorizeClient({ presented: true, verified: true, commonName: 'anyone' }, open)).toEqual({
      ok: true,
      name: 'anyone',
    });
    expect(
      authorizeClient({ presented: true, verified: true, commonName: 'kube-apiserver-webhook-client' }, named),
    ).toEqual({ ok: true, name: 'kube-apiserver-webhook-client' });
    const other = authorizeClient({ presented: true, verified: true, commonName: 'tenant-pod' }, named);
    expect(other).toMatchObject({ ok: false, code: 403 });
    expect(!other.ok && other.error).toMatch(
      /CN="tenant-pod" is not allowed .*allowed: "kube-apiserver-webhook-client"/,
    );
    expect(authorizeClient({ presented: true, verified: true }, named)).toMatchObject({ ok: false, code: 403 });
  });

  it('parses --client-allowed-names; bounds the reservation TTL only without client authentication', () => {
    expect(parseAllowedNames(' a, b ,,')).toEqual(['a', 'b']);
    expect(parseAllowedNames(undefined)).toEqual([]);
    expect(reservationTtlMs(30, true)).toBe(30_000);
    expect(reservationTtlMs(30, false)).toBe(5_000);
    expect(reservationTtlMs(3, false)).toBe(3_000);
  });

  it('reads nothing from a socket that is not TLS', () => {
    expect(peerIdentity({ socket: {} } as never)).toEqual({ presented: false, verified: false });
  });

  it('reads the certificate once per connection and disables renegotiation on it first; whether it is trusted, on every request', () => {
    const calls: string[] = [];
    const socket = {
      authorized: true,
      disableRenegotiation: () => void calls.push('disableRenegotiation'),
      getPeerCertificate: () => (
        calls.push('getPeerCertificate'),
        { subject: { CN: 'kube-apiserver-webhook-client' } }
      ),
    };
    const first = peerIdentity({ socket } as never);
    const second = peerIdentity({ socket } as never);
    expect(first).toEqual({
      presented: true,
      verified: true,
      verifyError: undefined,
      commonName: 'kube-apiserver-webhook-client',
    });
    expect(second).toEqual(first);
    expect(calls).toEqual(['disableRenegotiation', 'getPeerCertificate']);
    // Trust is read on every request: a client CA rotation may judge the connection again.
    socket.authorized = false;
    expect(peerIdentity({ socket } as never)).toMatchObject({
      presented: true,
      verified: false,
      commonName: 'kube-apiserver-webhook-client',
    });
    expect(calls).toEqual(['disableRenegotiation', 'getPeerCertificate']);
    // Another connection is read on its own.
    const other = { ...socket, authorized: false, authorizationError: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' };
    expect(peerIdentity({ socket: other } as never)).toMatchObject({
      verified: false,
      verifyError: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    });
    expect(calls.filter((c) => c === 'getPeerCertificate')).toHaveLength(2);
  });
});

describe('the webhook with a client CA', () => {
  let server: Server;
  let port: number;
  let serverCa: Buffer;
  let apiserver: WebhookClientFiles;
  let otherCaClient: { cert: string; key: string };
  let wrongName: { cert: string; key: string };
  let metrics: WebhookMetrics;
  const decided: string[] = [];

  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tg-client-auth-'));
    const serving = await generateWebhookCerts(join(dir, 'serving'));
    serverCa = await readFile(serving.caCert);
    apiserver = await generateWebhookClientCerts(join(dir, 'client'), ['*']);
    // A certificate with the right name from another CA, and one from the right CA with another name.
    otherCaClient = await writeKeyPair(
      dir,
      'other',
      await signCert(await createCA('someone-else'), { commonName: apiserver.name, usage: 'client' }),
    );
    const clientCa = {
      certPem: await readFile(apiserver.clientCaCert, 'utf8'),
      keyPem: await readFile(apiserver.clientCaKey, 'utf8'),
    };
    wrongName = await writeKeyPair(
      dir,
      'wrong-name',
      await signCert(clientCa, { commonName: 'tenant-pod', usage: 'client' }),
    );
    metrics = new WebhookMetrics();
    const policy = { allowedNames: [apiserver.name] };
    const app = createApp({
      config: DEFAULT_CONFIG,
      snapshot: MemorySnapshot.of({}),
      ready: () => true,
      metrics,
      decide: (_ctx, req) => {
        decided.push(req.uid);
        return { violations: [], warnings: [] };
      },
      authenticate: (req) => authorizeClient(peerIdentity(req), policy),
    });
    server = serveHttps({ cert: serving.cert, key: serving.key, clientCa: apiserver.clientCaCert }, app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as { port: number }).port;
  });

  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const review = (uid: string, kind = 'Namespace') =>
    JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid,
        kind: { group: '', version: 'v1', kind },
        operation: 'CREATE',
        name: 'web-x',
        userInfo: { username: 'carol', groups: ['acme:web-admins'] },
        object: { metadata: { name: 'web-x' } },
      },
    });

  async function call(
    method: string,
    path: string,
    client?: { cert: string; key: string },
    body?: string,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: string }> {
    const tls = client ? { cert: await readFile(client.cert), key: await readFile(client.key) } : undefined;
    return httpsCall(`https://127.0.0.1:${port}${path}`, {
      method,
      ca: serverCa,
      client: tls,
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
  }

  it('answers 401 to a caller without a client certificate, on both paths and both HTTP surfaces, deciding nothing', async () => {
    for (const path of ['/validate', '/mutate', '/validate/']) {
      const answer = await call('POST', path, undefined, review(`none${path}`));
      expect(answer.status, path).toBe(401);
      expect(JSON.parse(answer.body).error).toMatch(/client certificate required/);
    }
    // A gzip-declared body goes through Express's body parser: refused before it too.
    const viaExpress = await call('POST', '/validate', undefined, review('none-gzip'), { 'content-encoding': 'gzip' });
    expect(viaExpress.status).toBe(401);
    expect(decided.filter((uid) => uid.startsWith('none'))).toEqual([]);
  });

  it('answers 401 to a certificate from another CA and 403 to the right CA with a name not allowed', async () => {
    const other = await call('POST', '/validate', otherCaClient, review('other-ca'));
    expect(other.status).toBe(401);
    expect(JSON.parse(other.body).error).toMatch(/is not signed by the webhook's client CA/);
    const named = await call('POST', '/validate', wrongName, review('wrong-name'));
    expect(named.status).toBe(403);
    expect(JSON.parse(named.body).error).toMatch(/CN="tenant-pod" is not allowed/);
    expect(decided).not.toContain('other-ca');
    expect(decided).not.toContain('wrong-name');
    const refused = await metrics.registry.getSingleMetricAsString('tenantgate_webhook_bad_requests_total');
    expect(refused).toMatch(/code="401"\} [1-9]/);
    expect(refused).toMatch(/code="403"\} 1/);
  });

  it("decides the apiserver's reviews as before", async () => {
    const answer = await call('POST', '/validate', apiserver, review('apiserver'));
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).response).toEqual({ uid: 'apiserver', allowed: true });
    expect(decided).toContain('apiserver');
  });

  it('keeps an identity for the life of a connection: a TLS 1.2 renegotiation after the first review is refused', async () => {
    const { cert, key } = { cert: await readFile(apiserver.cert), key: await readFile(apiserver.key) };
    const socket = connectTls({
      host: '127.0.0.1',
      port,
      ca: serverCa,
      cert,
      key,
      servername: 'localhost',
      maxVersion: 'TLSv1.2',
    });
    await once(socket, 'secureConnect');
    const body = review('renegotiate');
    socket.write(
      `POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    const [first] = (await once(socket, 'data')) as [Buffer];
    expect(first.toString('utf8')).toMatch(/^HTTP\/1\.1 200 /);
    expect(decided).toContain('renegotiate');
    // The callback runs only once a renegotiation succeeded; a refused one ends the connection.
    const outcome = await new Promise<string>((resolve) => {
      socket.on('error', (err) => resolve(`error: ${err.message}`));
      socket.on('close', () => resolve('closed'));
      if (
        !socket.renegotiate({ rejectUnauthorized: true }, (err) =>
          resolve(err ? `error: ${err.message}` : 'renegotiated'),
        )
      )
        resolve('not started');
    });
    expect(outcome).not.toBe('renegotiated');
    expect(outcome).not.toBe('not started');
    socket.destroy();
  });

  it('keeps the probes and /metrics open to callers without a certificate (kubelet, Prometheus)', async () => {
    expect((await call('GET', '/healthz')).status).toBe(200);
    expect((await call('GET', '/readyz')).status).toBe(200);
    expect((await call('GET', '/metrics')).status).toBe(200);
  });
});

describe('how long a reservation lives (the wiring in start.ts)', () => {
  const snapshot = MemorySnapshot.of({
    projects: [
      {
        metadata: { name: 'held', uid: 'u' },
        spec: {
          tenant: 'acme',
          owners: [{ kind: 'User', name: 'alice' }],
          quota: { hard: { 'requests.cpu': '2' } },
          namespaceDefaults: { quota: { hard: { 'requests.cpu': '1' } } },
        },
      },
    ],
  });
  const source: SnapshotSource = {
    snapshot,
    synced: true,
    start: () => {},
    waitSynced: async () => {},
    stop: async () => {},
    onEvent: () => {},
  };
  const create = aNamespaceCreateRequest('held-a', 'held');

  it('holds headroom reservationTtlSeconds (30 s) with client authentication, at most 5 s without', async () => {
    for (const authenticated of [true, false]) {
      let clock = 1_000_000;
      const guard = wireGuard({
        config: DEFAULT_CONFIG,
        source,
        metrics: new WebhookMetrics(),
        now: () => clock,
        ...(authenticated
          ? { authenticate: () => ({ ok: true as const, name: 'kube-apiserver-webhook-client' }) }
          : {}),
      });
      const verdict = await guard.decide(
        { at: TEST_NOW, config: DEFAULT_CONFIG, snapshot, user: create.userInfo, pending: guard.pending },
        create,
      );
      expect(verdict.violations).toEqual([]);
      expect(guard.pending.namespaces('held')).toEqual(['held-a']);
      clock += 6_000;
      expect(guard.pending.namespaces('held'), authenticated ? 'authenticated' : 'unauthenticated').toEqual(
        authenticated ? ['held-a'] : [],
      );
      clock += 25_000;
      expect(guard.pending.namespaces('held')).toEqual([]);
    }
  });
});

describe('the shipped entry: `tenantgate webhook --client-ca … --client-allowed-names …`', () => {
  // The flags parsed by the CLI's own command, handed to startWebhook as runWebhook hands them; only the
  // cluster is replaced (a fixed snapshot instead of informers, no ledger).
  let running: RunningWebhook;
  let serverCa: Buffer;
  let apiserver: WebhookClientFiles;
  let wrongName: { cert: string; key: string };
  const decided: string[] = [];

  /** The options `tenantgate webhook ARGS` hands to its action. */
  function parseWebhookFlags(args: string[]): RuntimeOptions & WebhookCliOptions {
    const root = new Command().exitOverride();
    registerWebhookCommand(root);
    let parsed: (RuntimeOptions & WebhookCliOptions) | undefined;
    root.commands
      .find((c) => c.name() === 'webhook')!
      .action((o: RuntimeOptions & WebhookCliOptions) => void (parsed = o));
    root.parse(['webhook', ...args], { from: 'user' });
    return parsed!;
  }

  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tg-client-auth-cli-'));
    const serving = await generateWebhookCerts(join(dir, 'serving'));
    serverCa = await readFile(serving.caCert);
    apiserver = await generateWebhookClientCerts(join(dir, 'client'), ['*']);
    const clientCa = {
      certPem: await readFile(apiserver.clientCaCert, 'utf8'),
      keyPem: await readFile(apiserver.clientCaKey, 'utf8'),
    };
    wrongName = await writeKeyPair(
      dir,
      'wrong-name',
      await signCert(clientCa, { commonName: 'tenant-pod', usage: 'client' }),
    );
    const flags = parseWebhookFlags([
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--cert',
      serving.cert,
      '--key',
      serving.key,
      '--client-ca',
      apiserver.clientCaCert,
      '--client-allowed-names',
      `someone-else, ${apiserver.name}`,
    ]);
    const source: SnapshotSource = {
      snapshot: MemorySnapshot.of({}),
      synced: true,
      start: () => {},
      waitSynced: async () => {},
      stop: async () => {},
      onEvent: () => {},
    };
    running = await startWebhook({
      config: DEFAULT_CONFIG,
      source,
      ledger: null,
      log: () => {},
      onDecision: (d) => void decided.push(d.uid),
      ...webhookServing(flags),
    });
  });

  afterAll(() => running?.stop());

  const review = (uid: string) =>
    JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid,
        kind: { group: '', version: 'v1', kind: 'Namespace' },
        operation: 'CREATE',
        name: 'web-x',
        userInfo: { username: 'carol', groups: [] },
        object: { metadata: { name: 'web-x' } },
      },
    });
  const post = async (uid: string, client: { cert: string; key: string }) =>
    httpsCall(`https://127.0.0.1:${running.port}/validate`, {
      method: 'POST',
      ca: serverCa,
      client: { cert: await readFile(client.cert), key: await readFile(client.key) },
      headers: { 'content-type': 'application/json' },
      body: review(uid),
    });

  it('refuses a certificate from the client CA with a name not in --client-allowed-names (403), deciding nothing', async () => {
    const answer = await post('cli-wrong-name', wrongName);
    expect(answer.status, answer.body).toBe(403);
    expect(JSON.parse(answer.body).error).toMatch(/CN="tenant-pod" is not allowed/);
    expect(decided).not.toContain('cli-wrong-name');
  });

  it('decides a review from the allowed name', async () => {
    const answer = await post('cli-allowed', apiserver);
    expect(answer.status, answer.body).toBe(200);
    expect(JSON.parse(answer.body).response.uid).toBe('cli-allowed');
    expect(decided).toContain('cli-allowed');
  });
});
