import type { Cluster, Redis } from 'ioredis';
import { STATE_NAMES, type QueueSnapshot, type StateName } from './snapshot.js';

/** The names of the invariants, as docs/reliability.md lists them. */
export const INVARIANTS = [
  'one state: every job id is in exactly one state structure, once',
  'hash agrees: a job in completed or failed has finishedOn, no other has',
  'no job lost: every job hash is in a state structure, every id in one has its hash',
  'locks: a lock exists only for a job in active',
  'active held: every active job has a lock (live workers renew it; a dead one\'s is swept back)',
  'deduplication: every simple-mode deduplication key names a job that exists (or that finished)',
  'schedulers: every scheduler has a job of its own ahead',
  'parents: no parent waits in waiting-children for a child that completed or is gone',
  'obliterate: no key of the queue is left',
] as const;

/** What must hold in every atomic read of a queue, whatever runs meanwhile. */
export function instantViolations(s: QueueSnapshot): string[] {
  const out: string[] = [];
  const where = statesOf(s);
  const q = s.keys.queueName;
  for (const [id, states] of where) {
    if (states.length > 1) out.push(`one state: ${q} job ${id} is in ${states.join(', ')}`);
    if (!s.jobs.has(id)) out.push(`no job lost: ${q} job ${id} is in ${states[0]} without its hash`);
  }
  for (const [id, fields] of s.jobs) {
    const states = where.get(id);
    if (!states) {
      out.push(`no job lost: ${q} job ${id} has a hash in no state`);
      continue;
    }
    const finished = fields.finishedOn !== undefined;
    const inFinished = states[0] === 'completed' || states[0] === 'failed';
    if (finished !== inFinished) out.push(`hash agrees: ${q} job ${id} is in ${states[0]} with finishedOn ${fields.finishedOn ?? 'unset'}`);
  }
  for (const id of s.locks) {
    if (!where.get(id)?.includes('active')) out.push(`locks: ${q} lock of job ${id}, which is in ${where.get(id)?.[0] ?? 'no state'}`);
  }
  return out;
}

/**
 * What must hold once the system had time to settle (live workers on every queue, a notice round
 * and a stalled sweep): checked at settle points, where the run waits for it.
 */
export async function settledViolations(client: Redis | Cluster, snapshots: QueueSnapshot[]): Promise<string[]> {
  const out: string[] = [];
  const byBase = new Map(snapshots.map((s) => [s.keys.base, s]));
  for (const s of snapshots) {
    const q = s.keys.queueName;
    const where = statesOf(s);
    for (const id of s.states.active) if (!s.locks.has(id)) out.push(`active held: ${q} job ${id} is active without a lock`);
    for (const [dedupId, { jobId, throttle }] of s.deduplication) {
      // A throttle key outlives its job by design (its ttl is the window); a simple-mode key is
      // freed when its job goes, by the script that removes it, or after a finish by the worker
      // (moveToFinished-14 is fixed): a worker given up just then may leave it, naming a finished job.
      if (!throttle && !s.jobs.has(jobId) && !s.finishedEver.has(jobId)) {
        out.push(`deduplication: ${q} id ${dedupId} names job ${jobId}, which does not exist`);
      }
    }
    for (const [schedulerId] of s.schedulers) {
      const own = [...s.jobs.keys()].filter((id) => id.startsWith(`repeat:${schedulerId}:`) && !isFinished(where.get(id)));
      if (own.length === 0) out.push(`schedulers: ${q} scheduler ${schedulerId} has no job ahead`);
    }
    for (const parentId of s.states['waiting-children']) {
      const dependencies = await client.smembers(`${s.keys.job(parentId)}:dependencies`);
      for (const childKey of dependencies) {
        const child = childOf(childKey, byBase);
        if (!child) continue; // a queue this run does not watch
        const states = statesOf(child.snapshot).get(child.id);
        if (!child.snapshot.jobs.has(child.id)) out.push(`parents: ${q} parent ${parentId} waits for ${childKey}, which is gone`);
        else if (states?.[0] === 'completed') out.push(`parents: ${q} parent ${parentId} waits for ${childKey}, which completed`);
      }
    }
  }
  return out;
}

function statesOf(s: QueueSnapshot): Map<string, StateName[]> {
  const where = new Map<string, StateName[]>();
  for (const state of STATE_NAMES) {
    for (const id of s.states[state]) {
      const states = where.get(id);
      if (states) states.push(state);
      else where.set(id, [state]);
    }
  }
  return where;
}

function isFinished(states: StateName[] | undefined): boolean {
  return states?.[0] === 'completed' || states?.[0] === 'failed';
}

function childOf(childKey: string, byBase: Map<string, QueueSnapshot>): { snapshot: QueueSnapshot; id: string } | undefined {
  const at = childKey.indexOf('}:');
  const snapshot = at < 0 ? undefined : byBase.get(childKey.slice(0, at + 2));
  return snapshot && { snapshot, id: childKey.slice(at + 2) };
}
