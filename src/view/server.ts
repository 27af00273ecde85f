/**
 * The budget view's HTTPS edge: TLS, the front proxy's authentication, the HTTP answer. The
 * kube-apiserver proxies view.tenantgate.io requests here (APIService) after it authenticated and
 * authorised the caller with RBAC; it presents its proxy client certificate, signed by the requestheader
 * CA, and names the caller in the requestheader headers (X-Remote-User, X-Remote-Group). This server
 * trusts those headers only on a connection whose client certificate that CA signed (and whose common
 * name is an allowed one, when the apiserver lists any), as every aggregated API server does. The
 * answers are api.ts's (pure).
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type * as k8s from '@kubernetes/client-node';
import {
  loadServingCertificate,
  reloadOnChange,
  type ServingCertificate,
  type TlsMaterial,
} from '../certs/reloading-tls.js';
import { describeError } from '../kube/errors.js';
import { processNow } from '../clock.js';
import { listen } from '../listen.js';
import { handle, status, type Identity, type ViewResponse, type ViewSource } from './api.js';

/** What kube-system/extension-apiserver-authentication says about the front proxy. */
export interface FrontProxyAuth {
  /** PEM: the CA that signs the front proxy's client certificate. */
  ca: string;
  /** Common names the front proxy's certificate may have; empty: any the CA signed. */
  allowedNames: string[];
  usernameHeaders: string[];
  groupHeaders: string[];
}

const AUTHENTICATION_CONFIGMAP = { namespace: 'kube-system', name: 'extension-apiserver-authentication' };

/** Parses the ConfigMap's data (pure); throws naming the key that is missing or malformed. */
export function frontProxyAuthFrom(data: Record<string, string> | undefined): FrontProxyAuth {
  const where = `ConfigMap ${AUTHENTICATION_CONFIGMAP.namespace}/${AUTHENTICATION_CONFIGMAP.name}`;
  const ca = data?.['requestheader-client-ca-file'];
  if (!ca)
    throw new Error(
      `${where}: no requestheader-client-ca-file: run kube-apiserver with --requestheader-client-ca-file (and ` +
        `the other --requestheader-* flags) to serve aggregated APIs`,
    );
  const strings = (key: string, fallback: string[]): string[] => {
    const text = data?.[key];
    if (text === undefined || text === '') return fallback;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`${where}: ${key} is ${JSON.stringify(text)}, expected a JSON list of strings`);
    }
    if (!Array.isArray(parsed) || !parsed.every((s) => typeof s === 'string'))
      throw new Error(`${where}: ${key} is ${text}, expected a JSON list of strings`);
    return parsed;
  };
  const auth = {
    ca,
    allowedNames: strings('requestheader-allowed-names', []),
    usernameHeaders: strings('requestheader-username-headers', []),
    groupHeaders: strings('requestheader-group-headers', []),
  };
  if (auth.usernameHeaders.length === 0)
    throw new Error(
      `${where}: requestheader-username-headers is empty: run kube-apiserver with ` +
        `--requestheader-username-headers=X-Remote-User`,
    );
  return auth;
}

/** Reads the ConfigMap (needs the kube-system Role extension-apiserver-authentication-reader). */
export async function readFrontProxyAuth(kubeConfig: k8s.KubeConfig): Promise<FrontProxyAuth> {
  const k8sApi = await import('@kubernetes/client-node');
  const core = kubeConfig.makeApiClient(k8sApi.CoreV1Api);
  const cm = await core.readNamespacedConfigMap(AUTHENTICATION_CONFIGMAP);
  return frontProxyAuthFrom(cm.data);
}

/** The peer of a TLS connection, as far as the front-proxy check needs it. */
export interface PeerCertificate {
  /** The chain verified against the requestheader CA. */
  authorized: boolean;
  /** Subject common name ('' without a certificate). */
  commonName: string;
  /** Why not authorised (Node's verification error). */
  error?: string;
}

/**
 * The caller of a proxied request, or why it is refused (pure). Header names are matched without
 * case; a header may repeat (one group each) as the apiserver sends them.
 */
