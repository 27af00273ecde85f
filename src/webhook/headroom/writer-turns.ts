/**
 * Whose turn it is to write a project's headroom ledger (docs/adr/0003-headroom-ledger.md).
 * Every replica learns of a write from the ledger watch, but its writer learns of it first, from the
 * write's answer: a writer that went on at once would start every round ahead of the others. So:
 *
 * - **echo**: a replica's next write of a project waits until the watch has brought its previous one
 *   (then it starts from the same event as the others);
 * - **yield**: after two writes of its own in a row while another replica has written the project
 *   within `contendedForMs`, it waits for another replica's write before its third: a replica that
 *   keeps losing, with a batch that grows while it loses, gets its round.
 *
 * - **make way**: when the watch brings another replica's announcement (a batch of its that keeps
 *   losing moved the ledger's version without writing, LedgerStore.announce), the next write waits for
 *   a version after it: the announcer's write. A replica that loses from the start of a contention has
 *   won no round, so without it the yield would never see it.
 *
 * Each wait is capped: the watch may be down, and the other replica may have nothing to write. Pure:
 * versions and instants are handed in.
 */
import { isLaterRevision } from './stream-marks.js';

export const ECHO_WAIT_MS = 50;
export const YIELD_WAIT_MS = 100;

/**
 * What a replica waits for before it writes a project's ledger again: the watch bringing `version` (or,
 * `strictlyNewer`, a later one).
 */
export interface TurnWait {
  version: string;
  strictlyNewer: boolean;
  capMs: number;
}

interface ProjectTurns {
  /** This replica's last write, and whether the watch has brought it back. */
  lastOwn?: { version: string; echoed: boolean };
  /** This replica's writes since the watch last brought another replica's. */
  ownInARow: number;
  /** When the watch last brought another replica's write. */
  foreignAt?: number;
  /** When this replica last wrote the project or the watch last brought a write of it. */
  lastAt: number;
  /** Another replica's announcement not yet followed by a write: the next write waits for one after it. */
  announcedByOther?: string;
  /** This replica's own announcements (their versions), until the watch brings them back. */
  ownAnnouncements: Set<string>;
}

export class WriterTurns {
  private readonly projects = new Map<string, ProjectTurns>();

  constructor(private readonly contendedForMs: number) {}

  private of(project: string, at: number): ProjectTurns {
    let turns = this.projects.get(project);
    if (!turns) this.projects.set(project, (turns = { ownInARow: 0, lastAt: at, ownAnnouncements: new Set() }));
    return turns;
  }

  /** This replica's write of the project landed at `version`, at `at`. */
  wrote(project: string, version: string, at: number): void {
    const turns = this.of(project, at);
    turns.lastAt = at;
    turns.lastOwn = { version, echoed: false };
    turns.ownInARow += 1;
  }

  /** This replica announced itself on the project's ledger (LedgerStore.announce), which is now at `version`. */
  announcedOwn(project: string, version: string, at: number): void {
    const turns = this.of(project, at);
    if (turns.announcedByOther === version) delete turns.announcedByOther;
    else turns.ownAnnouncements.add(version);
  }

  /**
   * The watch brought the project's ledger at `version` (any replica's write) at `at`; `announced`:
   * the version is an announcement, not a write.
   */
  observed(project: string, version: string, at: number, announced = false): void {
    const turns = this.projects.get(project);
    if (!turns) return;
    turns.lastAt = at;
    if (turns.announcedByOther !== undefined && isLaterRevision(version, turns.announcedByOther))
      delete turns.announcedByOther;
    // Own announcements the watch went past without bringing them (it was down) are forgotten.
    for (const own of turns.ownAnnouncements) if (isLaterRevision(version, own)) turns.ownAnnouncements.delete(own);
    if (announced) {
      if (turns.ownAnnouncements.delete(version)) return;
      turns.announcedByOther = version;
      turns.foreignAt = at;
      return;
    }
    if (turns.lastOwn?.version === version) return void (turns.lastOwn.echoed = true);
    if (turns.lastOwn && !isLaterRevision(version, turns.lastOwn.version)) return;
    turns.foreignAt = at;
    turns.ownInARow = 0;
    if (turns.lastOwn) turns.lastOwn.echoed = true;
  }

  /** What to wait for before the project's next write at `at` (undefined: nothing). */
  before(project: string, at: number): TurnWait | undefined {
    const turns = this.projects.get(project);
    if (turns?.announcedByOther !== undefined)
      return { version: turns.announcedByOther, strictlyNewer: true, capMs: YIELD_WAIT_MS };
    const own = turns?.lastOwn;
    if (!turns || !own) return undefined;
    const contended = turns.foreignAt !== undefined && at - turns.foreignAt < this.contendedForMs;
    if (contended && turns.ownInARow >= 2) return { version: own.version, strictlyNewer: true, capMs: YIELD_WAIT_MS };
    if (!own.echoed) return { version: own.version, strictlyNewer: false, capMs: ECHO_WAIT_MS };
    return undefined;
  }

  forget(project: string): void {
    this.projects.delete(project);
  }

  /**
   * Drops the projects with no write of this replica nor any the watch brought for `idleMs` before
   * `at` (a longer quiet than both the echo and the window; a later write starts afresh).
   */
  sweep(at: number, idleMs: number): void {
    for (const [project, turns] of this.projects)
      if (at - turns.lastAt >= Math.max(idleMs, this.contendedForMs)) this.projects.delete(project);
  }

  get size(): number {
    return this.projects.size;
  }
}
