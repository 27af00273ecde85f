/**
 * The test hook for time (docs/adr/0053-bursts.md): TENANTGATE_TEST_CLOCK_FILE names a file holding
 * one RFC 3339 instant; a process started with it decides budgets at that instant plus the real time
 * elapsed since the file was written (its mtime), and follows the file when a test rewrites it. So a
 * test jumps to just before a burst's `from` or `until` and lets the process cross it on its own.
 * Never set by the chart: it exists so tests move a process's time without sleeping for hours.
 */
import { readFileSync, statSync } from 'node:fs';
import { setProcessClock, systemClock, type Clock } from './clock.js';

export const TEST_CLOCK_ENV = 'TENANTGATE_TEST_CLOCK_FILE';

/** How long a read of the file is reused: a test's rewrite is seen within this. */
const REREAD_MS = 100;

/** Parses an RFC 3339 instant (or throws naming where it came from). */
export function parseInstant(text: string, source: string): number {
  const value = text.trim();
  const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(ms)) throw new Error(`${source}: ${JSON.stringify(value)} is not an RFC 3339 instant (e.g. 2026-12-01T00:00:00Z)`);
  return ms;
}

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

/** The clock the environment asks for: the test hook's file when set, else the system clock. */
export function clockFromEnvironment(env: NodeJS.ProcessEnv = process.env): Clock {
  const file = env[TEST_CLOCK_ENV];
  return file ? fileClock(file) : systemClock;
}

/** At process start: install the environment's clock as the process clock. */
export function installEnvironmentClock(env: NodeJS.ProcessEnv = process.env): Clock {
  const clock = clockFromEnvironment(env);
  setProcessClock(clock);
  return clock;
}
