/**
 * A batch counts the ledger's reservations once and then entry by entry as it records them
 * (LedgerReservations, src/webhook/headroom/ledger-entries.ts). Oracle: the reservations read off the merged
 * entry list the ledger would hold, computed here from the raw entries (quantities compared as numbers).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LedgerEntry } from '../../src/ledger/ledger.js';
import { LedgerReservations, mergeEntry } from '../../src/webhook/headroom/ledger-entries.js';

const NAMESPACES = ['a', 'b', 'c'];
const entry: fc.Arbitrary<LedgerEntry> = fc
  .record({
    namespace: fc.constantFrom(...NAMESPACES),
    quota: fc.constantFrom<string | undefined>(undefined, 'q1', 'q2'),
    cpu: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }),
    memory: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }),
    replaces: fc.subarray(['u1', 'u2', 'u3']),
  })
  .map(({ namespace, quota, cpu, memory, replaces }) => ({
    namespace,
    ...(quota !== undefined ? { quota } : {}),
    allocation: {
      ...(cpu !== undefined ? { 'requests.cpu': `${cpu}` } : {}),
      ...(memory !== undefined ? { 'requests.memory': `${memory}Gi` } : {}),
    },
    created: 0,
    expires: 1,
    ...(quota === undefined && replaces.length > 0 ? { replaces } : {}),
  }));

/** What the merged list reserves per namespace, resource by resource as numbers (Gi as units), and the uids replaced. */
function oracle(merged: readonly LedgerEntry[]) {
  const reserved = new Map<string, Record<string, number>>();
  const replaced = new Map<string, string[]>();
  for (const e of merged) {
    const values = Object.fromEntries(
      Object.entries(e.allocation).map(([r, q]) => [r, Number(String(q).replace('Gi', ''))]),
    );
    if (Object.keys(values).length > 0 || e.quota === undefined) {
      const prev = reserved.get(e.namespace) ?? {};
      for (const [r, v] of Object.entries(values)) prev[r] = Math.max(prev[r] ?? 0, v);
      reserved.set(e.namespace, prev);
    }
    if (e.quota === undefined)
      for (const uid of e.replaces ?? [])
        replaced.set(e.namespace, [...new Set([...(replaced.get(e.namespace) ?? []), uid])].sort());
  }
  return { reserved, replaced };
}

function counted(index: LedgerReservations) {
  const reserved = new Map<string, Record<string, number>>();
  for (const ns of index.namespaces())
    reserved.set(
      ns,
      Object.fromEntries([...index.allocation(ns)!].map(([r, q]) => [r, Number(q.toString().replace('Gi', ''))])),
    );
  const replaced = new Map<string, string[]>();
  for (const ns of NAMESPACES) if (index.replaced(ns)?.size) replaced.set(ns, [...index.replaced(ns)!].sort());
  return { reserved, replaced };
}

describe('the ledger reservations a batch counts', () => {
  it('counted once and then entry by entry: what counting the merged list gives, after every entry', () => {
    fc.assert(
      fc.property(
        fc.array(entry, { maxLength: 6 }),
        fc.array(entry, { minLength: 1, maxLength: 12 }),
        (initial, recorded) => {
          let entries: LedgerEntry[] = [];
          for (const e of initial) entries = mergeEntry(entries, e);
          const index = new LedgerReservations(entries);
          expect(counted(index)).toEqual(oracle(entries));
          for (const e of recorded) {
            entries = mergeEntry(entries, e);
            index.record(e);
            expect(index.entries).toEqual(entries);
            expect(counted(index)).toEqual(oracle(entries));
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('an entry of a quota with nothing allocated reserves nothing; a namespace creation reserves its namespace even so', () => {
    const index = new LedgerReservations([
      { namespace: 'a', quota: 'q1', allocation: {}, created: 0, expires: 1 },
      { namespace: 'b', allocation: {}, created: 0, expires: 1, replaces: ['u1'] },
    ]);
    expect([...index.namespaces()]).toEqual(['b']);
    expect(index.allocation('b')?.size).toBe(0);
    expect([...index.replaced('b')!]).toEqual(['u1']);
  });
});
