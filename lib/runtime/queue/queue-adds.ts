import { EchoMQError, EchoMQOptionError } from '../../protocol/errors.js';
import { FlowScripts } from '../../protocol/flow-scripts.js';
import { describe } from '../../protocol/names.js';
import type { RedisClient } from '../../protocol/script.js';
import type { AddedJob } from '../../protocol/script-shapes.js';
import type { JobOptions } from '../core/job-options.js';
import type { ResolvedQueueOptions } from '../core/queue-options.js';
import { explainRedisError } from '../core/redis-health.js';
import { checkChildAdds } from '../flows/child-add-checks.js';
import { parentPolicyOf } from '../flows/flow-tree.js';
import { addChild, type CheckedParent } from '../flows/step-jobs.js';
import { Job } from '../job/job.js';
import type { QueuePart } from '../job/queue-part.js';
import { readJobs } from './job-reads.js';
import type { PartitionRouter } from './partition-router.js';
import { prepareJob, type AddTarget, type Prepared } from './prepare-job.js';

/** What a Queue's adds need of it. */
export interface QueueAddsOptions {
  name: string;
  client: RedisClient;
  options: ResolvedQueueOptions;
  parts: QueuePart[];
  router: PartitionRouter;
  addTarget: AddTarget;
  /** Throws when the queue is closed. */
  assertOpen(): void;
  /** A partitioned queue's check of its partition count against Redis (once per Queue). */
  checkCount(): Promise<void>;
}

/**
 * A Queue's add and addBulk, after their spans: each job prepared and checked before anything is
 * sent, then routed to its partition; concurrent adds go together (QueuePart.adds); children
 * (opts.parent) go by addChild's steps over their two slots.
 */
export class QueueAdds<Data, Result> {
  private readonly name: string;
  private readonly client: RedisClient;
  private readonly options: ResolvedQueueOptions;
  private readonly parts: QueuePart[];
  private readonly router: PartitionRouter;
  private readonly addTarget: AddTarget;
  private readonly assertOpen: () => void;
  private readonly checkCount: () => Promise<void>;

  constructor(options: QueueAddsOptions) {
    ({
      name: this.name, client: this.client, options: this.options, parts: this.parts, router: this.router, addTarget: this.addTarget,
      assertOpen: this.assertOpen, checkCount: this.checkCount,
    } = options);
  }

  /** queue.add() after its span, if any: `metadata` is the trace context the job carries (opts.telemetry). */
  async one(name: string, data: Data, opts: JobOptions, metadata?: string): Promise<Job<Data, Result>> {
    const prepared = prepareJob(this.addTarget, name, data, opts, 'add', metadata);
    this.assertOpen();
    if (prepared.parent) {
      await this.checkChildAdds([prepared], `add of job "${name}" with a parent to queue ${this.name}`);
      return this.addWithParent(prepared);
    }
    if (this.parts.length > 1) await this.checkCount();
    const part = this.router.route(prepared.opts);
    const added = await part.adds.submit(prepared.job).catch((error: unknown) => {
      throw explainRedisError(error, `add of job "${name}" to queue ${this.name}`);
    });
    return added.created ? this.fromPrepared(part, added.jobId, prepared) : this.getExisting(part, added, prepared);
  }

  /** queue.addBulk() after its span, if any: every job carries `metadata`, its trace context. */
  async many(jobs: Array<{ name: string; data: Data; opts?: JobOptions }>, metadata?: string): Promise<Array<Job<Data, Result>>> {
    if (!Array.isArray(jobs)) throw new EchoMQOptionError('addBulk', `takes an array of { name, data, opts }, got ${describe(jobs)}`);
    const prepared = jobs.map((job, i) => prepareJob(this.addTarget, job?.name, job?.data, job?.opts ?? {}, `addBulk[${i}]`, metadata));
    this.assertOpen();
    // Children go one by one (each takes three calls over two slots); the others in bulk, as before.
    // Every entry is checked in Redis first (parents, ids): one that cannot be added writes nothing.
    if (prepared.some((p) => p.parent)) {
      await this.checkChildAdds(prepared, `addBulk of ${jobs.length} jobs to queue ${this.name}`);
      const plain = jobs.filter((_, i) => !prepared[i].parent);
      const added = plain.length > 0 ? await this.many(plain, metadata) : [];
      let next = 0;
      return Promise.all(prepared.map((p) => (p.parent ? this.addWithParent(p) : Promise.resolve(added[next++]))));
    }
    if (this.parts.length > 1) await this.checkCount();
    const action = `addBulk of ${jobs.length} jobs to queue ${this.name}`;
    const byPart = new Map<QueuePart, number[]>();
    prepared.forEach((p, i) => {
      const part = this.router.route(p.opts);
      const positions = byPart.get(part);
      if (positions) positions.push(i);
      else byPart.set(part, [i]);
    });
    const results = new Array<{ part: QueuePart; result: { jobId: string; created: boolean } | Error }>(jobs.length);
    await Promise.all([...byPart].map(async ([part, positions]) => {
      const replies = await part.addJobs(positions.map((i) => prepared[i].job)).catch((error: unknown) => {
        throw explainRedisError(error, action);
      });
      replies.forEach((result, j) => (results[positions[j]] = { part, result }));
    }));
    return Promise.all(results.map(async ({ part, result }, i) => {
      if (result instanceof Error) throw explainRedisError(result, action);
      return result.created ? this.fromPrepared(part, result.jobId, prepared[i]) : this.getExisting(part, result, prepared[i]);
    }));
  }

