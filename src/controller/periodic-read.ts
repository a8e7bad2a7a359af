/**
 * A value read from the cluster at start and again every refresh period
 * (the Tekton version, the Tekton settings): one read at a time (concurrent
 * refreshes share it), the next one scheduled only after the last ended, and
 * nothing read once stopped. Subclasses say what one read does.
 */
export abstract class PeriodicRead {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private reading: Promise<void> | undefined;

  protected constructor(private readonly refreshMs: number) {}

  /** One read; never throws (what it found, or why not, is kept by the subclass). */
  protected abstract readOnce(): Promise<void>;

  /** Reads once (resolves when the first read has ended, whatever it found), then again every refresh period. */
  async start(): Promise<void> {
    await this.refresh();
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** One read now; concurrent calls share it. */
  refresh(): Promise<void> {
    this.reading ??= this.readOnce().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.refresh().finally(() => this.schedule());
    }, this.refreshMs);
    this.timer.unref();
  }
}
