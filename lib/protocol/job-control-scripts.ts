import { isErrorCode } from './codes.js';
import { EchoMQError } from './errors.js';
import type { Keys } from './keys.js';
import { Script, type RedisClient, type ScriptCall } from './script.js';
import type { RemovedJob, RemoveJobCall } from './script-shapes.js';
import type { ScriptArg } from './script-command.js';
import { SCRIPTS } from './script-registry.js';

/**
 * What cancelJob-12 did: 'failed' (a job still to run failed at once), 'failed-notice' (the same, for
 * a child of a flow, which left its notice for its parent: deliver it), 'marked' (a worker holds
 * it, or its worker died: marked for the worker, or for the pickup after the stalled sweep),
 * 'finished' (completed or failed already: nothing written), 'missing' (no such job), 'stateless'
 * (a hash in no state: nothing written).
 */
export type CancelOutcome = 'failed' | 'failed-notice' | 'marked' | 'finished' | 'missing' | 'stateless';

const CANCEL_OUTCOMES: Record<number, CancelOutcome> = { 1: 'failed', 3: 'failed-notice', 2: 'marked', 0: 'finished', [-1]: 'missing', [-3]: 'stateless' };

/** Most ids one retryJobs-8 or promoteJobs-8 call takes: the budget that keeps a call short. */
export const MAX_MOVE_BATCH = 10_000;

/**
 * The typed bindings of a queue's job control scripts (docs/job-control.md): one job's data,
 * delay, priority, promotion, progress, logs, removal and retry, a handler's move to delayed, and
 * the batches of retryJobs and promoteJobs. Like Scripts, it builds each KEYS array in one place, turns a negative code into
 * an EchoMQError, and sends no other command.
 */
export class JobControlScripts {
  constructor(
    private readonly client: RedisClient,
    private readonly keys: Keys,
    private readonly maxEvents: number,
  ) {}

  /** Replaces the job's data (JSON). */
  async updateData(jobId: string, data: string): Promise<void> {
    const reply = await this.run(SCRIPTS.updateData, [this.keys.job(jobId)], [data]);
    this.throwIfCode(reply, jobId, SCRIPTS.updateData);
  }

  /** A delayed job becomes due `delay` ms after `now`. */
  async changeDelay(jobId: string, delay: number, now: number): Promise<void> {
    const k = this.keys;
    const reply = await this.run(SCRIPTS.changeDelay, [k.delayed, k.marker, k.events, k.job(jobId)], [jobId, now, delay, this.maxEvents]);
    this.throwIfCode(reply, jobId, SCRIPTS.changeDelay, 'it is not delayed');
  }

  /** Stores the job's priority; a job in wait, paused or prioritized is placed again by it. */
  async changePriority(jobId: string, priority: number, lifo: boolean): Promise<void> {
    const k = this.keys;
    const reply = await this.run(SCRIPTS.changePriority,
      [k.wait, k.paused, k.meta, k.prioritized, k.pc, k.marker, k.delayed, k.job(jobId)], [jobId, priority, lifo ? '1' : '0']);
    this.throwIfCode(reply, jobId, SCRIPTS.changePriority);
  }

  /** A delayed job becomes ready now. */
  async promote(jobId: string): Promise<void> {
    const k = this.keys;
    const reply = await this.run(SCRIPTS.promote,
      [k.delayed, ...this.readyKeys(), k.events, k.job(jobId)], [jobId, this.maxEvents]);
    this.throwIfCode(reply, jobId, SCRIPTS.promote, 'it is not delayed');
  }

  /**
   * An active job held under `token` goes to delayed until `dueAt` (now when earlier) and its lock
   * is released; its attempt is not counted. Throws EchoMQError -1, -2, -6 or -3 (not active).
   */
  async moveToDelayed(jobId: string, token: string, dueAt: number, now: number): Promise<void> {
    const k = this.keys;
    const reply = await this.run(SCRIPTS.moveToDelayed,
      [k.active, k.delayed, k.stalled, k.marker, k.events, k.job(jobId), k.lock(jobId)], [jobId, token, now, dueAt, this.maxEvents]);
    this.throwIfCode(reply, jobId, SCRIPTS.moveToDelayed, 'it is not active');
  }

  /** One batch of retryJobs: up to `count` jobs of `state` finished at or before `cutoff` back to ready; returns how many ids it took. */
  async retryJobs(state: 'failed' | 'completed', count: number, cutoff: number): Promise<number> {
    const k = this.keys;
    return (await this.run(SCRIPTS.retryJobs, [k.state(state), ...this.readyKeys(), k.events],
      [k.base, count, cutoff, this.maxEvents])) as number;
  }

