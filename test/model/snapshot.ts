import type { Cluster, Redis } from 'ioredis';
import type { Keys } from '../../lib/index.js';

/** One queue's state as one atomic read saw it (a script: nothing moves between its reads). */
export interface QueueSnapshot {
  keys: Keys;
  /** State structure -> the ids it holds, in its order (lists may hold an id twice: a finding). */
  states: Record<StateName, string[]>;
  stalled: Set<string>;
  /** Every job hash of the queue (a hash with data, opts and timestamp), by id. */
  jobs: Map<string, JobFields>;
  /** Ids whose `<job>:lock` key exists. */
  locks: Set<string>;
  /** Deduplication id -> the job id its key names, and whether the key has a TTL (throttle mode). */
  deduplication: Map<string, { jobId: string; throttle: boolean }>;
  /** Ids the events stream says completed or failed (a finish that removed its job, too). */
  finishedEver: Set<string>;
  /** Scheduler ids (P:{Q}:repeat), with their hash's fields. */
  schedulers: Map<string, Record<string, string>>;
  /** Every key of the queue (for the check after obliterate). */
  allKeys: string[];
}

export const STATE_NAMES = ['wait', 'paused', 'active', 'prioritized', 'delayed', 'completed', 'failed', 'waiting-children'] as const;
export type StateName = (typeof STATE_NAMES)[number];
const LISTS = new Set<StateName>(['wait', 'paused', 'active']);

export interface JobFields {
  finishedOn?: string;
  failedReason?: string;
  parentKey?: string;
  pfp?: string;
  deid?: string;
  opts?: string;
}

const FIELDS = ['finishedOn', 'failedReason', 'parentKey', 'pfp', 'deid', 'opts'] as const;

/**
 * A read-only script for tests: KEYS over the queue's prefix is fine on a test Redis of its own,
 * never on a production one. Every key of one queue is in its hash slot, so on a Cluster the
 * script runs on the node that holds them all.
 */
const SNAPSHOT_LUA = `
local base = ARGV[1]
local out = {}
local lists = { wait = true, paused = true, active = true }
for i = 2, #ARGV do
  local name = ARGV[i]
  if lists[name] then out[#out + 1] = redis.call('LRANGE', base .. name, 0, -1)
  else out[#out + 1] = redis.call('ZRANGE', base .. name, 0, -1) end
end
out[#out + 1] = redis.call('SMEMBERS', base .. 'stalled')
local all = redis.call('KEYS', base .. '*')
out[#out + 1] = all
local details = {}
for _, key in ipairs(all) do
  local kind = redis.call('TYPE', key).ok
  if kind == 'hash' then
    local f = redis.call('HMGET', key, 'data', 'timestamp', '${FIELDS.join("', '")}')
    if f[1] and f[2] then
      details[#details + 1] = { 'job', key, f[3] or false, f[4] or false, f[5] or false, f[6] or false, f[7] or false, f[8] or false }
    elseif redis.call('HEXISTS', key, 'repeat') == 1 then
      details[#details + 1] = { 'scheduler', key, redis.call('HGETALL', key) }
    end
  elseif kind == 'string' then
    if string.sub(key, -5) == ':lock' then details[#details + 1] = { 'lock', key }
    elseif string.sub(key, #base + 1, #base + 3) == 'de:' then details[#details + 1] = { 'dedup', key, redis.call('GET', key), redis.call('PTTL', key) } end
  end
end
out[#out + 1] = details
local finished = {}
for _, entry in ipairs(redis.call('XRANGE', base .. 'events', '-', '+')) do
  local f = entry[2]
  if f[2] == 'completed' or f[2] == 'failed' then finished[#finished + 1] = f[4] end
end
out[#out + 1] = finished
return out
`;

export async function snapshotQueue(client: Redis | Cluster, keys: Keys): Promise<QueueSnapshot> {
  const reply = (await client.eval(SNAPSHOT_LUA, 1, keys.meta, keys.base, ...STATE_NAMES)) as unknown[];
  const states = {} as Record<StateName, string[]>;
  STATE_NAMES.forEach((name, i) => (states[name] = reply[i] as string[]));
  const stalled = new Set(reply[STATE_NAMES.length] as string[]);
  const allKeys = reply[STATE_NAMES.length + 1] as string[];
  const details = reply[STATE_NAMES.length + 2] as unknown[][];
  const jobs = new Map<string, JobFields>();
  const locks = new Set<string>();
  const deduplication = new Map<string, { jobId: string; throttle: boolean }>();
  const schedulers = new Map<string, Record<string, string>>();
  const idOf = (key: string) => key.slice(keys.base.length);
  for (const entry of details) {
    const [kind, key] = entry as [string, string];
    if (kind === 'job') {
      const fields: JobFields = {};
      FIELDS.forEach((field, i) => {
        const value = entry[2 + i];
        if (typeof value === 'string') fields[field] = value;
      });
      jobs.set(idOf(key), fields);
    } else if (kind === 'lock') {
      locks.add(idOf(key).slice(0, -':lock'.length));
    } else if (kind === 'dedup') {
      deduplication.set(idOf(key).slice('de:'.length), { jobId: String(entry[2]), throttle: Number(entry[3]) >= 0 });
    } else if (kind === 'scheduler') {
      const flat = entry[2] as string[];
      const record: Record<string, string> = {};
      for (let i = 0; i < flat.length; i += 2) record[flat[i]] = flat[i + 1];
      schedulers.set(idOf(key).slice('repeat:'.length), record);
    }
  }
  const finishedEver = new Set(reply[STATE_NAMES.length + 3] as string[]);
  return { keys, states, stalled, jobs, locks, deduplication, finishedEver, schedulers, allKeys };
}

export function isList(state: StateName): boolean {
  return LISTS.has(state);
}
