/**
 * Our PipelineRuns as the controller should see them: the informer's cache,
 * indexed by request key, corrected by what this instance did that the cache
 * has not shown yet (PipelineRuns created, PipelineRuns deleted).
 */
import { runOutcomeOf, requestKeyOf } from '../tekton/pipelinerun.js';
import type { PipelineRun } from '../tekton/tekton-types.js';

/** How long an overlay entry is kept when the cache never shows the change. */
const OVERLAY_TTL_MS = 120_000;

/** The part of the PipelineRun informer the index reads. */
export interface PipelineRunCache {
  get(key: string): PipelineRun | undefined;
  list(): Iterable<PipelineRun>;
}

export class RunIndex {
  /** request key -> names of its PipelineRuns */
  private readonly byRequest = new Map<string, Set<string>>();
  /** PipelineRuns created by us that the informer has not shown yet (by name), with their request key. */
  private readonly createdOverlay = new Map<string, { pr: PipelineRun; at: number; key: string | undefined }>();
  /** The same, by request key (a burst keeps hundreds there; a look-up must not walk them all). */
  private readonly createdByRequest = new Map<string, Set<string>>();
  /** PipelineRuns deleted by us (name -> uid) that the informer still shows: not deleted twice. */
  private readonly deletedOverlay = new Map<string, { uid: string | undefined; at: number }>();

  constructor(
    private readonly cache: PipelineRunCache,
    private readonly namespace: string,
  ) {}

  /**
   * The informer showed a PipelineRun (added, changed or deleted). Returns its
   * request key (if it is one of ours) and whether a run slot may have freed.
   */
  observed(pr: PipelineRun, deleted: boolean): { key: string | undefined; freed: boolean } {
    const key = requestKeyOf(pr);
    const name = pr.metadata.name ?? '';
    this.dropCreated(name);
    if (deleted) this.deletedOverlay.delete(name);
    if (!key) return { key, freed: false };
    let set = this.byRequest.get(key);
    if (deleted) {
      set?.delete(name);
      if (set && set.size === 0) this.byRequest.delete(key);
    } else {
      if (!set) this.byRequest.set(key, (set = new Set()));
      set.add(name);
    }
    return { key, freed: deleted || runOutcomeOf(pr).done };
  }

  /** We created this PipelineRun: as sent, and the object the API server returned. */
  created(sent: PipelineRun, created: PipelineRun): void {
    const name = sent.metadata.name!;
    this.dropCreated(name);
    const key = requestKeyOf(created);
    this.createdOverlay.set(name, { pr: created, at: Date.now(), key });
    if (key !== undefined) {
      let names = this.createdByRequest.get(key);
      if (!names) this.createdByRequest.set(key, (names = new Set()));
      names.add(name);
    }
  }

  private dropCreated(name: string): void {
    const e = this.createdOverlay.get(name);
    if (!e) return;
    this.createdOverlay.delete(name);
    if (e.key === undefined) return;
    const names = this.createdByRequest.get(e.key);
    names?.delete(name);
    if (names?.size === 0) this.createdByRequest.delete(e.key);
  }

  /** We deleted this PipelineRun. */
  deleted(pr: PipelineRun): void {
    const name = pr.metadata.name!;
    this.dropCreated(name);
    this.deletedOverlay.set(name, { uid: pr.metadata.uid, at: Date.now() });
  }

  /** Request keys that have PipelineRuns in the cache. */
  requestKeys(): Iterable<string> {
    return this.byRequest.keys();
  }

  /** The PipelineRuns of one request. */
  forRequest(key: string): PipelineRun[] {
    const out: PipelineRun[] = [];
    for (const name of this.byRequest.get(key) ?? []) {
      const pr = this.cache.get(`${this.namespace}/${name}`);
      const gone = this.deletedOverlay.get(name);
      if (pr && !(gone && gone.uid === pr.metadata.uid)) out.push(pr);
    }
    for (const name of this.createdByRequest.get(key) ?? []) {
      const pr = this.createdOverlay.get(name)?.pr;
      if (pr && !out.some((p) => p.metadata.name === name)) out.push(pr);
    }
    return out;
  }

  /** Every PipelineRun we know of: the cache's (less the ones we deleted), then created ones the cache has not shown. */
  *all(): Generator<PipelineRun> {
    const seen = new Set<string>();
    for (const pr of this.cache.list()) {
      const name = pr.metadata.name ?? '';
      const gone = this.deletedOverlay.get(name);
      if (gone && gone.uid === pr.metadata.uid) continue;
      seen.add(name);
      yield pr;
    }
    for (const { pr } of this.createdOverlay.values()) if (!seen.has(pr.metadata.name ?? '')) yield pr;
  }

  /** Drops overlay entries the cache never confirmed. */
  expire(now = Date.now()): void {
    for (const [name, e] of this.createdOverlay) if (now - e.at > OVERLAY_TTL_MS) this.dropCreated(name);
    for (const [name, e] of this.deletedOverlay) if (now - e.at > OVERLAY_TTL_MS) this.deletedOverlay.delete(name);
  }
}
