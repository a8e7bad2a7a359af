/**
 * Waiting for requests (of any kind: their status is the same) to finish: list, then watch from the list's
 * resourceVersion (re-listing when the watch ends normally or expires); if
 * listing or watching fails (no watch permission, a proxy that cuts
 * streams, network trouble), poll each request with GET instead for the rest
 * of the wait. Requests are tracked by name and uid: one deleted, or deleted
 * and created anew under the same name, is "gone".
 */
import { isFinished } from '../../api/conditions.js';
import { describeError, statusCode } from '../../kube/client.js';
import { formatDuration } from '../../util/duration.js';
import { kindPlural } from './kind.js';
import type { RequestObject } from './args-output.js';
import { apiError, type Target } from './target.js';

export interface Tracked {
  name: string;
  uid: string | undefined;
  /** Latest state seen. */
  request: RequestObject;
  gone: boolean;
}

export interface WaitOptions {
  /** Absolute time (ms since epoch) after which waiting stops. */
  deadline: number;
  pollIntervalMs: number;
  /** Called with every new state of a tracked request. */
  onUpdate(req: RequestObject): void;
  /** Called once when a tracked request disappears. */
  onGone(name: string): void;
  /** Notes for stderr (falling back to polling, transient errors). */
  onNote(message: string): void;
}

/** Waits until every request is finished or gone, or the deadline passes; returns the last state of each. */
export async function waitForRequests(target: Target, initial: readonly RequestObject[], opts: WaitOptions): Promise<Tracked[]> {
  const w = new Waiter(target, initial, opts);
  return w.run();
}

class Waiter {
  private readonly tracked = new Map<string, Tracked>();

  constructor(
    private readonly t: Target,
    initial: readonly RequestObject[],
    private readonly o: WaitOptions,
  ) {
    for (const r of initial) {
      const name = r.metadata.name ?? '';
      this.tracked.set(name, { name, uid: r.metadata.uid, request: r, gone: false });
    }
  }

  private pending(): Tracked[] {
    return [...this.tracked.values()].filter((x) => !x.gone && !isFinished(x.request));
  }

  private remaining(): number {
    return this.o.deadline - Date.now();
  }

  /** A finished request keeps its outcome, whatever happens to it afterwards. */
  private markGone(x: Tracked): void {
    if (x.gone || isFinished(x.request)) return;
    x.gone = true;
    this.o.onGone(x.name);
  }

  private see(obj: RequestObject): void {
    const x = this.tracked.get(obj.metadata?.name ?? '');
    if (!x || x.gone || isFinished(x.request)) return;
    if (x.uid !== undefined && obj.metadata.uid !== x.uid) {
      this.markGone(x);
      return;
    }
    x.request = obj;
    this.o.onUpdate(obj);
  }

  async run(): Promise<Tracked[]> {
    let watching = true;
    while (this.pending().length > 0 && this.remaining() > 0) {
      if (watching) {
        try {
          await this.listAndWatch();
        } catch (e) {
          const code = statusCode(e);
          if (code === 401) throw apiError(e, this.t, `watch ${kindPlural(this.t.kind.kind)}`);
          watching = false;
          this.o.onNote(`watching ${kindPlural(this.t.kind.kind)} in ${this.t.namespace} failed (${describeError(e)}); polling every ${formatDuration(this.o.pollIntervalMs)} instead`);
        }
      } else {
        await this.pollOnce();
        if (this.pending().length > 0) await sleep(Math.min(this.o.pollIntervalMs, Math.max(0, this.remaining())));
      }
    }
    return [...this.tracked.values()];
  }

  /** One list + watch; resolves when the watch ends normally (or all are done, or the deadline passes), rejects on failure. */
  private async listAndWatch(): Promise<void> {
    const names = this.pending().map((x) => x.name);
    // One request: just that object; several: the namespace, filtered here by name.
    const fieldSelector = names.length === 1 ? `metadata.name=${names[0]}` : undefined;
    const list = await this.t.requests.list(this.t.namespace, fieldSelector ? { fieldSelector } : {});
    const present = new Set(list.items.map((i) => i.metadata?.name ?? ''));
    for (const item of list.items) this.see(item);
    for (const x of this.tracked.values()) if (!present.has(x.name)) this.markGone(x);
    if (this.pending().length === 0 || this.remaining() <= 0) return;

    const timeoutSeconds = Math.max(1, Math.min(300, Math.ceil(this.remaining() / 1000)));
    await new Promise<void>((resolve, reject) => {
      let aborted = false;
      let ctrl: AbortController | undefined;
      let settled = false;
      const finish = (err?: unknown): void => {
        if (settled) return;
        settled = true;
        clearTimeout(guard);
        clearTimeout(deadline);
        if (!aborted) {
          aborted = true;
          ctrl?.abort();
        }
        if (err) reject(err);
        else resolve();
      };
      const stop = (): void => {
        aborted = true;
        ctrl?.abort();
        finish();
      };
      // The server ends the watch after timeoutSeconds; a connection that
      // silently died would not, so give up on it a little later and re-list.
      const guard = setTimeout(stop, (timeoutSeconds + 30) * 1000);
      const deadline = setTimeout(stop, Math.max(0, this.remaining()));
      this.t.cluster
        .watch(
          this.t.requests.path(this.t.namespace),
          { resourceVersion: list.resourceVersion, allowWatchBookmarks: true, timeoutSeconds, ...(fieldSelector ? { fieldSelector } : {}) },
          (type: string, obj: unknown) => {
            if (settled) return;
            if (type === 'BOOKMARK') return;
            if (type === 'ERROR') {
              const status = obj as { code?: number; message?: string };
              // 410 Gone: the resourceVersion is too old; re-list.
              if (status?.code === 410) return stop();
              return finish(Object.assign(new Error(`watch error: ${status?.message ?? JSON.stringify(obj)}`), { statusCode: status?.code }));
            }
            const req = obj as RequestObject;
            if (type === 'DELETED') {
              const x = this.tracked.get(req.metadata?.name ?? '');
              if (x && (x.uid === undefined || x.uid === req.metadata?.uid)) this.markGone(x);
            } else {
              this.see(req);
            }
            if (this.pending().length === 0) stop();
          },
          (err: unknown) => {
            if (aborted || !err) finish();
            else finish(err);
          },
        )
        .then(
          (c) => {
            ctrl = c;
            if (aborted) c.abort();
          },
          (err: unknown) => finish(err),
        );
    });
  }

  private async pollOnce(): Promise<void> {
    for (const x of this.pending()) {
      try {
        const got = await this.t.requests.tryGet(this.t.namespace, x.name);
        if (!got) this.markGone(x);
        else this.see(got);
      } catch (e) {
        const code = statusCode(e);
        if (code === 401 || code === 403) throw apiError(e, this.t, `get ${this.t.kind.kind} ${this.t.namespace}/${x.name}`);
        this.o.onNote(`cannot read ${this.t.kind.kind} ${this.t.namespace}/${x.name} (${describeError(e)}); retrying`);
      }
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
