/**
 * What an admitted change leaves in the headroom ledger (src/ledger/ledger.ts): whether it must be
 * recorded at all, whether it reserves its namespace's share, the entry it becomes, and how an entry
 * for a (namespace, quota) that has one already is merged into it (it never shrinks:
 * docs/adr/0003-headroom-ledger.md). Pure.
 */
import type { LedgerEntry, StreamMarks } from '../../ledger/ledger.js';
import type { Verdict } from '../../validate/admission.js';
import { formatResources, maxResources, parseResources } from '../../validate/resource-lists.js';
import type { Resources } from '../../validate/types.js';
import type { ResourceQuotaObject, Snapshot } from '../../validate/types.js';
import { freshSpecKey, landsLast, specOf, unionVersions, writeVersions } from './quota-versions.js';
import { handledKind, type AdmissionRequest } from '../review.js';
import { maxMarks } from './stream-marks.js';

/**
 * An entry's allocation, parsed once per entry object: every decision of a batch, and of the batches
 * after it while the ledger stays cached, reads all the project's live entries.
 */
const parsedAllocations = new WeakMap<LedgerEntry['allocation'], Resources>();
export function allocationOf(entry: LedgerEntry): Resources {
  let parsed = parsedAllocations.get(entry.allocation);
  if (!parsed) parsedAllocations.set(entry.allocation, (parsed = parseResources(entry.allocation)));
  return parsed;
}

/**
 * `entries` with `entry` merged in: an entry for the same (namespace, quota) keeps the larger
 * allocation of every resource, the later expiry and every version; it stands for the write that can
 * land last (landsLast: the one based on the newer version of the quota, else the new one), which
 * settlement waits to see stored.
 */
export function mergeEntry(entries: readonly LedgerEntry[], entry: LedgerEntry): LedgerEntry[] {
  const at = entries.findIndex((e) => e.namespace === entry.namespace && e.quota === entry.quota);
  if (at < 0) return [...entries, entry];
  const old = entries[at]!;
  const last = old.write !== undefined && entry.write !== undefined ? landsLast(old, entry) : entry;
  const merged: LedgerEntry = {
    ...entry,
    allocation: formatResources(maxResources(allocationOf(old), allocationOf(entry))),
    expires: Math.max(old.expires, entry.expires),
  };
  if (last === old && old.basedOn !== undefined) {
    merged.write = old.write;
    merged.basedOn = old.basedOn;
  }
  // Settling needs every merged admission's marks; one without marks makes the entry leave by expiry only.
  delete merged.seen;
  if (old.seen && entry.seen) merged.seen = maxMarks(old.seen, entry.seen);
  const replaces = [...new Set([...(old.replaces ?? []), ...(entry.replaces ?? [])])];
  if (replaces.length > 0) merged.replaces = replaces;
  if (old.write !== undefined || entry.write !== undefined) {
    merged.versions = unionVersions(
      old.versions ?? (old.write !== undefined ? [old.write] : []),
      entry.versions ?? (entry.write !== undefined ? [entry.write] : []),
    );
    if (entry.write === undefined) merged.write = old.write;
  }
  return entries.toSpliced(at, 1, merged);
}

/**
 * A batch's ledger entries and their reservations by namespace: the max of their allocations (an entry
 * with an empty allocation counts only for a namespace creation) and the older incarnations namespace
 * creations may replace. Counted once from the entries the batch starts from, then one entry at a time
 * as the batch records them (`record` merges the entry and counts it): `mergeEntry` keeps the larger
 * allocation of every resource and every uid, so adding the new entry to what its namespace had gives
 * what counting the merged list again would.
 */
export class LedgerReservations {
  private current: LedgerEntry[];
  private readonly reserved = new Map<string, Resources>();
  private readonly replacedUids = new Map<string, Set<string>>();

  constructor(entries: LedgerEntry[]) {
    this.current = entries;
    for (const e of entries) this.count(e);
  }

  /** The entries so far, the recorded ones merged in. */
  get entries(): LedgerEntry[] {
    return this.current;
  }

