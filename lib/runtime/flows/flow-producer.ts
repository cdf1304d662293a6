import { EchoMQOptionError } from '../../protocol/errors.js';
import { FlowScripts } from '../../protocol/flow-scripts.js';
import { DEFAULT_PREFIX, Keys } from '../../protocol/keys.js';
import { assertPrefix, describe } from '../../protocol/names.js';
import type { RedisClient } from '../../protocol/script.js';
import { closeClient, connect, type ConnectionInput } from '../core/connection.js';
import { DEFAULTS } from '../core/defaults.js';
import { Job } from '../job/job.js';
import { QueuePart } from '../job/queue-part.js';
import { FLOW_OPERATIONS } from './flow-operations.js';
import { checkGetFlowOptions, readFlow, type FlowTreeNode, type GetFlowOptions } from './flow-reader.js';
import { planFlow, type FlowJob, type FlowNode } from './flow-tree.js';
import { ParentNotices } from './parent-notices.js';
import { FlowWriter } from './flow-writer.js';
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
  private readonly writer: FlowWriter;

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
    this.writer = new FlowWriter(client, (queueName, prefix) => this.partOf(queueName, prefix).flows, (queueName, prefix) => this.noticesOf(queueName, prefix));
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
    await this.writer.write([root]);
    return this.nodeOf(root);
  }

  private async addTrees(flows: FlowJob[], metadata?: string): Promise<JobNode[]> {
    if (!Array.isArray(flows)) throw new EchoMQOptionError('addBulk', `takes an array of flows, got ${describe(flows)}`);
    const roots = flows.map((flow, i) => planFlow(flow, this.prefix, this.maxDataSize, `addBulk[${i}]`, metadata));
    this.assertOpen();
    await this.writer.write(roots);
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

  /** Resolves once the producer's connection answers (BullMQ's name). */
  async waitUntilReady(): Promise<void> {
    await this.client.ping();
  }

  async close(): Promise<void> {
    this.closing ??= this.ownsClient ? closeClient(this.client) : Promise.resolve();
    return this.closing;
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
