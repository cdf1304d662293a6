import type { Job } from '../runtime/job/job.js';
import type { Worker } from '../runtime/worker/worker.js';

/** Each WorkerHost instance's Worker, set by the module once it made the worker (attachWorker). */
const workers = new WeakMap<object, Worker>();

/**
 * @nestjs/bullmq's processor shape, so that a migrating app's processors move by changing their
 * imports: a `@Processor('queue')` class that extends WorkerHost runs every job of its queue in
 * `process(job, token)`, and reaches its Worker as `this.worker`. It may also have
 * `@Process('name')` methods (ours), which take the jobs of their names first; with a
 * `process`, a default `@Process()` is refused (two defaults). `token` is the lock token of this
 * run, which job.moveToDelayed and job.moveToWaitingChildren take.
 */
export abstract class WorkerHost<W extends Worker = Worker> {
  /** The Worker that runs this processor's jobs; it throws before the module made it (at init). */
  get worker(): W {
    const worker = workers.get(this);
    if (!worker) throw new Error(`EchoMQ: ${this.constructor.name}.worker is read before its Worker exists: the module makes it at init; read it from onApplicationBootstrap or in process()`);
    return worker as W;
  }

  abstract process(job: Job, token?: string): Promise<unknown>;
}

/** Gives a WorkerHost instance its Worker (the module's worker orchestrator, or per job for a scoped one). */
export function attachWorker(host: object, worker: Worker): void {
  workers.set(host, worker);
}
