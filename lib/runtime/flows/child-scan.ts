import type { ChainableCommander } from 'ioredis';
import type { Keys } from '../../protocol/keys.js';
import type { RedisClient } from '../../protocol/script.js';
import { canNameJob } from '../job/job.js';
import { withinMs } from '../core/within-ms.js';
import { redisAtLeast } from '../core/redis-health.js';
import { parseJobKey } from './parent-notices.js';

/**
 * A parent's children as getFlow lists them (BullMQ's order): completed (`:processed`), not
 * finished (`:dependencies`, less the failed ones, which a child that failed with no policy is
 * in too), failed (`:unsuccessful`), ignored (`:ignored`), each child once, at most `max`.
 *
 * Read with HSCAN and SSCAN in bounded steps, never HKEYS or SMEMBERS: a parent's processed
 * children have no bound (a step job adds children round after round), and one reply of 100,000
 * keys would stall Redis and the client for the few that are shown. A small key (stored compact,
 * or a table no bigger than a step) comes whole in its first step, so a usual parent costs only
 * the first steps, which go in the caller's pipeline.
 *
 * An HSCAN step answers each field with its value, and `:processed` holds every completed child's
 * returnvalue, of any size, that a listing throws away. On Redis 7.4 and later the hashes are
 * scanned with NOVALUES (fields only); before, a hash step asks for no more than are listed
 * (`maxChildren`, not the set's step of at least 100), so listing 20 children reads about 20
 * values, not 100.
 */

type Kind = 'processed' | 'dependencies' | 'unsuccessful' | 'ignored';
const KINDS: readonly Kind[] = ['processed', 'dependencies', 'unsuccessful', 'ignored'];

/** One step of a scan: the cursor to go on from ('0': the key was read to its end) and the children met. */
interface Page {
  cursor: string;
  members: string[];
}

/** The first step of each of a parent's four child keys, in KINDS order. */
export type FirstPages = Page[];

/** Entries a step asks for (a hint: Redis may answer a few more, or none from a sparse table). */
export function scanStep(max: number): number {
  return Math.min(Math.max(max, 100), 1000);
}

/** How a listing scans: the COUNT of a set step and of a hash step, and whether HSCAN leaves the values out. */
export interface ScanPlan {
  setStep: number;
  hashStep: number;
  noValues: boolean;
}

/** The plan for listing at most `max` children; `noValues`: the server takes HSCAN NOVALUES (hscanNoValues). */
export function scanPlan(max: number, noValues: boolean): ScanPlan {
  const step = scanStep(max);
  // With values, every entry a step answers costs its value (a returnvalue of any size): ask for no more than are listed.
  return { setStep: step, hashStep: noValues ? step : Math.min(max, step), noValues };
}

/** Redis 7.4 is the first to take HSCAN ... NOVALUES. */
const NOVALUES_SINCE = [7, 4] as const;
const noValuesByClient = new WeakMap<RedisClient, Promise<boolean>>();

/**
 * Whether every server of this connection takes HSCAN NOVALUES: read once per connection (INFO on
 * every master), as the workers' version checks do; false when a server is older or does not say.
 */
export function hscanNoValues(client: RedisClient): Promise<boolean> {
  let known = noValuesByClient.get(client);
  if (!known) {
    // Bounded: INFO goes to every master, and one frozen (stopped, cut off, in a long script) must not
    // hold getFlow, which needs none of them but its own queues'. An answer that did not come is not
    // kept: the next listing asks again.
    known = withinMs(redisAtLeast(client, NOVALUES_SINCE), VERSION_CHECK_MS).then((answer) => {
      if (answer === undefined) noValuesByClient.delete(client);
      return answer ?? false;
    });
    noValuesByClient.set(client, known);
  }
  return known;
}

/** How long the NOVALUES version check waits for every master's INFO. */
const VERSION_CHECK_MS = 2000;

/** Drops what hscanNoValues read of this connection: a server refused NOVALUES, so the next listing asks again. */
export function forgetHscanNoValues(client: RedisClient): void {
  noValuesByClient.delete(client);
}

