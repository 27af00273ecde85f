/**
 * Reading a headroom ledger's ConfigMap data (src/ledger/ledger.ts): the reservations (data key
 * `reservations`, a JSON array of LedgerEntry) and the settled marks (data key `settled`), and their types.
 * Pure.
 *
 * Fails closed: a ledger that does not read back as what tenantgate writes (hand-edited, truncated)
 * throws LedgerUnreadable, naming the ConfigMap, the key and what is wrong. Reading it as empty would
 * drop its live reservations and settled marks, and a replica whose cache lags could then admit against
 * the headroom they held (docs/adr/0003-headroom-ledger.md). The webhook refuses with [Q5] every decision
 * that needs such a ledger until an operator repairs it (docs/design.md, "An unreadable ledger").
 */
import { Quantity } from '../quantity/quantity.js';

/** A recorded ResourceQuota write: what Q2 and Q3 read of the new object (null: the quota was deleted). */
export type LedgerQuotaWrite = {
  spec: { hard?: Record<string, string | number>; scopes?: string[]; scopeSelector?: unknown };
} | null;

export interface LedgerEntry {
  namespace: string;
  quota?: string;
  /** The namespace's share after the change; merged per (namespace, quota) with max, never lowered. */
  allocation: Record<string, string>;
  /** The newest quota write admitted for this key. */
  write?: LedgerQuotaWrite;
  /**
   * Every spec the quota may have while the entry lives: each admitted write for this key and the
   * object each one replaced (null: no quota). Any of them may be what the apiserver stores (a write
   * may lose a conflict at its resourceVersion or be refused by a later admission plugin).
   */
  versions?: LedgerQuotaWrite[];
  /** resourceVersion of the object the newest write replaced (absent for a create). */
  basedOn?: string;
  /**
   * A Namespace CREATE only: the uids of namespaces of that name the admitting replicas' caches still
   * showed. While the entry lives, the quotas a cache shows in that namespace may be a namespace's that
   * is gone (the new one has none of them): they are read as possibly absent.
   */
  replaces?: string[];
  /**
   * The admitting replicas' watermarks when they admitted (per stream the highest, over the merged
   * admissions): only an object stored after them can be the one the entry stands for (settling, ADR 0003).
   * Absent: the entry leaves only by expiry.
   */
  seen?: StreamMarks;
  /** Epoch milliseconds. */
  created: number;
  expires: number;
}

/**
 * Per watch stream of the replicas' caches, an etcd revision (decimal string): how far a replica's
 * watch must have delivered before it may decide from a ledger whose entries were settled
 * (docs/adr/0003-headroom-ledger.md). Kept in the ConfigMap's data key `settled`.
 */
export interface StreamMarks {
  Namespace: string;
  ResourceQuota: string;
  /**
   * Epoch ms: the latest expiry of an entry settled so far. Until then the marks count like a live
   * entry (the ledger is not released, so a re-created ledger cannot lose them).
   */
  until?: number;
}

/** The ConfigMap data key of the reservations. */
export const RESERVATIONS_DATA_KEY = 'reservations';
/** The ConfigMap data key of the settled marks. */
export const SETTLED_DATA_KEY = 'settled';

/** A ledger ConfigMap whose data does not read back as a ledger; `message` says which, where and what. */
export class LedgerUnreadable extends Error {
  constructor(
    /** `namespace/name` of the ConfigMap. */
    readonly configMap: string,
    readonly key: string,
    readonly problem: string,
  ) {
    super(`ConfigMap ${configMap}, data key ${key}: ${problem}`);
  }
}

/** What a field of the ledger's data must be; a message naming the field and its value when it is not. */
type Check = (value: unknown, field: string) => string | undefined;

const shown = (value: unknown): string => {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
};
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const wrong = (field: string, value: unknown, allowed: string) => `${field} is ${shown(value)}, allowed: ${allowed}`;

const text: Check = (v, f) => (typeof v === 'string' && v !== '' ? undefined : wrong(f, v, 'a non-empty string'));
const instant: Check = (v, f) =>
  typeof v === 'number' && Number.isFinite(v) ? undefined : wrong(f, v, 'a number (epoch milliseconds)');
const revision: Check = (v, f) =>
  typeof v === 'string' && /^\d+$/.test(v) ? undefined : wrong(f, v, 'a resourceVersion (decimal digits)');

