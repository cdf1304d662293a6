import { randomUUID as uuid } from 'node:crypto';
import { EchoMQOptionError } from '../../protocol/errors.js';
import type { FlowJobRecord, FlowSpec, ParentPolicy } from '../../protocol/flow-scripts.js';
import { Keys } from '../../protocol/keys.js';
import { assertCustomJobId, assertPrefix, assertQueueName, describe } from '../../protocol/names.js';
import { dataLimitOf, validateJobOptions, type JobOptions, type ParentFailureOptions } from '../core/job-options.js';
import { toJson } from '../core/serialize.js';
import { withTraceContext } from '../core/telemetry.js';

export type FlowJobOptions = Omit<JobOptions, 'deduplication' | 'partitionKey' | 'parent'> & ParentFailureOptions;

/** Options a flow job refuses: a flow job is added once, by its tree, to a plain queue. */
const REFUSED_OPTIONS = ['deduplication', 'partitionKey', 'repeat', 'parent'] as const;

/** A job of a flow and its children (BullMQ's FlowJob): the parent runs once every child has finished. */
export interface FlowJob {
  name: string;
  queueName: string;
  data?: unknown;
  /** The key prefix of this job's queue. Default: the producer's. */
  prefix?: string;
  opts?: FlowJobOptions;
  children?: FlowJob[];
}

export const POLICIES: ReadonlyArray<[keyof ParentFailureOptions, ParentPolicy]> = [
  ['failParentOnFailure', 'fail'], ['ignoreDependencyOnFailure', 'ignore'],
  ['removeDependencyOnFailure', 'remove'], ['continueParentOnFailure', 'continue'],
];

/** A child's policy on failure as its options set it ('' for none): what its hash's pfp holds. */
export function parentPolicyOf(opts: ParentFailureOptions): ParentPolicy {
  return POLICIES.find(([name]) => opts[name] === true)?.[1] ?? '';
}

/** The most children one parent may have: its dependencies are written by one bounded script call. */
export const MAX_CHILDREN = 10_000;

/** A job of a flow, checked, with its id and parent link: ready for addFlowJobs-15. */
export interface FlowNode {
  queueName: string;
  prefix: string;
  keys: Keys;
  record: FlowJobRecord;
  /** As given, for the Job the add answers with. */
  data: unknown;
  opts: JobOptions;
  children: FlowNode[];
  /** Its parent in the tree (undefined for a root). */
  parent?: FlowNode;
  /** True when its id is the caller's jobId (checked before the write: it may be taken). */
  customId: boolean;
}

/**
 * Checks a whole tree before anything is written (an EchoMQOptionError names the path, e.g.
 * `flow.children[2].opts.delay`) and gives every job an id: its jobId, else a UUID v4, so that a
 * parent can list its children's keys before they exist.
 */
export function planFlow(tree: FlowJob, defaultPrefix: string, maxDataSize: number | undefined, at = 'flow', traceMetadata?: string): FlowNode {
  return plan(tree, { defaultPrefix, maxDataSize, traceMetadata }, at, undefined, new Set());
}

/** What every job of a tree is planned with: the producer's settings, and the trace context of its add (when traced). */
interface PlanSettings {
  defaultPrefix: string;
  maxDataSize: number | undefined;
  traceMetadata: string | undefined;
}

