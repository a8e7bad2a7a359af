/**
 * Whether the ServiceAccount a request names exists in the controller's
 * namespace on the internal cluster, asked before its PipelineRun is made (a
 * need of decide(): the `checkServiceAccount` action). Without it, a request
 * naming a service account the configuration allows but nobody created got
 * a PipelineRun whose pods the API server refused, and ended Failed with
 * Tekton's message about a pod; now it is Rejected before anything runs,
 * saying which ServiceAccount to create and where.
 *
 * Answers are kept a short while (`ttlMs`; a "missing" one only for the
 * decision it was asked for, `missingTtlMs`), so that a ServiceAccount
 * created after a refusal serves the next request at once. A look-up that fails otherwise
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
  /** How long an answer is used (default 30 s). */
  ttlMs?: number;
  /** How long a "missing" answer is used (default 2 s: enough for the decision that asked). */
  missingTtlMs?: number;
}

export class ServiceAccountChecks {
  private readonly answers = new Map<string, { answer: ServiceAccountAnswer; at: number }>();
  private readonly waiting = new Map<string, Array<() => void>>();
  private readonly ttlMs: number;
  private readonly missingTtlMs: number;
  private warned = false;

  constructor(private readonly opts: ServiceAccountChecksOptions) {
    this.ttlMs = opts.ttlMs ?? 30_000;
    this.missingTtlMs = opts.missingTtlMs ?? 2000;
  }

  /** The answer for a ServiceAccount, if a fresh one is in (a read, no I/O). */
  known(name: string): ServiceAccountAnswer | undefined {
    const a = this.answers.get(name);
    if (!a) return undefined;
    if (this.opts.now() - a.at >= (a.answer === 'missing' ? this.missingTtlMs : this.ttlMs)) {
      this.answers.delete(name);
      return undefined;
    }
    return a.answer;
  }

  /** Asks, unless a fresh answer is in or a look-up is under way; `done` is called once the answer is in. */
  check(name: string, done: () => void): void {
    if (this.known(name) !== undefined) {
      done();
      return;
    }
    const queued = this.waiting.get(name);
    if (queued) {
      queued.push(done);
      return;
    }
    this.waiting.set(name, [done]);
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
        this.answers.set(name, { answer, at: this.opts.now() });
        const callbacks = this.waiting.get(name) ?? [];
        this.waiting.delete(name);
        for (const cb of callbacks) cb();
      });
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
