import { afterAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { SCRIPTS } from '../lib/internal.js';
import { findLuaDir } from '../lib/protocol/lua-source.js';
import { luaGlobals, undefinedInRedis } from './support/lua-globals.js';
import { newClient, uniqueQueueName } from './support/redis.js';

// lua/ is what every runtime loads: generated from lua-src/, and each file runnable as is.
const client = newClient();
afterAll(() => client.quit());

const luaDir = findLuaDir();
const root = dirname(luaDir);
const luaFiles = readdirSync(luaDir).filter((f) => f.endsWith('.lua')).sort();

const NOW = '1700000100000';
/**
 * ARGV that make each script do a call's work on an empty queue (add a job, pause, drain, ...) or
 * answer its "no such job" code; the five fixed scripts run every path in conformance/.
 */
const SMOKE_ARGV: Record<string, (prefix: string) => string[]> = {
  'addJob-9.lua': (p) => [p, '', 'smoke', '{}', '{}', NOW, '0', '0', '0', '100', '', 'once', '1000', '1', '1'],
  'addJobs-9.lua': (p) => [p, '100', '', 'smoke', '{}', '{}', NOW, '0', '0', '0', 'custom', 'smoke', '{}', '{}', NOW, '5000', '0', '0'],
  'addJobsDedup-9.lua': (p) => [p, '100', '', '', 'smoke', '{}', '{}', NOW, '0', '0', '0', 'once', '0', '0', '0',
    '', 'smoke', '{}', '{}', NOW, '5000', '0', '0', 'once', '0', '0', '0'],
  'addLog-2.lua': () => ['a line', '0'],
  'cleanJobsInSet-2.lua': (p) => [p, NOW, '0', '100', '0'],
  'drain-5.lua': (p) => [p, '1', '100'],
  'extendLock-2.lua': () => ['token', '30000', '1'],
  'extendLocks-1.lua': (p) => [p, '30000', '1', 'token'],
  'freeDeduplication-1.lua': () => ['1'],
  'finishJobs-13.lua': (p) => [p, NOW, '100', '30000', '0', '0', '1', 'token', 'completed', '"ok"', '', '-1', '0', 'next-token', NOW],
  'finishJobsBounded-13.lua': (p) => [p, NOW, '100', '30000', '0', '0', '3', '1', 'token', 'completed', '"ok"', '', '-1', '0', 'next-token', NOW],
  'moveJobFromActiveToWait-11.lua': () => ['1', 'token', '100'],
  'getDeduplicationJobId-1.lua': (p) => [p, 'once'],
  'moveStalledJobsToWait-8.lua': (p) => ['1', p, NOW, '30000'],
  'moveToActive-11.lua': (p) => [p, 'token', '30000', NOW, '100', '0', '0'],
  'moveToActiveBounded-11.lua': (p) => [p, 'token', '30000', NOW, '100', '0', '0', '1'],
  'moveToFinished-14.lua': (p) => ['1', 'token', NOW, 'completed', '"ok"', '', '-1', '0', '1', p, 'next-token', '30000', '100', '0', '0'],
  'obliterate-2.lua': (p) => [p, '1'],
  'pause-6.lua': () => ['pause', '100'],
  'removeJob-14.lua': () => ['1', '100', '1', '1', NOW],
  'reprocessJob-9.lua': () => ['1', '100'],
  'retryJob-12.lua': () => ['1', 'token', NOW, '0', 'reason', '[]', '100'],
  'trimFinished-1.lua': (p) => [p, '10', '0', NOW],
  'removeOrphanedJobs-8.lua': (p) => [p, '1', '2'],
  'updateProgress-2.lua': () => ['1', '5', '100'],
  'upsertJobScheduler-10.lua': (p) => [p, 'nightly', '{"every":1000}', 'smoke', '{}', '{}', '0', '0', '0', NOW, String(Number(NOW) + 1000), NOW, '100'],
  'startSchedulerJob-14.lua': (p) => [p, 'nightly', NOW, 'token', String(Number(NOW) + 1000), '', NOW, '100'],
  'repairJobScheduler-12.lua': (p) => [p, 'nightly', '1', String(Number(NOW) + 1000), '', NOW, '100'],
  'removeJobScheduler-7.lua': (p) => [p, 'nightly', '100'],
  'updateData-1.lua': () => ['{"v":1}'],
  'recordMetrics-2.lua': () => ['3', '1700000040000', '60'],
  'changeDelay-4.lua': () => ['1', NOW, '1000', '100'],
  'changePriority-8.lua': () => ['1', '2', '0'],
  'promote-9.lua': () => ['1', '100'],
  'moveToDelayed-7.lua': () => ['1', 'token', NOW, String(Number(NOW) + 1000), '100'],
  'retryJobs-8.lua': (p) => [p, '1000', NOW, '100'],
  'promoteJobs-8.lua': (p) => [p, '1000', '100'],
  'cancelJob-12.lua': (p) => ['1', 'a reason', NOW, '-1', '0', '100', p],
  'addFlowJobs-15.lua': (p) => [p, '100', NOW, 'parent', 'smoke', '{}', '{}', NOW, '0', '0', '0', '', '', '', '1', `${p}child`, '{}',
    'child', 'smoke', '{}', '{}', NOW, '0', '0', '0', `${p}parent`, '{"id":"parent"}', 'fail', '0'],
  'ackFlowPending-2.lua': (p) => ['parent', `${p}child`],
  'ackNotices-2.lua': () => ['child', 'emq:{other}:parent', 'completed', '1', ''],
  'finishFlowJob-8.lua': (p) => ['1', 'token', NOW, 'completed', '"ok"', '', '-1', '0', p, '100'],
  'finishFlowJobs-15.lua': (p) => [p, NOW, '100', '30000', '0', '0', '', '1', 'token', 'completed', '"ok"', '', '-1', '0', 'next-token', NOW],
  'settleChildren-12.lua': (p) => [p, NOW, '100', 'parent', 'emq:{other}:child', 'completed', '"ok"', ''],
  'addDependency-4.lua': (p) => ['parent', `${p}child`, '{}', NOW, '10000'],
  'moveToWaitingChildren-7.lua': () => ['1', 'token', NOW, '100', ''],
  'cancelledAmong-1.lua': (p) => [p, '1', '2'],
};

describe('lua/', () => {
  it('is what npm run build:lua writes from lua-src/ (run it after editing lua-src/)', () => {
    let output: string;
    try {
      output = execFileSync(process.execPath, [join(root, 'scripts', 'build-lua.mjs'), '--check'], { encoding: 'utf8', stdio: 'pipe' });
    } catch (error) {
      const { stderr } = error as { stderr: string };
      throw new Error(stderr.trim());
    }
    expect(output).toContain(`up to date (${luaFiles.length} scripts)`);
  });

  it('holds no include line: every file is one self-contained script', () => {
    for (const file of luaFiles) {
      expect({ file, includeLines: readFileSync(join(luaDir, file), 'utf8').match(/^-- @include .*$/gm) }).toEqual({ file, includeLines: null });
    }
  });

  it('reads no global that Redis does not define and writes none, on any path (compiled by Redis, not run)', async () => {
    const found: Record<string, { undefinedGlobals: string[]; writes: string[] }> = {};
    for (const file of luaFiles) {
      const { reads, writes } = await luaGlobals(client, readFileSync(join(luaDir, file), 'utf8'));
      expect(reads).toContain('redis'); // the reader sees the globals a script does use
      found[file] = { undefinedGlobals: await undefinedInRedis(client, reads), writes };
    }
    expect(found).toEqual(Object.fromEntries(luaFiles.map((f) => [f, { undefinedGlobals: [], writes: [] }])));
  });

  it('is byte for byte what the Node runtime sends: SCRIPT LOAD of each file gives the SHA1 it calls', async () => {
    expect(Object.values(SCRIPTS).map((s) => s.fileName).sort()).toEqual(luaFiles);
    for (const script of Object.values(SCRIPTS)) {
      const text = readFileSync(join(luaDir, script.fileName), 'utf8');
      expect(script.lua).toBe(text);
      expect(await client.script('LOAD', text)).toBe(createHash('sha1').update(text).digest('hex'));
      expect(script.sha).toBe(createHash('sha1').update(text).digest('hex'));
    }
  });

  it('runs as is: EVAL of each file, unchanged, on an empty queue', async () => {
    expect(Object.keys(SMOKE_ARGV).sort()).toEqual(luaFiles);
    for (const file of luaFiles) {
      const prefix = `emq:{${uniqueQueueName('as-is')}}:`;
      const numberOfKeys = Number(/-(\d+)\.lua$/.exec(file)![1]);
      const keys = Array.from({ length: numberOfKeys }, (_, i) => `${prefix}key${i + 1}`);
      const outcome = await client.eval(readFileSync(join(luaDir, file), 'utf8'), numberOfKeys, ...keys, ...SMOKE_ARGV[file](prefix))
        .then(() => 'ran', (error: Error) => error.message);
      expect({ file, outcome }).toEqual({ file, outcome: 'ran' });
    }
  });
});
