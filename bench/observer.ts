/**
 * Follows every benchmark request and PipelineRun through admin watches and
 * timestamps what arrives (performance.now(), in the benchmark's main thread).
 *
 * A watch that ends is resumed from the last resourceVersion seen; if that is
 * too old (410 Gone / ERROR event) the observer relists, and counts a gap:
 * transitions missed during a gap get the relist's time, not their own.
 */
import { CustomObjectsApi, Watch, type KubeConfig } from '@kubernetes/client-node';
import type { InternalRequest } from '../src/api/types.js';
import type { PipelineRun } from '../src/tekton/tekton-types.js';

export const IR = { group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequests' };
export const PR = { group: 'tekton.dev', version: 'v1', plural: 'pipelineruns' };

export interface RequestRecord {
  key: string;
  namespace: string;
  /** With --kcp: the workspace's path (the key stays namespace/name: names are unique in a run). */
  workspace?: string;
  name: string;
  pass: number;
  /** Expected outcome: true for a request from an allowed namespace. */
  allowed: boolean;
  uid?: string;
  /** create sent / create answered / first seen on the watch (ms, performance.now()). */
  sentAt?: number;
  ackAt?: number;
  seenAt?: number;
  createError?: string;
  runningAt?: number;
  terminalAt?: number;
  terminalStatus?: string;
  terminalReason?: string;
  terminalMessage?: string;
  resultCount?: number;
  /** The request's spec.params and, once terminal, its status.results (as seen on the watch). */
  params?: Record<string, string>;
  results?: Record<string, string>;
  /** uids of the PipelineRuns seen for this request. */
  prUids: Set<string>;
  prNames: Set<string>;
  prAddedAt?: number;
  prDoneAt?: number;
  prDeletedAt?: number;
}

/** Time the request is known to exist: the create's answer or its first watch event, whichever came first. */
export function createdAt(r: RequestRecord): number | undefined {
  const xs = [r.ackAt, r.seenAt].filter((x): x is number => x !== undefined);
  return xs.length ? Math.min(...xs) : undefined;
}

function succeeded(conds: Array<{ type?: string; status?: string; reason?: string; message?: string }> | undefined) {
  return conds?.find((c) => c.type === 'Succeeded');
}

export class Observer {
  readonly byKey = new Map<string, RequestRecord>();
  private readonly byName = new Map<string, RequestRecord>();
  private readonly byUid = new Map<string, RequestRecord>();
  private readonly prOwner = new Map<string, RequestRecord | null>();
  /** uids of PipelineRuns that exist now (ADDED, not yet DELETED), for benchmark requests. */
  readonly livePrs = new Set<string>();
  private readonly deletedPrs = new Set<string>();
  gaps = 0;
  watchRestarts = 0;
  private stopped = false;
  private readonly aborts: AbortController[] = [];
  private readonly loops: Promise<void>[] = [];
  private waiters: Array<() => void> = [];

  constructor(
    /** Where requests are watched: one remote, or (a sharded kcp) every shard's virtual workspace. */
    private readonly remoteAdmin: KubeConfig | KubeConfig[],
    private readonly internalAdmin: KubeConfig,
    private readonly namespace: string,
  ) {}

  track(r: RequestRecord): void {
    this.byKey.set(r.key, r);
    this.byName.set(r.name, r);
  }

  setUid(r: RequestRecord, uid: string): void {
    r.uid = uid;
    this.byUid.set(uid, r);
  }

  /** Resolves on the next observed change (or after ms). */
  changed(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.waiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  private notify(): void {
    const w = this.waiters;
    this.waiters = [];
    w.forEach((f) => f());
  }

  async start(): Promise<void> {
    const ready: Array<Promise<void>> = [];
    for (const kc of Array.isArray(this.remoteAdmin) ? this.remoteAdmin : [this.remoteAdmin]) {
      ready.push(this.follow(kc, `/apis/${IR.group}/${IR.version}/${IR.plural}`, (t, o) => this.onRequest(t, o as InternalRequest), () => this.list(kc, undefined, IR)));
    }
    ready.push(this.follow(this.internalAdmin, `/apis/${PR.group}/${PR.version}/namespaces/${this.namespace}/${PR.plural}`, (t, o) => this.onPipelineRun(t, o as PipelineRun), () =>
      this.list(this.internalAdmin, this.namespace, PR)));
    await Promise.all(ready);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.aborts.forEach((a) => a.abort());
    await Promise.allSettled(this.loops);
  }

  private async list(kc: KubeConfig, namespace: string | undefined, ref: typeof IR): Promise<{ items: unknown[]; rv: string }> {
    const api = kc.makeApiClient(CustomObjectsApi);
    const items: unknown[] = [];
    let cont: string | undefined;
    let rv = '';
    do {
      const page = (namespace
        ? await api.listNamespacedCustomObject({ ...ref, namespace, limit: 500, _continue: cont })
        : await api.listClusterCustomObject({ ...ref, limit: 500, _continue: cont })) as { items?: unknown[]; metadata?: { resourceVersion?: string; continue?: string } };
      items.push(...(page.items ?? []));
      rv = page.metadata?.resourceVersion ?? rv;
      cont = page.metadata?.continue || undefined;
    } while (cont);
    return { items, rv };
  }

  /** List then watch, forever; resolves once the first watch is established. */
  private follow(
    kc: KubeConfig,
    path: string,
    onEvent: (type: string, obj: unknown) => void,
    list: () => Promise<{ items: unknown[]; rv: string }>,
  ): Promise<void> {
    let firstReady: () => void = () => {};
    const first = new Promise<void>((r) => (firstReady = r));
    const loop = (async () => {
      let rv: string | undefined;
      let initial = true;
      while (!this.stopped) {
        try {
          if (rv === undefined) {
            const l = await list();
            if (!initial) {
              this.gaps++;
              for (const o of l.items) onEvent('MODIFIED', o);
            }
            rv = l.rv;
          }
          const out = await new Promise<{ gone: boolean }>((resolve) => {
            let gone = false;
            void new Watch(kc)
              .watch(
                path,
                { resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds: 3600 },
                (type: string, obj: { metadata?: { resourceVersion?: string }; code?: number }) => {
                  if (type === 'ERROR') {
                    gone = true;
                    return;
                  }
                  if (obj?.metadata?.resourceVersion) rv = obj.metadata.resourceVersion;
                  if (type !== 'BOOKMARK') onEvent(type, obj);
                },
                () => resolve({ gone }),
              )
              .then((a) => {
                this.aborts.push(a);
                if (initial) {
                  initial = false;
                  firstReady();
                }
              }, () => resolve({ gone: false }));
          });
          if (out.gone) rv = undefined;
          if (!this.stopped) {
            this.watchRestarts++;
            await new Promise((r) => setTimeout(r, 100));
          }
        } catch {
          if (!this.stopped) await new Promise((r) => setTimeout(r, 500));
        }
      }
    })();
    this.loops.push(loop);
    return first;
  }

  private onRequest(type: string, r: InternalRequest): void {
    const now = performance.now();
    const rec = this.byKey.get(`${r.metadata?.namespace ?? ''}/${r.metadata?.name ?? ''}`);
    if (!rec || type === 'DELETED') return;
    if (r.metadata.uid && rec.uid === undefined) this.setUid(rec, r.metadata.uid);
    rec.seenAt ??= now;
    rec.params ??= r.spec?.params ?? {};
    const c = succeeded(r.status?.conditions);
    // The requester's contract: an empty reason or `Running` is still running, whatever the status (the Go controller
    // writes False/Running while it runs; this one Unknown/Running).
    const running = c !== undefined && (c.reason === undefined || c.reason === '' || c.reason === 'Running');
    if (running) rec.runningAt ??= now;
    if (c && !running && (c.status === 'True' || c.status === 'False') && rec.terminalAt === undefined) {
      rec.terminalAt = now;
      rec.terminalStatus = c.status;
      rec.terminalReason = c.reason;
      rec.terminalMessage = c.message;
      rec.resultCount = Object.keys(r.status?.results ?? {}).length;
      rec.results = r.status?.results;
      this.notify();
    }
  }

  /** The benchmark request a PipelineRun belongs to: a label/annotation value or its name naming a request uid or name. */
  private ownerOf(pr: PipelineRun): RequestRecord | undefined {
    const uid = pr.metadata.uid ?? '';
    const cached = this.prOwner.get(uid);
    if (cached !== undefined) return cached ?? undefined;
    let owner: RequestRecord | undefined;
    const values = [...Object.values(pr.metadata.labels ?? {}), ...Object.values(pr.metadata.annotations ?? {})];
    for (const v of values) {
      owner = this.byUid.get(v) ?? this.byName.get(v);
      if (owner) break;
    }
    if (!owner) {
      const m = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/.exec(pr.metadata.name ?? '');
      if (m) owner = this.byUid.get(m[0]);
    }
    // Not yet known (the create's answer may come after the watch event): do not cache a miss.
    if (owner) this.prOwner.set(uid, owner);
    return owner;
  }

  private onPipelineRun(type: string, pr: PipelineRun): void {
    const now = performance.now();
    const rec = this.ownerOf(pr);
    if (!rec) {
      // Possibly a PipelineRun of a request whose uid is not known yet: retry shortly.
      setTimeout(() => this.lateOwner(type, pr, now), 50);
      return;
    }
    this.apply(rec, type, pr, now);
  }

  private lateOwner(type: string, pr: PipelineRun, at: number, tries = 0): void {
    const rec = this.ownerOf(pr);
    if (rec) return this.apply(rec, type, pr, at);
    if (tries < 100 && !this.stopped) setTimeout(() => this.lateOwner(type, pr, at, tries + 1), 100);
  }

  private apply(rec: RequestRecord, type: string, pr: PipelineRun, at: number): void {
    const uid = pr.metadata.uid ?? '';
    if (type === 'DELETED') {
      rec.prDeletedAt ??= at;
      this.livePrs.delete(uid);
      this.deletedPrs.add(uid);
      this.notify();
      return;
    }
    if (!rec.prUids.has(uid)) {
      rec.prUids.add(uid);
      rec.prNames.add(pr.metadata.name ?? '');
      if (!this.deletedPrs.has(uid)) this.livePrs.add(uid);
    }
    // min(): a deferred ADDED (owner found late) may be applied after a later event.
    rec.prAddedAt = Math.min(rec.prAddedAt ?? at, at);
    const c = succeeded(pr.status?.conditions);
    if (c?.status === 'True' || c?.status === 'False') rec.prDoneAt = Math.min(rec.prDoneAt ?? at, at);
  }
}
