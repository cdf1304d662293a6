import { EchoMQOptionError } from '../../protocol/errors.js';
import { FlowScripts, type FlowAddCode } from '../../protocol/flow-scripts.js';
import { DEFAULT_PREFIX, Keys } from '../../protocol/keys.js';
import { assertPrefix, describe } from '../../protocol/names.js';
import type { RedisClient } from '../../protocol/script.js';
import { closeClient, connect, type ConnectionInput } from '../core/connection.js';
import { DEFAULTS } from '../core/defaults.js';
import { Job } from '../job/job.js';
import { QueuePart } from '../job/queue-part.js';
import { explainRedisError } from '../core/redis-health.js';
import { FLOW_OPERATIONS } from './flow-operations.js';
import { checkGetFlowOptions, readFlow, type FlowTreeNode, type GetFlowOptions } from './flow-reader.js';
import { levelsOf, planFlow, type FlowJob, type FlowNode } from './flow-tree.js';
import { ParentNotices } from './parent-notices.js';
import { ATTRIBUTES } from '../telemetry/attributes.js';
import { traceAdd } from '../telemetry/producer-span.js';
import { telemetryOf, type Attributes, type Telemetry } from '../core/telemetry.js';

export interface FlowProducerOptions {
  connection?: ConnectionInput;
  /** Key prefix of the flow's queues (a job's own `prefix` wins). Default `emq`. */
  prefix?: string;
  /** The events stream bound of the queues it writes to. Default 10,000. */
  maxEvents?: number;
  /** Largest job data accepted, in bytes of JSON. Default 1 MiB. */
  maxDataSize?: number;
  /**
   * Tracing (BullMQ's option): a PRODUCER span per add and addBulk, whose context every job of the
   * tree carries to its worker. `new EchoMQOtel()` from `@echomq/nestjs/otel`. Default none.
   */
  telemetry?: Telemetry;
}

/** A job of an added flow, with its children (BullMQ's JobNode). */
export interface JobNode {
  job: Job;
  children?: JobNode[];
}

/** Jobs per addFlowJobs-15 call; their children's keys and specs ride along, so fewer than a plain add's. */
const NODES_PER_CALL = 200;
/** Children per addFlowJobs-15 call (a parent with more goes alone in its call: at most MAX_CHILDREN). */
const CHILDREN_PER_CALL = 1000;

/**
 * FlowProducer (BullMQ's name): adds trees of jobs over any queues, where a parent runs only once
 * its children have finished (docs/flows.md). The tree is written top-down, a level at a time: each
 * parent is written with the keys of all its children (so it cannot start before every one of
 * them finished) and their specs (its intent); then its children; then the intent is cleared. A
 * producer that dies half-way leaves intents that a worker's sweep rolls forward
 * (flow-recovery.ts): the tree is then made whole, never left with a parent waiting for a child
 * that will not come. Every step is idempotent, so a retried add changes nothing already there.
 */
export class FlowProducer {
  readonly client: RedisClient;
  private readonly ownsClient: boolean;
  private readonly prefix: string;
  private readonly maxEvents: number;
  private readonly maxDataSize?: number;
  private readonly telemetry?: Telemetry;
  private readonly parts = new Map<string, QueuePart>();
  private closing?: Promise<void>;

  constructor(opts: FlowProducerOptions = {}) {
    if (typeof opts !== 'object' || opts === null) throw new EchoMQOptionError('FlowProducer options', `must be an object, got ${describe(opts)}`);
    this.prefix = opts.prefix ?? DEFAULT_PREFIX;
    assertPrefix(this.prefix);
    this.maxEvents = opts.maxEvents ?? DEFAULTS.maxEvents;
    this.maxDataSize = opts.maxDataSize;
    this.telemetry = telemetryOf(opts.telemetry);
    const { client, owned } = connect(opts.connection);
    this.client = client;
    this.ownsClient = owned;
  }

  /** Adds a tree; answers its jobs as a tree of JobNodes. Nothing is written when a job of it is refused. */
  add(flow: FlowJob): Promise<JobNode> {
    if (this.telemetry) {
      return traceAdd(this.telemetry, { operation: 'addFlow', destination: (flow as FlowJob | undefined)?.queueName, attributes: batchCount([flow]) },
        (metadata) => this.addTree(flow, metadata), (node) => ({ [ATTRIBUTES.messageId]: node.job.id, [ATTRIBUTES.jobName]: node.job.name }));
    }
    return this.addTree(flow);
  }

  /** Adds several trees; they are checked first, then written together (a level of all of them a step). */
  addBulk(flows: FlowJob[]): Promise<JobNode[]> {
    if (this.telemetry) {
      const queues = new Set(Array.isArray(flows) ? flows.map((flow) => flow?.queueName) : []);
      return traceAdd(this.telemetry, {
        operation: 'addFlows',
        destination: queues.size === 1 ? [...queues][0] : undefined,
        attributes: Array.isArray(flows) ? batchCount(flows) : undefined,
      }, (metadata) => this.addTrees(flows, metadata));
    }
    return this.addTrees(flows);
  }

