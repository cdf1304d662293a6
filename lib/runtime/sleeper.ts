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
    return new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const end = () => {
        clearTimeout(timer);
        this.sleeping.delete(end);
        resolve();
      };
      this.sleeping.add(end);
      // setTimeout takes at most 2^31 - 1 ms; anything longer is a sleep until woken.
      if (ms <= MAX_TIMER_MS) timer = setTimeout(end, Math.max(0, ms));
    });
  }

  /** Ends every sleep in progress. */
  wake(): void {
    for (const end of [...this.sleeping]) end();
  }
}

/** The longest delay setTimeout honours (a larger one fires at once). */
export const MAX_TIMER_MS = 2 ** 31 - 1;
