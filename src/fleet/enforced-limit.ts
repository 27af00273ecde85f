/**
 * The member's enforced limit E stored in the project's headroom-ledger ConfigMap
 * (docs/adr/0039-fleet-budgets.md): raise it by a hub grant once, lower it before a give-back,
 * each a compare-and-swap loop on the ledger that keeps its reservations as they are, so that a
 * change of E and a Q5 reservation batch are serialised by one CAS. The record is
 * src/fleet/enforced-record.ts. The webhook's headroom guard raises E after a transfer through the hub.
 */
import type { Resources } from '../validate/types.js';
import { LedgerConflict, type LedgerState, type LedgerStore } from '../ledger/ledger.js';
import { decodeRecord, encodeRecord, loweredRecord, raisedRecord, type EnforcedRecord } from './enforced-record.js';

export interface StoreOptions {
  /** CAS attempts before giving up (default 10). */
  maxAttempts?: number;
}

class EnforcedLimitContended extends Error {}

/**
 * A CAS loop on the project's ledger: read, change the record, write it back with the reservations
 * unchanged. `change` returning undefined means nothing to write. An unreadable record is refused (the
 * change would be computed from a limit nobody can read): the operator repairs or deletes the key.
 */
async function updateRecord(
  store: LedgerStore,
  project: string,
  change: (record: EnforcedRecord, state: LedgerState) => EnforcedRecord | undefined,
  options: StoreOptions,
): Promise<{ record: EnforcedRecord; state: LedgerState }> {
  const attempts = options.maxAttempts ?? 10;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const state = await store.read(project);
    const decoded = decodeRecord(state.fleet, project);
    if (!decoded.ok) throw new Error(decoded.problem);
    const next = change(decoded.record, state);
    if (next === undefined || next === decoded.record) return { record: decoded.record, state };
    try {
      const written = await store.write(project, { ...state, fleet: encodeRecord(next) }, state.entries);
      return { record: next, state: written };
    } catch (err) {
      if (!(err instanceof LedgerConflict)) throw err;
    }
  }
  throw new EnforcedLimitContended(
    `the headroom ledger of project ${project} changed concurrently ${attempts} times while its enforced fleet ` +
      `limit was updated`,
  );
}

/**
 * Raise E by what the hub stored for grant `key` (call only after the hub stored it), once: a key the
 * record lists already changes nothing. With `ifGeneration` (the record's generation read before the
 * hub write), nothing is raised when E was lowered since: `applied` says whether the key is in E now.
 */
export async function raiseEnforced(
  store: LedgerStore,
  project: string,
  key: string,
  by: Resources,
  options: StoreOptions & { ifGeneration?: number } = {},
): Promise<{ record: EnforcedRecord; state: LedgerState; applied: boolean }> {
  const done = await updateRecord(
    store,
    project,
    (record) => raisedRecord(record, key, by, options.ifGeneration),
    options,
  );
  return { ...done, applied: done.record.grants.includes(key) };
}

/**
 * Lower E (before writing a give-back or an offer to the hub). `lowerTo` sees the ledger state the
 * write is computed against (its live reservations included) and returns the new limits; on a
 * conflict it is asked again with the newer state, so a reservation that landed meanwhile is seen.
 */
export function lowerEnforced(
  store: LedgerStore,
  project: string,
  lowerTo: (state: LedgerState, record: EnforcedRecord) => Resources,
  options: StoreOptions = {},
): Promise<{ record: EnforcedRecord; state: LedgerState }> {
  return updateRecord(store, project, (record, state) => loweredRecord(record, lowerTo(state, record)), options);
}