/** Queues the first step of each child key of a job on a pipeline: four replies, read by `firstPages`. */
export function queueFirstPages(pipeline: ChainableCommander, keys: Keys, id: string, plan: ScanPlan): void {
  for (const kind of KINDS) {
    const key = keys.flow(id, kind);
    if (kind === 'dependencies') pipeline.sscan(key, '0', 'COUNT', plan.setStep);
    else if (plan.noValues) pipeline.hscan(key, '0', 'COUNT', plan.hashStep, 'NOVALUES');
    else pipeline.hscan(key, '0', 'COUNT', plan.hashStep);
  }
}

/** The four replies `queueFirstPages` queued (with `plan`), as pages. */
export function firstPages(replies: unknown[], plan: ScanPlan): FirstPages {
  return KINDS.map((kind, i) => toPage(kind, replies[i] as [string, string[]], plan.noValues));
}

/**
 * The children to list, at most `max`, going on from the first pages where they did not hold
 * enough (a big parent): further steps of one key at a time, stopping as soon as `max` are
 * known. Not-finished children are sorted within what was read (all of them when the set came
 * whole), so a tree read twice lists them alike. A member that names no job (not `P:{Q}:<id>`, or
 * an id no job can have: written by hand or another runtime) is skipped here, so it takes no
 * place of the `max`.
 */
export async function listChildren(client: RedisClient, keys: Keys, id: string, pages: FirstPages, max: number, plan: ScanPlan): Promise<string[]> {
  const listed = new Set<string>();
  // The failed children, when :unsuccessful came whole; otherwise asked per page of :dependencies.
  const failed = pages[2].cursor === '0' ? new Set(pages[2].members) : undefined;
  for (let k = 0; k < KINDS.length && listed.size < max; k++) {
    const kind = KINDS[k];
    const found = new Set<string>();
    for (let page = pages[k]; ;) {
      const members = kind === 'dependencies' ? await notFailed(client, keys, id, page.members, failed) : page.members;
      for (const member of members) if (!listed.has(member) && namesJob(member)) found.add(member);
      if (page.cursor === '0' || listed.size + found.size >= max) break;
      page = await nextPage(client, keys.flow(id, kind), kind, page.cursor, plan);
    }
    const inOrder = kind === 'dependencies' ? [...found].sort() : [...found];
    for (const member of inOrder) {
      if (listed.size >= max) break;
      listed.add(member);
    }
  }
  return [...listed];
}

function namesJob(key: string): boolean {
  const job = parseJobKey(key);
  return job !== undefined && canNameJob(job.id);
}

/** The dependencies that are not failed children (those come with :unsuccessful, later in the list). */
async function notFailed(client: RedisClient, keys: Keys, id: string, members: string[], failed: Set<string> | undefined): Promise<string[]> {
  if (members.length === 0) return members;
  if (failed) return members.filter((member) => !failed.has(member));
  const reasons = await client.hmget(keys.flow(id, 'unsuccessful'), ...members);
  return members.filter((_, i) => reasons[i] === null);
}

async function nextPage(client: RedisClient, key: string, kind: Kind, cursor: string, plan: ScanPlan): Promise<Page> {
  const reply = kind === 'dependencies' ? await client.sscan(key, cursor, 'COUNT', plan.setStep)
    : plan.noValues ? await client.hscan(key, cursor, 'COUNT', plan.hashStep, 'NOVALUES')
      : await client.hscan(key, cursor, 'COUNT', plan.hashStep);
  return toPage(kind, reply, plan.noValues);
}

/** A scan's reply as a page: an SSCAN's members, an HSCAN NOVALUES's fields, or the fields of an HSCAN's field-value pairs. */
function toPage(kind: Kind, [cursor, entries]: [string, string[]], noValues: boolean): Page {
  return { cursor, members: kind === 'dependencies' || noValues ? entries : entries.filter((_, i) => i % 2 === 0) };
}
