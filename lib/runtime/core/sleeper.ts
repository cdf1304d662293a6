/**
 * Sleeps that can be cut short: every wait of a worker (a rate-limit window, the fetch loop's
 * error backoff, a paused worker waiting to resume) is one of these, so close() or resume() ends
 * it at once instead of waiting out a timer that may last an hour (a limiter's window).
 *
 * A sleep can end early for a reason that is not the sleeper's own (another part woke the same
 * Sleeper), so callers sleep in a loop that checks their condition, like a condition variable.
 */
export class Sleeper {
  private readonly sleeping = new Set<() => void>();

  /** Resolves after `ms` (Infinity: only when woken), or at the next wake(), whichever is first. */
  sleep(ms: number): Promise<void> {
    return this.start(ms).slept;
  }

  /**
   * Waits for `work` as a sleep: it ends when `work` settles (its rejection is thrown), after `ms`,
   * or at the next wake(). The sleep is cleared either way, so a long series of waits leaves
   * nothing behind.
   */
  async race(ms: number, work: Promise<unknown>): Promise<void> {
    const { slept, end } = this.start(ms);
    try {
      await Promise.race([slept, work]);
    } finally {
      end();
    }
  }

  private start(ms: number): { slept: Promise<void>; end: () => void } {
    let end!: () => void;
    const slept = new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      end = () => {
        clearTimeout(timer);
        this.sleeping.delete(end);
        resolve();
      };
      this.sleeping.add(end);
      // setTimeout takes at most 2^31 - 1 ms; anything longer is a sleep until woken.
      if (ms <= MAX_TIMER_MS) timer = setTimeout(end, Math.max(0, ms));
    });
    return { slept, end };
  }

  /** Ends every sleep in progress. */
  wake(): void {
    for (const end of [...this.sleeping]) end();
  }
}

/** The longest delay setTimeout honours (a larger one fires at once). */
export const MAX_TIMER_MS = 2 ** 31 - 1;
