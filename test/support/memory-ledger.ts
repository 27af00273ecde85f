/** A headroom ledger in memory (compare-and-swap on a version number), for unit tests of the guard. */
import { LedgerConflict, type LedgerEntry, type LedgerState, type LedgerStore } from '../../src/webhook/ledger.js';

export class MemoryLedger implements LedgerStore {
  private readonly states = new Map<string, { version: number; entries: LedgerEntry[] }>();
  writes = 0;
  async read(project: string): Promise<LedgerState> {
    const s = this.states.get(project);
    return s ? { resourceVersion: String(s.version), entries: structuredClone(s.entries) } : { entries: [] };
  }
  async write(project: string, state: LedgerState, entries: LedgerEntry[]): Promise<LedgerState> {
    const s = this.states.get(project);
    if ((s ? String(s.version) : undefined) !== state.resourceVersion) throw new LedgerConflict('conflict');
    const version = (s?.version ?? 0) + 1;
    this.states.set(project, { version, entries: structuredClone(entries) });
    this.writes += 1;
    return { resourceVersion: String(version), entries };
  }
}
