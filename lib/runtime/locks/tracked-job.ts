import type { LockReleasedEvent } from './lock-events.js';

/** One ownership of a job (one pickup, one token), as its runner sees it. */
export interface JobLock {
  readonly jobId: string;
  readonly token: string;
  /**
   * Aborted with a LockLostError when the lock is lost, by the worker closing without waiting, or
   * with the interruption (JobTimeoutError, JobCancelledError) that ends the run.
   */
  readonly signal: AbortSignal;
  /** Why this ownership was given up (the signal's reason), once it was. */
  readonly abortReason: Error | undefined;
  /** Why the run was cut short while the lock is still held (a timeout, a cancel), once it was. */
  readonly interruption: Error | undefined;
  /**
   * The handler's outcome, or the interruption's error as soon as one comes (the handler is not
   * waited for: whatever it returns later is refused).
   */
  race<T>(work: Promise<T>): Promise<T>;
  /** Cuts the run short: aborts the signal with `reason` and ends race(). False if it was cut already. */
  interrupt(reason: Error): boolean;
  /** True while the LockManager still renews this ownership. */
  readonly held: boolean;
  /** The code a renewal found, if one found the lock gone (-2) or taken (-6). */
  readonly lostCode: -2 | -6 | undefined;
  /** True from beginRelease() (the finish, or the handler's own move, is in flight) until cancelRelease(). */
  readonly releasing: boolean;
  /** The runner is finishing the job: keep renewing, but a failure now is the finish's to judge. */
  beginRelease(): void;
  /** The release begun did not happen after all (a move that had nothing to do): failures are this ownership's again. */
  cancelRelease(): void;
  /** Stops renewing; the worker's timer stops when it holds nothing. */
  release(reason: LockReleasedEvent['reason']): void;
  /**
   * Told each reason the run is cut short for (a lost lock, a close, a timeout, a cancel), when
   * it comes: the attempt's span (telemetry) listens here, not on `signal`, whose AbortController
   * would cost every traced job a few µs.
   */
  onAbort?: (reason: Error) => void;
}

/** What a TrackedJob asks of the WorkerLocks that tracks it. */
export interface LockOwner {
  holds(job: TrackedJob): boolean;
  drop(job: TrackedJob, reason: LockReleasedEvent['reason']): void;
}

/** A JobLock as a WorkerLocks tracks it: its lock's state, its signal and the run's interruption. */
export class TrackedJob implements JobLock {
  releasing = false;
  lostCode: -2 | -6 | undefined;
  abortReason: Error | undefined;
  interruption: Error | undefined;
  onAbort?: (reason: Error) => void;
  /** Made when a handler first reads `signal`: most never do, and one per job costs in the hot path. */
  private controller?: AbortController;
  /** Ends the runner's race() with the interruption; set while a race runs. */
  private endRace?: (reason: Error) => void;

  constructor(
    private readonly owner: LockOwner,
    readonly jobId: string,
    readonly token: string,
    /** When the lock was last set, at worst: when the command that set it was sent. */
    public renewedAt: number,
    /** When the pickup that set it was sent. */
    readonly acquiredAt: number = renewedAt,
  ) {}

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      const reason = this.interruption ?? this.abortReason;
      if (reason) this.controller.abort(reason);
    }
    return this.controller.signal;
  }

  abort(reason: Error): void {
    if (this.abortReason) return;
    this.abortReason = reason;
    this.controller?.abort(reason);
    this.onAbort?.(reason);
  }

  race<T>(work: Promise<T>): Promise<T> {
    if (this.interruption) {
      work.catch(() => undefined); // refused unseen: its rejection must not go unhandled
      return Promise.reject(this.interruption);
    }
    return new Promise<T>((resolve, reject) => {
      this.endRace = reject;
      work.then(resolve, reject);
    });
  }

  interrupt(reason: Error): boolean {
    if (this.interruption || this.releasing || !this.held) return false;
    this.interruption = reason;
    this.controller?.abort(reason); // a signal already aborted (a lost lock) keeps its first reason
    this.endRace?.(reason);
    this.onAbort?.(reason);
    return true;
  }

  get held(): boolean {
    return this.owner.holds(this);
  }

  beginRelease(): void {
    this.releasing = true;
  }

  cancelRelease(): void {
    this.releasing = false;
  }

  release(reason: LockReleasedEvent['reason']): void {
    this.owner.drop(this, reason);
  }
}
