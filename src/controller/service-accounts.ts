/**
 * Whether the ServiceAccount a request names exists in the controller's
 * namespace on the internal cluster, asked before its PipelineRun is made (a
 * need of decide(): the `checkServiceAccount` action). Without it, a request
 * naming a service account the configuration allows but nobody created got
 * a PipelineRun whose pods the API server refused, and ended Failed with
 * Tekton's message about a pod; now it is Rejected before anything runs,
 * saying which ServiceAccount to create and where.
 *
 * "present" answers are kept a short while (`ttlMs`) for every request; a
 * "missing" one only for the request that asked, so that once the
 * ServiceAccount is created after a refusal, the next request runs. A look-up that fails otherwise
 * than 404 (no RBAC yet, the apiserver busy) answers `unknown`, which
 * decide() takes as before this check existed: the run is made. It is a
 * courtesy to the requester, not a rule: who may use which service account
 * is the configuration's (allowedServiceAccounts, rules[].serviceAccounts).
 */
import type { Logger } from 'pino';
import { describeError, statusCode, type Cluster } from '../kube/client.js';
import type { ServiceAccountAnswer } from './observation.js';

export interface ServiceAccountChecksOptions {
  /** One look-up: whether the ServiceAccount exists (throws on anything but an answer). */
  get(name: string): Promise<boolean>;
  now(): number;
  log: Logger;
  /** How long a "present" or "unknown" answer serves every request (default 30 s). */
  ttlMs?: number;
}

/** A "missing" answer is kept this long at most for the request that asked (it is read within milliseconds). */
const MISSING_KEPT_MS = 60_000;

export class ServiceAccountChecks {
  /** "present" and "unknown": by name, for every request. */
  private readonly answers = new Map<string, { answer: ServiceAccountAnswer; at: number }>();
  /** "missing": by request (owner) and name, for the request that asked only. */
  private readonly missing = new Map<string, number>();
  private readonly waiting = new Map<string, Array<{ owner: string; done: () => void }>>();
  private readonly ttlMs: number;
  private warned = false;

  constructor(private readonly opts: ServiceAccountChecksOptions) {
    this.ttlMs = opts.ttlMs ?? 30_000;
  }

  /**
   * The answer for a ServiceAccount as the request `owner` (its uid) may use
   * it (a read, no I/O). "missing" is told only to the request that asked,
   * so that once the ServiceAccount is created the next request is asked
   * about afresh and runs.
   */
  known(name: string, owner: string): ServiceAccountAnswer | undefined {
    const now = this.opts.now();
    const a = this.answers.get(name);
    if (a && now - a.at < this.ttlMs) return a.answer;
    if (a) this.answers.delete(name);
    const m = this.missing.get(`${owner}/${name}`);
    if (m !== undefined && now - m < MISSING_KEPT_MS) return 'missing';
    if (m !== undefined) this.missing.delete(`${owner}/${name}`);
    return undefined;
  }

  /** Asks for a request (owner: its uid), unless an answer is in or a look-up is under way; `done` is called once the answer is in. */
  check(name: string, owner: string, done: () => void): void {
    if (this.known(name, owner) !== undefined) {
      done();
      return;
    }
    const queued = this.waiting.get(name);
    if (queued) {
      queued.push({ owner, done });
      return;
    }
    this.waiting.set(name, [{ owner, done }]);
    void this.opts
      .get(name)
      .then(
        (exists): ServiceAccountAnswer => (exists ? 'present' : 'missing'),
        (e: unknown): ServiceAccountAnswer => {
          if (!this.warned) {
            this.warned = true;
            this.opts.log.warn({ serviceAccount: name, err: describeError(e) }, 'cannot tell whether a ServiceAccount exists (the controller needs get on serviceaccounts in its namespace: config/rbac/internal); requests naming one run without that check');
          }
          return 'unknown';
        },
      )
      .then((answer) => {
        const at = this.opts.now();
        const asked = this.waiting.get(name) ?? [];
        this.waiting.delete(name);
        if (answer === 'missing') {
          this.sweep(at);
          for (const w of asked) this.missing.set(`${w.owner}/${name}`, at);
        } else {
          this.answers.set(name, { answer, at });
        }
        for (const w of asked) w.done();
      });
  }

  /** Forgets "missing" answers no request read in time (requests deleted meanwhile). */
  private sweep(now: number): void {
    for (const [k, at] of this.missing) if (now - at >= MISSING_KEPT_MS) this.missing.delete(k);
  }
}

/** The look-up on a cluster: true when the ServiceAccount is there, false on 404. */
export function serviceAccountReader(cluster: Cluster, namespace: string): ServiceAccountChecksOptions['get'] {
  return async (name) => {
    try {
      await cluster.core.readNamespacedServiceAccount({ namespace, name });
      return true;
    } catch (e) {
      if (statusCode(e) === 404) return false;
      throw e;
    }
  };
}
