/**
 * This replica's copy of each project's headroom ledger, as last read or written, fed by the ledger's
 * watch (observe): a project's next compare-and-swap is made against the newest state any replica
 * wrote that this process has seen, so it does not lose to a write that landed long before it. An
 * entry is dropped after the guard's TTL, when its project goes, or when a write failed for another
 * reason than a conflict (the next decision reads the ledger again).
 */
import type { LedgerChange, LedgerState } from '../ledger/ledger.js';

export class LedgerCache {
  private readonly byProject = new Map<string, { state: LedgerState; at: number }>();

  get(project: string): LedgerState | undefined {
    return this.byProject.get(project)?.state;
  }

  set(project: string, state: LedgerState, at: number): void {
    this.byProject.set(project, { state, at });
  }

  delete(project: string): void {
    this.byProject.delete(project);
  }

  get size(): number {
    return this.byProject.size;
  }

  /**
   * A ledger write seen on the ledger's watch (any replica's): a project this process has cached is
   * given the newer state. A project not cached is left alone (it is read when it is next needed).
   */
  observe(change: LedgerChange): void {
    const cached = this.byProject.get(change.project);
    if (!cached) return;
    if ('deleted' in change) return void this.byProject.delete(change.project);
    if (!isNewerVersion(change.resourceVersion, cached.state.resourceVersion)) return;
    const state = change.state();
    // Not the project's ledger after all: forget the cache, the next decision reads it.
    if (state) this.byProject.set(change.project, { state, at: cached.at });
    else this.byProject.delete(change.project);
  }

  /** Drops the states cached at least `ttlMs` before `now`. */
  sweep(now: number, ttlMs: number): void {
    for (const [project, cached] of this.byProject) if (cached.at + ttlMs <= now) this.byProject.delete(project);
  }
}

/**
 * Whether a ledger version seen on the watch is newer than the cached one. The ledger lives in one
 * apiserver whose versions are etcd revisions (increasing integers); anything else counts as newer,
 * which at worst costs one lost compare-and-swap.
 */
export function isNewerVersion(seen: string, cached: string | undefined): boolean {
  if (cached === undefined) return true;
  if (/^\d+$/.test(seen) && /^\d+$/.test(cached)) return BigInt(seen) > BigInt(cached);
  return seen !== cached;
}
