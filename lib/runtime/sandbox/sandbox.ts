import type { Job } from '../job/job.js';
import type { ProcessorContext } from '../queue/processor.js';
import { openChannel, type SandboxChannel } from './sandbox-channel.js';
import { assertRateLimitMs } from '../core/option-numbers.js';
import { UnrecoverableError } from '../core/unrecoverable-error.js';
import { errorData, JOB_METHODS, jobFields, rebuildError, type ErrorData, type FromSandbox } from './sandbox-messages.js';
import type { SandboxSpec } from './sandbox-options.js';

/** The job a sandbox runs now, and how its promise settles. */
interface Run {
  id: number;
  job: Job;
  context: ProcessorContext;
  /** The job's signal, once watched (watch()): reading it makes its AbortController. */
  signal?: AbortSignal;
  resolve(value: unknown): void;
  reject(error: Error): void;
  onAbort(): void;
  /** Set once the signal aborted: the sandbox is killed when it runs out. */
  graceTimer?: NodeJS.Timeout;
  /** When the sandbox heard its signal aborted (abort()): the run is given up, the handler lingers. */
  abortedAt?: number;
  /** The handler set the worker's rate limit (rateLimit(ms)): a RateLimitError of this run gives its job back. */
  rateLimited?: boolean;
}

/** What a sandbox tells its pool. */
export interface SandboxOwner {
  /** It finished a job and can take another. */
  free(sandbox: Sandbox): void;
  /** It ended (crashed, killed or stopped): it takes no more jobs. */
  gone(sandbox: Sandbox): void;
  /** It sent a message that is not its host's (dropped): `via` says how it came. */
  foreign(sandbox: Sandbox, via: string): void;
  /** The handler's rateLimit(ms): the worker's worker.rateLimit. */
  rateLimit(expireTimeMs: number): Promise<void>;
  /**
   * Runs a job again, in another sandbox: this one died before it began the job (of an error
   * another job left). Undefined when it may not (the pool closed, or the job was sent again once).
   */
  runElsewhere(job: Job, context: ProcessorContext): Promise<unknown> | undefined;
}

let runCount = 0;

/** The Job methods refused once the run was given up; log (and discard, which writes nothing) stay. */
const CHANGES_THE_JOB: ReadonlySet<string> = new Set(['updateProgress', 'updateData', 'moveToDelayed']);

/**
 * One thread or child process running the processor file, one job at a time. The job's promise
 * settles as the handler's did (an error rebuilt with its name, message and stack), or rejects when
 * the sandbox ends under it (crash) or is killed (its signal aborted and the grace ran out, or the
 * worker closed without waiting). The Job methods the handler calls run here, on the real Job.
 */
export class Sandbox {
  readonly label: string;
  /** The thread's id or the child's pid. */
  readonly id: number;
  /** Resolves once the thread or process has exited. */
  readonly exited: Promise<void>;
  private readonly channel: SandboxChannel;
  private run?: Run;
  private ended = false;
  /** kill() or stop() was called: it takes no more jobs, and is on its way out. */
  private ending = false;
  /** It ended a job (a 'done' came): it started, whatever becomes of it. */
  private finishedOne = false;
  private markExited!: () => void;
  private stopTimer?: NodeJS.Timeout;

  constructor(private readonly spec: SandboxSpec, private readonly owner: SandboxOwner) {
    this.exited = new Promise((resolve) => (this.markExited = resolve));
    this.channel = openChannel(spec.fileUrl, spec.threads, {
      message: (message) => this.receive(message),
      exit: (how, stack, started) => this.exit(how, stack, started),
      foreign: (via) => owner.foreign(this, via),
    }, spec.resourceLimits);
    this.label = this.channel.label;
    this.id = this.channel.id;
  }

  /** Running a job (current, or given up and not yet ended). */
  get busy(): boolean {
    return this.run !== undefined;
  }

