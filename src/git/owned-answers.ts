/**
 * Answers of slow questions asked for a request (its uid is the owner),
 * kept so that one request sees one answer while it is decided: read without
 * I/O by the observation, set when the work is done. A settled answer lasts
 * `ttlMs`; a pending one until it is settled. Bounded: past `max` answers,
 * expired ones go first, then the owners that asked first.
 */
export class OwnedAnswers<A extends { state: string }> {
  private readonly byOwner = new Map<string, Map<string, { answer: A; at: number }>>();
  private count = 0;

  constructor(private readonly opts: { ttlMs: number; max: number; now: () => number }) {}

  get(owner: string, key: string): A | undefined {
    const e = this.byOwner.get(owner)?.get(key);
    if (!e) return undefined;
    if (this.expired(e, this.opts.now())) {
      this.drop(owner, key);
      return undefined;
    }
    return e.answer;
  }

  set(owner: string, key: string, answer: A): void {
    if (!this.byOwner.get(owner)?.has(key)) this.trim();
    let mine = this.byOwner.get(owner);
    if (!mine) {
      mine = new Map();
      this.byOwner.set(owner, mine);
    }
    if (!mine.has(key)) this.count++;
    mine.set(key, { answer, at: this.opts.now() });
  }

  /** An owner's answers as they stand (no I/O); empty for the many owners that asked nothing. */
  forOwner(owner: string): ReadonlyMap<string, A> {
    const mine = this.byOwner.get(owner);
    const out = new Map<string, A>();
    if (!mine) return out;
    const now = this.opts.now();
    for (const [k, e] of mine) if (!this.expired(e, now)) out.set(k, e.answer);
    return out;
  }

  forget(owner: string): void {
    this.count -= this.byOwner.get(owner)?.size ?? 0;
    this.byOwner.delete(owner);
  }

  get size(): number {
    return this.count;
  }

  private expired(e: { answer: A; at: number }, now: number): boolean {
    return e.answer.state !== 'pending' && now - e.at > this.opts.ttlMs;
  }

  private drop(owner: string, key: string): void {
    const mine = this.byOwner.get(owner);
    if (!mine?.delete(key)) return;
    this.count--;
    if (!mine.size) this.byOwner.delete(owner);
  }

  private trim(): void {
    if (this.count < this.opts.max) return;
    const now = this.opts.now();
    for (const [owner, mine] of [...this.byOwner]) for (const [k, e] of [...mine]) if (this.expired(e, now)) this.drop(owner, k);
    for (const owner of [...this.byOwner.keys()]) {
      if (this.count < this.opts.max) break;
      this.forget(owner);
    }
  }
}
