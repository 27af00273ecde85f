/**
 * Structured logs (pino) on stderr — stdout belongs to render, validate and certs. JSON in the cluster;
 * at a terminal (or with --log-format pretty) pino-pretty makes the same records readable.
 */
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export type { Logger };

/**
 * `sync: false` (the webhook, which logs one record per admission decision): JSON records are
 * buffered and written to stderr asynchronously, once 4 KiB have gathered (≈ 15 decision records) or
 * at the latest after a second, so a busy webhook makes one write system call per batch rather than
 * per request (on the benchmark VM a write costs more CPU than the rules, ADR 0016). What is buffered
 * is flushed synchronously when the process exits; only a SIGKILL can lose it (at most 4 KiB, 1 s).
 * Pretty output always stays synchronous.
 */
export const ASYNC_LOG_BATCH_BYTES = 4096;
export const ASYNC_LOG_FLUSH_MS = 1000;

/**
 * pino's `isoTime`, formatted once per millisecond: a busy webhook writes several records in the same
 * millisecond, and `toISOString` was a tenth of a decision record's CPU (ADR 0017).
 */
export function isoTimePerMillisecond(now: () => number = Date.now): () => string {
  let lastMs = Number.NaN;
  let lastField = '';
  return () => {
    const ms = now();
    if (ms !== lastMs) {
      lastMs = ms;
      lastField = `,"time":"${new Date(ms).toISOString()}"`;
    }
    return lastField;
  };
}

export function createLogger(options: { name: string; level?: LogLevel; format?: LogFormat; sync?: boolean }): Logger {
  const format = options.format ?? 'auto';
  const human = format === 'pretty' || (format === 'auto' && process.stderr.isTTY === true);
  const sync = options.sync ?? true;
  const destination = human
    ? pretty({ destination: 2, colorize: process.stderr.isTTY === true, sync: true, ignore: 'pid,hostname' })
    : pino.destination(sync ? { dest: 2, sync } : { dest: 2, sync, minLength: ASYNC_LOG_BATCH_BYTES, periodicFlush: ASYNC_LOG_FLUSH_MS });
  // `component`, not pino's `name`: decision records have a `name` of their own (the object's).
  return pino({ level: options.level ?? 'info', base: { component: options.name }, timestamp: isoTimePerMillisecond() }, destination);
}

/** The `log(message, fields?)` seam the components take, backed by a logger. */
export function logFunction(logger: Logger): (message: string, fields?: Record<string, unknown>) => void {
  return (message, fields) => logger.info(fields ?? {}, message);
}
