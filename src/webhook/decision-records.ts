/**
 * Which admission decisions get a record of their own (`tenantgate webhook --allowed-decisions`,
 * docs/adr/0004-webhook.md). `all` (the default): every decision, as since ADR 0033.
 * `summary`: denials (rule denials, errors, "not ready"), decisions with warnings and slow decisions
 * (≥ slowMs) keep their own record; the other allowed and patched decisions are counted and written as
 * one summary record per interval — none while nothing was counted. Pure but for the timer; the
 * records are written by the caller's functions.
 */
import type { AdmissionDecision } from './server.js';
import { WEBHOOK_DEFAULTS } from './options.js';

type AllowedDecisions = 'all' | 'summary';

/** How often `summary` mode writes what it counted. */
const SUMMARY_INTERVAL_MS = 10_000;

/** One summary record: the allowed and patched decisions of an interval, by path, operation, kind and verdict. */
export interface DecisionSummary {
  seconds: number;
  decisions: number;
  counts: Array<{ path: string; operation: string; kind: string; verdict: string; dryRun: boolean; n: number }>;
  /** The slowest of them, in ms (all were below the slow threshold). */
  maxMs: number;
}

export interface DecisionRecordOptions {
  allowed: AllowedDecisions;
  slowMs?: number;
  intervalMs?: number;
  now?: () => number;
}

export interface DecisionRecords {
  /** Give every decision here. */
  record(decision: AdmissionDecision): void;
  /** Writes what was counted so far (a summary record), if anything. */
  flush(): void;
  /** Flushes and stops the timer. */
  stop(): void;
}

/** Whether a decision keeps a record of its own in `summary` mode. */
export function keepsOwnRecord(decision: AdmissionDecision, slowMs: number): boolean {
  return (
    decision.verdict === 'denied' || decision.code !== undefined || decision.rules.length > 0 || decision.ms >= slowMs
  );
}

export function decisionRecords(
  write: (decision: AdmissionDecision) => void,
  summarise: (summary: DecisionSummary) => void,
  options: DecisionRecordOptions,
): DecisionRecords {
  if (options.allowed === 'all') return { record: write, flush: () => {}, stop: () => {} };
  const slowMs = options.slowMs ?? WEBHOOK_DEFAULTS.slowDecisionMs;
  const intervalMs = options.intervalMs ?? SUMMARY_INTERVAL_MS;
  const now = options.now ?? Date.now;
  // Counted per path, operation, kind, verdict and dry run: a bounded set (2 × 4 × 8 × 2 × 2).
  const counts = new Map<string, DecisionSummary['counts'][number]>();
  let total = 0;
  let maxMs = 0;
  let since = now();
  let timer: NodeJS.Timeout | undefined;

  const flush = () => {
    if (total === 0) {
      // Nothing since the last summary: stop ticking until something is counted.
      if (timer) clearInterval(timer);
      timer = undefined;
      return;
    }
    const at = now();
    summarise({ seconds: Math.round((at - since) / 100) / 10, decisions: total, counts: [...counts.values()], maxMs });
    counts.clear();
    total = 0;
    maxMs = 0;
    since = at;
  };
  return {
    record(decision) {
      if (keepsOwnRecord(decision, slowMs)) return write(decision);
      if (total === 0 && !timer) since = now();
      const key =
        `${decision.path} ${decision.operation} ${decision.kind} ${decision.verdict}` +
        `${decision.dryRun ? ' dry' : ''}`;
      const entry = counts.get(key);
      if (entry) entry.n++;
      else
        counts.set(key, {
          path: decision.path,
          operation: decision.operation,
          kind: decision.kind,
          verdict: decision.verdict,
          dryRun: decision.dryRun,
          n: 1,
        });
      total++;
      if (decision.ms > maxMs) maxMs = decision.ms;
      timer ??= setInterval(flush, intervalMs).unref();
    },
    flush,
    stop() {
      flush();
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
