/**
 * Where "now" comes from. Production reads the system clock; the tests that move time (bursts that
 * start and end, docs/budgets.md) give the processes a clock they control. Pure code takes an instant
 * (milliseconds since the epoch) as an argument; only the edges ask a Clock.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
