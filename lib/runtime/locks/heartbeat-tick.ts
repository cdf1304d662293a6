import { codeMeaning } from '../../protocol/codes.js';
import { runPipelined, type ScriptCall } from '../../protocol/script.js';
import { parseLockFailures } from '../../protocol/script-replies.js';
import { withinMs } from '../core/within-ms.js';
import type { LockEmitter, LockHolder, TickPassenger } from './lock-holder.js';
import type { RenewalLease } from './renewal-connections.js';
import type { TrackedJob } from './tracked-job.js';

/** Redis's answer to a script that touched a key of a slot in migration the node no longer (or not yet) holds. */
const MIGRATION_SPLIT = /non local key/;

/** What a tick reads of its WorkerLocks, and what it tells it. */
export interface TickTarget {
  readonly holder: LockHolder;
  readonly chunkSize: number;
  readonly emit: LockEmitter;
  readonly renewal: RenewalLease;
  /** True while `job` is the ownership the worker renews for its id. */
  holds(job: TrackedJob): boolean;
  /** The job is no longer the worker's: abort its signal, stop renewing it, say why. */
  lose(job: TrackedJob, code: -2 | -6, reason: string, at: number): void;
  /** The worker gave its locks up (abandon()): nobody is owed a report of a failed tick. */
  unregistered(): boolean;
}

/**
 * One heartbeat of a worker: every tracked job renewed by extendLocks-1, all chunks in one
 * pipelined round trip on the LockManager's renewal connection, the passenger's commands after
 * them; then the replies read (renewed, lost to another token, or looked at again one by one).
 */
export class HeartbeatTick {
  constructor(private readonly locks: TickTarget) {}

  /**
   * One heartbeat: every tracked job renewed by extendLocks-1, all chunks in one round trip, with
   * the passenger's commands (if one rides) after them in the same pipeline.
   */
  async run(jobs: TrackedJob[], passenger: TickPassenger | undefined, lateByMs: number): Promise<void> {
    const { holder, chunkSize, emit, renewal } = this.locks;
    const { queue, workerId, lockDuration, heartbeatLateThreshold, scripts } = holder;
    if (jobs.length === 0 && !passenger) return;
    const firedAt = Date.now();
    let oldest = firedAt;
    for (const job of jobs) if (job.renewedAt < oldest) oldest = job.renewedAt;

    const calls: ScriptCall[] = [];
    for (let i = 0; i < jobs.length; i += chunkSize) {
      calls.push(scripts.extendLocksCall(jobs.slice(i, i + chunkSize).map((job) => [job.jobId, job.token]), lockDuration));
    }
    const sentAt = Date.now();
    const inFlight = runPipelined(renewal.client(), calls, passenger && ((pipeline) => passenger.board(pipeline)));
    // The renewals are on the wire; now subscribers may run.
    if (jobs.length > 0 && lateByMs > heartbeatLateThreshold) {
      emit.heartbeatLate({ type: 'heartbeatLate', queue, workerId, at: firedAt, lateByMs, marginMs: oldest + lockDuration - firedAt, lockDuration, jobCount: jobs.length });
    }
    let replies: Array<[Error | null, unknown]> | undefined;
    let failure: Error | undefined;
    try {
      // At most one interval: a tick that waits for ever (a renewal connection that never becomes
      // ready) would stop the heartbeat without a word, since the next tick waits for this one.
      replies = await withinMs(inFlight, holder.lockRenewTime);
      const what = jobs.length > 0 ? `the renewals of ${jobs.length} jobs` : 'the heartbeat (no job held: its registry entry and the queue\'s limits)';
      if (!replies) failure = new Error(`${what} got no answer within lockRenewTime (${holder.lockRenewTime} ms)`);
    } catch (error) {
      failure = error as Error;
    }
    if (failure) {
      passenger?.arrive(failure);
      // Given up (abandon() dropped the connection): nobody is owed a report about these jobs.
      if (this.locks.unregistered()) return;
      emit.heartbeatError({ type: 'heartbeatError', queue, workerId, at: Date.now(), error: failure, jobCount: jobs.length });
      this.loseUnconfirmed(jobs);
      return;
    }
    passenger?.arrive(replies!.slice(calls.length));
    if (jobs.length === 0) return;
    const roundTripMs = Date.now() - sentAt;
    const recheck = this.apply(jobs, replies!.slice(0, calls.length), sentAt, roundTripMs, firedAt);
    if (recheck.length > 0) await this.recheck(recheck);
  }

