import { AsyncResource } from 'node:async_hooks';
import type { Job } from '../job/job.js';
import type { ProcessorContext, ProcessorFunction } from '../queue/processor.js';
import { Sandbox, type SandboxOwner } from './sandbox.js';
import { sandboxSpec, type SandboxOptionsInput, type SandboxSpec } from './sandbox-options.js';

/**
 * How often the pool starts watching the signals of the jobs its sandboxes run (Sandbox.watch):
 * an abort reaches a sandbox at most this late, then at once for the rest of the job's run.
 */
export const SANDBOX_WATCH_MS = 100;

/** The wait before starting a sandbox after the n-th in a row died unused: 100 ms doubling, up to 5 s. */
export function spawnBackoff(diedUnused: number): number {
  return diedUnused === 0 ? 0 : Math.min(5000, 100 * 2 ** (diedUnused - 1));
}

/** What a pool needs of its Worker. */
export interface SandboxWorker {
  /** The worker's concurrency: how many jobs it runs at once. */
  concurrency: number;
  /** Says something on the worker's 'error' event. */
  report(error: Error): void;
  /** worker.rateLimit(ms), for a handler's rateLimit(ms). */
  rateLimit(expireTimeMs: number): Promise<void>;
}

/**
 * A Worker's sandboxes (docs/sandbox.md): worker threads or child processes that run a processor
 * file, one job each at a time. Started on demand (the first job starts the first), reused between
 * jobs. A sandbox that ends (a crash, or killed past its grace period) is dropped, and the next job
 * starts a fresh one. Its `processor` is what the Worker runs: the job runner, the heartbeat and
 * every Redis call stay in the main thread.
 *
 * How many: the worker runs at most `concurrency` jobs at once, so at most `concurrency` sandboxes
 * run a job it waits for, and the idle ones are kept only while those and the idle ones together
 * are at most `concurrency` (a sandbox freed beyond that is stopped). A job given up early (a
 * timeout, a cancel) frees its slot at once while its handler may go on in its sandbox for up to
 * the grace period: such lingering sandboxes come on top, at most `concurrency` of them; a job that
 * needs a new sandbox when there are `2 x concurrency` kills the lingering one given up first (its
 * job has already failed or been given up). So a worker has at most `2 x concurrency` sandboxes,
 * besides killed ones not yet exited.
 */
export class SandboxPool implements SandboxOwner {
  /** What the Worker runs in place of an in-process function. */
  readonly processor: ProcessorFunction;
  private readonly idle: Sandbox[] = [];
  private readonly live = new Set<Sandbox>();
  private closed = false;
  /** Runs while a sandbox is busy: the tick that watches the running jobs' signals. */
  private watchTimer?: NodeJS.Timeout;
  /** A foreign message was reported already: one report per worker, not one per message. */
  private toldForeign = false;
  /** The runs sent to another sandbox once (runElsewhere): not twice. */
  private readonly sentElsewhere = new WeakSet<ProcessorContext>();
  /**
   * Sandboxes in a row that died before they finished any job (a processor file that exits or
   * crashes as it loads): each next start waits longer (spawnBackoff). A finished job resets it.
   */
  private diedUnused = 0;
  /** Runs waiting out that backoff: close() ends their waits. */
  private readonly backingOff = new Set<{ timer: NodeJS.Timeout; cancel(): void }>();
  /**
   * The async context the pool was made in. A sandbox's thread or process, and the watch tick,
   * keep the context they are started in for their whole lives (their messages and ticks run in
   * it): started in here, they keep this one, never that of the job that happened to need them
   * (a trace's span, an AsyncLocalStorage store of the app's).
   */
  private readonly home = new AsyncResource('EchoMQSandboxPool');

  private constructor(private readonly spec: SandboxSpec, private readonly worker: SandboxWorker) {
    this.processor = (job, context) => this.run(job, context);
  }

  /**
   * Checks the file and options (EchoMQOptionError naming `processorFile`, `useWorkerThreads` or
   * `sandboxGracePeriod`); starts nothing.
   */
  static open(processorFile: unknown, opts: SandboxOptionsInput, worker: SandboxWorker): SandboxPool {
    return new SandboxPool(sandboxSpec(processorFile, opts), worker);
  }

  /** Threads or processes alive now (running a job, idle, or killed and not yet exited). */
  get size(): number {
    return this.live.size;
  }

  /** Those not on their way out: running a job (current or lingering) or idle. */
  get active(): number {
    let count = 0;
    for (const sandbox of this.live) if (!sandbox.isEnding) count++;
    return count;
  }

  /** Those running a job, current or given up. */
  get busy(): number {
    let count = 0;
    for (const sandbox of this.live) if (sandbox.busy) count++;
    return count;
  }

  /** The thread ids or pids of the sandboxes alive now (for tests and tools). */
  get ids(): number[] {
    return [...this.live].map((sandbox) => sandbox.id);
  }

  /** A sandbox finished its job: kept idle while idle and current ones are below concurrency, else stopped. */
  free(sandbox: Sandbox): void {
    this.diedUnused = 0;
    if (this.closed) return; // close() ends every sandbox
    // Only when there may be one too many: then the signals are read (watch), so a run given up
    // since the last tick counts as lingering, not as current.
    if (this.kept() >= this.worker.concurrency && (this.watch(), this.kept() >= this.worker.concurrency)) sandbox.stop();
    else this.idle.push(sandbox);
  }