  /** One batch of promoteJobs: up to `count` delayed jobs, the first due first, to ready; returns how many ids it took. */
  async promoteJobs(count: number): Promise<number> {
    const k = this.keys;
    return (await this.run(SCRIPTS.promoteJobs, [k.delayed, ...this.readyKeys(), k.events], [k.base, count, this.maxEvents])) as number;
  }

  /**
   * queue.cancelJob in the job's slot (cancelJob-12): a job still to run fails at once, kept or
   * removed by [keepCount, keepAgeMs] (its removeOnFail); a job in active is marked for its worker.
   */
  async cancelJob(jobId: string, reason: string, now: number, keepCount: number, keepAgeMs: number): Promise<CancelOutcome> {
    const k = this.keys;
    const reply = await this.run(SCRIPTS.cancelJob,
      [k.wait, k.paused, k.active, k.prioritized, k.delayed, k.failed, k.meta, k.events, k.job(jobId), k.waitingChildren, k.notices, k.noticeData],
      [jobId, reason, now, keepCount, keepAgeMs, this.maxEvents, k.base]);
    const outcome = CANCEL_OUTCOMES[reply as number];
    if (!outcome) throw new Error(`EchoMQ: ${SCRIPTS.cancelJob.fileName} answered ${String(reply)} for job ${jobId}`);
    return outcome;
  }

  async updateProgress(jobId: string, progress: string): Promise<void> {
    const reply = await this.call({
      script: SCRIPTS.updateProgress,
      keys: [this.keys.job(jobId), this.keys.events],
      args: [jobId, progress, this.maxEvents],
    });
    this.throwIfCode(reply, jobId, SCRIPTS.updateProgress);
  }

  /** Appends a log line; returns how many lines the job keeps. */
  async addLog(jobId: string, line: string, keep: number): Promise<number> {
    const reply = await this.call({
      script: SCRIPTS.addLog,
      keys: [this.keys.job(jobId), this.keys.logs(jobId)],
      args: [line, keep],
    });
    this.throwIfCode(reply, jobId, SCRIPTS.addLog);
    return reply as number;
  }

  /**
   * Removes a job with its flow keys (removeJob-14): 'removed', 'locked' (a worker holds it;
   * nothing changed), 'reparented' (`expectedParent` given and not its parent: nothing changed)
   * or 'missing'. A removed child of a flow answers the notice for its parent now
   * in this queue (to deliver); a removed parent, with `children`, its unsettled children's keys.
   */
  async removeJob(jobId: string, opts: RemoveJobCall = { children: false, notifyParent: true }): Promise<RemovedJob> {
    const k = this.keys;
    const reply = await this.call({
      script: SCRIPTS.removeJob,
      keys: [k.wait, k.paused, k.active, k.prioritized, k.delayed, k.completed, k.failed, k.stalled, k.events, k.job(jobId),
        k.waitingChildren, k.flowPending, k.notices, k.noticeData],
      args: [jobId, this.maxEvents, opts.children ? '1' : '0', opts.notifyParent ? '1' : '0', Date.now(), opts.expectedParent ?? ''],
    }) as [number, string?, ...string[]];
    const [code, notice, ...children] = reply;
    if (code === 0) return { outcome: 'locked', children: [] };
    if (code === 2) return { outcome: 'reparented', children: [] };
    if (code !== 1) return { outcome: 'missing', children: [] };
    return { outcome: 'removed', notice: notice === '' ? undefined : notice, children };
  }

  async reprocessJob(jobId: string, from: 'failed' | 'completed'): Promise<void> {
    const k = this.keys;
    const reply = await this.call({
      script: SCRIPTS.reprocessJob,
      keys: [k.job(jobId), k.state(from), k.wait, k.paused, k.meta, k.prioritized, k.pc, k.marker, k.events],
      args: [jobId, this.maxEvents],
    });
    this.throwIfCode(reply, jobId, SCRIPTS.reprocessJob, `it is not in ${from}`);
  }

  /** Where a script that makes jobs ready puts them, in the order pushReady takes its keys. */
  private readyKeys(): string[] {
    const k = this.keys;
    return [k.wait, k.paused, k.meta, k.prioritized, k.pc, k.marker];
  }

  private run(script: Script, keys: string[], args: ScriptArg[]): Promise<unknown> {
    return script.run(this.client, keys, args);
  }

  private call(call: ScriptCall): Promise<unknown> {
    return call.script.run(this.client, call.keys, call.args);
  }

  private throwIfCode(reply: unknown, jobId: string, script: Script, notInState?: string): void {
    if (isErrorCode(reply)) throw new EchoMQError(reply, jobId, script.fileName, reply === -3 ? notInState : undefined);
  }
}