  /** What adds with `parent` are checked for in Redis before anything is written (child-add-checks.ts). */
  private async checkChildAdds(prepared: Prepared[], action: string): Promise<void> {
    const entries = prepared.map((p) => ({ at: p.at, customId: p.job.customId, parent: p.parent }));
    await checkChildAdds(this.client, this.parts[0].keys, this.name, entries).catch((error: unknown) => {
      if (error instanceof EchoMQError || error instanceof EchoMQOptionError) throw error;
      throw explainRedisError(error, action);
    });
  }

  /** A child of a job (opts.parent): addChild's three steps over the two slots (docs/flows.md, "Step jobs"). */
  private async addWithParent(prepared: Prepared): Promise<Job<Data, Result>> {
    const part = this.parts[0];
    const parent = prepared.parent as CheckedParent;
    const { job } = prepared;
    const action = `add of job "${job.name}" with a parent to queue ${this.name}`;
    try {
      const id = job.customId ?? String(await this.client.incr(part.keys.id));
      const parentKeys = parent.keys;
      const outcome = await addChild({
        queueName: this.name, prefix: this.options.prefix, keys: part.keys, flows: part.flows,
        record: {
          id, name: job.name, data: job.data, opts: job.opts, timestamp: job.timestamp, delay: job.delay, priority: job.priority, lifo: job.lifo,
          parentKey: parentKeys.job(parent.id), parentJson: JSON.stringify({ id: parent.id, queueKey: parentKeys.queueKey }),
          policy: parentPolicyOf(prepared.opts), children: [],
        },
      }, parent, new FlowScripts(this.client, parentKeys, this.options.maxEvents), `${prepared.at}: `);
      if (outcome === 'existed') {
        const [existing] = await readJobs<Data, Result>(this.client, part, [id]);
        if (existing) return existing;
        throw new EchoMQError(-1, id, 'addFlowJobs-15.lua', 'it existed when added, and was removed since');
      }
      const added = this.fromPrepared(part, id, prepared);
      added.parentKey = parentKeys.job(parent.id);
      added.parent = { id: parent.id, queueKey: parentKeys.queueKey };
      return added;
    } catch (error) {
      if (error instanceof EchoMQError || error instanceof EchoMQOptionError) throw error;
      throw explainRedisError(error, action);
    }
  }

  private fromPrepared(part: QueuePart, jobId: string, prepared: Prepared): Job<Data, Result> {
    const { jobId: _id, ...stored } = prepared.opts;
    const job = new Job<Data, Result>(part.context, jobId, prepared.job.name, prepared.data as Data, stored, prepared.job.timestamp);
    if (prepared.job.deduplication) job.deduplicationId = prepared.job.deduplication.id;
    return job;
  }

  /**
   * The job an add found already there, in the partition the add went to (its id may be in others
   * too): the job of its custom id, or the one that holds its deduplication id. A throttle-mode id
   * outlives its job: when that job is gone (it finished and was removed), the answer is a Job of
   * its id built from this add, as BullMQ's add answers; `getState()` tells it apart ('unknown').
   */
  private async getExisting(part: QueuePart, added: AddedJob, prepared: Prepared): Promise<Job<Data, Result>> {
    const [job] = await readJobs<Data, Result>(this.client, part, [added.jobId]);
    if (job) return job;
    if (added.deduplicated) return this.fromPrepared(part, added.jobId, prepared);
    throw new EchoMQError(-1, added.jobId, 'addJob-9.lua', 'it existed when added, and was removed since');
  }
}