  /** Merges `entry` into the entries and counts it. */
  record(entry: LedgerEntry): void {
    this.current = mergeEntry(this.current, entry);
    this.count(entry);
  }

  private count(entry: LedgerEntry): void {
    const r = allocationOf(entry);
    const prev = this.reserved.get(entry.namespace);
    if (r.size > 0 || entry.quota === undefined) this.reserved.set(entry.namespace, prev ? maxResources(prev, r) : r);
    if (entry.quota === undefined && entry.replaces?.length) {
      const uids = this.replacedUids.get(entry.namespace) ?? new Set<string>();
      for (const uid of entry.replaces) uids.add(uid);
      this.replacedUids.set(entry.namespace, uids);
    }
  }

  allocation(namespace: string): Resources | undefined {
    return this.reserved.get(namespace);
  }

  replaced(namespace: string): ReadonlySet<string> | undefined {
    return this.replacedUids.get(namespace);
  }

  namespaces(): Iterable<string> {
    return this.reserved.keys();
  }
}

/**
 * Whether an admitted change reserves its namespace's share: when it grows it, and for every
 * Namespace CREATE (a cache may still show an older namespace of that name, being deleted, and then
 * miss the new one between the old one's deletion and the new one's creation).
 */
export function reserves(verdict: Verdict, request: AdmissionRequest): boolean {
  return verdict.allocation?.grows === true || (request.operation === 'CREATE' && handledKind(request) === 'Namespace');
}

/**
 * Whether later decisions of the project must see this admitted change before the cache shows it: it
 * grows the namespace's share (Q1), takes a budgeted resource away from a quota (another quota's
 * Q2/Q3 decision may rely on it), or changes a quota's spec at all (creates, deletes, any other spec
 * change): a namespace holds the minimum over its quotas, so whether a later change of another quota
 * grows the namespace depends on this one (two raises, each capped by the other quota, would
 * otherwise both look non-growing).
 */
export function mustRecord(verdict: Verdict, request: AdmissionRequest): boolean {
  const a = verdict.allocation;
  if (a === undefined) return false;
  if (reserves(verdict, request) || a.quotaWrite?.removesCoverage === true) return true;
  if (!a.quotaWrite) return false;
  return (
    request.operation !== 'UPDATE' || freshSpecKey(specOf(request.object)) !== freshSpecKey(specOf(request.oldObject))
  );
}

/** The ledger entry an admitted change becomes, live from `now` for `ttlMs`. */
export function entryFor(
  request: AdmissionRequest,
  verdict: Verdict,
  snapshot: Snapshot,
  now: number,
  ttlMs: number,
  seen?: StreamMarks,
): LedgerEntry {
  const { namespace, resources, quotaWrite } = verdict.allocation!;
  // A Namespace CREATE while this cache still shows a namespace of that name: the uid it may replace.
  const shown =
    request.operation === 'CREATE' && handledKind(request) === 'Namespace'
      ? snapshot.namespace(namespace)?.metadata.uid
      : undefined;
  const quota = handledKind(request) === 'ResourceQuota' ? (quotaWrite?.name ?? request.name) : undefined;
  const write = quotaWrite ? (quotaWrite.quota ? { spec: quotaWrite.quota.spec ?? {} } : null) : undefined;
  const basedOn = (request.oldObject as ResourceQuotaObject | undefined)?.metadata?.resourceVersion;
  return {
    namespace,
    quota,
    // A change that does not grow the namespace reserves nothing: it is recorded for its quota write only.
    allocation: reserves(verdict, request) ? formatResources(resources) : {},
    created: now,
    expires: now + ttlMs,
    ...(write !== undefined
      ? { write, versions: writeVersions(request, write), ...(basedOn !== undefined ? { basedOn } : {}) }
      : {}),
    ...(shown ? { replaces: [shown] } : {}),
    ...(seen ? { seen: { Namespace: seen.Namespace, ResourceQuota: seen.ResourceQuota } } : {}),
  };
}
