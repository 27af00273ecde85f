/**
 * Q5: headroom decisions that cannot overspend. The webhook serialises a project's growing decisions
 * through its headroom ledger (src/webhook/headroom/guard.ts); when the ledger cannot record a decision in
 * time, the request is refused with one of these, and nothing is reserved.
 */
import type { Violation } from '../types.js';

export function ledgerTimeout(project: string, deadlineMs: number): Violation {
  return {
    rule: 'Q5',
    message:
      `project ${project}: the headroom ledger did not answer within ${deadlineMs} ms (the API server is slow or ` +
      `unreachable); nothing was reserved, retry the request`,
  };
}

export function ledgerWriteFailed(project: string, reason: string): Violation {
  return { rule: 'Q5', message: `could not reserve headroom in the ledger of project ${project}: ${reason}` };
}

/**
 * The ledger's ConfigMap does not read back as a ledger (`reason`: which ConfigMap, which data key, what
 * is wrong): its live reservations and settled marks cannot be counted, so nothing is decided from it.
 */
export function ledgerUnreadable(project: string, reason: string): Violation {
  return {
    rule: 'Q5',
    message:
      `project ${project}: the headroom ledger cannot be read (${reason}); it may hold reservations that must ` +
      'still count, so nothing that needs it is admitted until an operator repairs it ' +
      '(docs/design.md, "An unreadable ledger"); nothing was reserved',
  };
}

export function ledgerContended(project: string, conflicts: number, deadlineMs: number): Violation {
  return {
    rule: 'Q5',
    message:
      `project ${project}: the headroom ledger was updated by another webhook replica first ${conflicts} ` +
      `${conflicts === 1 ? 'time' : 'times'} in a row and no update of this replica won within ${deadlineMs} ms; ` +
      `nothing was reserved, retry the request`,
  };
}

export function cacheBehindLedger(project: string, waitedMs: number): Violation {
  return {
    rule: 'Q5',
    message:
      `project ${project}: the headroom ledger counts on changes this webhook replica's watch cache has not ` +
      `received yet, and its watches did not catch up within ${waitedMs} ms; nothing was reserved, retry the ` +
      `request`,
  };
}

export function cacheNotCurrent(project: string): Violation {
  return {
    rule: 'Q5',
    message:
      `project ${project}: this webhook replica's watch cache is re-listing or its watch is broken, so it cannot ` +
      `see recent changes; nothing was reserved, retry the request`,
  };
}
