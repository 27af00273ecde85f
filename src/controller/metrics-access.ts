/**
 * Who may read the controller's /metrics (every project's name, tenant, budget and usage), decided as
 * controller-runtime's secure metrics do (docs/adr/0033-observability.md): the request's
 * bearer token goes to a TokenReview, the user it names to a SubjectAccessReview for `get` on the
 * non-resource URL /metrics. No token or a token the apiserver does not accept: 401; a user RBAC does
 * not allow: 403; a review that fails: 500 (fail closed, never the metrics). Allowed answers are kept
 * `ttlMs` per token (by its SHA-256, never the token itself) in a cache of at most `maxEntries`, so a
 * scrape every 15 s costs two API calls a minute per scraper, not two per scrape. Refusals are not
 * kept: granting access takes effect at the next scrape, revoking it within `ttlMs`.
 * The reviews themselves are injected (src/kube/access-reviews.ts calls the apiserver).
 */
import { createHash } from 'node:crypto';
import { describeError } from '../kube/errors.js';
import type { AccessReviews, Authentication, Authorization, ReviewedUser } from '../kube/access-reviews.js';

export type { AccessReviews, Authentication, Authorization, ReviewedUser };

export interface AccessDecision {
  status: 200 | 401 | 403 | 500;
  /** Why, for the response body (plain text) and the log; never anything of the metrics. */
  message: string;
  user?: string;
  /** Whether the decision came from the cache. */
  cached?: boolean;
}

export const METRICS_PATH = '/metrics';
const DEFAULT_ALLOW_TTL_MS = 60_000;
const DEFAULT_MAX_ENTRIES = 256;

/** The token of an `Authorization: Bearer <token>` header (scheme matched without case), else undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1];
}

/** The decision for a token's reviews (pure): 401 unless authenticated, 403 unless allowed, else 200. */
export function decide(authn: Authentication, authz: Authorization | undefined, path = METRICS_PATH): AccessDecision {
  if (!authn.authenticated)
    return {
      status: 401,
      message:
        `Unauthorized: the bearer token was not accepted by the apiserver (TokenReview` +
        `${authn.error ? `: ${authn.error}` : ''})`,
    };
  const who = JSON.stringify(authn.user.username);
  if (!authz?.allowed)
    return {
      status: 403,
      user: authn.user.username,
      message:
        `Forbidden: user ${who} may not get ${path}${authz?.reason ? ` (${authz.reason})` : ''}; bind it to the ` +
        `ClusterRole tenantgate-metrics-reader`,
    };
  return { status: 200, user: authn.user.username, message: 'ok' };
}

/**
 * At most `max` entries that expire `ttlMs` after they were put; the oldest goes first when full. A cache
 * timeout: the system clock, not the reconciles' (src/clock.ts).
 */
export class ExpiringCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();
  constructor(
    private readonly ttlMs: number,
    private readonly max: number,
    private readonly now: () => number = Date.now,
  ) {}

  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expires <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, { value, expires: this.now() + this.ttlMs });
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }

  get size(): number {
    return this.entries.size;
  }
}

export interface MetricsAccessOptions {
  ttlMs?: number;
  maxEntries?: number;
  now?: () => number;
}

export class MetricsAccess {
  private readonly allowed: ExpiringCache<string>;
  /** Reviews in flight per token hash: concurrent scrapes with one token share them. */
  private readonly inFlight = new Map<string, Promise<AccessDecision>>();

  constructor(
    private readonly reviews: AccessReviews,
    options: MetricsAccessOptions = {},
  ) {
    this.allowed = new ExpiringCache(
      options.ttlMs ?? DEFAULT_ALLOW_TTL_MS,
      options.maxEntries ?? DEFAULT_MAX_ENTRIES,
      options.now,
    );
  }

  /** The decision for a request's Authorization header. */
  async check(authorization: string | undefined): Promise<AccessDecision> {
    const token = bearerToken(authorization);
    if (!token)
      return {
        status: 401,
        message: 'Unauthorized: send a ServiceAccount token as "Authorization: Bearer <token>" (docs/observability.md)',
      };
    const key = createHash('sha256').update(token).digest('hex');
    const user = this.allowed.get(key);
    if (user !== undefined) return { status: 200, user, message: 'ok', cached: true };
    let pending = this.inFlight.get(key);
    if (!pending) {
      pending = this.review(token).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    const decision = await pending;
    if (decision.status === 200) this.allowed.set(key, decision.user ?? '');
    return decision;
  }

  /** Entries in the cache (tests and the ADR's numbers). */
  get cachedTokens(): number {
    return this.allowed.size;
  }

  private async review(token: string): Promise<AccessDecision> {
    let authn: Authentication;
    try {
      authn = await this.reviews.authenticate(token);
    } catch (err) {
      return { status: 500, message: `Internal error: the TokenReview failed (${describeError(err)}); try again` };
    }
    if (!authn.authenticated) return decide(authn, undefined);
    try {
      return decide(authn, await this.reviews.authorize(authn.user, METRICS_PATH, 'get'));
    } catch (err) {
      return {
        status: 500,
        user: authn.user.username,
        message: `Internal error: the SubjectAccessReview failed (${describeError(err)}); try again`,
      };
    }
  }
}
