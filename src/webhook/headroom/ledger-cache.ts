/**
 * This replica's copy of each project's headroom ledger, as last read or written, fed by the ledger's
 * watch (observe): a project's next compare-and-swap is made against the newest state any replica
 * wrote that this process has seen, so it does not lose to a write that landed long before it. An
 * entry is dropped after the guard's TTL, when its project goes, or when a write failed for another
 * reason than a conflict (the next decision reads the ledger again).
 *
 * It also says when the watch has brought a version (`seen`): replicas writing one project's ledger take
 * turns on the watch's events instead of on their own write's answer (docs/adr/0003-headroom-ledger.md).
 */
import type { LedgerChange, LedgerState } from '../../ledger/ledger.js';
import { isLaterRevision, revision } from './stream-marks.js';

/** Someone waiting for the watch to bring a project's ledger at a version it accepts. */
interface VersionWaiter {
  accepts(seen: string): boolean;
  wake(): void;
}

export class LedgerCache {
  private readonly byProject = new Map<string, { state: LedgerState; at: number }>();
  /** The newest ledger version the watch brought, per project cached or waited for. */
  private readonly watched = new Map<string, string>();
  private readonly waiters = new Map<string, VersionWaiter[]>();

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
    if (!('deleted' in change)) this.watchBrought(change.project, change.resourceVersion);
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
    for (const project of this.watched.keys()) if (!this.byProject.has(project)) this.watched.delete(project);
  }

  /**
   * Resolves once the watch has brought the project's ledger at `version` or later (`strictlyNewer`:
   * later only), or after `ms`, whichever comes first. Never rejects: the caller goes on either way.
   */
  seen(project: string, version: string, ms: number, strictlyNewer = false): Promise<void> {
    const accepts = (seen: string) => (seen === version ? !strictlyNewer : isLaterRevision(seen, version));
    const watched = this.watched.get(project);
    if (ms <= 0 || (watched !== undefined && accepts(watched))) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const waiter: VersionWaiter = {
        accepts,
        wake: () => {
          clearTimeout(timer);
          const rest = (this.waiters.get(project) ?? []).filter((w) => w !== waiter);
          if (rest.length > 0) this.waiters.set(project, rest);
          else this.waiters.delete(project);
          resolve();
        },
      };
      const timer = setTimeout(() => waiter.wake(), ms);
      this.waiters.set(project, [...(this.waiters.get(project) ?? []), waiter]);
    });
  }

  private watchBrought(project: string, version: string): void {
    if (!this.byProject.has(project) && !this.waiters.has(project)) return;
    const before = this.watched.get(project);
    if (before === undefined || isNewerVersion(version, before)) this.watched.set(project, version);
    for (const w of this.waiters.get(project) ?? []) if (w.accepts(version)) w.wake();
  }
}

/**
 * Whether a ledger version seen on the watch is newer than the cached one. The ledger lives in one
 * apiserver whose versions are etcd revisions (increasing integers); anything else counts as newer,
 * which at worst costs one lost compare-and-swap.
 */
export function isNewerVersion(seen: string, cached: string | undefined): boolean {
  if (cached === undefined) return true;
  const [a, b] = [revision(seen), revision(cached)];
  return a !== undefined && b !== undefined ? a > b : seen !== cached;
}
