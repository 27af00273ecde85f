/**
 * The test hook for time (docs/adr/0053-bursts.md): TENANTGATE_TEST_CLOCK_FILE names a file holding
 * one RFC 3339 instant; a process started with it decides budgets at that instant (frozen) and follows
 * the file when a test rewrites it. Never set by the chart: it exists so tests move a process's time
 * across a burst's `from` and `until` without sleeping.
 */
import { readFileSync } from 'node:fs';
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

/** A clock at the instant the file holds, read again at most every REREAD_MS; a read that fails keeps the last instant. */
export function fileClock(path: string): Clock {
  let at = parseInstant(readFileSync(path, 'utf8'), path);
  let readAt = Date.now();
  return {
    now: () => {
      if (Date.now() - readAt >= REREAD_MS) {
        readAt = Date.now();
        try {
          at = parseInstant(readFileSync(path, 'utf8'), path);
        } catch {
          // a test writing the file: keep the last instant
        }
      }
      return at;
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
