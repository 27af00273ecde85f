/**
 * Who may call POST /validate and /mutate: with a client CA configured (`--client-ca`), only a caller
 * presenting a certificate that CA signed — the apiserver, which presents one through its
 * `--admission-control-config-file` (a WebhookAdmissionConfiguration's kubeConfigFile) — and, when
 * allowed names are configured, only one whose common name is among them. Anything else is answered
 * 401/403 before the body is decided: no rule runs, nothing is reserved (docs/design.md "Who may spend
 * headroom", ADR 0034). The decision is a pure function of what TLS verified; the socket is read at the edge.
 */
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';

export interface ClientAuthPolicy {
  /** Common names a verified client certificate may carry; empty: any certificate the client CA signed. */
  allowedNames: readonly string[];
}

/** What the TLS handshake established about the caller. */
export interface PeerIdentity {
  /** Whether the caller sent a certificate at all. */
  presented: boolean;
  /** Whether it chains to the client CA (Node's `socket.authorized`). */
  verified: boolean;
  /** OpenSSL's reason when not verified (e.g. UNABLE_TO_VERIFY_LEAF_SIGNATURE). */
  verifyError?: string | undefined;
  commonName?: string | undefined;
}

export type ClientAuthResult = { ok: true; name: string } | { ok: false; code: 401 | 403; error: string };

/** The verdict on a caller. Pure. */
export function authorizeClient(peer: PeerIdentity, policy: ClientAuthPolicy): ClientAuthResult {
  if (!peer.presented) {
    return {
      ok: false,
      code: 401,
      error:
        'client certificate required: only the Kubernetes API server may send admission reviews here (it ' +
        'presents a certificate signed by the webhook\'s client CA, see docs/design.md "Who may spend headroom")',
    };
  }
  if (!peer.verified) {
    return {
      ok: false,
      code: 401,
      error:
        `client certificate${peer.commonName ? ` CN=${peer.commonName}` : ''} is not signed by the webhook's ` +
        `client CA (${peer.verifyError ?? 'not verified'})`,
    };
  }
  const name = peer.commonName ?? '';
  if (policy.allowedNames.length > 0 && !policy.allowedNames.includes(name)) {
    return {
      ok: false,
      code: 403,
      error:
        `client certificate CN=${JSON.stringify(name)} is not allowed to send admission reviews; allowed: ` +
        `${policy.allowedNames.map((n) => JSON.stringify(n)).join(', ')}`,
    };
  }
  return { ok: true, name };
}

/**
 * The certificate each connection presented, read once per connection: Node's getPeerCertificate
 * builds the whole certificate object (with three fingerprints) on every call, which was the largest
 * single cost of a review as shipped. Sound because the first read also disables TLS renegotiation on
 * that socket (the only way a peer could present another certificate later on the same connection);
 * the apiserver never renegotiates. Whether it is trusted is read on every request: a client CA
 * rotation judges a kept-alive connection again (src/certs/reloading-tls.ts).
 */
const presentedCertificates = new WeakMap<object, { presented: boolean; commonName?: string | undefined }>();

/** What the request's TLS socket verified (a plain-HTTP socket presents nothing). */
export function peerIdentity(req: IncomingMessage): PeerIdentity {
  const socket = req.socket as Partial<TLSSocket> | undefined;
  if (!socket) return { presented: false, verified: false };
  let presented = presentedCertificates.get(socket);
  if (presented === undefined) {
    socket.disableRenegotiation?.();
    presented = readPresentedCertificate(socket);
    presentedCertificates.set(socket, presented);
  }
  if (!presented.presented) return { presented: false, verified: false };
  return {
    presented: true,
    verified: socket.authorized === true,
    verifyError: socket.authorizationError === undefined ? undefined : String(socket.authorizationError),
    commonName: presented.commonName,
  };
}

function readPresentedCertificate(socket: Partial<TLSSocket>): { presented: boolean; commonName?: string | undefined } {
  if (typeof socket.getPeerCertificate !== 'function') return { presented: false };
  const cert = socket.getPeerCertificate();
  if (!cert || Object.keys(cert).length === 0) return { presented: false };
  const cn = cert.subject?.CN;
  return { presented: true, commonName: Array.isArray(cn) ? cn[0] : cn };
}

/** The names `--client-allowed-names` lists ("a,b" → ["a","b"]); blanks dropped. */
export function parseAllowedNames(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * How long a reservation lives when no client CA is configured: every caller is then unauthenticated,
 * so a review anyone forged holds headroom at most this long instead of `reservationTtlSeconds`.
 */
export const UNAUTHENTICATED_RESERVATION_TTL_SECONDS = 5;

/** The guard's reservation TTL: the configured one, bounded when callers are not authenticated. */
export function reservationTtlMs(
  configuredSeconds: number,
  clientAuth: boolean,
  unauthenticatedSeconds = UNAUTHENTICATED_RESERVATION_TTL_SECONDS,
): number {
  return (clientAuth ? configuredSeconds : Math.min(configuredSeconds, unauthenticatedSeconds)) * 1000;
}
