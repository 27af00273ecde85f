/**
 * The decision parts of the controller's secure /metrics (src/controller/metrics-access.ts): the bearer
 * token header, 401/403/500/200 from the reviews' answers, the cache of allowed tokens (by hash,
 * bounded, expiring, refusals never kept) and concurrent scrapes sharing one review. The reviews are
 * functions recorded here; test/e2e/project-metrics.test.ts runs them against the real apiserver.
 */
import { describe, expect, it } from 'vitest';
import {
  bearerToken,
  decide,
  ExpiringCache,
  MetricsAccess,
  type AccessReviews,
  type Authentication,
  type Authorization,
  type ReviewedUser,
} from '../../src/controller/metrics-access.js';

/** Reviews answering from tables, counting calls; a token or user missing from a table is refused. */
function reviews(
  users: Record<string, ReviewedUser>,
  allowed: Set<string>,
  failing: { authn?: boolean; authz?: boolean } = {},
) {
  const calls = { authenticate: [] as string[], authorize: [] as string[] };
  const r: AccessReviews = {
    async authenticate(token): Promise<Authentication> {
      calls.authenticate.push(token);
      if (failing.authn) throw new Error('connect ECONNREFUSED');
      const user = users[token];
      return user ? { authenticated: true, user } : { authenticated: false, error: 'invalid bearer token' };
    },
    async authorize(user, path, verb): Promise<Authorization> {
      calls.authorize.push(`${user.username} ${verb} ${path}`);
      if (failing.authz) throw new Error('503 Service Unavailable');
      return allowed.has(user.username) ? { allowed: true } : { allowed: false, reason: 'no RBAC policy matched' };
    },
  };
  return { reviews: r, calls };
}

const PROM = { username: 'system:serviceaccount:monitoring:prometheus', groups: ['system:serviceaccounts'] };
const ALICE = { username: 'alice', groups: ['tenants'] };
const USERS = { 'prom-token': PROM, 'alice-token': ALICE };

describe('bearerToken', () => {
  it('takes the token of a Bearer header, the scheme in any case', () => {
    expect(bearerToken('Bearer abc.def')).toBe('abc.def');
    expect(bearerToken('bearer  abc ')).toBe('abc');
  });
  it('is undefined for no header, another scheme, an empty token or two words', () => {
    for (const h of [undefined, '', 'Basic dXNlcjpwYXNz', 'Bearer', 'Bearer ', 'Bearer a b', 'abc'])
      expect(bearerToken(h), String(h)).toBeUndefined();
  });
});

describe('decide', () => {
  it('401 when the token is not accepted, 403 when the user may not get /metrics, 200 when both pass', () => {
    expect(decide({ authenticated: false, error: 'expired' }, undefined)).toMatchObject({
      status: 401,
      message: expect.stringContaining('expired'),
    });
    const forbidden = decide(
      { authenticated: true, user: ALICE },
      { allowed: false, reason: 'no RBAC policy matched' },
    );
    expect(forbidden).toMatchObject({ status: 403, user: 'alice' });
    expect(forbidden.message).toBe(
      'Forbidden: user "alice" may not get /metrics (no RBAC policy matched); bind it to the ClusterRole tenantgate-metrics-reader',
    );
    expect(decide({ authenticated: true, user: PROM }, { allowed: true })).toMatchObject({
      status: 200,
      user: PROM.username,
    });
  });
});

