/**
 * Structured logs (pino) on stderr — stdout belongs to render, validate and certs. JSON in the cluster;
 * at a terminal (or with --log-format pretty) pino-pretty makes the same records readable.
 */
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';
import { RecordBatch } from './log-batch.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
/** What a logger logs without a level or a format (and the flags' defaults, src/cli/options.ts). */
export const LOG_DEFAULTS = { level: 'info', format: 'auto' } as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export type { Logger };

/**
 * `sync: false` (the webhook, which logs one record per admission decision): JSON records are
 * gathered and written to stderr asynchronously, once 16 Ki characters have gathered (≈ 50 decision
 * records) or at the latest a second after the first, so a busy webhook makes one write system call
 * per batch rather than per request (on the benchmark VM a write costs more CPU than the rules;
 * the batching is ours rather than sonic-boom's `minLength`, ADR 0004). What is gathered is
 * flushed synchronously when the process exits; only a SIGKILL can lose it (at most one batch, 1 s).
 * Pretty output always stays synchronous.
 */
const ASYNC_LOG_BATCH_CHARS = 16 * 1024;
const ASYNC_LOG_FLUSH_MS = 1000;

/**
 * pino's `isoTime`, formatted once per millisecond: a busy webhook writes several records in the same
 * millisecond, and `toISOString` was a tenth of a decision record's CPU (ADR 0004).
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
  const format = options.format ?? LOG_DEFAULTS.format;
  const human = format === 'pretty' || (format === 'auto' && process.stderr.isTTY === true);
  const sync = options.sync ?? true;
  const destination = human
    ? pretty({ destination: 2, colorize: process.stderr.isTTY === true, sync: true, ignore: 'pid,hostname' })
    : sync
      ? pino.destination({ dest: 2, sync })
      : new RecordBatch(pino.destination({ dest: 2, sync }), ASYNC_LOG_BATCH_CHARS, ASYNC_LOG_FLUSH_MS);
  const level = options.level ?? LOG_DEFAULTS.level;
  return human
    ? loggerTo(options.name, level, destination, isoTimePerMillisecond())
    : jsonLogger(options.name, level, destination);
}

function loggerTo(
  component: string,
  level: LogLevel,
  destination: JsonSink['destination'],
  time: () => string,
): Logger {
  // `component`, not pino's `name`: decision records have a `name` of their own (the object's).
  return pino({ level, base: { component }, timestamp: time }, destination);
}

/** A JSON logger writing to `destination` (what createLogger makes for non-terminal output); `time` is for tests. */
export function jsonLogger(
  component: string,
  level: LogLevel,
  destination: JsonSink['destination'],
  time: () => string = isoTimePerMillisecond(),
): Logger {
  const logger = loggerTo(component, level, destination, time);
  jsonSinks.set(logger, { destination, time, component: JSON.stringify(component) });
  return logger;
}

/** How createLogger's JSON loggers write, for infoRecorder. */
interface JsonSink {
  destination: { write(line: string): unknown };
  time: () => string;
  /** The `component` field's value, serialised. */
  component: string;
}
const jsonSinks = new WeakMap<Logger, JsonSink>();

/**
 * `logger.info(fields, msg)` for a hot path: one record per call. With a JSON logger from createLogger
 * the record is the line pino writes — `{"level":30,"time":…,"component":…,<fields>,"msg":…}`, the
 * same bytes (a unit test compares them) — serialised with one JSON.stringify and handed to the same
 * destination. pino serialises field by field: 2.35 µs per decision record against 1.05 µs (ADR 0004).
 * Pretty loggers, and any other, go through pino. `fields` holds plain JSON values only (pino's `err`
 * serializer does not apply).
 */
export function infoRecorder<T extends object>(logger: Logger, msg: string): (fields: T) => void {
  const sink = jsonSinks.get(logger);
  if (!sink) return (fields) => logger.info(fields as Record<string, unknown>, msg);
  const head = `{"level":${logger.levels.values.info}`;
  const component = `,"component":${sink.component}`;
  const tail = `,"msg":${JSON.stringify(msg)}}\n`;
  return (fields) => {
    if (!logger.isLevelEnabled('info')) return;
    const json = JSON.stringify(fields);
    sink.destination.write(`${head}${sink.time()}${component}${json.length > 2 ? `,${json.slice(1, -1)}` : ''}${tail}`);
  };
}

/** The `log(message, fields?)` seam the components take, backed by a logger. */
export function logFunction(logger: Logger): (message: string, fields?: Record<string, unknown>) => void {
  return (message, fields) => logger.info(fields ?? {}, message);
}