export function callerOf(
  peer: PeerCertificate,
  headers: Record<string, string[] | undefined>,
  auth: FrontProxyAuth,
): Identity | { refused: string } {
  if (!peer.commonName && !peer.authorized)
    return {
      refused:
        'no client certificate: only the kube-apiserver (its front-proxy client certificate) may call the budget view',
    };
  if (!peer.authorized)
    return {
      refused:
        `client certificate ${JSON.stringify(peer.commonName)} is not signed by the requestheader CA (` +
        `${peer.error ?? 'unverified'})`,
    };
  if (auth.allowedNames.length > 0 && !auth.allowedNames.includes(peer.commonName)) {
    return {
      refused:
        `client certificate common name ${JSON.stringify(peer.commonName)} is not one of ` +
        `requestheader-allowed-names (${auth.allowedNames.join(', ')})`,
    };
  }
  const values = (names: string[]) => names.flatMap((n) => headers[n.toLowerCase()] ?? []);
  const username = values(auth.usernameHeaders).find((u) => u !== '');
  if (!username) return { refused: `no user in ${auth.usernameHeaders.join(', ')}: the front proxy named no caller` };
  return { username, groups: values(auth.groupHeaders).filter((g) => g !== '') };
}

export type ViewServerOptions = ServingCertificate & {
  port: number;
  host: string;
  /** The front proxy's trust; re-read every `refreshMs` when `reload` is given. */
  auth: FrontProxyAuth;
  reload?: () => Promise<FrontProxyAuth>;
  refreshMs?: number;
  source: ViewSource;
  log?: (message: string, fields?: Record<string, unknown>) => void;
  /** Each answered request (tests count them). */
  onRequest?: (r: { user?: string; path: string; status: number }) => void;
};

export interface ViewServer {
  port: number;
  close(): Promise<void>;
}

export async function serveView(o: ViewServerOptions): Promise<ViewServer> {
  let auth = o.auth;
  const log = o.log ?? (() => {});
  // The serving pair is reloaded when its files change; the front proxy's CA when the ConfigMap does.
  const serving = loadServingCertificate(o);
  const contextOptions = (m: TlsMaterial) => ({ cert: m.cert, key: m.key, ca: auth.ca });
  const server: Server = createServer(
    { ...contextOptions(serving.material), requestCert: true, rejectUnauthorized: false },
    (req, res) => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      let answer: ViewResponse;
      let user: string | undefined;
      try {
        const socket = req.socket as TLSSocket;
        const cert = socket.getPeerCertificate();
        const peer: PeerCertificate = {
          authorized: socket.authorized,
          commonName: [cert?.subject?.CN ?? ''].flat()[0] ?? '',
          ...(socket.authorizationError ? { error: String(socket.authorizationError) } : {}),
        };
        const caller = callerOf(peer, req.headersDistinct, auth);
        if ('refused' in caller) {
          answer = status(401, 'Unauthorized', caller.refused);
          log(`view: refused ${req.method} ${path}: ${caller.refused}`);
        } else {
          user = caller.username;
          answer = handle(
            { method: req.method ?? 'GET', path, accept: req.headers.accept ?? '', user: caller, at: processNow() },
            o.source,
          );
        }
      } catch (err) {
        answer = status(500, 'InternalError', `budget view: ${describeError(err)}`);
        log(`view: ${req.method} ${path} failed: ${describeError(err)}`);
      }
      write(res, answer, req);
      o.onRequest?.({ ...(user ? { user } : {}), path, status: answer.status });
    },
  );
  const tls = serving.files
    ? reloadOnChange(server, serving.files, serving.material, { log: (m) => log(`view: ${m}`), contextOptions })
    : undefined;
  const timer = o.reload
    ? setInterval(() => {
        o.reload!().then(
          (next) => {
            const caChanged = next.ca !== auth.ca;
            auth = next;
            if (!caChanged) return;
            if (tls) tls.apply();
            else server.setSecureContext(contextOptions(serving.material));
          },
          (err: unknown) =>
            log(`view: could not re-read the front proxy's CA (keeping the one loaded): ${describeError(err)}`),
        );
      }, o.refreshMs ?? 600_000)
    : undefined;
  timer?.unref();
  const listening = await listen(server, o.port, o.host);
  return {
    port: listening.port,
    async close() {
      if (timer) clearInterval(timer);
      await listening.close();
    },
  };
}

function write(res: ServerResponse, answer: ViewResponse, req: IncomingMessage): void {
  const body = JSON.stringify(answer.body);
  res.writeHead(answer.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}
