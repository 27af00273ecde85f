/** WriterTurns: what a replica waits for before writing a project's ledger again (pure). */
import { describe, expect, it } from 'vitest';
import { ECHO_WAIT_MS, WriterTurns, YIELD_WAIT_MS } from '../../src/webhook/headroom/writer-turns.js';

describe('WriterTurns', () => {
  it('a replica that has not written waits for nothing', () => {
    expect(new WriterTurns(2000).before('p', 0)).toBeUndefined();
  });

  it('after a write, waits for its echo until the watch brings it', () => {
    const turns = new WriterTurns(2000);
    turns.wrote('p', '10', 0);
    expect(turns.before('p', 0)).toEqual({ version: '10', strictlyNewer: false, capMs: ECHO_WAIT_MS });
    turns.observed('p', '10', 1);
    expect(turns.before('p', 1)).toBeUndefined();
    // Another project's events change nothing.
    turns.wrote('p', '12', 0);
    turns.observed('q', '13', 2);
    expect(turns.before('p', 2)?.version).toBe('12');
  });

  it('yields after two own writes in a row while another replica wrote within the window, and not once it has written', () => {
    const turns = new WriterTurns(2000);
    turns.observed('p', '5', 0); // not tracked yet: nothing of p written by this replica
    turns.wrote('p', '10', 0);
    turns.observed('p', '11', 100); // another replica's write
    turns.wrote('p', '12', 0);
    turns.observed('p', '12', 101);
    expect(turns.before('p', 102)).toBeUndefined(); // one own write since the other's
    turns.wrote('p', '13', 0);
    turns.observed('p', '13', 103);
    expect(turns.before('p', 104)).toEqual({ version: '13', strictlyNewer: true, capMs: YIELD_WAIT_MS });
    // The other replica writes: the streak is over.
    turns.observed('p', '14', 105);
    expect(turns.before('p', 106)).toBeUndefined();
  });

  it('does not yield when the other replica has been quiet for the window', () => {
    const turns = new WriterTurns(2000);
    turns.wrote('p', '10', 0);
    turns.observed('p', '11', 0);
    for (const v of ['12', '13', '14']) {
      turns.wrote('p', v, 0);
      turns.observed('p', v, 1);
    }
    expect(turns.before('p', 1_000)?.strictlyNewer).toBe(true);
    expect(turns.before('p', 2_001)).toBeUndefined();
  });

  it("an older version the watch delivers late is not another replica's new write", () => {
    const turns = new WriterTurns(2000);
    turns.wrote('p', '10', 0);
    turns.wrote('p', '12', 0);
    turns.observed('p', '10', 1);
    turns.observed('p', '12', 2);
    turns.observed('p', '9', 3);
    turns.wrote('p', '13', 0);
    turns.observed('p', '13', 4);
    // No foreign write seen at all: no yield, however long the streak.
    expect(turns.before('p', 5)).toBeUndefined();
  });

  it("another replica's announcement: the next write waits for a version after it, once; its own announcement asks for nothing", () => {
    const turns = new WriterTurns(2000);
    turns.wrote('p', '10', 0);
    turns.observed('p', '10', 1);
    expect(turns.before('p', 2)).toBeUndefined();
    turns.observed('p', '11', 3, true);
    expect(turns.before('p', 4)).toEqual({ version: '11', strictlyNewer: true, capMs: YIELD_WAIT_MS });
    // The announcer's write: the way is clear again (and it counts as another replica's write).
    turns.observed('p', '12', 5);
    expect(turns.before('p', 6)).toBeUndefined();
    // This replica's own announcement, whether its answer or the watch brings it first.
    turns.announcedOwn('p', '13', 7);
    turns.observed('p', '13', 8, true);
    turns.observed('p', '14', 9, true);
    turns.announcedOwn('p', '14', 10);
    expect(turns.before('p', 11)).toBeUndefined();
  });

  it('forgets a project, and sweeps one quiet for longer than the window', () => {
    const turns = new WriterTurns(2000);
    turns.wrote('p', '10', 0);
    turns.forget('p');
    expect(turns.size).toBe(0);
    expect(turns.before('p', 0)).toBeUndefined();
    turns.wrote('p', '11', 0);
    turns.wrote('q', '12', 0);
    turns.observed('q', '13', 1_500);
    turns.sweep(2_000, 1_000);
    expect(turns.size).toBe(1);
    turns.sweep(3_500, 1_000);
    expect(turns.size).toBe(0);
  });
});
