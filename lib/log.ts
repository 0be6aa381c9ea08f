// Structured logs through pino: one JSON object per line on stderr (time, level as a word, msg, the fields).
// Never pass credentials, tokens, headers, query strings or bodies to it.
import { pino } from 'pino';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

/** TENANTGATE_LOG_LEVEL, or info when unset or not one of the four. */
function configuredLevel(): LogLevel {
  const wanted = process.env.TENANTGATE_LOG_LEVEL as LogLevel | undefined;
  return wanted !== undefined && LEVELS.includes(wanted) ? wanted : 'info';
}

const logger = pino(
  {
    level: configuredLevel(),
    // No pid or hostname on every line: the fields are the caller's.
    base: null,
    timestamp: pino.stdTimeFunctions.isoTime,
    // The level as the word the lines have always carried ("info"), not pino's number.
    formatters: { level: (label) => ({ level: label }) },
  },
  // process.stderr, as before: written at once to a file or a TTY, queued (never waited for) when a pipe is full.
  // Not pino.destination(2): its synchronous writer sleeps 100 ms on a full non-blocking pipe, stalling every request.
  // Nor its asynchronous one: a GET's request log line cost 0.02 ms of CPU through process.stderr and 0.06 ms
  // through fs.write on the thread pool (bench/get-breakdown.ts --only d,f, same machine, three rounds each).
  process.stderr,
);

type Write = (msg: string, fields?: Record<string, unknown>) => void;

const ignore: Write = () => {};

/** One method per level; a level below the threshold does nothing at all. */
function writerOf(level: LogLevel): Write {
  if (!logger.isLevelEnabled(level)) return ignore;
  return (msg, fields) => (fields === undefined ? logger[level](msg) : logger[level](fields, msg));
}

export const log: Record<LogLevel, Write> = {
  debug: writerOf('debug'),
  info: writerOf('info'),
  warn: writerOf('warn'),
  error: writerOf('error'),
};
