/**
 * The member's enforced limit E of a fleet-budgeted Project (docs/adr/0039-fleet-budgets.md):
 * per fleet-budgeted resource, the most this cluster lets the
 * Project allocate. Kept in the project's headroom-ledger ConfigMap (src/ledger/ledger.ts) as the data
 * key `fleet`, next to the Q5 reservations, so that every reservation batch and every change of E
 * are serialised by the ledger's one compare-and-swap: a give-back lowering E conflicts with a
 * reservation computed against the old E, and a reservation conflicts with a raise it did not see.
 *
 * The record also holds the idempotency keys of the hub grants already applied (a bounded list), so a
 * grant raises E once whichever replica (or retry) applies it.
 *
 * This module is the record, pure (encode/decode, raise, lower); src/fleet/enforced-limit.ts stores it
 * with the ledger's CAS. The webhook's headroom guard (src/webhook/headroom/guard.ts) reads E from the
 * ledger state it decides against; the ledger (src/ledger/ledger.ts) keeps the key across writes and
 * is not released while E is nonzero.
 *
 * Fail closed: no record means E = 0 for every fleet-budgeted resource (growth asks the hub); a record
 * that cannot be read counts as E = 0 for decisions, and as holding room for the ledger's release
 * (the ledger is never released while it may hold a nonzero E).
 */
import { Quantity } from '../quantity/quantity.js';
import { formatResources, parseResources } from '../validate/resource-lists.js';
import type { Resources } from '../validate/types.js';
import type { Violation } from '../validate/types.js';

/** What of a ledger state the record is read from (src/ledger/ledger.ts's LedgerState). */
interface WithRecord {
  /** The `fleet` data key's text. */
  readonly fleet?: string | undefined;
}

/** The ledger ConfigMap's data key holding the record. */
export const FLEET_DATA_KEY = 'fleet';
/** How many applied grant keys a record keeps (the newest): far more than a grant's retries span. */
export const MAX_GRANT_KEYS = 64;

const ZERO = Quantity.zero();

export interface EnforcedRecord {
  /** E per fleet-budgeted resource; a resource not named is 0. */
  readonly enforced: Resources;
  /** Idempotency keys of the hub grants already added to `enforced`, oldest first. */
  readonly grants: readonly string[];
  /**
   * How many times E was lowered. A webhook reads it before asking the hub for a grant and raises E
   * only if it is unchanged: a grant the controller's give-back may have returned meanwhile (it lowered
   * E, then wrote the hub) is never added to E.
   */
  readonly generation: number;
}

export type DecodedRecord =
  { readonly ok: true; readonly record: EnforcedRecord } | { readonly ok: false; readonly problem: string };

export const EMPTY_RECORD: EnforcedRecord = { enforced: new Map(), grants: [], generation: 0 };

/** The record in the ledger's `fleet` data key; absent text is the empty record (E = 0). */
export function decodeRecord(text: string | undefined, project: string): DecodedRecord {
  if (text === undefined || text === '') return { ok: true, record: EMPTY_RECORD };
  const where = `the headroom ledger of project ${project}, data key ${FLEET_DATA_KEY}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return { ok: false, problem: `${where} is not JSON: ${(err as Error).message}` };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return {
      ok: false,
      problem: `${where} is ${JSON.stringify(parsed)}; allowed: {"enforced": {resource: quantity}, "grants": [keys]}`,
    };
  const { enforced, grants, generation } = parsed as { enforced?: unknown; grants?: unknown; generation?: unknown };
  const sink: Violation[] = [];
  const limits = parseResources(enforced as Record<string, string> | undefined, ['enforced'], sink, where);
  if (sink.length > 0) return { ok: false, problem: sink.map((v) => v.message).join('; ') };
  for (const [resource, q] of limits)
    if (q.sign() < 0)
      return { ok: false, problem: `${where}: enforced.${resource} is ${q.toString()}; allowed: a quantity ≥ 0` };
  if (grants !== undefined && !(Array.isArray(grants) && grants.every((g) => typeof g === 'string')))
    return { ok: false, problem: `${where}: grants is ${JSON.stringify(grants)}; allowed: a list of strings` };
  if (
    generation !== undefined &&
    !(typeof generation === 'number' && Number.isSafeInteger(generation) && generation >= 0)
  )
    return { ok: false, problem: `${where}: generation is ${JSON.stringify(generation)}; allowed: a whole number ≥ 0` };
  return {
    ok: true,
    record: { enforced: limits, grants: (grants as string[] | undefined) ?? [], generation: generation ?? 0 },
  };
}

export function encodeRecord(record: EnforcedRecord): string {
  return JSON.stringify({
    enforced: formatResources(record.enforced),
    grants: record.grants,
    ...(record.generation > 0 ? { generation: record.generation } : {}),
  });
}

/** E for decisions: the record's limits, or none (E = 0) when it cannot be read. */
export function enforcedOf(state: WithRecord, project: string): Resources {
  const decoded = decodeRecord(state.fleet, project);
  return decoded.ok ? decoded.record.enforced : new Map();
}

/** Whether the ledger may still hold a nonzero E (then it must not be released): an unreadable record does. */
export function holdsEnforcedLimit(state: WithRecord): boolean {
  const decoded = decodeRecord(state.fleet, '');
  if (!decoded.ok) return true;
  for (const q of decoded.record.enforced.values()) if (q.sign() > 0) return true;
  return false;
}

/**
 * The record after a grant `key` of `by`; unchanged (same object) when the key was applied already, or
 * when `ifGeneration` is given and E was lowered since (the grant may have been given back).
 */
export function raisedRecord(
  record: EnforcedRecord,
  key: string,
  by: Resources,
  ifGeneration?: number,
): EnforcedRecord {
  if (record.grants.includes(key)) return record;
  if (ifGeneration !== undefined && record.generation !== ifGeneration) return record;
  const enforced = new Map(record.enforced);
  for (const [resource, q] of by) if (q.sign() > 0) enforced.set(resource, (enforced.get(resource) ?? ZERO).add(q));
  return { enforced, grants: [...record.grants, key].slice(-MAX_GRANT_KEYS), generation: record.generation };
}

/** The record with each resource of `to` at most that value (a resource not named keeps its limit). */
export function loweredRecord(record: EnforcedRecord, to: Resources): EnforcedRecord {
  const enforced = new Map(record.enforced);
  let changed = false;
  for (const [resource, q] of to) {
    const current = enforced.get(resource) ?? ZERO;
    const target = q.sign() < 0 ? ZERO : q;
    if (target.cmp(current) < 0) {
      changed = true;
      if (target.isZero()) enforced.delete(resource);
      else enforced.set(resource, target);
    }
  }
  // Nothing lower: the same record, so that the caller writes nothing.
  return changed ? { ...record, enforced, generation: record.generation + 1 } : record;
}
