import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { Queue } from '../lib/index.js';
import { singleNodeDescribe, eventually, newClient, redisUrl, sleep, uniqueQueueName } from './support/redis.js';

/**
 * The queue-wide limits held by workers in separate processes (docs/limits.md): each process runs
 * the BUILT library (compiled once into a private folder, as test/chaos.test.ts does, so the run
 * never races others' dist/) through test/support/limits-worker-process.mjs. The test process adds
 * the jobs, sets the limits and watches Redis.
 */
// Single-node: the worker processes are given the test Redis's URL.
singleNodeDescribe('queue-wide limits across worker processes', () => {
  const lib = resolve('node_modules/.cache/echomq-limits-test');
  const script = resolve('test/support/limits-worker-process.mjs');
  const client = newClient();
  const children: ChildProcess[] = [];
  const queues: Queue[] = [];

  beforeAll(() => {
    execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json', '--outDir', lib], { stdio: 'inherit' });
  }, 180_000);
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const queue of queues.splice(0)) await queue.close();
  });
  afterAll(() => client.quit());

  function newQueue(): Queue {
    const queue = new Queue(uniqueQueueName('procs'), { connection: redisUrl() });
    queues.push(queue);
    return queue;
  }

  /** Starts a worker process on `queue`; resolves with it and its worker's id once the worker runs. */
  async function startWorker(queue: Queue, options: Record<string, unknown>): Promise<{ child: ChildProcess; id: string; output: string[] }> {
    const child = spawn(process.execPath, [script, `${lib}/lib/index.js`, redisUrl(), queue.name, JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    const output: string[] = [];
    const id = await new Promise<string>((resolveId, reject) => {
      let buffered = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop()!;
        for (const line of lines) {
          output.push(line);
          if (line.startsWith('ready ')) resolveId(line.slice(6));
        }
      });
      child.once('exit', (code) => reject(new Error(`worker process exited (${code}) before it was ready: ${output.join(' | ')}`)));
    });
    return { child, id, output };
  }

  async function completedCount(queue: Queue): Promise<number> {
    return (await queue.getJobCounts('completed')).completed ?? 0;
  }

  it('global concurrency 3, four processes at concurrency 10: never more than 3 active, every job done', async () => {
    const queue = newQueue();
    await queue.setGlobalConcurrency(3);
    const jobs = 300;
    await queue.addBulk(Array.from({ length: jobs }, (_, i) => ({ name: 'n', data: { i } })));
    const samples: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        samples.push(await client.llen(queue.keys.active));
        await sleep(1);
      }
    })();
    const workers = await Promise.all([0, 1, 2, 3].map(() => startWorker(queue, { concurrency: 10, workMs: 15 })));
    await eventually(async () => (await completedCount(queue)) === jobs, 60_000, `all ${jobs} completed`);
    sampling = false;
    await sampler;
    expect(samples.length).toBeGreaterThan(100);
    expect(Math.max(...samples)).toBe(3); // reached, never passed
    expect((await queue.getJobCounts('wait', 'active', 'failed'))).toEqual({ wait: 0, active: 0, failed: 0 });
    for (const { output } of workers) expect(output.filter((line) => line.startsWith('error'))).toEqual([]);
  }, 120_000);

  it('global rate limit 100 per second, two processes: no limiter window takes more than 100, every job done', async () => {
    const queue = newQueue();
    await queue.setGlobalRateLimit(100, 1000);
    const jobs = 300;
    await queue.addBulk(Array.from({ length: jobs }, (_, i) => ({ name: 'n', data: { i } })));
    const workers = await Promise.all([0, 1].map(() => startWorker(queue, { concurrency: 10, workMs: 2 })));
    await eventually(async () => (await completedCount(queue)) === jobs, 60_000, `all ${jobs} completed`);
    // Each pickup writes an `active` event; its stream id is Redis's clock when the pickup ran.
    const entries = (await client.xrange(queue.keys.events, '-', '+')) as Array<[string, string[]]>;
    const pickups = entries.filter(([, fields]) => fields[1] === 'active').map(([id]) => Number(id.split('-')[0])).sort((a, b) => a - b);
    expect(pickups).toHaveLength(jobs);
    // The limiter's windows, as its pickups show them: a window opens at the first pickup after the
    // last one closed and lasts 1000 ms. The 50 ms taken off allow for a pickup's stream id being
    // written a little after its script began (the time the window is counted from).
    const windows: number[] = [];
    for (let i = 0; i < pickups.length;) {
      const end = pickups[i] + 1000 - 50;
      let count = 0;
      while (i < pickups.length && pickups[i] < end) {
        count++;
        i++;
      }
      windows.push(count);
    }
    expect(Math.max(...windows)).toBe(100); // reached, never passed
    expect(windows.length).toBeGreaterThanOrEqual(3);
    for (const { output } of workers) expect(output.filter((line) => line.startsWith('error'))).toEqual([]);
  }, 120_000);

  it('getWorkers lists the workers of every process; a closed one goes at once, a killed one when its entry expires', async () => {
    const queue = newQueue();
    const options = { concurrency: 2, lockDuration: 600 };
    const [a, b] = await Promise.all([startWorker(queue, { ...options, name: 'first' }), startWorker(queue, options)]);
    // 'ready' says the connections answer; the registry entry is written by the worker's first
    // step after it, before its first pickup, so it may land a moment after 'ready'.
    await eventually(async () => (await queue.getWorkers()).length === 2, 5000, 'both workers to be listed');
    const listed = await queue.getWorkers();
    expect(listed.map((w) => w.id).sort()).toEqual([a.id, b.id].sort());
    expect(listed.find((w) => w.id === a.id)).toMatchObject({ name: 'first', pid: a.child.pid, concurrency: 2, running: 0 });
    expect(listed.find((w) => w.id === b.id)).toMatchObject({ pid: b.child.pid });

    a.child.kill('SIGTERM');
    await new Promise((done) => a.child.once('exit', done));
    expect(a.output).toContain('closed');
    expect((await queue.getWorkers()).map((w) => w.id)).toEqual([b.id]);

    b.child.kill('SIGKILL'); // no close: its entry stays until it expires (2 x lockRenewTime + 1 s)
    await new Promise((done) => b.child.once('exit', done));
    expect((await queue.getWorkers()).map((w) => w.id)).toEqual([b.id]);
    await eventually(async () => (await queue.getWorkers()).length === 0, 5000, 'the killed worker to expire');
    expect(await client.zcard(queue.keys.workers)).toBe(0);
  }, 60_000);
});