function plan(tree: FlowJob, settings: PlanSettings, at: string, parent: FlowNode | undefined, seen: Set<string>): FlowNode {
  const { defaultPrefix, maxDataSize, traceMetadata } = settings;
  if (typeof tree !== 'object' || tree === null) throw new EchoMQOptionError(at, `must be { name, queueName, data?, opts?, children? }, got ${describe(tree)}`);
  if (typeof tree.name !== 'string' || tree.name.length === 0) throw new EchoMQOptionError(`${at}.name`, `must be a non-empty string, got ${describe(tree.name)}`);
  assertQueueName(tree.queueName, `${at}.queueName`);
  const prefix = tree.prefix ?? defaultPrefix;
  try {
    assertPrefix(prefix);
  } catch (error) {
    throw new EchoMQOptionError(`${at}.prefix`, (error as Error).message.replace(/^[^:]*: /, ''));
  }
  if (tree.opts !== undefined && (typeof tree.opts !== 'object' || tree.opts === null || Array.isArray(tree.opts))) {
    throw new EchoMQOptionError(`${at}.opts`, `must be an object, got ${describe(tree.opts)}`);
  }
  const opts = (tree.opts ?? {}) as FlowJobOptions & JobOptions & { repeat?: unknown };
  if (opts.jobId !== undefined) {
    try {
      assertCustomJobId(opts.jobId);
    } catch (error) {
      throw new EchoMQOptionError(`${at}.opts.jobId`, (error as Error).message.replace(/^[^:]*: /, ''));
    }
  }
  validateJobOptions(opts, `${at}.opts.`);
  for (const refused of REFUSED_OPTIONS) {
    if (opts[refused] !== undefined) throw new EchoMQOptionError(`${at}.opts.${refused}`, 'is not supported in a flow: a flow job is added once, by its tree');
  }
  const policies = POLICIES.filter(([name]) => {
    const value = opts[name];
    if (value !== undefined && typeof value !== 'boolean') throw new EchoMQOptionError(`${at}.opts.${name}`, `must be true or false, got ${describe(value)}`);
    return value === true;
  });
  if (policies.length > 1) throw new EchoMQOptionError(`${at}.opts`, `sets ${policies.map(([n]) => n).join(' and ')}: a child has one policy on failure`);
  if (policies.length === 1 && !parent) throw new EchoMQOptionError(`${at}.opts.${policies[0][0]}`, 'applies to a child; this job has no parent');
  const children = tree.children ?? [];
  if (!Array.isArray(children)) throw new EchoMQOptionError(`${at}.children`, `must be an array, got ${describe(children)}`);
  if (children.length > MAX_CHILDREN) throw new EchoMQOptionError(`${at}.children`, `has ${children.length} jobs; one parent takes at most ${MAX_CHILDREN}`);

  const keys = new Keys(tree.queueName, prefix);
  const id = opts.jobId ?? uuid();
  const jobKey = keys.job(id);
  if (seen.has(jobKey)) throw new EchoMQOptionError(`${at}.opts.jobId`, `is ${id}, which another job of this flow in queue ${tree.queueName} has`);
  seen.add(jobKey);
  const { jobId: _id, ...stored } = opts;
  if (traceMetadata) stored.telemetry = withTraceContext(stored.telemetry, traceMetadata);
  const data = tree.data === undefined ? {} : tree.data;
  const node: FlowNode = {
    queueName: tree.queueName,
    prefix,
    keys,
    data,
    opts: stored,
    children: [],
    parent,
    customId: opts.jobId !== undefined,
    record: {
      id,
      name: tree.name,
      data: toJson(data, `${at}.data`, dataLimitOf(opts, maxDataSize)),
      opts: JSON.stringify(stored),
      timestamp: Date.now(),
      delay: opts.delay ?? 0,
      priority: opts.priority ?? 0,
      lifo: opts.lifo === true,
      parentKey: parent ? parent.keys.job(parent.record.id) : '',
      parentJson: parent ? JSON.stringify({ id: parent.record.id, queueKey: parent.keys.queueKey }) : '',
      policy: policies[0]?.[1] ?? '',
      children: [],
    },
  };
  node.children = children.map((child, i) => plan(child, { ...settings, defaultPrefix: prefix }, `${at}.children[${i}]`, node, seen));
  node.record.children = node.children.map((child) => ({ key: child.keys.job(child.record.id), spec: specOf(child) }));
  return node;
}

/** A child's creation spec (FlowSpec): what its parent's intent keeps of it. */
export function specOf(node: FlowNode): FlowSpec {
  return { queueName: node.queueName, prefix: node.prefix, record: node.record };
}

/**
 * A spec read back from a parent's intent (the sweep's roll-forward); null when it is not one (bad
 * JSON, or not the layout specOf writes): the caller lets that child go rather than fail every sweep.
 */
export function parseSpec(spec: string): FlowSpec | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(spec);
  } catch {
    return null;
  }
  const { queueName, prefix, record } = (parsed ?? {}) as Partial<FlowSpec>;
  if (typeof queueName !== 'string' || typeof prefix !== 'string' || typeof record !== 'object' || record === null) return null;
  const { id, name, data, opts, timestamp } = record;
  if (typeof id !== 'string' || typeof name !== 'string' || typeof data !== 'string' || typeof opts !== 'string' || typeof timestamp !== 'number') return null;
  return parsed as FlowSpec;
}

/** The tree's jobs level by level, the root's level first: a level is written once the one above it is. */
export function levelsOf(root: FlowNode): FlowNode[][] {
  const levels: FlowNode[][] = [];
  for (let level = [root]; level.length > 0; level = level.flatMap((node) => node.children)) levels.push(level);
  return levels;
}