describe('MetricsAccess', () => {
  it('401 without a token, asking the apiserver nothing', async () => {
    const { reviews: r, calls } = reviews(USERS, new Set([PROM.username]));
    const access = new MetricsAccess(r);
    expect((await access.check(undefined)).status).toBe(401);
    expect((await access.check('Basic x')).status).toBe(401);
    expect(calls.authenticate).toEqual([]);
  });

  it('401 for a token the TokenReview refuses, 403 for a user the SubjectAccessReview refuses, 200 for an allowed one', async () => {
    const { reviews: r, calls } = reviews(USERS, new Set([PROM.username]));
    const access = new MetricsAccess(r);
    expect((await access.check('Bearer forged')).status).toBe(401);
    expect((await access.check('Bearer alice-token')).status).toBe(403);
    expect(await access.check('Bearer prom-token')).toMatchObject({ status: 200, user: PROM.username });
    expect(calls.authorize).toEqual(['alice get /metrics', `${PROM.username} get /metrics`]);
  });

  it('keeps an allowed token for the TTL: repeated scrapes cost no review until it expires', async () => {
    let now = 1_000;
    const { reviews: r, calls } = reviews(USERS, new Set([PROM.username]));
    const access = new MetricsAccess(r, { ttlMs: 60_000, now: () => now });
    for (let i = 0; i < 4; i++) {
      expect(await access.check('Bearer prom-token')).toMatchObject({
        status: 200,
        ...(i > 0 ? { cached: true } : {}),
      });
      now += 15_000 - 1; // a scrape every 15 s
    }
    expect(calls.authenticate).toHaveLength(1);
    now += 10;
    const again = await access.check('Bearer prom-token');
    expect(again.status).toBe(200);
    expect(again.cached).toBeUndefined();
    expect(calls.authenticate).toHaveLength(2);
    expect(calls.authorize).toHaveLength(2);
  });

  it('never keeps a refusal: a user granted access a moment later gets in at the next scrape', async () => {
    const allowed = new Set<string>();
    const { reviews: r, calls } = reviews(USERS, allowed);
    const access = new MetricsAccess(r);
    expect((await access.check('Bearer prom-token')).status).toBe(403);
    expect((await access.check('Bearer forged')).status).toBe(401);
    expect((await access.check('Bearer forged')).status).toBe(401);
    allowed.add(PROM.username);
    expect((await access.check('Bearer prom-token')).status).toBe(200);
    expect(calls.authenticate).toEqual(['prom-token', 'forged', 'forged', 'prom-token']);
    expect(access.cachedTokens).toBe(1);
  });

  it('fails closed with 500 when a review fails, and keeps nothing', async () => {
    for (const failing of [{ authn: true }, { authz: true }]) {
      const { reviews: r } = reviews(USERS, new Set([PROM.username]), failing);
      const access = new MetricsAccess(r);
      const d = await access.check('Bearer prom-token');
      expect(d.status).toBe(500);
      expect(d.message).toMatch(failing.authn ? /TokenReview failed.*ECONNREFUSED/ : /SubjectAccessReview failed.*503/);
      expect(access.cachedTokens).toBe(0);
    }
  });

  it('concurrent scrapes with one token share one pair of reviews', async () => {
    const { reviews: r, calls } = reviews(USERS, new Set([PROM.username]));
    const access = new MetricsAccess(r);
    const all = await Promise.all([1, 2, 3].map(() => access.check('Bearer prom-token')));
    expect(all.map((d) => d.status)).toEqual([200, 200, 200]);
    expect(calls.authenticate).toHaveLength(1);
  });

  it('holds at most maxEntries tokens, dropping the oldest', async () => {
    const users: Record<string, ReviewedUser> = {};
    for (let i = 0; i < 5; i++) users[`t${i}`] = { username: `sa${i}` };
    const { reviews: r, calls } = reviews(users, new Set(Object.values(users).map((u) => u.username)));
    const access = new MetricsAccess(r, { maxEntries: 3 });
    for (let i = 0; i < 5; i++) await access.check(`Bearer t${i}`);
    expect(access.cachedTokens).toBe(3);
    await access.check('Bearer t4'); // kept
    await access.check('Bearer t0'); // dropped: reviewed again
    expect(calls.authenticate).toEqual(['t0', 't1', 't2', 't3', 't4', 't0']);
  });
});

describe('ExpiringCache', () => {
  it('forgets an entry at its expiry and refreshes the order on set', () => {
    let now = 0;
    const cache = new ExpiringCache<number>(100, 2, () => now);
    cache.set('a', 1);
    cache.set('b', 2);
    cache.set('a', 3); // a is now the newest
    cache.set('c', 4); // b goes
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([3, undefined, 4]);
    now = 100;
    expect(cache.get('a')).toBeUndefined();
  });
});
