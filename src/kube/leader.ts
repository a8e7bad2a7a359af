/**
 * Leader election on a coordination.k8s.io/v1 Lease, in the manner of
 * client-go's leaderelection package:
 * - a candidate takes the Lease when it is absent or its holder has not
 *   renewed it for leaseDuration, as measured on the candidate's own clock
 *   from the moment it last saw the record change (no clock-skew assumptions);
 * - the leader renews every retryPeriod; if it cannot renew for renewDeadline
 *   (< leaseDuration), it stops acting at once (onLost), before any other
 *   candidate can take over;
 * - every write is conditional on the resourceVersion read, so two
 *   candidates can never both succeed;
 * - on release (clean shutdown), the Lease is handed back so a standby takes
 *   over immediately.
 */
import type { Logger } from 'pino';
import { describeError, statusCode, type Cluster, type KubeObject, type ResourceClient } from './client.js';

interface Lease extends KubeObject {
  spec?: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    acquireTime?: string | null;
    renewTime?: string | null;
    leaseTransitions?: number;
  };
}

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log: Logger;
  onLeadingChange?(leading: boolean): void;
}

const LEASES = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' } as const;

/** metav1.MicroTime: RFC 3339 with microseconds. */
function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class LeaderElector {
  private readonly leases: ResourceClient<Lease>;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private observed?: { record: string; at: number };
  /** leaseDurationSeconds of the lease as last read, in ms. */
  private observedDurationMs = 0;
  private observedHolder?: string;
  private leading = false;
  private stopped = false;
  private lastRenew = 0;
  private lease?: Lease;
  private timer?: NodeJS.Timeout;

  constructor(
    cluster: Cluster,
    private readonly opts: LeaderElectionOptions,
  ) {
    this.leases = cluster.resource<Lease>(LEASES);
    this.leaseDurationMs = opts.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = opts.retryPeriodMs ?? 2_000;
    if (!(this.renewDeadlineMs < this.leaseDurationMs)) throw new Error('renewDeadline must be shorter than leaseDuration');
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /**
   * Resolves true once this instance leads (false if released first). While leading, calls onLost (once) if
   * the lease cannot be renewed within renewDeadline.
   */
  async acquire(onLost: () => void): Promise<boolean> {
    const log = this.opts.log;
    log.info({ lease: `${this.opts.namespace}/${this.opts.name}`, identity: this.opts.identity }, 'waiting to become leader');
    for (;;) {
      if (this.stopped) return false;
      if ((await this.tryAcquireOrRenew()) === 'acquired') break;
      // The next try: after the retry period, or right when the lease as
      // observed expires if that comes first (a standby takes over as soon as
      // it may, not up to a retry period later).
      const untilExpiry = this.observed ? this.observed.at + this.observedDurationMs - Date.now() + 20 : Infinity;
      await sleep(Math.max(20, Math.min(this.retryPeriodMs * (1 + Math.random() * 0.2), untilExpiry)));
    }
    this.setLeading(true);
    log.info({ lease: `${this.opts.namespace}/${this.opts.name}`, identity: this.opts.identity }, 'became leader');
    const renew = async () => {
      if (this.stopped || !this.leading) return;
      const result = await this.tryAcquireOrRenew();
      if (this.stopped || !this.leading) return;
      const ok = result === 'acquired';
      if (result === 'taken' || (!ok && Date.now() - this.lastRenew >= this.renewDeadlineMs)) {
        this.setLeading(false);
        log.error(
          { lease: `${this.opts.namespace}/${this.opts.name}`, holder: result === 'taken' ? this.observedHolder : undefined },
          result === 'taken' ? 'lost leadership: another instance holds the lease' : 'lost leadership: could not renew the lease in time',
        );
        onLost();
        return;
      }
      this.timer = setTimeout(() => void renew(), ok ? this.retryPeriodMs : Math.min(this.retryPeriodMs, 500));
    };
    this.timer = setTimeout(() => void renew(), this.retryPeriodMs);
    return true;
  }

  private setLeading(v: boolean) {
    this.leading = v;
    this.opts.onLeadingChange?.(v);
  }

  /** acquired: we hold the lease now; taken: someone else validly holds it; failed: could not tell (API error, conflict). */
  private async tryAcquireOrRenew(): Promise<'acquired' | 'taken' | 'failed'> {
    const { namespace, name, identity } = this.opts;
    const now = new Date();
    const spec = (prev?: Lease['spec']): Lease['spec'] => ({
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
      acquireTime: prev?.holderIdentity === identity && prev.acquireTime ? prev.acquireTime : microTime(now),
      renewTime: microTime(now),
      leaseTransitions: (prev?.leaseTransitions ?? 0) + (prev?.holderIdentity && prev.holderIdentity !== identity ? 1 : 0),
    });
    try {
      let current = await this.leases.tryGet(namespace, name);
      if (!current) {
        current = await this.leases.create(namespace, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace }, spec: spec() });
        this.took(current);
        return 'acquired';
      }
      const record = JSON.stringify([current.spec?.holderIdentity, current.spec?.renewTime]);
      if (!this.observed || this.observed.record !== record) this.observed = { record, at: Date.now() };
      const holder = current.spec?.holderIdentity;
      const duration = (current.spec?.leaseDurationSeconds ?? 0) * 1000;
      this.observedDurationMs = duration;
      const expired = !holder || this.observed.at + duration <= Date.now();
      this.observedHolder = holder ?? undefined;
      if (holder !== identity && !expired) return 'taken';
      const updated = await this.leases.replace(namespace, name, { ...current, spec: spec(current.spec) });
      this.took(updated);
      return 'acquired';
    } catch (e) {
      const code = statusCode(e);
      if (code !== 409) this.opts.log.debug({ err: describeError(e), code }, 'lease update failed');
      return 'failed';
    }
  }

  private took(lease: Lease) {
    this.lease = lease;
    this.lastRenew = Date.now();
    this.observed = { record: JSON.stringify([lease.spec?.holderIdentity, lease.spec?.renewTime]), at: Date.now() };
  }

  /** Stops renewing; when leading, hands the lease back so a standby takes over at once. */
  async release(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    if (!this.leading || !this.lease) return;
    this.setLeading(false);
    try {
      await this.leases.replace(this.opts.namespace, this.opts.name, {
        ...this.lease,
        spec: { ...this.lease.spec, holderIdentity: null, leaseDurationSeconds: 1, renewTime: microTime(new Date()) },
      });
      this.opts.log.info('released the leader lease');
    } catch (e) {
      this.opts.log.warn({ err: describeError(e) }, 'could not release the leader lease');
    }
  }
}

function sleep(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}
