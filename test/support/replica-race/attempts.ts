/**
 * The racing tenants' writes, generated from a seed (the same seed, the same run), and how each
 * answer is counted. Pure: no I/O; test/support/replica-race/run.ts sends them.
 */

export type Hard = Record<string, string>;

export type Attempt =
  | { kind: 'namespace-create'; user: string; namespace: string }
  | { kind: 'namespace-delete'; user: string; namespace: string }
  /** Read, then replace with `hard` at the resourceVersion read (create when absent): grows, shrinks or both at once. */
  | { kind: 'quota-write'; user: string; namespace: string; quota: string; hard: Hard }
  /** Read once, then two replaces at that one (stale) resourceVersion, sent together, one per user. */
  | { kind: 'quota-write-pair'; users: [string, string]; namespace: string; quota: string; hards: [Hard, Hard] }
  | { kind: 'quota-delete'; user: string; namespace: string; quota: string };

export interface AttemptPlan {
  users: [string, string];
  /** Namespaces that exist at the start and are never deleted (they hold the pods). */
  anchors: string[];
  /** Namespaces the tenants create and delete. */
  pool: string[];
  quotaNames: string[];
  /** Per budgeted resource, the values a write picks from. */
  values: Record<string, string[]>;
}

/** mulberry32: a small seeded PRNG, so a failing run can be replayed with its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` attempts: ~8 % namespace creates, 4 % namespace deletes, 63 % quota writes, 15 % stale pairs, 10 % quota deletes. */
export function generateAttempts(plan: AttemptPlan, count: number, seed: number): Attempt[] {
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  // Quota writes go to the anchors (which always exist) 60 % of the time, else to the pool.
  const target = () => (random() < 0.6 ? pick(plan.anchors) : pick(plan.pool));
  // Mostly the default quota's name (the one the controller creates), sometimes a second quota.
  const quotaName = () => (random() < 0.7 ? plan.quotaNames[0]! : pick(plan.quotaNames));
  const hard = (): Hard => Object.fromEntries(Object.entries(plan.values).map(([r, vs]) => [r, pick(vs)]));
  const out: Attempt[] = [];
  for (let i = 0; i < count; i++) {
    const user = pick(plan.users);
    const roll = random();
    if (roll < 0.08) out.push({ kind: 'namespace-create', user, namespace: pick(plan.pool) });
    else if (roll < 0.12) out.push({ kind: 'namespace-delete', user, namespace: pick(plan.pool) });
    else if (roll < 0.75)
      out.push({ kind: 'quota-write', user, namespace: target(), quota: quotaName(), hard: hard() });
    else if (roll < 0.9)
      out.push({
        kind: 'quota-write-pair',
        users: plan.users,
        namespace: target(),
        quota: quotaName(),
        hards: [hard(), hard()],
      });
    else out.push({ kind: 'quota-delete', user, namespace: target(), quota: quotaName() });
  }
  return out;
}

/**
 * How one write ended. `refused` carries the rule ids tenantgate's denial names; `fail-closed` is
 * [Q5] (the ledger could not be written in time), the apiserver's "failed calling webhook"
 * (a replica down: failurePolicy Fail) or a replica's "not ready" (its caches are not synced); `other` is the apiserver's own answer (a conflict at a stale
 * resourceVersion, not found, already exists, a terminating namespace, RBAC, quota admission).
 */
export type Outcome =
  | { kind: 'admitted' }
  | { kind: 'refused'; rules: string[] }
  | { kind: 'fail-closed'; why: FailClosed }
  | { kind: 'other'; why: string };

/** [Q5]; the apiserver could not call the webhook; a replica answered that its caches are not synced. */
type FailClosed = 'Q5' | 'webhook-call' | 'not-ready';

export function classifyOutcome(status: number, message: string): Outcome {
  if (status >= 200 && status < 300) return { kind: 'admitted' };
  if (/failed calling webhook/.test(message)) return { kind: 'fail-closed', why: 'webhook-call' };
  if (/denied the request: tenantgate is not ready/.test(message)) return { kind: 'fail-closed', why: 'not-ready' };
  if (/denied the request/.test(message)) {
    const rules = [...new Set([...message.matchAll(/\[([A-Z]\d+)\]/g)].map((m) => m[1]!))];
    if (rules.includes('Q5')) return { kind: 'fail-closed', why: 'Q5' };
    if (rules.length > 0) return { kind: 'refused', rules };
    return { kind: 'other', why: `webhook denial without a rule id: ${message.slice(0, 200)}` };
  }
  if (status === 409 && /the object has been modified/.test(message))
    return { kind: 'other', why: 'conflict (stale resourceVersion)' };
  if (status === 409 && /already exists/.test(message)) return { kind: 'other', why: 'already exists' };
  if (status === 409 && /being deleted|is being terminated/.test(message))
    return { kind: 'other', why: 'namespace terminating' };
  if (status === 403 && /is being terminated|being deleted/.test(message))
    return { kind: 'other', why: 'namespace terminating' };
  if (status === 403 && /exceeded quota/.test(message)) return { kind: 'other', why: 'exceeded quota (apiserver)' };
  if (status === 403) return { kind: 'other', why: 'forbidden (RBAC)' };
  if (status === 404) return { kind: 'other', why: 'not found' };
  return { kind: 'other', why: `HTTP ${status}` };
}

export interface OutcomeCounts {
  writes: number;
  admitted: number;
  /** By the first rule id of the denial (a denial lists every rule it breaks). */
  refused: Record<string, number>;
  failClosed: Record<FailClosed, number>;
  other: Record<string, number>;
}

export function emptyCounts(): OutcomeCounts {
  return { writes: 0, admitted: 0, refused: {}, failClosed: { Q5: 0, 'webhook-call': 0, 'not-ready': 0 }, other: {} };
}

export function countOutcome(counts: OutcomeCounts, outcome: Outcome): void {
  counts.writes += 1;
  if (outcome.kind === 'admitted') counts.admitted += 1;
  else if (outcome.kind === 'refused') counts.refused[outcome.rules[0]!] = (counts.refused[outcome.rules[0]!] ?? 0) + 1;
  else if (outcome.kind === 'fail-closed') counts.failClosed[outcome.why] += 1;
  else counts.other[outcome.why] = (counts.other[outcome.why] ?? 0) + 1;
}
