/**
 * One transfer through the fleet's hub (docs/adr/0039-fleet-budgets.md, "The transfer
 * protocol"; docs/adr/0039-fleet-budgets.md): apply a pure transition of the share record
 * (src/fleet/shares.ts) to a Project's FleetBudget with compare-and-swap.
 *
 * - Read the object, compute the transition, PUT the status with the resourceVersion read.
 * - 409: re-read and recompute with the SAME idempotency key.
 * - No answer (a transport error, a timeout): the write may have landed. Re-read: the member's
 *   `lastRequest` = the key means it was stored; otherwise compute again, same key.
 * - At most `maxAttempts` writes, all within `deadlineMs`.
 *
 * The result is stored (with what the write did), refused (the transition's typed refusal: no room,
 * not a member, released…), unusable (no FleetBudget on the hub, or one that cannot be read: fail
 * closed), rejected (the hub answered the write with a refusal other than 409: its admission policy
 * tenantgate-fleet-shares or RBAC), or unreachable (with the last record read, if any, to name who held the room). When
 * a write was confirmed only by a re-read, `results` lists every transition sent with the key: which one
 * landed is not known, so a caller raises its enforced limit by what all of them granted at least
 * (`surelyGranted`) — less than the hub stored only leaves share unenforced, never overspent.
 *
 * Used by the webhook's headroom guard (src/webhook/headroom/guard.ts) for growth beyond the enforced limit.
 */
import { within } from '../deadline.js';
import { Quantity } from '../quantity/quantity.js';
import type { Resources } from '../validate/types.js';
import { statusCode, describeError } from '../kube/errors.js';
import {
  parseFleetBudget,
  withShareRecordStatus,
  FLEET_NAMESPACE,
  type FleetBudgetObject,
} from './fleet-budget-object.js';
import { HubConflict, type HubClient } from './hub-client.js';
import { memberShare, type Applied, type Granted, type ShareRecord, type ShareRefusal } from './shares.js';

export type HubOutcome<R extends Applied> =
  /** The hub stored the write (or had stored it: a duplicate key). `results`: see surelyGranted. */
  | {
      readonly kind: 'stored';
      readonly record: ShareRecord;
      readonly results: readonly R[];
      readonly confirmedBy: 'answer' | 're-read' | 'duplicate' | 'dry-run';
    }
  | { readonly kind: 'refused'; readonly refusal: ShareRefusal; readonly record: ShareRecord }
  /** No FleetBudget for the project, or one whose spec/status cannot be read. Nothing was written. */
  | { readonly kind: 'unusable'; readonly problems: readonly string[] }
  /**
   * The hub answered the write with a refusal other than a conflict (its admission policy, RBAC): nothing was stored.
   */
  | { readonly kind: 'rejected'; readonly problems: readonly string[]; readonly record: ShareRecord }
  | { readonly kind: 'unreachable'; readonly reason: string; readonly lastRead?: ShareRecord };

export interface HubTransactionOptions {
  /** The member cluster writing (its entry's lastRequest is checked after a lost answer). */
  member: string;
  /** The idempotency key of this write; every retry reuses it. */
  key: string;
  /** Wall-clock budget of the whole transaction, reads included. */
  deadlineMs: number;
  /** Writes attempted at most (default 10, as Q5 does with its headroom ledger). */
  maxAttempts?: number;
  /** Backoff between 409s: base × 2^(attempt−1), jittered, at most maxMs (default 5 ms, 100 ms). */
  backoff?: { baseMs: number; maxMs: number };
  now?: () => number;
  /** Aborts the transaction (its callers have gone): it ends as unreachable. */
  signal?: AbortSignal;
  /** Read and compute only: the result is what a write would store ('dry-run'), nothing is written. */
  dryRun?: boolean;
  /** After each hub call: its kind and outcome, for metrics. */
  onCall?: (call: {
    op: 'read' | 'write';
    outcome: 'ok' | 'not-found' | 'conflict' | 'error' | 'timeout';
    seconds: number;
  }) => void;
}

class TimedOut extends Error {}

/** An answer the hub gave (an HTTP status other than 409): the write was not stored. */
const answered = (err: unknown): boolean => {
  const code = statusCode(err);
  return code !== undefined && code !== 409 && code !== 429 && code < 500;
};

/**
 * Apply `transition` (a pure function of the record, e.g. `(l) => requestGrowth(l, member, {id: key, …})`)
 * to `project`'s FleetBudget on the hub.
 */
