import { afterAll, describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { findLuaDir } from '../lib/protocol/lua-source.js';
import { bindQueue, matchReply, QUEUE_PLACEHOLDER, readState, writeState, type VectorFile } from './support/conformance.js';
import { newClient, uniqueQueueName } from './support/redis.js';

// Replays conformance/*.json (docs/conformance.md) against the test Redis: each case's before is
// written, the file of lua/ is sent as is with EVAL, and the reply and every key of the queue
// after are compared. Another runtime replays the same files the same way.
const client = newClient();
afterAll(() => client.quit());

const luaDir = findLuaDir();
const vectorDir = join(dirname(luaDir), 'conformance');
const vectors = readdirSync(vectorDir).filter((f) => f.endsWith('.json')).sort()
  .map((file) => ({ file, ...(JSON.parse(readFileSync(join(vectorDir, file), 'utf8')) as VectorFile) }));

/**
 * The scripts that must have vectors, and the codes each must show in them: the five PROTOCOL.md
 * fixes, the job scheduler scripts (docs/protocol.md, "Job schedulers"), the deduplication
 * scripts (docs/deduplication.md), the cancel scripts (docs/protocol.md, "Cancelling jobs"), the
 * job control and queue-wide limit scripts (docs/protocol.md, "Job control", "Queue-wide limits"),
 * metrics, and the flow scripts (docs/protocol.md, "Flows"), whose decisions the other runtimes
 * replay too. A code counts when it is a case's reply, or a negative number anywhere in an array
 * reply (a batch's per-job codes, removeJob-14's `{-1}`).
 */
const COVERED: Record<string, unknown[]> = {
  'extendLock-2.lua': [0, 1],
  'extendLocks-1.lua': [-2, -6],
  'moveToActive-11.lua': [],
  'moveToFinished-14.lua': [-1, -2, -3, -6],
  'moveStalledJobsToWait-8.lua': [],
  'upsertJobScheduler-10.lua': [],
  'startSchedulerJob-14.lua': [-1, -2, -6, 0, 1],
  'repairJobScheduler-12.lua': [0, 1],
  'removeJobScheduler-7.lua': [0, 1],
  'addJob-9.lua': [],
  'addJobsDedup-9.lua': [],
  'getDeduplicationJobId-1.lua': [],
  'freeDeduplication-1.lua': [],
  'cancelJob-12.lua': [-1, -3, 0, 1, 2, 3],
  'cancelledAmong-1.lua': [],
  'trimFinished-1.lua': [],
  'removeOrphanedJobs-8.lua': [],
  'finishFlowJob-8.lua': [-1, -2, -3, -6],
  'settleChildren-12.lua': [],
  'updateData-1.lua': [-1, 1],
  'changeDelay-4.lua': [-1, -3, 1],
  'changePriority-8.lua': [-1, 1],
  'promote-9.lua': [-1, -3, 1],
  'promoteJobs-8.lua': [0],
  'retryJobs-8.lua': [0],
  'moveToDelayed-7.lua': [-1, -2, -3, -6, 1],
  'moveJobFromActiveToWait-11.lua': [-1, -2, -3, -6, 1],
  'finishJobsBounded-13.lua': [-1, -2, -3, -6],
  'recordMetrics-2.lua': [],
  'removeJob-14.lua': [-1],
  'ackNotices-2.lua': [0, 1],
  'ackFlowPending-2.lua': [0],
  'addDependency-4.lua': [-1, 0, 1],
  'moveToWaitingChildren-7.lua': [-1, -2, -3, -6, 0, 1],
  'addFlowJobs-15.lua': [],
  'finishFlowJobs-15.lua': [-1, -2, -3, -6],
};

/** Every negative number of a reply, at any depth. */
function negativeNumbers(reply: unknown[]): number[] {
  return reply.flatMap((r) => (Array.isArray(r) ? negativeNumbers(r) : typeof r === 'number' && r < 0 ? [r] : []));
}

describe('the conformance vectors', () => {
  it('cover the scripts of COVERED with every return code named there, and name only scripts of lua/', () => {
    expect(vectors.map((v) => v.script).sort()).toEqual(expect.arrayContaining(Object.keys(COVERED)));
    for (const { file, script, cases } of vectors) {
      expect({ file, script: readdirSync(luaDir).includes(script) }).toEqual({ file, script: true });
      expect(file).toBe(script.replace(/\.lua$/, '.json'));
      const numberOfKeys = Number(/-(\d+)\.lua$/.exec(script)![1]);
      for (const c of cases) {
        expect({ name: c.name, keys: c.keys.length }).toEqual({ name: c.name, keys: numberOfKeys });
        // Every key a case names is the queue's, so a replay touches nothing else.
        const named = [...c.keys, ...Object.keys(c.before), ...Object.keys(c.after)];
        expect(named.filter((key) => !key.includes(QUEUE_PLACEHOLDER))).toEqual([]);
      }
      const codes = new Set(cases.flatMap((c) => (typeof c.reply === 'number' ? [c.reply] : Array.isArray(c.reply) ? negativeNumbers(c.reply) : [])));
      for (const code of COVERED[script] ?? []) expect({ script, code, covered: codes.has(code as number) }).toEqual({ script, code, covered: true });
    }
  });
});

for (const { script, cases } of vectors) {
  describe(script, () => {
    const source = readFileSync(join(luaDir, script), 'utf8');
    for (const vector of cases) {
      it(vector.name, async () => {
        const queue = uniqueQueueName('conformance');
        const c = bindQueue(vector, queue);
        await writeState(client, c.before);
        expect(await readState(client, queue, c.before)).toEqual(c.before);
        const reply = await client.eval(source, c.keys.length, ...c.keys, ...c.argv);
        expect(matchReply(reply, c.reply)).toEqual(c.reply);
        expect(await readState(client, queue, c.after)).toEqual(c.after);
      });
    }
  });
}
