/**
 * The watch streams' marks (docs/adr/0003-headroom-ledger.md): per stream an etcd
 * revision as a decimal string, compared as integers. Pure.
 */
import type { StreamMarks } from '../../ledger/ledger.js';

/** The watch streams whose caches a decision reads (etcd revisions, as decimal strings). */
export type Stream = 'Namespace' | 'ResourceQuota';
export const STREAMS: readonly Stream[] = ['Namespace', 'ResourceQuota'];

/**
 * A resourceVersion as an etcd revision; undefined when it is not a decimal integer (then nothing
 * is assumed of its order).
 */
export function revision(rv: string | undefined): bigint | undefined {
  return rv !== undefined && /^\d+$/.test(rv) ? BigInt(rv) : undefined;
}

/** Whether both are etcd revisions and `rv` is the later one (versions of another form are never ordered). */
export function isLaterRevision(rv: string, than: string): boolean {
  const a = revision(rv);
  const b = revision(than);
  return a !== undefined && b !== undefined && a > b;
}

/**
 * Whether watermarks `own` have reached `needed` on every stream. No marks needed: yes. A mark that is
 * not a revision cannot be compared: no (the caller waits or refuses, it never guesses).
 */
export function marksReach(own: StreamMarks | undefined, needed: StreamMarks | undefined): boolean {
  if (!needed) return true;
  if (!own) return false;
  return STREAMS.every((s) => {
    const have = revision(own[s]);
    const want = revision(needed[s]);
    return have !== undefined && want !== undefined && have >= want;
  });
}

/** Per stream the larger mark (a mark that is not a revision loses to one that is), and the later `until`. */
export function maxMarks(a: StreamMarks | undefined, b: StreamMarks): StreamMarks {
  if (!a) return { ...b };
  const until = Math.max(a.until ?? 0, b.until ?? 0);
  const pick = (s: Stream) => {
    const x = revision(a[s]);
    const y = revision(b[s]);
    if (x === undefined) return b[s];
    if (y === undefined) return a[s];
    return x >= y ? a[s] : b[s];
  };
  return { Namespace: pick('Namespace'), ResourceQuota: pick('ResourceQuota'), ...(until > 0 ? { until } : {}) };
}

/** Whether the settled marks still count like a live entry (a ledger holding them is not released). */
export function marksLive(marks: StreamMarks | undefined, now: number): boolean {
  return (marks?.until ?? 0) > now;
}
