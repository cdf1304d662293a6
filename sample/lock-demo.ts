import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { InjectQueue, LockManager, Queue, Worker, type Job } from '../lib/index.js';

/** The queue of the lock timeline's demo jobs (POST /locks/demo). */
export const LOCK_DEMO_QUEUE = 'lock-demo';

/** One demo run's timing, ms. */
export interface LockDemoSettings {
  /** The heartbeat interval. At or over lockMs every renewal comes after the lock lapsed. */
  renewMs: number;
  /** lockDuration: the TTL each acquire and renewal sets. */
  lockMs: number;
  /** How long the job works. */
  workMs: number;
}

/** What a started demo answers: enough for the page to label and shade its row. */
export interface LockDemoRun extends LockDemoSettings {
  queue: string;
  jobId: string;
  workerId: string;
  stalledInterval: number;
  /** True when renewMs >= lockMs: the worker runs with unsafeLockRenewTime, and the lock lapses. */
  lapses: boolean;
}

/** A demo is already running; one at a time, so that its worker takes no other demo's job. */
export class LockDemoBusyError extends Error {}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs the lock timeline's demo: one short-lived Worker on the lock-demo queue, on the app's
 * LockManager (so its events reach GET /locks/events), with the renew interval and lockDuration
 * asked for, and one job that works workMs. Under lockDuration each renewal re-sets the TTL and the
 * job completes; at or over it (unsafeLockRenewTime, the documented escape hatch for demos) the
 * lock lapses, a stalled sweep moves the job back to wait, the worker's next renewal finds the lock
 * gone (-2) and gives the job up, takes it again, and the second stall fails it (maxStalledCount 1).
 * The worker closes once its job completed or failed for good, and at app shutdown.
 */
@Injectable()
export class LockDemo implements OnModuleDestroy {
  private readonly logger = new Logger(LockDemo.name);
  private running?: { run: LockDemoRun; finished: Promise<void> };
  /** Ends the running demo at once (app shutdown). */
  private stopNow?: () => void;

  constructor(
    @InjectQueue(LOCK_DEMO_QUEUE) private readonly queue: Queue,
    private readonly locks: LockManager,
  ) {}

  /** The demo running now, if one is. */
  get current(): LockDemoRun | undefined {
    return this.running?.run;
  }

  async start(settings: LockDemoSettings): Promise<LockDemoRun> {
    if (this.running) throw new LockDemoBusyError(`demo job ${this.running.run.jobId} is still running; one demo at a time`);
    const { renewMs, lockMs, workMs } = settings;
    const lapses = renewMs >= lockMs;
    // Sweeps well inside lockDuration: a lapsed lock is found (and the stall drawn) before the
    // worker's late renewal gives the job up.
    const stalledInterval = Math.max(100, Math.min(1_000, Math.floor(lockMs / 4)));
    const placeholder = { run: undefined as unknown as LockDemoRun, finished: Promise.resolve() };
    this.running = placeholder; // taken before the first await: two requests at once start one demo
    try {
      // A job left waiting by an earlier run (the app stopped mid-demo) would be taken first.
      await this.queue.drain();
      const worker = new Worker(LOCK_DEMO_QUEUE, (job: Job<{ workMs: number }>, { signal }) => work(job.data.workMs, signal), {
        connection: this.queue.client,
        prefix: this.queue.options.prefix,
        lockManager: this.locks,
        lockDuration: lockMs,
        ...(lapses ? { unsafeLockRenewTime: renewMs } : { lockRenewTime: renewMs }),
        stalledInterval,
        maxStalledCount: 1,
        concurrency: 1,
        drainDelay: 1,
      });
      worker.on('error', (error) => this.logger.warn(`demo worker: ${error.message}`));
      const job = await this.queue.add('hold-the-lock', { workMs }, { attempts: 1 });
      const run: LockDemoRun = { queue: LOCK_DEMO_QUEUE, jobId: job.id, workerId: worker.id, renewMs, lockMs, workMs, stalledInterval, lapses };
      // The longest a run can take: two pickups, each lost at the latest one renewal after its lock lapsed.
      const deadlineMs = 2 * (Math.max(workMs, renewMs) + lockMs + stalledInterval) + 5_000;
      placeholder.run = run;
      placeholder.finished = this.closeWhenDone(worker, job.id, deadlineMs).finally(() => {
        if (this.running === placeholder) this.running = undefined;
      });
      return run;
    } catch (error) {
      this.running = undefined;
      throw error;
    }
  }

  /**
   * At shutdown, before the app's connections close: the demo job is cancelled (it fails, nothing
   * is left to stall on the next start) and its worker closed, rather than waiting out workMs.
   */
  async onModuleDestroy(): Promise<void> {
    this.stopNow?.();
    await this.running?.finished;
  }

  private async closeWhenDone(worker: Worker, jobId: string, deadlineMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const ended = await new Promise<'done' | 'deadline'>((resolve) => {
      worker.on('completed', (job) => job.id === jobId && resolve('done'));
      worker.on('failed', (job, _error, willRetry) => job.id === jobId && !willRetry && resolve('done'));
      worker.on('stalled', (id, movedTo) => id === jobId && movedTo === 'failed' && resolve('done'));
      timer = setTimeout(() => resolve('deadline'), deadlineMs);
      this.stopNow = () => {
        worker.cancelJob(jobId, 'the app is shutting down');
        resolve('done');
      };
    });
    clearTimeout(timer);
    this.stopNow = undefined;
    // A job failed by a sweep is still running here: close() waits until its next renewal finds
    // the lock gone and aborts it (released: lost), which the timeline shows.
    await worker.close(ended === 'deadline');
  }
}

/** The demo job: works in 50 ms steps, and stops once its signal says the lock is not its own any more. */
async function work(workMs: number, signal: AbortSignal): Promise<{ workedMs: number }> {
  const started = Date.now();
  while (Date.now() - started < workMs) {
    signal.throwIfAborted();
    await sleep(50);
  }
  return { workedMs: Date.now() - started };
}