const marks: Check = (v, f) => {
  if (!isRecord(v)) return wrong(f, v, 'an object {Namespace, ResourceQuota[, until]}');
  return (
    revision(v.Namespace, `${f}.Namespace`) ??
    revision(v.ResourceQuota, `${f}.ResourceQuota`) ??
    (v.until === undefined ? undefined : instant(v.until, `${f}.until`))
  );
};

const allocation: Check = (v, f) => {
  if (!isRecord(v)) return wrong(f, v, 'an object of resource names to quantities');
  for (const [resource, amount] of Object.entries(v)) {
    if (typeof amount !== 'string' || Quantity.tryParse(amount) === undefined)
      return wrong(`${f}.${resource}`, amount, 'a quantity such as "500m" or "2Gi"');
  }
  return undefined;
};

const quotaWrite: Check = (v, f) => {
  if (v === null) return undefined;
  if (!isRecord(v) || !isRecord(v.spec)) return wrong(f, v, 'null (no quota) or an object with a spec');
  return v.spec.hard === undefined || isRecord(v.spec.hard)
    ? undefined
    : wrong(`${f}.spec.hard`, v.spec.hard, 'an object');
};

const listOf =
  (each: Check): Check =>
  (v, f) => {
    if (!Array.isArray(v)) return wrong(f, v, 'an array');
    for (const [i, item] of v.entries()) {
      const problem = each(item, `${f}[${i}]`);
      if (problem) return problem;
    }
    return undefined;
  };

/** Each field of a LedgerEntry, whether it is required, and what it must be. */
const ENTRY_FIELDS: ReadonlyArray<[keyof LedgerEntry, boolean, Check]> = [
  ['namespace', true, text],
  ['quota', false, text],
  ['allocation', true, allocation],
  ['write', false, quotaWrite],
  ['versions', false, listOf(quotaWrite)],
  ['basedOn', false, text],
  ['replaces', false, listOf(text)],
  ['seen', false, marks],
  ['created', true, instant],
  ['expires', true, instant],
];

const entry: Check = (v, f) => {
  if (!isRecord(v)) return wrong(f, v, 'an object (a reservation)');
  for (const [name, required, check] of ENTRY_FIELDS) {
    const value = v[name];
    if (value === undefined) {
      if (required) return `${f}.${name} is missing`;
    } else {
      const problem = check(value, `${f}.${name}`);
      if (problem) return problem;
    }
  }
  return undefined;
};

const parsedJson = (configMap: string, key: string, data: string): unknown => {
  try {
    return JSON.parse(data) as unknown;
  } catch (err) {
    throw new LedgerUnreadable(configMap, key, `not JSON (${(err as Error).message})`);
  }
};

/**
 * The reservations of the ledger ConfigMap `configMap` (`namespace/name`, for the message), from its
 * data key `reservations`. Throws LedgerUnreadable when the key is missing, is not JSON, or an entry is
 * not what tenantgate writes.
 */
export function parseEntries(configMap: string, data: string | undefined): LedgerEntry[] {
  const key = RESERVATIONS_DATA_KEY;
  if (data === undefined) throw new LedgerUnreadable(configMap, key, 'missing (a ledger always has it, "[]" at least)');
  const parsed = parsedJson(configMap, key, data);
  const problem = listOf(entry)(parsed, 'reservations');
  if (problem) throw new LedgerUnreadable(configMap, key, problem);
  return parsed as LedgerEntry[];
}

/**
 * The settled marks of the ledger ConfigMap `configMap`, from its data key `settled` (absent: none).
 * Throws LedgerUnreadable when the key is there but does not read as marks.
 */
export function settledOf(configMap: string, data: string | undefined): { settledThrough?: StreamMarks } {
  if (data === undefined) return {};
  const parsed = parsedJson(configMap, SETTLED_DATA_KEY, data);
  const problem = marks(parsed, 'settled');
  if (problem) throw new LedgerUnreadable(configMap, SETTLED_DATA_KEY, problem);
  const m = parsed as StreamMarks;
  return {
    settledThrough: {
      Namespace: m.Namespace,
      ResourceQuota: m.ResourceQuota,
      ...(m.until !== undefined ? { until: m.until } : {}),
    },
  };
}