  /** When the job it runs was given up (its signal aborted, seen here), if it was: its handler lingers. */
  get abortedAt(): number | undefined {
    return this.run?.abortedAt;
  }

  /** Killed or stopped, not yet exited. */
  get isEnding(): boolean {
    return this.ending;
  }

  /** It ended without ever finishing a job, and not by the pool's doing (killed, stopped): it could not start. */
  get diedUnused(): boolean {
    return this.ended && !this.finishedOne && !this.ending;
  }

  /** Runs a job here; the sandbox must be idle. Its signal is not read yet: see watch(). */
  start(job: Job, context: ProcessorContext): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const run: Run = { id: ++runCount, job, context, resolve, reject, onAbort: () => this.abort(run) };
      this.run = run;
      this.channel.send({ t: 'run', id: run.id, job: jobFields(job), token: context.token });
    });
  }

  /**
   * Starts listening to the running job's signal, if it does not yet; false when idle. The pool
   * calls it for every busy sandbox on a tick (SandboxPool), not at each start: reading a job's
   * signal makes its AbortController, and that and the listener cost about a sixth of a no-op
   * sandboxed job's main-thread time. A job that ends before the tick never pays it.
   */
  watch(): boolean {
    const run = this.run;
    if (!run) return false;
    if (run.signal) return true;
    const signal = (run.signal = run.context.signal);
    if (signal.aborted) this.abort(run);
    else signal.addEventListener('abort', run.onAbort, { once: true });
    return true;
  }

  /** Ends it now; a job running here rejects with its signal's reason (or `reason`). */
  kill(reason: Error): void {
    const run = this.run;
    if (run) {
      const signal = run.context.signal;
      this.settle(run, () => run.reject(signal.aborted ? asError(signal.reason) : reason));
    }
    this.ending = true;
    this.channel.kill();
  }

  /** Ends it between jobs; one that does not exit within the grace period is killed. */
  stop(): void {
    if (this.ending || this.ended) return;
    this.ending = true;
    this.channel.stop();
    this.stopTimer = setTimeout(() => this.channel.kill(), this.spec.graceMs);
  }

  /** The signal aborted: the handler's signal aborts with the same name and message; past the grace the sandbox is killed. */
  private abort(run: Run): void {
    if (this.run !== run) return;
    const reason = asError(run.context.signal.reason);
    this.channel.send({ t: 'abort', id: run.id, reason: errorData(reason) });
    run.abortedAt = Date.now();
    run.graceTimer = setTimeout(() => this.kill(reason), this.spec.graceMs);
  }

  /**
   * A message of the host. Whatever it holds, the run it ends settles and nothing is thrown at the
   * channel's listener (which would crash the worker's process): a run whose outcome cannot be
   * read fails with the reason.
   */
  private receive(message: FromSandbox): void {
    try {
      if (message.t === 'call') return this.call(message);
      if (message.t !== 'done') return;
    } catch (error) {
      return this.fail(error);
    }
    this.finishedOne = true;
    const run = this.run;
    if (run?.id !== message.id) return; // a run given up already (killed)
    let outcome: { ok: true; value: unknown } | { ok: false; error: Error };
    try {
      if (message.ok) outcome = { ok: true, value: message.value };
      else if (message.load) outcome = { ok: false, error: loadError(message.error) };
      else outcome = { ok: false, error: rebuildError(message.error, run.rateLimited === true) };
    } catch (error) {
      outcome = { ok: false, error: new Error(`the sandbox (${this.label}) ended job ${run.job.id} with an error that could not be read: ${asError(error).message}`) };
    }
    // The error is built before the run is let go: a throw can no longer leave its promise unsettled.
    this.settle(run, () => (outcome.ok ? run.resolve(outcome.value) : run.reject(outcome.error)));
    this.owner.free(this);
  }

  /** Something unforeseen while handling a message: the current run fails with it, the sandbox goes. */
  private fail(error: unknown): void {
    const run = this.run;
    if (run) this.settle(run, () => run.reject(new Error(`the sandbox (${this.label}) sent a message for job ${run.job.id} that could not be handled: ${asError(error).message}`)));
    this.ending = true;
    this.channel.kill();
  }

  /**
   * A Job method called by the handler: run on the real Job, answered when it settled. Or the
   * context's rateLimit(ms): the worker's rateLimit, and this run's RateLimitError then counts.
   */
  private call({ id, call, method, args }: Extract<FromSandbox, { t: 'call' }>): void {
    const run = this.run?.id === id ? this.run : undefined;
    const answer = (outcome: Promise<unknown>) => outcome.then(
      (value) => this.reply({ t: 'reply', call, ok: true, value }),
      (error) => this.reply({ t: 'reply', call, ok: false, error: errorData(error) }),
    );
    const what = method === 'rateLimit' ? 'rateLimit()' : `job.${method}()`;
    if (!run) return void answer(Promise.reject(new Error(`${what}: the run it was called from has ended`)));
    if (method === 'rateLimit') {
      const [ms] = args;
      try {
        assertRateLimitMs(ms);
        run.rateLimited = true; // now: the worker stops at once, and a RateLimitError not awaited for it counts
      } catch {
        // worker.rateLimit refuses it, naming the argument
      }
      return void answer(this.owner.rateLimit(ms as number));
    }
    const job = run.job;
    // Given up (a timeout, a cancel, a lost lock, close(true)): the job may already run again, even
    // in another sandbox of this worker, so what the lingering handler would change of it is refused.
    // Its signal is read only for these calls: a job that makes none does not make its controller.
    if (CHANGES_THE_JOB.has(method) && run.context.signal.aborted) {
      const reason = asError(run.context.signal.reason);
      return void answer(Promise.reject(new Error(`${what}: refused: the worker gave this run of job ${job.id} up (${reason.name}: ${reason.message})`)));
    }
    if (!JOB_METHODS.has(method)) return void answer(Promise.reject(new Error(`job.${method}() cannot be called in a sandbox`)));
    let outcome: unknown;
    try {
      outcome = (job as unknown as Record<string, (...args: unknown[]) => unknown>)[method](...args); // at once: a discard() lands before the run's end
    } catch (error) {
      outcome = Promise.reject(error);
    }
    void answer(Promise.resolve(outcome).then((value) => (method === 'moveToDelayed' ? job.delay : value)));
  }

  private reply(message: Parameters<SandboxChannel['send']>[0]): void {
    if (!this.ended) this.channel.send(message);
  }

  /** The run is over (whichever way): its abort listener and grace timer go, then it settles. */
  private settle(run: Run, settle: () => void): void {
    this.run = undefined;
    run.signal?.removeEventListener('abort', run.onAbort);
    clearTimeout(run.graceTimer);
    settle();
  }

  private exit(how: string, stack?: string, started?: readonly number[]): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.stopTimer);
    this.owner.gone(this);
    const run = this.run;
    if (run) {
      // Never begun here (its message waited behind the error that ended the host): not this job's end.
      const elsewhere = started && !started.includes(run.id) ? this.owner.runElsewhere(run.job, run.context) : undefined;
      if (elsewhere) {
        this.settle(run, () => elsewhere.then(run.resolve, run.reject));
      } else {
        const error = new Error(`the sandbox (${this.label}) ${how} while running job ${run.job.id}`);
        // The job's stacktrace shows where the sandbox died, not where this side heard of it.
        if (stack) error.stack = `${error.message}\n${stack}`;
        this.settle(run, () => run.reject(error));
      }
    }
    this.markExited();
  }
}

/** The processor file failed to load: the job fails for good, since every run here would fail the same way. */
function loadError(data: ErrorData): Error {
  const error = new UnrecoverableError(data.message);
  if (data.stack !== undefined) error.stack = data.stack;
  return error;
}

function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason));
}
