/**
 * bench/comparisons/peers/load.ts: the machine-load rule of bench/peers. Every row records the 1-minute load
 * average when it starts and when it ends; a row that starts above MAX_LOAD is printed but marked
 * "not counted (load N)" and stays out of the comparison. Before a row the bench waits (up to a bound)
 * for the load average to come down, since its own previous row (an engine and the apiserver saturated
 * on a small machine) raises it too.
 */
import { loadavg } from 'node:os';
import { log, nowMs, round1, sleep } from '../../lib/measure.js';

/** Rows started above this 1-minute load average are printed but not counted. */
export const MAX_LOAD = 3;

export interface RowLoad {
  /** 1-minute load average when the row started and when it ended. */
  start: number;
  end: number;
  counted: boolean;
}

export const load1 = (): number => round1(loadavg()[0] ?? NaN);

/**
 * Waits until the 1-minute load average is at most MAX_LOAD, for at most `maxMs` (0: not at all);
 * returns the seconds waited.
 */
async function settle(what: string, maxMs: number): Promise<number> {
  const t0 = nowMs();
  if (load1() <= MAX_LOAD || maxMs <= 0) return 0;
  log(
    `peers: ${what}: load average ${load1()} > ${MAX_LOAD}; waiting up to ${Math.round(maxMs / 1000)} s for it to come down`,
  );
  while (load1() > MAX_LOAD && nowMs() - t0 < maxMs) await sleep(2000);
  const waited = round1((nowMs() - t0) / 1000);
  log(
    `peers: ${what}: load average ${load1()} after ${waited} s${load1() > MAX_LOAD ? ' (still above: the row will not be counted)' : ''}`,
  );
  return waited;
}

/** Runs one row: settles first, then records the load average around `fn`. */
export async function row<T>(what: string, settleMs: number, fn: () => Promise<T>): Promise<T & { load: RowLoad }> {
  await settle(what, settleMs);
  const start = load1();
  const r = await fn();
  const end = load1();
  return { ...r, load: { start, end, counted: start <= MAX_LOAD } };
}

/** '' for a counted row, else the mark the reports print. */
export function notCounted(l: RowLoad | undefined): string {
  return !l || l.counted ? '' : `not counted (load ${l.start})`;
}

/** "start→end", and the mark when not counted. */
export function loadCell(l: RowLoad | undefined): string {
  if (!l) return '';
  return `${l.start}→${l.end}${l.counted ? '' : ` not counted (load ${l.start})`}`;
}
