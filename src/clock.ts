/**
 * Where "now" comes from. Production reads the system clock; the tests that move time (bursts that
 * start and end, docs/budgets.md) give the processes a clock they control. Pure code takes an instant
 * (milliseconds since the epoch) as an argument; only the edges ask a Clock.
 *
 * The process clock is what decisions read when no instant is passed (`budgetOf(project, cluster)`
 * on the webhook, controller and CLI paths): the system clock unless the process installed another at
 * start (src/clock-file.ts: the test hook TENANTGATE_TEST_CLOCK_FILE, `--now` of validate and plan).
 * Leases, timeouts and backoffs keep reading the system clock. docs/adr/0053-bursts.md.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that stays at one instant. */
export function fixedClock(at: number): Clock {
  return { now: () => at };
}

let processClock: Clock = systemClock;

/** Installs the clock this process decides with (at start, by the CLI; by a test that runs the controller in-process). */
export function setProcessClock(clock: Clock): void {
  processClock = clock;
}

export function getProcessClock(): Clock {
  return processClock;
}

/** Now, by the process clock: the default instant of budget decisions. */
export function processNow(): number {
  return processClock.now();
}
