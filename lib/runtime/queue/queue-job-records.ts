import { EchoMQError, EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';
import { toJson } from '../core/serialize.js';
import { canNameJob } from '../job/job.js';
import { getJobStatus, type JobStatus } from '../job/job-state.js';
import type { QueuePart } from '../job/queue-part.js';
import { assertIndex } from './job-reads.js';
import type { JobControlHost } from './queue-job-control.js';

/** A job's log lines and how many it holds (BullMQ's shape). */
export interface JobLogs {
  logs: string[];
  count: number;
}

/**
 * A Queue's calls on one job by its id (BullMQ's names): its logs, its progress, its state. Each
 * finds the partition that holds the job first (a plain queue's only one).
 */
export class QueueJobRecords {
  constructor(private readonly host: JobControlHost) {}

  /**
   * A job's log lines, `start` to `end` inclusive (negative from the end, as LRANGE), oldest first
   * or, with `asc` false, newest first; `count` is how many lines it holds.
   */
  async getJobLogs(jobId: string, start = 0, end = -1, asc = true): Promise<JobLogs> {
    if (typeof jobId !== 'string') throw new EchoMQOptionError('jobId', `must be a string, got ${describe(jobId)}`);
    assertIndex(start, 'start');
    assertIndex(end, 'end');
    if (typeof asc !== 'boolean') throw new EchoMQOptionError('asc', `must be true or false, got ${describe(asc)}`);
    if (!canNameJob(jobId)) return { logs: [], count: 0 };
    const part = await this.partHolding(jobId);
    if (!part) return { logs: [], count: 0 };
    const key = part.keys.logs(jobId);
    // One MULTI: the lines and their count from one moment.
    const multi = part.client.multi();
    if (asc) multi.lrange(key, start, end);
    else multi.lrange(key, -(end + 1), -(start + 1));
    multi.llen(key);
    const replies = (await multi.exec()) ?? [];
    for (const [error] of replies) if (error) throw error;
    const logs = replies[0][1] as string[];
    return { logs: asc ? logs : logs.reverse(), count: replies[1][1] as number };
  }

  /** queue.updateJobProgress: the job's progress stored and its `progress` event written (updateProgress-2). */
  async updateJobProgress(jobId: string, progress: unknown): Promise<void> {
    const json = toJson(progress, 'progress');
    await (await this.partFor(jobId, 'updateProgress-2.lua')).control.updateProgress(jobId, json);
  }

  /** queue.addJobLog: a line appended to the job's log, the newest `keepLogs` kept (0: all); how many it holds. */
  async addJobLog(jobId: string, logRow: string, keepLogs = 0): Promise<number> {
    if (typeof logRow !== 'string') throw new EchoMQOptionError('logRow', `must be a string, got ${describe(logRow)}`);
    if (!Number.isInteger(keepLogs) || keepLogs < 0) throw new EchoMQOptionError('keepLogs', `must be a whole number >= 0, got ${describe(keepLogs)}`);
    return (await this.partFor(jobId, 'addLog-2.lua')).control.addLog(jobId, logRow, keepLogs);
  }

  /** queue.getJobState: where the job is, under BullMQ's names (as job.getState()). */
  async getJobState(jobId: string): Promise<JobStatus> {
    if (typeof jobId !== 'string') throw new EchoMQOptionError('jobId', `must be a string, got ${describe(jobId)}`);
    if (!canNameJob(jobId)) return 'unknown';
    const part = await this.partHolding(jobId);
    return part ? getJobStatus(part.client, part.keys, jobId) : 'unknown';
  }

  /** The part that holds a job, for a call that needs one: EchoMQError -1 (as the script answers) when none does. */
  private async partFor(jobId: string, script: string): Promise<QueuePart> {
    if (typeof jobId !== 'string' || jobId.length === 0) throw new EchoMQOptionError('jobId', `must be a job id (a non-empty string), got ${describe(jobId)}`);
    const part = canNameJob(jobId) ? await this.partHolding(jobId) : undefined;
    if (!part) throw new EchoMQError(-1, jobId, script);
    return part;
  }

  /** The part whose keys hold the job (its hash, or its logs): a plain queue's only part; undefined when none does. */
  private async partHolding(jobId: string): Promise<QueuePart | undefined> {
    const rounds = this.host.partsThatMayHold(jobId);
    if (this.host.parts.length === 1) return this.host.parts[0];
    for (const candidates of rounds) {
      const found = await Promise.all(candidates.map((part) => part.client.exists(part.keys.job(jobId), part.keys.logs(jobId))));
      const index = found.findIndex((n) => n > 0);
      if (index >= 0) return candidates[index];
    }
    return undefined;
  }
}
