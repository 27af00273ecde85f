/**
 * Settling ledger entries (docs/adr/0003-headroom-ledger.md): an entry leaves the
 * headroom ledger once the object it stands for is in the writer's own watch cache, and the ledger then
 * records, per watch stream, the writer's watermark (`settledThrough`). A replica decides from that
 * ledger only once its own watermarks have reached those marks: its cache then holds every event the
 * writer's held, the settled objects included. Pure: the watermarks and the cache are handed in.
 */
import type { LedgerEntry, StreamMarks } from '../../ledger/ledger.js';
import { grows } from '../../validate/budget/check.js';
import { namespaceShare } from '../../validate/shares.js';
import type { Snapshot } from '../../validate/types.js';
import { allocationOf } from './ledger-entries.js';
import { shownByCache } from './quota-versions.js';
import { maxMarks, revision, STREAMS } from './stream-marks.js';

export { marksReach, maxMarks, marksLive } from './stream-marks.js';

/**
 * Whether `view` (the writer's own cache, at watermarks `marks`) shows the object `entry` stands for,
 * in a state that covers it:
 * - its namespace is there, and is none of the namespaces of that name the entry's creation may replace;
 * - a quota write: the newest write it holds is shown (the same spec at a resourceVersion above the one
 *   it replaced); a deletion: the quota is absent and the quota stream has passed the version deleted;
 * - the namespace's share counted from the view alone (no reservation, no assumption) is at least the
 *   entry's allocation in every resource.
 * Every older write merged into the entry was conditional on an older resourceVersion of the same
 * quota (or on its absence), which the stored newest write has moved past.
 */
export function shownInView(
  entry: LedgerEntry,
  view: Snapshot,
  marks: StreamMarks,
  projectName: string,
  cluster: string,
  at: number,
): boolean {
  const seen = entry.seen;
  if (!seen || !STREAMS.every((s) => revision(seen[s]) !== undefined)) return false;
  const namespace = view.namespace(entry.namespace);
  if (!namespace) return false;
  if (entry.replaces?.includes(namespace.metadata.uid ?? '')) return false;
  // A namespace creation: only a namespace stored after its admission (a cache behind the admitting
  // replica's may still show an older incarnation that replica had already seen go).
  if (entry.quota === undefined && !after(namespace.metadata.resourceVersion, seen.Namespace)) return false;
  if (entry.quota !== undefined && entry.write !== undefined) {
    if (entry.write !== null && !after(quotaVersion(view, entry.namespace, entry.quota), seen.ResourceQuota))
      return false;
    if (entry.write === null) {
      const present = [...view.quotasInNamespace(entry.namespace)].some((q) => q.metadata.name === entry.quota);
      const deleted = revision(entry.basedOn);
      const seen = revision(marks.ResourceQuota);
      if (present || deleted === undefined || seen === undefined || seen <= deleted) return false;
    } else if (!shownByCache(view, entry.namespace, entry.quota, entry.write, entry.basedOn)) return false;
  }
  const allocation = allocationOf(entry);
  if (allocation.size === 0) return true;
  const project = view.project(projectName);
  if (!project) return false;
  return !grows(namespaceShare(view, project, cluster, at, entry.namespace).resources, allocation);
}

/** Whether resourceVersion `rv` is a revision above `mark`. */
function after(rv: string | undefined, mark: string): boolean {
  const a = revision(rv);
  const b = revision(mark);
  return a !== undefined && b !== undefined && a > b;
}

function quotaVersion(view: Snapshot, namespace: string, name: string): string | undefined {
  for (const q of view.quotasInNamespace(namespace)) if (q.metadata.name === name) return q.metadata.resourceVersion;
  return undefined;
}

export interface Settlement {
  /** The entries that stay: still in flight for the writer's own view, or not comparable. */
  kept: LedgerEntry[];
  /** How many left. */
  settled: number;
  /** The ledger's marks after this write (unchanged when nothing left). */
  settledThrough: StreamMarks | undefined;
}

/**
 * Which of `entries` leave the ledger with the writer's next write: those its own view shows
 * (shownInView), provided its own watermarks are revisions. The marks recorded are the writer's own
 * watermarks, raised monotonically over what the ledger held: a reader whose watermarks reach them has
 * every event the writer had when it settled them (a deletion, whose version no cached object carries,
 * included).
 */
export function settle(
  entries: readonly LedgerEntry[],
  view: Snapshot,
  marks: StreamMarks | undefined,
  previous: StreamMarks | undefined,
  project: string,
  cluster: string,
  at: number,
): Settlement {
  if (!marks || !STREAMS.every((s) => revision(marks[s]) !== undefined))
    return { kept: [...entries], settled: 0, settledThrough: previous };
  const kept: LedgerEntry[] = [];
  let until = 0;
  for (const e of entries) {
    if (shownInView(e, view, marks, project, cluster, at)) until = Math.max(until, e.expires);
    else kept.push(e);
  }
  const settled = entries.length - kept.length;
  return {
    kept,
    settled,
    settledThrough:
      settled > 0
        ? maxMarks(previous, { Namespace: marks.Namespace, ResourceQuota: marks.ResourceQuota, until })
        : previous,
  };
}
