import { EchoMQOptionError } from '../../protocol/errors.js';
import { Keys } from '../../protocol/keys.js';
import { assertQueueName, describe } from '../../protocol/names.js';
import type { RedisClient } from '../../protocol/script.js';
import { canNameJob, Job } from '../job/job.js';
import type { JobContext } from '../job/job-context.js';
import { MAX_CHILDREN } from './flow-tree.js';
import { firstPages, forgetHscanNoValues, hscanNoValues, listChildren, queueFirstPages, scanPlan, type ScanPlan } from './child-scan.js';
import { parseJobKey } from './parent-notices.js';

/** Where getFlow starts and how far it reads (BullMQ's NodeOpts). */
export interface GetFlowOptions {
  /** The id of the job at the top of the tree read (any job of a flow, not only a root). */
  id: string;
  queueName: string;
  /** Its queue's key prefix. Default: the producer's. */
  prefix?: string;
  /** Levels read, this job's included: 1 reads the job alone. Default 10. */
  depth?: number;
  /** Children read per job, at most. Default 20 (BullMQ's). */
  maxChildren?: number;
}

/**
 * A job of a flow as getFlow reads it from Redis: `job` is undefined where the job is gone (never
 * added, or removed since), as BullMQ's; `children` is there when the job has children and the
 * depth reaches them.
 */
export interface FlowTreeNode {
  job: Job | undefined;
  children?: FlowTreeNode[];
}

export const DEFAULT_FLOW_DEPTH = 10;
export const DEFAULT_FLOW_MAX_CHILDREN = 20;
/** Jobs read per pipeline: a wide level is read in several round trips, none of them unbounded. */
const NODES_PER_PIPELINE = 100;

/** getFlow's options, checked before anything is read. */
export function checkGetFlowOptions(opts: GetFlowOptions, defaultPrefix: string): Required<GetFlowOptions> {
  if (typeof opts !== 'object' || opts === null) throw new EchoMQOptionError('getFlow', `takes { id, queueName, prefix?, depth?, maxChildren? }, got ${describe(opts)}`);
  if (typeof opts.id !== 'string' || opts.id.length === 0) throw new EchoMQOptionError('id', `must be a non-empty string, got ${describe(opts.id)}`);
  assertQueueName(opts.queueName, 'queueName');
  const prefix = opts.prefix ?? defaultPrefix;
  if (typeof prefix !== 'string' || prefix.length === 0) throw new EchoMQOptionError('prefix', `must be a non-empty string, got ${describe(opts.prefix)}`);
  const depth = opts.depth ?? DEFAULT_FLOW_DEPTH;
  if (!Number.isSafeInteger(depth) || depth < 1) throw new EchoMQOptionError('depth', `must be an integer of at least 1 (1 reads the job alone), got ${describe(opts.depth)}`);
  const maxChildren = opts.maxChildren ?? DEFAULT_FLOW_MAX_CHILDREN;
  if (!Number.isSafeInteger(maxChildren) || maxChildren < 1 || maxChildren > MAX_CHILDREN) {
    throw new EchoMQOptionError('maxChildren', `must be an integer from 1 to ${MAX_CHILDREN}, got ${describe(opts.maxChildren)}`);
  }
  return { id: opts.id, queueName: opts.queueName, prefix, depth, maxChildren };
}

/** A job to read at some level: where it goes in the answer. */
interface Pending {
  keys: Keys;
  id: string;
  node: FlowTreeNode;
}

/**
 * Reads a flow's tree top-down, a level at a time. The jobs of a level are read by queue (each
 * queue is one hash slot, maybe on its own cluster node), one pipeline per queue and up to
 * NODES_PER_PIPELINE jobs: a job's hash and, when its children are wanted, the first bounded
 * scan step of its four child keys (a big parent is read on in further steps, up to
 * maxChildren). A level's children are the next level's jobs.
 */
export async function readFlow(
  client: RedisClient,
  contextOf: (keys: Keys) => JobContext,
  opts: Required<GetFlowOptions>,
): Promise<FlowTreeNode> {
  if (!canNameJob(opts.id)) return { job: undefined };
  const noValues = opts.depth > 1 && await hscanNoValues(client);
  try {
    return await readTree(client, contextOf, opts, scanPlan(opts.maxChildren, noValues));
  } catch (error) {
    // A server older than the check found (a failover to an older replica, a node added since)
    // refuses NOVALUES: the connection is asked again next time, and this read goes on without.
    if (!noValues || !/syntax error/i.test((error as Error).message)) throw error;
    forgetHscanNoValues(client);
    return readTree(client, contextOf, opts, scanPlan(opts.maxChildren, false));
  }
}

async function readTree(client: RedisClient, contextOf: (keys: Keys) => JobContext, opts: Required<GetFlowOptions>, plan: ScanPlan): Promise<FlowTreeNode> {
  const root: FlowTreeNode = { job: undefined };
  let level: Pending[] = [{ keys: new Keys(opts.queueName, opts.prefix), id: opts.id, node: root }];
  for (let depth = 1; level.length > 0; depth++) {
    const wantChildren = depth < opts.depth;
    const next: Pending[] = [];
    await Promise.all([...groupByQueue(level).values()].map(async (jobs) => {
      for (let i = 0; i < jobs.length; i += NODES_PER_PIPELINE) {
        const chunk = jobs.slice(i, i + NODES_PER_PIPELINE);
        const read = await readJobs(client, chunk, wantChildren ? plan : undefined, opts.maxChildren);
        chunk.forEach((pending, j) => {
          const { fields, childKeys } = read[j];
          if (Object.keys(fields).length === 0) return; // gone: its node stays { job: undefined }
          pending.node.job = Job.fromHash(contextOf(pending.keys), pending.id, fields);
          // listChildren answers only keys that name a job, at most maxChildren.
          const children = childKeys.flatMap((key) => parseJobKey(key) ?? []);
          if (children.length === 0) return;
          pending.node.children = children.map(({ keys, id }) => {
            const node: FlowTreeNode = { job: undefined };
            next.push({ keys, id, node });
            return node;
          });
        });
      }
    }));
    level = next;
  }
  return root;
}

/**
 * One pipeline in one queue's slot: each job's hash and, when its children are wanted, the first
 * bounded step of each of its four child keys (child-scan.ts); a parent whose first steps did not
 * hold enough children is read on, a step at a time.
 */
async function readJobs(client: RedisClient, jobs: Pending[], plan: ScanPlan | undefined, maxChildren: number): Promise<Array<{ fields: Record<string, string>; childKeys: string[] }>> {
  const pipeline = client.pipeline();
  for (const { keys, id } of jobs) {
    pipeline.hgetall(keys.job(id));
    if (plan) queueFirstPages(pipeline, keys, id, plan);
  }
  const replies = ((await pipeline.exec()) ?? []).map(([error, reply]) => {
    if (error) throw error;
    return reply;
  });
  const per = plan ? 5 : 1;
  return Promise.all(jobs.map(async ({ keys, id }, i) => {
    const fields = replies[i * per] as Record<string, string>;
    if (!plan || Object.keys(fields).length === 0) return { fields, childKeys: [] };
    const pages = firstPages(replies.slice(i * per + 1, i * per + per), plan);
    return { fields, childKeys: await listChildren(client, keys, id, pages, maxChildren, plan) };
  }));
}

function groupByQueue(jobs: Pending[]): Map<string, Pending[]> {
  const groups = new Map<string, Pending[]>();
  for (const job of jobs) {
    const group = groups.get(job.keys.base);
    if (group) group.push(job);
    else groups.set(job.keys.base, [job]);
  }
  return groups;
}