  /**
   * After a tick that could not renew: a job whose last confirmed renewal was sent lockDuration ago
   * or more can no longer be shown to hold its lock, and another worker may take it after a sweep.
   * Its signal is aborted (-2) so the handler stops; a job being finished is its finish's to judge.
   */
  private loseUnconfirmed(jobs: TrackedJob[]): void {
    const now = Date.now();
    const { lockDuration } = this.locks.holder;
    for (const job of jobs) {
      if (!this.locks.holds(job) || job.releasing || job.renewedAt + lockDuration > now) continue;
      this.locks.lose(job, -2, `no renewal of its lock was confirmed for lockDuration (${lockDuration} ms): it may have lapsed`, now);
    }
  }

  /**
   * A second look, job by job with extendLock-2, at the jobs extendLocks-1 could not judge. On a
   * Cluster whose slot is being migrated, extendLocks-1 declares only the stalled set and builds the
   * lock keys from the prefix: Redis runs it on whichever node holds the stalled set (or ASKs it to
   * the target when no node does), and there a lock still on the other node reads as missing (-2:
   * a false loss) or fails the call ("Script attempted to access a non local key"). extendLock-2
   * declares the lock and the stalled set, so Redis runs it only where both are (or answers TRYAGAIN,
   * which the Cluster client waits out): its answer is the truth. Only a job it cannot renew is lost.
   */
  private async recheck(jobs: TrackedJob[]): Promise<void> {
    const { holder, emit, renewal } = this.locks;
    const { queue, workerId, lockDuration, scripts } = holder;
    const sentAt = Date.now();
    let replies: Array<[Error | null, unknown]> | undefined;
    try {
      // Bounded like the tick itself: the next tick waits for this one.
      replies = await withinMs(runPipelined(renewal.client(), jobs.map((job) => scripts.extendLockCall(job.jobId, job.token, lockDuration))), holder.lockRenewTime);
      if (!replies) throw new Error(`the second look at ${jobs.length} locks got no answer within lockRenewTime (${holder.lockRenewTime} ms)`);
    } catch (error) {
      if (!this.locks.unregistered()) emit.heartbeatError({ type: 'heartbeatError', queue, workerId, at: Date.now(), error: error as Error, jobCount: jobs.length });
      return;
    }
    const at = Date.now();
    const renewedIds: string[] = [];
    replies.forEach(([error, reply], i) => {
      const job = jobs[i];
      if (error) {
        emit.heartbeatError({ type: 'heartbeatError', queue, workerId, at, error, jobCount: 1 });
      } else if (reply === 1) {
        job.renewedAt = sentAt;
        renewedIds.push(job.jobId);
      } else if (this.locks.holds(job)) {
        job.lostCode = -2;
        // A job being finished is judged by its finish: the -2 may be the finish's own DEL.
        if (!job.releasing) this.locks.lose(job, -2, codeMeaning(-2), at);
      }
    });
    if (renewedIds.length > 0) emit.renewed({ type: 'renewed', queue, workerId, at, jobIds: renewedIds, roundTripMs: at - sentAt, tickMs: at - sentAt });
  }

  /**
   * Reads a tick's replies: renewed jobs get a fresh renewedAt, jobs another token holds (-6) are
   * let go. Returns the jobs for a second look (recheck): those found without a lock (-2) and those
   * of a chunk that met a slot migration.
   */
  private apply(jobs: TrackedJob[], replies: Array<[Error | null, unknown]>, sentAt: number, roundTripMs: number, firedAt: number): TrackedJob[] {
    const { holder, chunkSize, emit } = this.locks;
    const { queue, workerId } = holder;
    const at = Date.now();
    const renewedIds: string[] = [];
    const lost: Array<[TrackedJob, -2 | -6]> = [];
    const recheck: TrackedJob[] = [];
    replies.forEach(([error, reply], chunk) => {
      const chunkJobs = jobs.slice(chunk * chunkSize, (chunk + 1) * chunkSize);
      if (error) {
        emit.heartbeatError({ type: 'heartbeatError', queue, workerId, at, error, jobCount: chunkJobs.length });
        if (MIGRATION_SPLIT.test(error.message)) recheck.push(...chunkJobs.filter((job) => this.locks.holds(job)));
        return;
      }
      const failed = new Map<string, -2 | -6>();
      for (const failure of parseLockFailures(reply)) failed.set(failure.jobId, failure.code);
      for (const job of chunkJobs) {
        const code = failed.get(job.jobId);
        if (code === undefined) {
          job.renewedAt = sentAt;
          renewedIds.push(job.jobId);
        } else if (code === -2 && this.locks.holds(job)) {
          recheck.push(job);
        } else if (this.locks.holds(job)) {
          job.lostCode = code;
          // A job being finished is judged by its finish.
          if (!job.releasing) lost.push([job, code]);
        }
      }
    });
    if (renewedIds.length > 0) emit.renewed({ type: 'renewed', queue, workerId, at, jobIds: renewedIds, roundTripMs, tickMs: Date.now() - firedAt });
    for (const [job, code] of lost) this.locks.lose(job, code, codeMeaning(code), at);
    return recheck;
  }}