  /** add() after its span, if any: every job of the tree carries `metadata`, its trace context. */
  private async addTree(flow: FlowJob, metadata?: string): Promise<JobNode> {
    const root = planFlow(flow, this.prefix, this.maxDataSize, 'flow', metadata);
    this.assertOpen();
    await this.write([root]);
    return this.nodeOf(root);
  }

  private async addTrees(flows: FlowJob[], metadata?: string): Promise<JobNode[]> {
    if (!Array.isArray(flows)) throw new EchoMQOptionError('addBulk', `takes an array of flows, got ${describe(flows)}`);
    const roots = flows.map((flow, i) => planFlow(flow, this.prefix, this.maxDataSize, `addBulk[${i}]`, metadata));
    this.assertOpen();
    await this.write(roots);
    return roots.map((root) => this.nodeOf(root));
  }

  /**
   * Reads a tree back from Redis (BullMQ's getFlow): the job `id` of `queueName` and its children,
   * `depth` levels down (default 10), at most `maxChildren` of each job (default 20). The job is
   * undefined when it is not there. Children are listed completed first, then the ones not
   * finished, failed, ignored; a child removed since the add is listed with its job undefined.
   */
  async getFlow(opts: GetFlowOptions): Promise<FlowTreeNode> {
    const checked = checkGetFlowOptions(opts, this.prefix);
    this.assertOpen();
    return readFlow(this.client, (keys) => this.partOf(keys.queueName, keys.prefix).context, checked);
  }

  async close(): Promise<void> {
    this.closing ??= this.ownsClient ? closeClient(this.client) : Promise.resolve();
    return this.closing;
  }

  /**
   * Writes the trees a level at a time, then clears the intents of the level above. A tree whose
   * root exists already (an add sent again, or the same ids added twice) is not written again:
   * the root is left as it is, and its intent, if a producer died writing it, is the sweep's.
   */
  private async write(roots: FlowNode[]): Promise<void> {
    await this.refuseTakenIds(roots);
    const rootCodes = await this.addLevel(roots);
    const written = roots.filter((_, i) => rootCodes[i] === 'added');
    const levels = written.map(levelsOf);
    const depth = Math.max(0, ...levels.map((l) => l.length));
    for (let d = 1; d < depth; d++) {
      await this.addLevel(levels.flatMap((l) => l[d] ?? []));
      await this.ackParents(levels.flatMap((l) => l[d - 1] ?? []).filter((node) => node.children.length > 0));
    }
  }

  /**
   * Custom ids that another job holds (one not of this parent, or with another parent link) are
   * refused before anything is written. Roots are not checked: a root that exists is answered as
   * it is. A race with another add is still caught by addFlowJobs-15 (addLevel).
   */
  private async refuseTakenIds(roots: FlowNode[]): Promise<void> {
    const custom: Array<{ node: FlowNode; at: string }> = [];
    const visit = (node: FlowNode, at: string) => node.children.forEach((child, i) => {
      const path = `${at}.children[${i}]`;
      if (child.customId) custom.push({ node: child, at: path });
      visit(child, path);
    });
    roots.forEach((root, i) => visit(root, roots.length === 1 ? 'flow' : `addBulk[${i}]`));
    if (custom.length === 0) return;
    const pipeline = this.client.pipeline();
    for (const { node } of custom) pipeline.hmget(node.keys.job(node.record.id), 'name', 'parentKey');
    const replies = (await pipeline.exec()) ?? [];
    custom.forEach(({ node, at }, i) => {
      const [error, reply] = replies[i];
      if (error) throw error;
      const [name, parentKey] = reply as [string | null, string | null];
      if (name !== null && parentKey !== node.record.parentKey) {
        throw new EchoMQOptionError(`${at}.opts.jobId`, `is ${node.record.id}: queue ${node.queueName} holds a job of that id that is not this parent's child; nothing was written`);
      }
    });
  }

  /** Adds one level (addFlowJobs-15, per queue, in bounded calls); one code per node, in order. */
  private async addLevel(level: FlowNode[]): Promise<FlowAddCode[]> {
    const codes = new Array<FlowAddCode>(level.length);
    const byQueue = groupBy(level.map((node, i) => ({ node, i })), ({ node }) => node.keys.base);
    await Promise.all([...byQueue.values()].map(async (entries) => {
      const { queueName, prefix } = entries[0].node;
      const scripts = this.partOf(queueName, prefix).flows;
      for (const chunk of chunksOf(entries)) {
        const answered = await scripts.addFlowJobs(chunk.map(({ node }) => node.record), Date.now()).catch((error: unknown) => {
          throw explainRedisError(error, `add of a flow's jobs to queue ${queueName}`);
        });
        answered.forEach((code, j) => (codes[chunk[j].i] = code));
        const finished = chunk.filter((_, j) => answered[j] === 'finished').map(({ node }) => node.record.id);
        if (finished.length > 0) await this.noticesOf(queueName, prefix).deliverStored(finished);
        const taken = chunk.filter((_, j) => answered[j] === 'taken').map(({ node }) => node);
        if (taken.length > 0) await this.dropTaken(taken);
      }
    }));
    return codes;
  }

