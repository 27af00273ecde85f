/**
 * The instants unit tests decide at (ADR 0069: the instant is an argument of pure code). TEST_NOW is a
 * constant, so a test's outcome never depends on when it runs; a test that needs time to move passes
 * other instants (offsets from this one) or runs on vitest's fake timers and reads them with fakeNow().
 * eslint.config.js keeps test/unit/ from reading the process clock (`processNow()`, `Date.now()`,
 * `new Date()`).
 */
import { vi } from 'vitest';

export const TEST_NOW = Date.parse('2026-06-01T12:00:00Z');

/** Now on vitest's fake clock; throws when fake timers are not installed (that would be the machine's clock). */
export function fakeNow(): number {
  if (!vi.isFakeTimers()) throw new Error('fakeNow(): vitest fake timers are not installed (vi.useFakeTimers())');
  return Date.now();
}
