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

/**
 * Questions asked of a repository for requests (owners): each question's
 * run is shared by concurrent askers of the same key, and its answer is kept
 * per owner (OwnedAnswers), so one request sees one answer while it is
 * decided. What a run asks and how its answer is reported is the user's.
 */
export class OwnedLookups<A extends { state: string }> {
  private readonly answers: OwnedAnswers<A>;
  private readonly running = new Map<string, Promise<A>>();

  constructor(opts: { ttlMs: number; now: () => number }, private readonly pending: A) {
    this.answers = new OwnedAnswers<A>({ ttlMs: opts.ttlMs, max: 10_000, now: opts.now });
  }

  /** An owner's answers, by key, as they stand (no I/O). */
  answersFor(owner: string): ReadonlyMap<string, A> {
    return this.answers.forOwner(owner);
  }

  forget(owner: string): void {
    this.answers.forget(owner);
  }

  /**
   * Starts `run` for the owner unless its answer is in or under way; when
   * it is in, `report` gets it with the seconds it took and `done` is called
   * (it only enqueues a key: what it throws is dropped).
   */
  start(owner: string, key: string, run: () => Promise<A>, report: (answer: A, seconds: number) => void, done: () => void): void {
    if (this.answers.get(owner, key)) return;
    this.answers.set(owner, key, this.pending);
    const t0 = process.hrtime.bigint();
    void this.shared(key, run).then((answer) => {
      this.answers.set(owner, key, answer);
      report(answer, Number(process.hrtime.bigint() - t0) / 1e9);
      try {
        done();
      } catch {
        // The callback only enqueues a key.
      }
    });
  }

  /** One run per key at a time, shared by whoever asks meanwhile. `run` must not throw. */
  shared(key: string, run: () => Promise<A>): Promise<A> {
    let p = this.running.get(key);
    if (!p) {
      p = run().finally(() => this.running.delete(key));
      this.running.set(key, p);
    }
    return p;
  }
}
