/**
 * The test hook for time (docs/adr/0067-budgets.md, docs/adr/0069-code-structure.md):
 * TENANTGATE_TEST_CLOCK_FILE names a file holding one RFC 3339 instant; a process started through
 * test/support/test-clock/cli.ts decides budgets at that instant plus the real time elapsed since the
 * file was written (its mtime), and follows the file when a test rewrites it. So a test jumps to just
 * before a burst's `from` or `until` and lets the process cross it on its own. Test code only: the
 * shipped CLI (src/cli/main.ts) knows nothing of it.
 */
import { readFileSync, statSync } from 'node:fs';
import { parseInstant, type Clock } from '../../../src/clock.js';

export const TEST_CLOCK_ENV = 'TENANTGATE_TEST_CLOCK_FILE';

/** How long a read of the file is reused: a test's rewrite is seen within this. */
const REREAD_MS = 100;

function readClockFile(path: string): { at: number; writtenAt: number } {
  const writtenAt = statSync(path).mtimeMs;
  return { at: parseInstant(readFileSync(path, 'utf8'), path), writtenAt };
}

/**
 * A clock at the file's instant when it was written, running at real speed since; the file is read
 * again at most every REREAD_MS, and a read that fails keeps the last value (a test writing the file).
 */
export function fileClock(path: string): Clock {
  let base = readClockFile(path);
  let readAt = Date.now();
  return {
    now: () => {
      const real = Date.now();
      if (real - readAt >= REREAD_MS) {
        readAt = real;
        try {
          base = readClockFile(path);
        } catch {
          // keep the last instant
        }
      }
      return base.at + Math.max(0, real - base.writtenAt);
    },
  };
}
