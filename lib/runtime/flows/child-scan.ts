import type { ChainableCommander } from 'ioredis';
import type { Keys } from '../../protocol/keys.js';
import type { RedisClient } from '../../protocol/script.js';

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

/** Queues the first step of each child key of a job on a pipeline: four replies, read by `firstPages`. */
export function queueFirstPages(pipeline: ChainableCommander, keys: Keys, id: string, step: number): void {
  for (const kind of KINDS) {
    if (kind === 'dependencies') pipeline.sscan(keys.flow(id, kind), '0', 'COUNT', step);
    else pipeline.hscan(keys.flow(id, kind), '0', 'COUNT', step);
  }
}

/** The four replies `queueFirstPages` queued, as pages. */
export function firstPages(replies: unknown[]): FirstPages {
  return KINDS.map((kind, i) => toPage(kind, replies[i] as [string, string[]]));
}

/**
 * The children to list, at most `max`, going on from the first pages where they did not hold
 * enough (a big parent): further steps of one key at a time, stopping as soon as `max` are
 * known. Not-finished children are sorted within what was read (all of them when the set came
 * whole), so a tree read twice lists them alike.
 */
export async function listChildren(client: RedisClient, keys: Keys, id: string, pages: FirstPages, max: number, step: number): Promise<string[]> {
  const listed = new Set<string>();
  // The failed children, when :unsuccessful came whole; otherwise asked per page of :dependencies.
  const failed = pages[2].cursor === '0' ? new Set(pages[2].members) : undefined;
  for (let k = 0; k < KINDS.length && listed.size < max; k++) {
    const kind = KINDS[k];
    const found = new Set<string>();
    for (let page = pages[k]; ;) {
      const members = kind === 'dependencies' ? await notFailed(client, keys, id, page.members, failed) : page.members;
      for (const member of members) if (!listed.has(member)) found.add(member);
      if (page.cursor === '0' || listed.size + found.size >= max) break;
      page = await nextPage(client, keys.flow(id, kind), kind, page.cursor, step);
    }
    const inOrder = kind === 'dependencies' ? [...found].sort() : [...found];
    for (const member of inOrder) {
      if (listed.size >= max) break;
      listed.add(member);
    }
  }
  return [...listed];
}

/** The dependencies that are not failed children (those come with :unsuccessful, later in the list). */
async function notFailed(client: RedisClient, keys: Keys, id: string, members: string[], failed: Set<string> | undefined): Promise<string[]> {
  if (members.length === 0) return members;
  if (failed) return members.filter((member) => !failed.has(member));
  const reasons = await client.hmget(keys.flow(id, 'unsuccessful'), ...members);
  return members.filter((_, i) => reasons[i] === null);
}

async function nextPage(client: RedisClient, key: string, kind: Kind, cursor: string, step: number): Promise<Page> {
  const reply = kind === 'dependencies' ? await client.sscan(key, cursor, 'COUNT', step) : await client.hscan(key, cursor, 'COUNT', step);
  return toPage(kind, reply);
}

/** A scan's reply as a page: an SSCAN's members, or the fields of an HSCAN's field-value pairs. */
function toPage(kind: Kind, [cursor, entries]: [string, string[]]): Page {
  return { cursor, members: kind === 'dependencies' ? entries : entries.filter((_, i) => i % 2 === 0) };
}
