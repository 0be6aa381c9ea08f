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

/** Log lines held while stderr cannot take them (a reader that stalls): bounded, as everything held per client is. */
const MAX_QUEUED_BYTES = 16 * 1024 * 1024;

const logger = pino(
  {
    level: configuredLevel(),
    // No pid or hostname on every line: the fields are the caller's.
    base: null,
    timestamp: pino.stdTimeFunctions.isoTime,
    // The level as the word the lines have always carried ("info"), not pino's number.
    formatters: { level: (label) => ({ level: label }) },
  },
  // Written off the event loop, lines gathered while a write is under way: one write per line (a synchronous pipe
  // write each, with the one log line per request) cost a GET as much CPU as its conversion (bench/get-breakdown.ts).
  // Never waited for: a full pipe is retried later (not pino's synchronous writer, which sleeps 100 ms on one), and
  // past MAX_QUEUED_BYTES lines are dropped rather than held. pino flushes what is queued when the process exits.
  pino.destination({ dest: 2, sync: false, maxLength: MAX_QUEUED_BYTES }),
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