  /** The idle sandboxes and those running a job the worker still waits for, as far as known. */
  private kept(): number {
    let count = this.idle.length;
    for (const sandbox of this.live) if (sandbox.busy && sandbox.abortedAt === undefined && !sandbox.isEnding) count++;
    return count;
  }

  foreign(sandbox: Sandbox, via: string): void {
    if (this.toldForeign) return;
    this.toldForeign = true;
    this.worker.report(new Error(`the sandbox (${sandbox.label}) sent a message that is not EchoMQ's (${via} by the processor's code?): dropped, as any other will be, without another word`));
  }

  runElsewhere(job: Job, context: ProcessorContext): Promise<unknown> | undefined {
    // Not a run the worker gave up meanwhile (a timeout, a cancel): its job is not waited for.
    if (this.closed || this.sentElsewhere.has(context) || context.signal.aborted) return undefined;
    this.sentElsewhere.add(context);
    return this.run(job, context);
  }

  rateLimit(expireTimeMs: number): Promise<void> {
    return this.worker.rateLimit(expireTimeMs);
  }

  gone(sandbox: Sandbox): void {
    if (sandbox.diedUnused) this.diedUnused++;
    this.live.delete(sandbox);
    const at = this.idle.indexOf(sandbox);
    if (at >= 0) this.idle.splice(at, 1);
  }

  /**
   * Ends every sandbox and resolves once all have exited. `force`: at once (a running job rejects
   * with its signal's reason); else idle ones end in order, each killed if it has not exited
   * within the grace period. Jobs after this are refused.
   */
  close(force = false): Promise<void> {
    this.closed = true;
    this.idle.length = 0;
    clearInterval(this.watchTimer);
    for (const wait of this.backingOff) wait.cancel();
    const reason = new Error('the worker closed without waiting for its jobs: their sandboxes were killed');
    for (const sandbox of this.live) {
      if (force) sandbox.kill(reason);
      else sandbox.stop();
    }
    return Promise.all([...this.live].map((sandbox) => sandbox.exited)).then(() => undefined);
  }

  private run(job: Job, context: ProcessorContext): Promise<unknown> {
    if (this.closed) return Promise.reject(this.closedError(job));
    const idle = this.idle.pop();
    if (idle) return this.startOn(idle, job, context);
    const wait = spawnBackoff(this.diedUnused);
    if (wait === 0) return this.startOn(this.spawn(), job, context);
    // The last sandboxes died before finishing anything: wait before the next (a job freed meanwhile
    // takes an idle one). The job may be given up while it waits (a timeout, a cancel): not started then.
    return new Promise<void>((resolve, reject) => {
      const entry = {
        timer: setTimeout(() => {
          this.backingOff.delete(entry);
          resolve();
        }, wait),
        cancel: () => {
          clearTimeout(entry.timer);
          this.backingOff.delete(entry);
          reject(this.closedError(job));
        },
      };
      this.backingOff.add(entry);
    }).then(() => {
      if (this.closed) throw this.closedError(job);
      const { signal } = context;
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason));
      return this.startOn(this.idle.pop() ?? this.spawn(), job, context);
    });
  }

  private spawn(): Sandbox {
    this.makeRoom();
    const sandbox = this.home.runInAsyncScope(() => new Sandbox(this.spec, this));
    this.live.add(sandbox);
    return sandbox;
  }

  private startOn(sandbox: Sandbox, job: Job, context: ProcessorContext): Promise<unknown> {
    this.watchTimer ??= this.home.runInAsyncScope(() => setInterval(() => this.watch(), SANDBOX_WATCH_MS).unref());
    return sandbox.start(job, context);
  }

  private closedError(job: Job): Error {
    return new Error(`job ${job.id}: the worker's sandboxes are closed`);
  }

  /**
   * A new sandbox is about to start: at `2 x concurrency` active ones, the lingering sandbox whose
   * job was given up first is killed. The runner runs at most `concurrency` jobs, so at that count
   * at least `concurrency` of them linger; their signals are read now (watch), so each is seen.
   */
  private makeRoom(): void {
    const cap = 2 * this.worker.concurrency;
    if (this.active < cap) return;
    this.watch();
    let oldest: Sandbox | undefined;
    for (const sandbox of this.live) {
      const at = sandbox.abortedAt;
      if (at !== undefined && !sandbox.isEnding && (oldest === undefined || at < (oldest.abortedAt as number))) oldest = sandbox;
    }
    oldest?.kill(new Error(`the worker needed a sandbox while ${cap} were alive (twice its concurrency): this one, whose job had been given up, was killed before its grace period ran out`));
  }

  /** Watches the signal of every job running now; the tick stops once no sandbox is busy. */
  private watch(): void {
    let busy = false;
    for (const sandbox of this.live) busy = sandbox.watch() || busy;
    if (!busy) {
      clearInterval(this.watchTimer);
      this.watchTimer = undefined;
    }
  }
}
