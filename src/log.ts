/** Structured JSON logs (pino) on stderr. */
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(opts: { level?: string; name?: string } = {}): Logger {
  return pino(
    {
      name: opts.name ?? 'internal-services',
      level: opts.level ?? process.env.LOG_LEVEL ?? 'info',
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    pino.destination({ dest: 2, sync: true }),
  );
}

/** A logger that drops everything, for library use without output. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
