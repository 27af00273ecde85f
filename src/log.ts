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
 * `sync: false` (the webhook, which logs one record per admission decision): JSON records are written
 * to stderr asynchronously. Nothing is held back waiting for a buffer to fill — a record goes out in
 * the next write, and records logged while a write is in flight are joined into one — and what is
 * buffered is flushed synchronously when the process exits. Only a SIGKILL can lose the records of
 * the write in flight. Pretty output always stays synchronous.
 */
export function createLogger(options: { name: string; level?: LogLevel; format?: LogFormat; sync?: boolean }): Logger {
  const format = options.format ?? 'auto';
  const human = format === 'pretty' || (format === 'auto' && process.stderr.isTTY === true);
  const destination = human ? pretty({ destination: 2, colorize: process.stderr.isTTY === true, sync: true, ignore: 'pid,hostname' }) : pino.destination({ dest: 2, sync: options.sync ?? true });
  // `component`, not pino's `name`: decision records have a `name` of their own (the object's).
  return pino({ level: options.level ?? 'info', base: { component: options.name }, timestamp: pino.stdTimeFunctions.isoTime }, destination);
}

/** The `log(message, fields?)` seam the components take, backed by a logger. */
export function logFunction(logger: Logger): (message: string, fields?: Record<string, unknown>) => void {
  return (message, fields) => logger.info(fields ?? {}, message);
}
