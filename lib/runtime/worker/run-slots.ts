import type { JobLock } from '../locks/tracked-job.js';

/** What a job held ahead got from its wait: a slot, the lock's abort (no slot taken), or the worker's close (none either). */
export type SlotOutcome = 'slot' | 'aborted' | 'closing';

/**
 * A worker with `prefetch` (docs/prefetch.md) holds up to concurrency + prefetch jobs locked, but
 * runs at most `concurrency` handlers: a job it holds ahead waits here, first come first served,
 * until a handler ends. Made only when prefetch is set: a worker without it never waits here.
 */
export class RunSlots {
  private free: number;
  private closed = false;
  private readonly waiting: Array<(outcome: SlotOutcome) => void> = [];

  constructor(size: number) {
    this.free = size;
  }

  /**
   * A slot for the run `lock` holds: 'slot' (give() it back when the handler ended), 'aborted'
   * when the lock's signal aborted first (the lock lost, the job cancelled, close(true)), or
   * 'closing' when the worker began to close first: a job that has not started is given back then.
   */
  take(lock: JobLock): SlotOutcome | Promise<SlotOutcome> {
    // Cut short already (a cancel mark at pickup, a lost lock): it ends as such, not given back.
    if (this.closed) return lock.interruption || lock.abortReason ? 'aborted' : 'closing';
    // A free slot means nobody waits: give() hands a freed slot to the first waiter before it counts one free.
    if (this.free > 0) {
      this.free--;
      return 'slot';
    }
    // The signal (an AbortController made on first read) only for a run that has to wait.
    const signal = lock.signal;
    if (signal.aborted) return 'aborted';
    return new Promise<SlotOutcome>((resolve) => {
      const settle = (outcome: SlotOutcome) => {
        signal.removeEventListener('abort', onAbort);
        resolve(outcome);
      };
      const onAbort = () => {
        const at = this.waiting.indexOf(settle);
        if (at >= 0) this.waiting.splice(at, 1);
        resolve('aborted');
      };
      this.waiting.push(settle);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** A handler ended: its slot goes to the job that waited longest, or back to the free ones. */
  give(): void {
    const next = this.waiting.shift();
    if (next) next('slot');
    else this.free++;
  }

  /**
   * The worker is closing: the jobs waiting (and any that comes later) get 'closing', not a slot.
   * Last taken first: each is given back to the end of wait that is taken next, so the one taken
   * first goes back last and is taken first again.
   */
  close(): void {
    this.closed = true;
    for (const settle of this.waiting.splice(0).reverse()) settle('closing');
  }
}