export async function applyOnHub<R extends Applied>(
  hub: HubClient,
  project: string,
  transition: (record: ShareRecord) => R | ShareRefusal,
  options: HubTransactionOptions,
): Promise<HubOutcome<R>> {
  const now = options.now ?? Date.now;
  const end = now() + options.deadlineMs;
  const left = () => end - now();
  const maxAttempts = options.maxAttempts ?? 10;
  const backoff = options.backoff ?? { baseMs: 5, maxMs: 100 };
  const owner = `FleetBudget ${FLEET_NAMESPACE}/${project}`;
  /** Every transition sent whose answer was lost: one of them may have landed. */
  const unanswered: R[] = [];
  let lastRead: ShareRecord | undefined;
  let lastProblem = 'no attempt';
  const timed = async <T>(
    op: 'read' | 'write',
    call: () => Promise<T>,
    outcomeOf: (v: T) => 'ok' | 'not-found' = () => 'ok',
  ): Promise<T> => {
    const started = now();
    try {
      const v = await within(call(), left(), options.signal, () => new TimedOut());
      options.onCall?.({ op, outcome: outcomeOf(v), seconds: (now() - started) / 1000 });
      return v;
    } catch (err) {
      options.onCall?.({
        op,
        outcome: err instanceof TimedOut ? 'timeout' : err instanceof HubConflict ? 'conflict' : 'error',
        seconds: (now() - started) / 1000,
      });
      throw err;
    }
  };
  const unreachable = (): HubOutcome<R> => ({
    kind: 'unreachable',
    reason: lastProblem,
    ...(lastRead ? { lastRead } : {}),
  });

  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    let object: FleetBudgetObject | undefined;
    try {
      object = await timed(
        'read',
        () => hub.read(project),
        (o) => (o ? 'ok' : 'not-found'),
      );
    } catch (err) {
      lastProblem =
        err instanceof TimedOut
          ? `no answer within ${options.deadlineMs} ms`
          : `reading ${owner}: ${describeError(err)}`;
      if (err instanceof TimedOut || answered(err)) return unreachable();
      await pause(attempt, backoff, left);
      continue;
    }
    if (!object)
      return {
        kind: 'unusable',
        problems: [
          `${owner} does not exist on the hub: the platform renders one for every Project with spec.fleet ` +
            `(docs/fleet.md)`,
        ],
      };
    const parsed = parseFleetBudget(object);
    if (!parsed.ok) return { kind: 'unusable', problems: parsed.problems };
    lastRead = parsed.record;
    const mine = memberShare(parsed.record, options.member);
    if (unanswered.length > 0 && mine.lastRequest === options.key)
      return { kind: 'stored', record: parsed.record, results: unanswered, confirmedBy: 're-read' };
    const result = transition(parsed.record);
    if (!result.ok) return { kind: 'refused', refusal: result, record: parsed.record };
    if (result.duplicate)
      return { kind: 'stored', record: parsed.record, results: unanswered, confirmedBy: 'duplicate' };
    if (options.dryRun) return { kind: 'stored', record: result.record, results: [result], confirmedBy: 'dry-run' };
    try {
      await timed('write', () => hub.writeStatus(withShareRecordStatus(object, result.record)));
      return { kind: 'stored', record: result.record, results: [result], confirmedBy: 'answer' };
    } catch (err) {
      if (err instanceof HubConflict) {
        lastProblem = `${owner} changed on the hub ${attempt} time(s) while this write was computed`;
        await pause(attempt, backoff, left);
        continue;
      }
      if (answered(err)) {
        // The hub answered and refused (its admission policy, RBAC, a validation): nothing was stored.
        return {
          kind: 'rejected',
          problems: [`the hub refused the write of ${owner}: ${describeError(err)}`],
          record: parsed.record,
        };
      }
      // No answer: it may have landed. Remember what was sent and find out by reading again.
      unanswered.push(result);
      lastProblem =
        err instanceof TimedOut
          ? `no answer within ${options.deadlineMs} ms`
          : `writing ${owner}: ${describeError(err)}`;
      if (err instanceof TimedOut) {
        // Past the deadline nothing more can be learned in time.
        return unreachable();
      }
    }
  }
  return unreachable();
}

async function pause(attempt: number, backoff: { baseMs: number; maxMs: number }, left: () => number): Promise<void> {
  const ms = Math.min(backoff.maxMs, backoff.baseMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
  await new Promise((r) => setTimeout(r, Math.max(0, Math.min(ms, left()))));
}

/**
 * What a stored growth surely granted: per resource, the least any of `results` granted (a resource
 * some result did not grant counts 0). One result (an answered write): exactly what it granted.
 */
export function surelyGranted(results: readonly Granted[]): Resources {
  if (results.length === 0) return new Map();
  const out = new Map<string, Quantity>(results[0]!.granted);
  for (const r of results.slice(1)) {
    for (const [resource, q] of out) {
      const other = r.granted.get(resource);
      if (!other) out.delete(resource);
      else if (other.cmp(q) < 0) out.set(resource, other);
    }
  }
  return out;
}
