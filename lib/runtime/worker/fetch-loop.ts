import { randomUUID as uuid } from 'node:crypto';
import type { Sleeper } from '../core/sleeper.js';
import type { ActiveJob } from './job-runner-options.js';
import type { JobSource } from './job-source.js';
import type { WorkerLane } from './worker-lane.js';
import type { WorkerLimits } from './worker-limits.js';
import type { WorkerState } from './worker-events.js';

/** What the fetch loop reads of its worker. */
export interface FetchLoopHost {
  readonly source: JobSource;
  readonly limits: WorkerLimits;
  /** Jobs the worker holds at most: concurrency, plus prefetch. */
  readonly holds: number;
  /** The worker's one place to wait; every change that may end a wait wakes it. */
  readonly sleeper: Sleeper;
  state(): WorkerState;
  /** close(true) or an expired closeTimeout gave the running jobs up: no chain goes on. */
  forced(): boolean;
  /** What must hold before the first pickup; false closes the worker. */
  preflight(): Promise<boolean>;
  /** The queue had nothing more and no job runs: the worker's 'drained'. */
  drained(): void;
  reportError(error: Error): void;
}

/**
 * A worker's fetch loop: takes a job while a slot is free, runs each in a chain (the job, then
 * every job its finish took with fetch-next), and blocks on the source when the queue has nothing
 * ready. It counts what the worker holds; pause() and close() wait on those counts.
 */
export class FetchLoop {
  /** Jobs running now (each chain is one). */
  running = 0;
  /** A moveToActive is in flight: a job it takes will run, so pause() waits for it too. */
  fetching = false;
  private idleEmitted = true;

  constructor(private readonly host: FetchLoopHost) {}

  async run(): Promise<void> {
    const { host } = this;
    if (!(await host.preflight())) return;
    let failures = 0;
    while (this.isRunning()) {
      if (host.state() === 'paused' || this.running >= host.holds) {
        await host.sleeper.sleep(Infinity); // until resumed, a slot is freed, or the worker closes
        continue;
      }
      const limitedFor = host.limits.blockedFor();
      if (limitedFor > 0) {
        await host.sleeper.sleep(limitedFor); // a manual rate limit: until it lifts, it changes, or the worker closes
        continue;
      }
      try {
        const token = uuid();
        const sentAt = Date.now();
        let lane;
        let pickup;
        let sentTwice;
        this.fetching = true;
        try {
          ({ lane, pickup, sentTwice } = await host.source.fetch(token));
        } finally {
          this.fetching = false;
          host.sleeper.wake(); // a pause() may be waiting for this fetch
        }
        failures = 0;
        // Ours as much as pickup.job is (the same token locks them): run them, not strand them.
        for (const job of sentTwice) this.startChain(lane, { id: job.id, fields: job.fields, token, acquiredAt: sentAt });
        if (pickup.job) {
          this.idleEmitted = false;
          this.startChain(lane, { id: pickup.job.id, fields: pickup.job.fields, token, acquiredAt: sentAt });
          continue;
        }
        if (!this.idleEmitted && this.running === 0) {
          this.idleEmitted = true;
          host.drained();
        }
        if (host.state() !== 'running') continue; // paused or closing meanwhile: the loop's top decides
        await host.source.waitForWork();
      } catch (error) {
        if (!this.isRunning()) continue; // closing: the error is its dropped connection
        host.reportError(error as Error);
        await this.backOff(failures++);
      }
    }
  }

  /** After the n-th failure in a row: 100 ms doubling up to 5 s, cut short by close(). */
  async backOff(failures: number): Promise<void> {
    const until = Date.now() + Math.min(5000, 100 * 2 ** failures);
    while (this.isRunning() && Date.now() < until) await this.host.sleeper.sleep(until - Date.now());
  }

  /** Running or paused: the worker has not begun to close. */
  isRunning(): boolean {
    const state = this.host.state();
    return state === 'running' || state === 'paused';
  }

  /** Runs a job and then each job fetch-next hands over (from the same lane), in one slot. */
  private startChain(lane: WorkerLane, first: ActiveJob): void {
    const { host } = this;
    this.running++;
    lane.running++;
    void (async () => {
      let current: ActiveJob | undefined = first;
      // Not while a manual rate limit holds (a worker without a `limiter` passes no max to check).
      const fetchNext = () => host.state() === 'running' && host.limits.blockedFor() === 0 && host.source.mayChain(lane);
      try {
        while (current && !host.forced()) current = await lane.runner.run(current, fetchNext);
      } catch (error) {
        host.reportError(error as Error);
      } finally {
        this.running--;
        lane.running--;
        host.source.freed(lane);
        host.sleeper.wake();
      }
    })();
  }
}
