/**
 * Where "now" comes from. Production reads the system clock; the tests that move time (bursts that
 * start and end, docs/budgets.md) give the processes a clock they control. Pure code takes an instant
 * (milliseconds since the epoch) as an argument; only the edges ask a Clock.
 *
 * The process clock is what the edges read to give pure code its instant (`processNow()`: the webhook
 * once per review into ReviewContext.at, the view server per request, the CLI once per command, the
 * controller per reconcile): the system clock unless the process installed another at start (`--now`
 * of validate and plan; in tests, test/support/test-clock/cli.ts, which starts the CLI with a clock
 * read from a file: no test hook is part of the shipped CLI). Nothing in the pure domain imports this
 * module (.dependency-cruiser.cjs `domain-reads-no-clock`).
 * Leases, timeouts and backoffs keep reading the system clock. docs/adr/0067-budgets.md.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

const systemClock: Clock = { now: () => Date.now() };

/** A clock that stays at one instant. */
export function fixedClock(at: number): Clock {
  return { now: () => at };
}

/** Parses an RFC 3339 instant (`--now`), or throws naming where it came from and what is allowed. */
export function parseInstant(text: string, source: string): number {
  const value = text.trim();
  const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(ms))
    throw new Error(`${source}: ${JSON.stringify(value)} is not an RFC 3339 instant (e.g. 2026-12-01T00:00:00Z)`);
  return ms;
}

let processClock: Clock = systemClock;

/**
 * Installs the clock this process decides with (at start, by the CLI; by a test that runs the controller in-process).
 */
export function setProcessClock(clock: Clock): void {
  processClock = clock;
}

export function getProcessClock(): Clock {
  return processClock;
}

/** Now, by the process clock: the instant an edge hands to budget decisions. */
export function processNow(): number {
  return processClock.now();
}
