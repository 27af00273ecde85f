/**
 * A headroom ledger in memory (compare-and-swap on a version number), for unit tests of the guard.
 * Like ConfigMapLedger's watch, `subscribe` tells every listener of each change (here at once, in order).
 * It keeps the ConfigMap's finalizer protocol (src/ledger/ledger.ts): `delete` only marks a ledger
 * that carries the finalizer, `release` removes the finalizer (and with it a marked ledger), and
 * `removeFinalizerByHand` is what an operator who edits the finalizer away does. `corrupt` is a hand edit
 * that leaves a data key unreadable: reads then go through the product's parser (ledger-format.ts) and
 * throw, as ConfigMapLedger's do, while `entries` still gives what the ledger held (what really counts).
 */
import { parseEntries, RESERVATIONS_DATA_KEY, settledOf, SETTLED_DATA_KEY } from '../../src/ledger/ledger-format.js';
import {
  LedgerConflict,
  type LedgerChange,
  type LedgerEntry,
  type LedgerState,
  type LedgerStore,
  type StreamMarks,
} from '../../src/ledger/ledger.js';

interface Stored {
  version: number;
  entries: LedgerEntry[];
  /** The enforced fleet limit record (src/fleet/enforced-limit.ts), as the ConfigMap's `fleet` key. */
  fleet?: string;
  /** The settled marks (the ConfigMap's `settled` key). */
  settledThrough?: StreamMarks;
  finalizer: boolean;
  deleting: boolean;
  /** Data keys edited by hand into text that is no ledger (`corrupt`). */
  edited?: { key: string; text: string };
}

export class MemoryLedger implements LedgerStore {
  private readonly states = new Map<string, Stored>();
  /** Every version ever written counts up, across deletions (like etcd's revision). */
  private revision = 0;
  writes = 0;
  releases = 0;
  private readonly listeners: Array<(change: LedgerChange) => void> = [];

  subscribe(listener: (change: LedgerChange) => void): void {
    this.listeners.push(listener);
  }

  /** What a watch on the stored ledger would deliver after a change. */
  private changed(project: string, announced = false): void {
    if (this.listeners.length === 0) return;
    const s = this.states.get(project);
    const change: LedgerChange = s
      ? {
          project,
          resourceVersion: String(s.version),
          state: () => this.readable(s, project),
          ...(announced ? { announced: true as const } : {}),
        }
      : { project, deleted: true };
    for (const listener of this.listeners) listener(change);
  }

  /** The ledger as a reader parses it: an edited key goes through the product's parser (and may throw). */
  private stateOf(s: Stored, project: string): LedgerState {
    const configMap = `memory/tenantgate-ledger-${project}`;
    const edited = (key: string) => (s.edited?.key === key ? s.edited.text : undefined);
    const reservations = edited(RESERVATIONS_DATA_KEY);
    const settled = edited(SETTLED_DATA_KEY);
    const settledThrough =
      settled !== undefined
        ? settledOf(configMap, settled).settledThrough
        : s.settledThrough && { ...s.settledThrough };
    return {
      resourceVersion: String(s.version),
      entries: reservations !== undefined ? parseEntries(configMap, reservations) : structuredClone(s.entries),
      ...(s.deleting ? { deleting: true } : {}),
      ...(s.fleet !== undefined ? { fleet: s.fleet } : {}),
      ...(settledThrough ? { settledThrough } : {}),
    };
  }

  async read(project: string): Promise<LedgerState> {
    const s = this.states.get(project);
    return s ? this.stateOf(s, project) : { entries: [] };
  }

  async write(
    project: string,
    state: LedgerState,
    entries: LedgerEntry[],
    settledThrough = state.settledThrough,
  ): Promise<LedgerState> {
    const s = this.states.get(project);
    if ((s ? String(s.version) : undefined) !== state.resourceVersion) throw new LedgerConflict('conflict');
    const version = ++this.revision;
    this.states.set(project, {
      version,
      entries: structuredClone(entries),
      ...(state.fleet !== undefined ? { fleet: state.fleet } : {}),
      ...(settledThrough ? { settledThrough: { ...settledThrough } } : {}),
      finalizer: true,
      deleting: s?.deleting ?? false,
    });
    this.writes += 1;
    this.changed(project);
    return {
      resourceVersion: String(version),
      entries,
      ...(s?.deleting ? { deleting: true } : {}),
      ...(state.fleet !== undefined ? { fleet: state.fleet } : {}),
      ...(settledThrough ? { settledThrough } : {}),
    };
  }

  async release(project: string, state: LedgerState): Promise<void> {
    const s = this.states.get(project);
    if (!s) return;
    if (String(s.version) !== state.resourceVersion) throw new LedgerConflict('conflict');
    this.releases += 1;
    if (s.deleting) this.states.delete(project);
    else this.states.set(project, { ...s, version: ++this.revision, finalizer: false });
    this.changed(project);
  }

  /** A new version with nothing changed, whatever the version now (ConfigMapLedger.announce); nothing when there is no ledger. */
  async announce(project: string): Promise<LedgerState | undefined> {
    const s = this.states.get(project);
    if (!s) return undefined;
    const moved = { ...s, version: ++this.revision };
    this.states.set(project, moved);
    this.changed(project, true);
    return this.stateOf(moved, project);
  }

  /** `kubectl delete configmap`: with the finalizer only marked, without it gone. */
  delete(project: string): void {
    const s = this.states.get(project);
    if (!s) return;
    if (!s.finalizer) this.states.delete(project);
    else this.states.set(project, { ...s, version: ++this.revision, deleting: true });
    this.changed(project);
  }

  /** An operator edits the finalizer away: a marked ledger goes at once. */
  removeFinalizerByHand(project: string): void {
    const s = this.states.get(project);
    if (!s) return;
    if (s.deleting) this.states.delete(project);
    else this.states.set(project, { ...s, version: ++this.revision, finalizer: false });
    this.changed(project);
  }

  /** As ConfigMapLedger's watch: an unreadable ledger's change has no state (the cache forgets it). */
  private readable(s: Stored, project: string): LedgerState | undefined {
    try {
      return this.stateOf(s, project);
    } catch {
      return undefined;
    }
  }

  /**
   * An operator's hand edit leaves data key `key` reading `text` (a truncated array, marks of the wrong
   * type…): a new version, which the watch brings. Nothing when there is no ledger.
   */
  corrupt(project: string, key: string, text: string): void {
    const s = this.states.get(project);
    if (!s) return;
    this.states.set(project, { ...s, version: ++this.revision, edited: { key, text } });
    this.changed(project);
  }

  /** Whether a data key is edited into something unreadable (`corrupt`). */
  corrupted(project: string): boolean {
    return this.states.get(project)?.edited !== undefined;
  }

  /** The stored entries (for assertions), or undefined when the ledger does not exist. */
  entries(project: string): LedgerEntry[] | undefined {
    return this.states.get(project)?.entries;
  }
}
