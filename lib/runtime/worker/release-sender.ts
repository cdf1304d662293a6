import { EchoMQError } from '../../protocol/errors.js';
import type { Job } from '../job/job.js';
import type { JobContext } from '../job/job-context.js';
import type { WorkerLocks } from '../locks/worker-locks.js';
import { LockLostError } from '../locks/lock-lost-error.js';
import type { JobLock } from '../locks/tracked-job.js';

const FINISH_RETRY_MS = [100, 200, 500, 1000, 2000];
/** What a finishing call answers when an earlier send of it had landed and its reply was lost. */
export const LANDED_EARLIER = Symbol('landed earlier');

/** What a finishing script is asked to do, as far as judging a lost reply needs it. */
export interface Release {
  /** 'requeued': given back for a rate limit (moveJobFromActiveToWait-11), its attempt not counted. */
  outcome: 'completed' | 'failed' | 'retried' | 'requeued';
  /** The job's `atm` once this release lands: the release is the only writer of atm while we hold the lock. */
  attemptsMade: number;
  /** The finish may delete the job (removeOnComplete / removeOnFail with a count or an age). */
  mayRemove: boolean;
}

/**
 * Sends the scripts that take a job out of active (a finish, a retry, a give-back) until Redis
 * answers, and tells a reply lost with its connection from a job really lost (JobRunner's part
 * of "A lost reply to a finishing script", docs/reliability.md).
 */
export class ReleaseSender {
  constructor(
    private readonly context: Pick<JobContext, 'client' | 'keys' | 'queueName'>,
    private readonly locks: Pick<WorkerLocks, 'isClosed'>,
    /** Told of each failed send that will be sent again. */
    private readonly onRetry: (error: Error) => void,
  ) {}

  /**
   * Sends a finishing script until Redis answers. An answer of -1, -2 or -3 may be this very call
   * landing twice: the connection dropped with the reply, and ioredis (or this loop) sent it again.
   * Any try can be such a resend, so each of those answers is checked against what Redis holds.
   */
  async send<T>(job: Job, lock: JobLock, send: () => Promise<T>, release: Release): Promise<T | typeof LANDED_EARLIER> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await send();
      } catch (error) {
        // A -1/-2/-3 answer, or a renewal that found no lock while this finish was in flight, may be
        // this very call having landed (its reply lost): ask Redis before calling the job lost.
        // When Redis cannot be asked now (the connection is still down), the send is tried again.
        const lost = error instanceof EchoMQError ? error.code : lock.lostCode;
        if (lost !== undefined) {
          const landed = lost === -6 ? false : await this.landedEarlier(job, release).catch(() => undefined);
          if (landed === true) return LANDED_EARLIER;
          if (landed === false) throw error instanceof EchoMQError ? error : new LockLostError(this.context.queueName, job.id, lost as -2 | -6);
        }
        if (this.locks.isClosed || attempt >= FINISH_RETRY_MS.length * 4) throw error;
        this.onRetry(error as Error);
        await new Promise((resolve) => setTimeout(resolve, FINISH_RETRY_MS[Math.min(attempt, FINISH_RETRY_MS.length - 1)]));
      }
    }
  }

  /**
   * Did an earlier send of this release land? Not judged by where the job is: a stalled sweep
   * also puts a job back in wait, as a landed retry does. `ats` (the fencing number) unchanged
   * says no pickup came since ours, and then only our release can have moved `atm` to the value
   * it writes. A job whose hash is gone landed only if this release could delete it.
   */
  private async landedEarlier(job: Job, release: Release): Promise<boolean> {
    const { client, keys } = this.context;
    if (release.outcome === 'requeued') {
      // It writes no atm: landed means no pickup since ours and the job out of active.
      const [ats, position] = await Promise.all([client.hget(keys.job(job.id), 'ats'), client.lpos(keys.active, job.id)]);
      return ats !== null && Number(ats) === job.attemptsStarted && position === null;
    }
    const [ats, atm] = await client.hmget(keys.job(job.id), 'ats', 'atm');
    if (ats === null) return release.mayRemove && release.outcome !== 'retried';
    return Number(ats) === job.attemptsStarted && Number(atm ?? 0) === release.attemptsMade;
  }
}
