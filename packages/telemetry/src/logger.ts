// Logging: packages accept the small `Logger` interface; apps create it with `createLogger`.
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';

export interface LogFn {
  (obj: object, msg?: string): void;
  (msg: string): void;
}

/** What packages log through. A pino logger satisfies it; so does `noopLogger`. */
export interface Logger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  child(bindings: Record<string, unknown>): Logger;
}

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface CreateLoggerOptions {
  /** Application name, logged as `name` on every line (e.g. "control-plane"). */
  name: string;
  /** Default "info". */
  level?: LogLevel | string;
  /** Fields on every line (e.g. { pool, worker }). */
  bindings?: Record<string, unknown>;
  /** Extra paths to redact, added to the defaults (tokens and authorization headers). */
  redact?: readonly string[];
  /** Where lines go; default stdout (JSON lines). Tests pass a stream to capture them. */
  destination?: DestinationStream;
}

/** Bearer tokens must never reach logs. */
export const DEFAULT_REDACT_PATHS = [
  'token',
  '*.token',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'apiKey',
  '*.apiKey',
];

export function createLogger(options: CreateLoggerOptions): PinoLogger {
  const level = options.level ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new Error(`log level "${level}" is not one of ${LOG_LEVELS.join(', ')}`);
  }
  const config = {
    name: options.name,
    level,
    base: { pid: process.pid, ...options.bindings },
    redact: { paths: [...DEFAULT_REDACT_PATHS, ...(options.redact ?? [])], censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return options.destination ? pino(config, options.destination) : pino(config);
}

const noop = () => undefined;

/** Discards everything; the default for packages when no logger is given. */
export const noopLogger: Logger = {
  debug: noop,
  info: noop,
  warn: noop,
  error: noop,
  child: () => noopLogger,
};