  /**
   * A child id taken by another job between refuseTakenIds and the write (a race with another
   * add): its parent forgets it (settled as removed), so no parent waits for a child that is not
   * its own; then the add fails, naming it.
   */
  private async dropTaken(taken: FlowNode[]): Promise<void> {
    const root = taken.find((node) => node.parent === undefined);
    if (root) {
      // Nothing of its tree was written: a root comes first.
      throw new EchoMQOptionError('opts.jobId', `is ${root.record.id}: queue ${root.queueName} holds a job of that id that is a child in another flow; nothing was written`);
    }
    for (const node of taken) {
      const parent = node.parent!;
      await this.partOf(parent.queueName, parent.prefix).flows.settleChildren([{ parentId: parent.record.id,
        childKey: node.keys.job(node.record.id), outcome: 'failed', value: 'the id was taken by another job', policy: 'remove' }], Date.now());
    }
    const node = taken[0];
    throw new EchoMQOptionError('opts.jobId', `is ${node.record.id}: queue ${node.queueName} holds a job of that id that is not this flow's; its parent was told to do without it`);
  }

  /** The children of these parents exist now: their intents are cleared. */
  private async ackParents(parents: FlowNode[]): Promise<void> {
    await Promise.all(parents.map((parent) =>
      this.scriptsOf(parent).ackPending(parent.record.id, parent.record.children.map((child) => child.key))));
  }

  private scriptsOf(node: FlowNode): FlowScripts {
    return this.partOf(node.queueName, node.prefix).flows;
  }

  /** Delivers the notices of a queue's re-added children that had finished (addFlowJobs-15 wrote them again). */
  private noticesOf(queueName: string, prefix: string): ParentNotices {
    // Its side paths (a failure passed further up) are left to the sweep: the add does not wait for them.
    return new ParentNotices(this.client, new Keys(queueName, prefix), this.maxEvents, () => undefined, 0);
  }

  private partOf(queueName: string, prefix: string): QueuePart & { flows: FlowScripts } {
    const base = new Keys(queueName, prefix).base;
    let part = this.parts.get(base) as (QueuePart & { flows: FlowScripts }) | undefined;
    if (!part) {
      part = Object.assign(new QueuePart({
        client: this.client, name: queueName, index: 0, partitions: 1, prefix, maxEvents: this.maxEvents, maxDataSize: this.maxDataSize, flowOperations: FLOW_OPERATIONS,
      }),
        { flows: new FlowScripts(this.client, new Keys(queueName, prefix), this.maxEvents) });
      this.parts.set(base, part);
    }
    return part;
  }

  private nodeOf(node: FlowNode): JobNode {
    const { record } = node;
    const job = new Job(this.partOf(node.queueName, node.prefix).context, record.id, record.name, node.data, node.opts, record.timestamp);
    if (record.parentKey !== '') {
      job.parentKey = record.parentKey;
      job.parent = JSON.parse(record.parentJson) as { id: string; queueKey: string };
    }
    return node.children.length > 0 ? { job, children: node.children.map((child) => this.nodeOf(child)) } : { job };
  }

  private assertOpen(): void {
    if (this.closing) throw new Error('EchoMQ: this FlowProducer is closed');
  }
}

/** A level's entries of one queue in calls of at most NODES_PER_CALL jobs and CHILDREN_PER_CALL children (a bigger parent alone). */
function chunksOf<T extends { node: FlowNode }>(entries: T[]): T[][] {
  const chunks: T[][] = [];
  let chunk: T[] = [];
  let children = 0;
  for (const entry of entries) {
    const count = entry.node.children.length;
    if (chunk.length > 0 && (chunk.length >= NODES_PER_CALL || children + count > CHILDREN_PER_CALL)) {
      chunks.push(chunk);
      chunk = [];
      children = 0;
    }
    chunk.push(entry);
    children += count;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

function groupBy<T>(items: T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(keyOf(item));
    if (group) group.push(item);
    else groups.set(keyOf(item), [item]);
  }
  return groups;
}

/**
 * messaging.batch.message_count of an add of `flows`: the jobs of every tree (the messages, as
 * OpenTelemetry counts them), none for a single job. Read before the flows are checked: whatever
 * is not an object counts as one job (planFlow refuses it later), and an object met twice once.
 */
function batchCount(flows: unknown[]): Attributes | undefined {
  const seen = new Set<object>();
  const pending = [...flows];
  let count = 0;
  while (pending.length > 0) {
    const flow = pending.pop();
    if (typeof flow === 'object' && flow !== null) {
      if (seen.has(flow)) continue;
      seen.add(flow);
      const { children } = flow as { children?: unknown };
      if (Array.isArray(children)) for (const child of children) pending.push(child);
    }
    count++;
  }
  return count > 1 ? { [ATTRIBUTES.batchCount]: count } : undefined;
}
