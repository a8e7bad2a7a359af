/**
 * The bookkeeping of an Informer's connection, without I/O or clock (callers
 * pass the time and the random source): how long to wait after a failure,
 * the health it reports, when a failure is worth a warning, and its
 * /readyz line.
 */

export interface InformerHealth {
  synced: boolean;
  connected: boolean;
  /** ms since epoch of the last successful list or watch event (incl. bookmarks). */
  lastContact: number;
  lastError?: string;
  failures: number;
}

/** One line of /readyz: a failed required check makes it 503; a failed advisory one is only reported. */
export interface ReadinessCheck {
  name: string;
  ok: boolean;
  required: boolean;
  detail?: string;
}

/** A second outage warning within this long of the first is logged at debug level. */
export const WARN_QUIET_MS = 60_000;

/**
 * The wait after the failures-th failure in a row: initialMs doubled per
 * failure, capped at maxMs, then a random point in its upper half.
 */
export function backoffMs(failures: number, initialMs: number, maxMs: number, random: () => number = Math.random): number {
  const base = Math.min(maxMs, initialMs * 2 ** (failures - 1));
  return base / 2 + random() * (base / 2);
}

/** Poll mode: intervalMs ±20%. */
export function jittered(intervalMs: number, random: () => number = Math.random): number {
  return intervalMs * (0.8 + random() * 0.4);
}

/** A cache as a /readyz line: synced and its cluster answering. */
export function readinessOf(name: string, health: InformerHealth, required: boolean): ReadinessCheck {
  const { synced, failures, lastError } = health;
  const why = lastError ? `: ${lastError}` : '';
  return {
    name,
    ok: synced && failures === 0,
    required,
    ...(!synced ? { detail: `not synced${why}` } : failures ? { detail: `${failures} failed attempts in a row${why}` } : {}),
  };
}

/** The health an Informer reports, and the memory of its last outage warning. */
export class HealthBook {
  readonly health: InformerHealth = { synced: false, connected: false, lastContact: 0, failures: 0 };
  private lastWarnAt = -Infinity;

  constructor(private readonly quietMs: number = WARN_QUIET_MS) {}

  /** The failures-th failed attempt in a row; `error` says which step and why. */
  failed(failures: number, error: string): void {
    this.health.connected = false;
    this.health.failures = failures;
    this.health.lastError = error;
  }

  /**
   * Whether a failure is logged as a warning: once per outage, so the first
   * failure of a streak, unless a warning went out within quietMs (a
   * connection that drops again right after it came back is the same outage).
   * A true answer counts as the warning given at `now`.
   */
  warns(failures: number, now: number): boolean {
    if (failures === 1 && now - this.lastWarnAt > this.quietMs) {
      this.lastWarnAt = now;
      return true;
    }
    return false;
  }

  /** A successful list, poll or watch. */
  recovered(now: number): void {
    this.health.connected = true;
    this.health.failures = 0;
    this.health.lastError = undefined;
    this.health.lastContact = now;
  }
}
