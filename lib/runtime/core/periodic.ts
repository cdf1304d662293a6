/**
 * The one shape of every periodic part (the heartbeat, the stalled sweep): a chained timer that
 * never overlaps itself, knows how late each run fired, reports what a run throws, and stops
 * cleanly. Its timer is unref'd: it never keeps a process alive on its own.
 */
export class Periodic {
  private timer?: NodeJS.Timeout;
  private dueAt = 0;
  private stopped = true;
  private current?: Promise<number | void>;

  constructor(
    private readonly intervalMs: number,
    /**
     * One run; `lateByMs` is how long after its due time it fired. It may answer when the next run
     * is due, in ms from now, instead of one interval after this one.
     */
    private readonly run: (lateByMs: number) => Promise<number | void>,
    /**
     * What a run threw (or rejected with). A failed run is never silent: a skipped heartbeat must
     * be seen. The next run is still due one interval after the failed one fired.
     */
    private readonly onError: (error: Error) => void,
  ) {}

  get active(): boolean {
    return !this.stopped;
  }

  /** Starts the timer; the first run is after `firstDelayMs` (default one interval). */
  start(firstDelayMs = this.intervalMs): void {
    if (!this.stopped) return;
    this.stopped = false;
    // A run still in flight schedules the next one itself when it ends.
    if (!this.current) this.schedule(firstDelayMs);
  }

  /** Cancels the timer and waits for a run in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.current;
  }

  private schedule(delayMs: number): void {
    this.scheduleAt(Date.now() + delayMs);
  }

  private fire(): void {
    this.timer = undefined;
    const firedAt = Date.now();
    const lateBy = Math.max(0, firedAt - this.dueAt);
    let nextInMs: number | void;
    // Called through an async arrow so a run that throws before its first await is caught too.
    this.current = (async () => this.run(lateBy))().then((next) => (nextInMs = next), (error: unknown) => this.report(error)).finally(() => {
      this.current = undefined;
      // Keep the cadence: the next run is due one interval after this one fired. A run that ends
      // past that (its reply waited on a blocked event loop or a slow Redis) makes the next one
      // late, and it says so: the lateness is not hidden in the run's own duration.
      if (this.stopped || this.timer) return;
      this.scheduleAt(typeof nextInMs === 'number' ? Date.now() + nextInMs : firedAt + this.intervalMs);
    });
  }

  private report(error: unknown): void {
    try {
      this.onError(error instanceof Error ? error : new Error(String(error)));
    } catch {
      // The reporter itself failed; the timer must go on regardless.
    }
  }

  private scheduleAt(dueAt: number): void {
    this.dueAt = dueAt;
    this.timer = setTimeout(() => this.fire(), Math.max(0, dueAt - Date.now()));
    this.timer.unref();
  }
}
