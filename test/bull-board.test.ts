import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createBullBoard } from '@bull-board/api';
import { ExpressAdapter } from '@bull-board/express';
import express from 'express';
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestingModule } from '@nestjs/testing';
import { Cluster, type Redis } from 'ioredis';
import { EchoMQModule, Queue, Worker } from '../lib/index.js';
import { BOARD_METRICS_MINUTES, EchoMQAdapter, echoMQBoardAdapters } from '../lib/integrations/bull-board/index.js';
import { mergeInfoTexts } from '../lib/integrations/bull-board/redis-info.js';
import { recordMetrics } from '../lib/protocol/metrics.js';
import { startApp } from './support/nest.js';
import { eventually, masters, onCluster, testConnection, uniqueQueueName } from './support/redis.js';
import { startRedis } from './support/redis-process.js';
import { startStaggeredCluster, type StaggeredCluster } from './support/staggered-cluster.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The abstract members of the installed BaseAdapter, from its typings (what every adapter must implement). */
function abstractMembers(): string[] {
  const typings = readFileSync(join(root, 'node_modules/@bull-board/api/dist/queueAdapters/base.d.ts'), 'utf8');
  return [...typings.matchAll(/^\s*abstract (\w+)\(/gm)].map((match) => match[1]);
}

/** Every module lib/index.ts loads, following its relative imports (type-only imports load nothing). */
function coreImports(): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    const source = readFileSync(file, 'utf8');
    const specifiers = [...source.matchAll(/^(?:import|export)\s+(?!type\s)[^'"]*?from\s+'([^']+)'/gm)].map((match) => match[1]);
    seen.set(file, specifiers);
    for (const specifier of specifiers) {
      if (specifier.startsWith('.')) visit(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
    }
  };
  visit(join(root, 'lib/index.ts'));
  return seen;
}

describe('bull-board: the adapter', () => {
  it('implements every abstract method of the installed BaseAdapter', () => {
    const members = abstractMembers();
    expect(members.length).toBeGreaterThan(20);
    const missing = members.filter((name) => typeof (EchoMQAdapter.prototype as unknown as Record<string, unknown>)[name] !== 'function');
    expect(missing).toEqual([]);
  });

  it('the core entry never loads @bull-board (an optional peer dependency)', () => {
    const graph = coreImports();
    expect(graph.size).toBeGreaterThan(20);
    const offenders = [...graph].filter(([, specifiers]) => specifiers.some((s) => s.startsWith('@bull-board') || s.includes('integrations/')));
    expect(offenders.map(([file]) => file)).toEqual([]);
  });

  it('the package exports ./bull-board from dist, and lists @bull-board/api as an optional peer', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    expect(pkg.exports['./bull-board']).toEqual({ import: { types: './dist/esm/bull-board.d.ts', default: './dist/esm/bull-board.js' }, default: { types: './dist/cjs/lib/integrations/bull-board/index.d.ts', default: './dist/cjs/lib/integrations/bull-board/index.js' } });
    expect(pkg.peerDependencies['@bull-board/api']).toBeDefined();
    expect(pkg.peerDependenciesMeta['@bull-board/api']).toEqual({ optional: true });
  });
});

describe('bull-board: the board over HTTP (@bull-board/express)', () => {
  const connection = testConnection();
  const queue = new Queue(uniqueQueueName('board'), { connection });
  let server: Server;
  let base: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    // completed (with a log line and a return value) and failed, by a worker that then closes.
    const ok = await queue.add('ok', { n: 1 });
    const bad = await queue.add('bad', { n: 2 });
    const worker = new Worker(queue.name, async (job) => {
      await job.log(`ran ${job.name}`);
      if (job.name === 'bad') throw new Error('it broke');
      return { done: true };
    }, { connection, metrics: { maxDataPoints: 60 } });
    await eventually(async () => {
      const counts = await queue.getJobCounts('completed', 'failed');
      return counts.completed === 1 && counts.failed === 1;
    });
    await worker.close();
    ids.completed = ok.id;
    ids.failed = bad.id;
    ids.waiting = (await queue.add('w', { n: 3 })).id;
    ids.waitingNewest = (await queue.add('w', { n: 4 })).id;
    ids.prioritized = (await queue.add('p', { n: 5 }, { priority: 3 })).id;
    ids.delayed = (await queue.add('d', { n: 6 }, { delay: 3_600_000 })).id;

    const serverAdapter = new ExpressAdapter();
    serverAdapter.setBasePath('/board');
    createBullBoard({ queues: [new EchoMQAdapter(queue)], serverAdapter });
    const app = express();
    app.use('/board', serverAdapter.getRouter());
    server = await new Promise<Server>((listening) => {
      const s = app.listen(0, '127.0.0.1', () => listening(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/board`;
  });

  afterAll(async () => {
    await new Promise<void>((closed) => server.close(() => closed()));
    await queue.obliterate({ force: true });
    await queue.close();
  });

  async function call(method: string, path: string): Promise<{ status: number; body: any }> {
    const response = await fetch(`${base}${path}`, { method });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  }

  it('GET /api/queues lists the queue with its counts per state, under the board\'s names', async () => {
    const { status, body } = await call('GET', '/api/queues');
    expect(status).toBe(200);
    const listed = body.queues.find((q: { name: string }) => q.name === queue.name);
    expect(listed).toBeDefined();
    expect(listed.counts).toEqual({
      active: 0, waiting: 2, 'waiting-children': 0, prioritized: 1, completed: 1, failed: 1, delayed: 1, paused: 0,
    });
    expect(listed.type).toBe('bullmq');
    expect(listed.isPaused).toBe(false);
    expect(listed.statuses).toContain('latest');
  });

  it('pages the jobs of one state, newest first as BullMQ\'s adapter shows them', async () => {
    const page = async (n: number) => {
      const { body } = await call('GET', `/api/queues?activeQueue=${queue.name}&status=waiting&page=${n}&jobsPerPage=1`);
      return body.queues.find((q: { name: string }) => q.name === queue.name);
    };
    const first = await page(1);
    expect(first.jobs.map((job: { id: string }) => job.id)).toEqual([ids.waitingNewest]);
    expect(first.pagination.pageCount).toBe(2);
    expect((await page(2)).jobs.map((job: { id: string }) => job.id)).toEqual([ids.waiting]);
    // The "latest" view: each state's first page, newest first within it.
    const { body } = await call('GET', `/api/queues?activeQueue=${queue.name}&status=latest&page=1&jobsPerPage=10`);
    const latest = body.queues.find((q: { name: string }) => q.name === queue.name).jobs.map((job: { id: string }) => job.id);
    expect(latest.indexOf(ids.waitingNewest)).toBeLessThan(latest.indexOf(ids.waiting));
  });

  it('a job\'s detail: data, options, state, return value, failure and stack trace, logs', async () => {
    const completed = await call('GET', `/api/queues/${queue.name}/${ids.completed}`);
    expect(completed.status).toBe(200);
    expect(completed.body.status).toBe('completed');
    expect(completed.body.job).toMatchObject({ id: ids.completed, name: 'ok', data: { n: 1 }, returnValue: { done: true }, isFailed: false });
    const failed = await call('GET', `/api/queues/${queue.name}/${ids.failed}`);
    expect(failed.body.status).toBe('failed');
    expect(failed.body.job).toMatchObject({ failedReason: 'it broke', isFailed: true, attempts: 1 });
    expect(failed.body.job.stacktrace[0]).toContain('it broke');
    const waiting = await call('GET', `/api/queues/${queue.name}/${ids.waiting}`);
    expect(waiting.body.status).toBe('waiting');
    const logs = await call('GET', `/api/queues/${queue.name}/${ids.completed}/logs`);
    expect(logs.body).toEqual(['ran ok']);
    expect((await call('GET', `/api/queues/${queue.name}/no-such-job`)).status).toBe(404);
  });

  it('metrics, Redis stats and workers answer', async () => {
    const metrics = await call('GET', `/api/queues/${queue.name}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.body.completed.meta.count).toBe(1);
    expect(metrics.body.failed.meta.count).toBe(1);
    expect(metrics.body.completed.meta.prevTS % 60_000).toBe(0);
    const stats = await call('GET', '/api/redis/stats');
    expect(stats.status).toBe(200);
    expect(typeof stats.body.version).toBe('string');
    const workers = await call('GET', `/api/queues/${queue.name}/workers`);
    expect(workers.status).toBe(200);
  });

  it('retries a failed job and promotes a delayed one through the board', async () => {
    expect((await call('PUT', `/api/queues/${queue.name}/${ids.failed}/retry`)).status).toBe(204);
    expect(await (await queue.getJob(ids.failed))!.getState()).toBe('waiting');
    expect((await call('PUT', `/api/queues/${queue.name}/${ids.delayed}/promote`)).status).toBe(204);
    expect(await (await queue.getJob(ids.delayed))!.getState()).toBe('waiting');
    // A job that is not finished is not retried: the board's 400, nothing changed.
    expect((await call('PUT', `/api/queues/${queue.name}/${ids.waiting}/retry`)).status).toBe(400);
  });

  it('pauses and resumes, cleans and removes', async () => {
    expect((await call('PUT', `/api/queues/${queue.name}/pause`)).status).toBe(200);
    expect(await queue.isPaused()).toBe(true);
    expect((await call('PUT', `/api/queues/${queue.name}/resume`)).status).toBe(200);
    expect(await queue.isPaused()).toBe(false);
    expect((await call('PUT', `/api/queues/${queue.name}/${ids.prioritized}/clean`)).status).toBe(204);
    expect(await queue.getJob(ids.prioritized)).toBeUndefined();
    // The board's clean-all keeps jobs younger than 5 s: the adapter's clean, with no grace.
    await new EchoMQAdapter(queue).clean('completed', 0);
    expect((await queue.getJobCounts('completed')).completed).toBe(0);
  });
});

describe('bull-board: what the adapter reads', () => {
  const connection = testConnection();
  const opened: Queue[] = [];
  afterAll(async () => {
    for (const queue of opened) {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });
  const open = (options: { partitions?: number } = {}) => {
    const queue = new Queue(uniqueQueueName('board-reads'), { connection, ...options });
    opened.push(queue);
    return queue;
  };

  it('every state newest first: waiting by add, delayed by due time, prioritized last to run first, finished by finish', async () => {
    const queue = open();
    const adapter = new EchoMQAdapter(queue);
    const ids = (jobs: Array<{ toJSON(): { id?: unknown } }>) => jobs.map((job) => job.toJSON().id);
    const waiting = [await queue.add('a', {}), await queue.add('b', {}), await queue.add('c', {})].map((job) => job.id);
    const soon = (await queue.add('soon', {}, { delay: 60_000 })).id;
    const late = (await queue.add('late', {}, { delay: 120_000 })).id;
    const urgent = (await queue.add('urgent', {}, { priority: 1 })).id;
    const minor = (await queue.add('minor', {}, { priority: 9 })).id;
    expect(ids(await adapter.getJobs(['waiting']))).toEqual([...waiting].reverse());
    expect(ids(await adapter.getJobs(['waiting'], 0, 1))).toEqual([waiting[2], waiting[1]]);
    expect(ids(await adapter.getJobs(['delayed']))).toEqual([late, soon]);
    expect(ids(await adapter.getJobs(['prioritized']))).toEqual([minor, urgent]);
    // One at a time, a few ms each, so no two share a finish time (the completed set's score).
    const finished: string[] = [];
    const worker = new Worker(queue.name, async () => new Promise((done) => setTimeout(() => done('ok'), 3)), { connection, concurrency: 1 });
    worker.on('completed', (job) => finished.push(job.id));
    await eventually(() => finished.length === 5, 10_000, 'five jobs');
    await worker.close();
    expect(ids(await adapter.getJobs(['completed']))).toEqual([...finished].reverse());
  });

  it('metrics: the board\'s hour (60 closed minutes) when it names no range, the range when it does', async () => {
    const queue = open();
    const adapter = new EchoMQAdapter(queue);
    const minute = Math.floor(Date.now() / 60_000) * 60_000;
    // 100 closed minutes, the oldest holding 1 job, each later one 1 more.
    for (let i = 0; i <= 100; i++) await recordMetrics(queue.client, queue.keys, 'completed', i + 1, minute - (100 - i) * 60_000, 200);
    const board = await adapter.getMetrics('completed');
    expect(board.count).toBe(100);
    expect(board.data).toHaveLength(BOARD_METRICS_MINUTES);
    expect(board.data.slice(0, 3)).toEqual([100, 99, 98]);
    expect(board.meta).toEqual({ count: 101 * 102 / 2, prevTS: minute, prevCount: 101 * 102 / 2 - 101 });
    expect((await adapter.getMetrics('completed', 0, -1)).data).toHaveLength(100);
    expect((await adapter.getMetrics('completed', 98, 99)).data).toEqual([2, 1]);
    expect(await adapter.getMetrics('failed')).toEqual({ meta: { count: 0, prevTS: 0, prevCount: 0 }, data: [], count: 0 });
  });

  it('Redis stats of a partitioned queue: one INFO, or on a Cluster every master\'s merged', async () => {
    const queue = open({ partitions: 3 });
    const nodes = await masters(queue.client);
    const before = await infoOfEach(nodes);
    const info = parseInfo(await new EchoMQAdapter(queue).getRedisInfo());
    const after = await infoOfEach(nodes);
    expect(info.get('redis_version')).toMatch(/^\d+\.\d+/);
    if (!onCluster) {
      expect(info.get('redis_mode')).toBe(before[0].get('redis_mode'));
      expect(info.get('cluster_masters')).toBeUndefined();
      return;
    }
    expect(nodes.length).toBeGreaterThan(1);
    expect(info.get('redis_mode')).toBe('cluster');
    expect(info.get('cluster_masters')).toBe(String(nodes.length));
    expect(info.get('cluster_masters_answered')).toBe(String(nodes.length));
    expect(field(info, 'used_memory')).toBeGreaterThan(Math.max(...after.map((f) => field(f, 'used_memory'))));
    expect(field(info, 'connected_clients')).toBeGreaterThan(Math.max(...after.map((f) => field(f, 'connected_clients'))));
    expectYoungestAndOldest(info, before, after);
  });

  it('the board\'s Redis stats over HTTP for a partitioned queue', async () => {
    const queue = open({ partitions: 2 });
    const serverAdapter = new ExpressAdapter();
    serverAdapter.setBasePath('/board');
    createBullBoard({ queues: [new EchoMQAdapter(queue)], serverAdapter });
    const app = express();
    app.use('/board', serverAdapter.getRouter());
    const server = await new Promise<Server>((listening) => {
      const s = app.listen(0, '127.0.0.1', () => listening(s));
    });
    try {
      const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/board/api/redis/stats`);
      expect(response.status).toBe(200);
      const stats = (await response.json()) as { version: string; memory: { used: number }; clients: { connected: number } };
      expect(stats.version).toMatch(/^\d+\.\d+/);
      expect(stats.memory.used).toBeGreaterThan(0);
      expect(stats.clients.connected).toBeGreaterThan(0);
    } finally {
      await new Promise<void>((closed) => server.close(() => closed()));
    }
  });
});

/** INFO's fields. */
function parseInfo(text: string): Map<string, string> {
  return new Map(text.split(/\r?\n/).filter((line) => line.includes(':') && !line.startsWith('#')).map((line) => {
    const colon = line.indexOf(':');
    return [line.slice(0, colon), line.slice(colon + 1)] as [string, string];
  }));
}

/** Each master's INFO, as the test reads it itself, in the order the client lists them. */
async function infoOfEach(nodes: Redis[]): Promise<Array<Map<string, string>>> {
  return Promise.all(nodes.map(async (node) => parseInfo(await node.info())));
}

const field = (fields: Map<string, string>, name: string) => Number(fields.get(name));

/** 6.2.14 before 6.10.0 before 7.0.15, by each number in turn. */
function oldestVersion(versions: string[]): string {
  const numbers = (v: string) => v.split('.').map(Number);
  return [...versions].sort((a, b) => {
    const [x, y] = [numbers(a), numbers(b)];
    const i = x.findIndex((n, k) => n !== (y[k] ?? 0));
    return i < 0 ? 0 : x[i] - (y[i] ?? 0);
  })[0];
}

/**
 * The merged INFO's uptime is the youngest master's, its version the oldest master's, against each
 * master's INFO read just before and just after it (an uptime may tick between the reads).
 */
function expectYoungestAndOldest(info: Map<string, string>, before: Array<Map<string, string>>, after: Array<Map<string, string>>): void {
  const youngest = (each: Array<Map<string, string>>) => Math.min(...each.map((f) => field(f, 'uptime_in_seconds')));
  expect(field(info, 'uptime_in_seconds')).toBeGreaterThanOrEqual(youngest(before));
  expect(field(info, 'uptime_in_seconds')).toBeLessThanOrEqual(youngest(after));
  expect(info.get('redis_version')).toBe(oldestVersion(before.map((f) => f.get('redis_version')!)));
}

describe('bull-board: Redis stats on a Cluster of its own (masters started seconds apart)', () => {
  let cluster: StaggeredCluster;
  let client: Cluster;
  let queue: Queue;
  beforeAll(async () => {
    cluster = await startStaggeredCluster();
    client = new Cluster(cluster.nodes, { redisOptions: { maxRetriesPerRequest: null } });
    queue = new Queue(uniqueQueueName('board-cluster'), { connection: client, partitions: 3 });
    await queue.getJobCounts();
  }, 60_000);
  afterAll(async () => {
    await queue?.close();
    client?.disconnect();
    await cluster?.stop();
  });

  it('the youngest master\'s uptime and the oldest version, exactly, whichever master is listed first', async () => {
    const nodes = await masters(client);
    expect(nodes.map((node) => node.options.port)).toEqual(cluster.nodes.map((node) => node.port));
    const before = await infoOfEach(nodes);
    const info = parseInfo(await new EchoMQAdapter(queue).getRedisInfo());
    const after = await infoOfEach(nodes);
    // The first master listed is older than the youngest: its uptime would not pass for theirs.
    expect(field(before[0], 'uptime_in_seconds')).toBeGreaterThan(Math.min(...after.map((f) => field(f, 'uptime_in_seconds'))));
    expect(info.get('cluster_masters_answered')).toBe('3');
    expectYoungestAndOldest(info, before, after);
  });

  it('the oldest version by each number in turn, not by the text (one machine\'s servers never differ in it)', () => {
    const texts = ['6.10.0', '6.2.14', '7.0.15'].map((version, i) => `# Server\r\nredis_version:${version}\r\nuptime_in_seconds:${[50, 7, 9][i]}\r\n`);
    const merged = parseInfo(mergeInfoTexts(texts));
    expect(merged.get('redis_version')).toBe('6.2.14');
    expect(merged.get('uptime_in_seconds')).toBe('7');
    expect(oldestVersion(['6.10.0', '6.2.14', '7.0.15'])).toBe('6.2.14');
  });

  it('a frozen master (SIGSTOP) is left out: the stats answer, over HTTP too, with the masters that did', async () => {
    const frozen = cluster.servers[1];
    const serverAdapter = new ExpressAdapter();
    serverAdapter.setBasePath('/board');
    createBullBoard({ queues: [new EchoMQAdapter(queue)], serverAdapter });
    const app = express();
    app.use('/board', serverAdapter.getRouter());
    const server = await new Promise<Server>((listening) => {
      const s = app.listen(0, '127.0.0.1', () => listening(s));
    });
    process.kill(frozen.pid(), 'SIGSTOP');
    try {
      const hung = new Promise<'hung'>((resolve) => setTimeout(resolve, 15_000, 'hung').unref());
      const info = await Promise.race([new EchoMQAdapter(queue).getRedisInfo(), hung]);
      expect(info).not.toBe('hung');
      const merged = parseInfo(info);
      expect(merged.get('cluster_masters')).toBe('3');
      expect(merged.get('cluster_masters_answered')).toBe('2');
      const response = await Promise.race([fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/board/api/redis/stats`), hung]);
      expect(response).not.toBe('hung');
      expect((response as Response).status).toBe(200);
      expect(((await (response as Response).json()) as { version: string }).version).toMatch(/^\d+\.\d+/);
    } finally {
      process.kill(frozen.pid(), 'SIGCONT');
      await new Promise<void>((closed) => server.close(() => closed()));
    }
  });
});

describe('bull-board: Redis stats of a single Redis that does not answer', () => {
  it('a frozen Redis (SIGSTOP): the stats reject, saying so, rather than hang', async () => {
    const redis = await startRedis();
    const queue = new Queue(uniqueQueueName('board-frozen'), { connection: redis.url });
    try {
      await queue.getJobCounts();
      process.kill(redis.pid(), 'SIGSTOP');
      const hung = new Promise<'hung'>((resolve) => setTimeout(resolve, 15_000, 'hung').unref());
      const outcome = await Promise.race([new EchoMQAdapter(queue).getRedisInfo().catch((error: Error) => error), hung]);
      expect(outcome).toBeInstanceOf(Error);
      expect((outcome as Error).message).toMatch(/did not answer INFO within \d+ ms/);
    } finally {
      process.kill(redis.pid(), 'SIGCONT');
      await queue.close();
      await redis.stop();
    }
  });
});

describe('bull-board: every queue of a Nest app', () => {
  let app: TestingModule | undefined;
  afterAll(async () => {
    await app?.close();
  });

  it('echoMQBoardAdapters(app) gives an adapter per registered queue', async () => {
    const [a, b] = [uniqueQueueName('nest-a'), uniqueQueueName('nest-b')];
    app = await startApp({ imports: [EchoMQModule.forRoot({ connection: testConnection() }), EchoMQModule.registerQueue(a), EchoMQModule.registerQueue({ name: b })] });
    const adapters = echoMQBoardAdapters(app, { readOnlyMode: true });
    expect(adapters.map((adapter) => adapter.getName())).toEqual([a, b]);
    expect(adapters.every((adapter) => adapter.readOnlyMode)).toBe(true);
    expect(await adapters[0].getJobCounts()).toMatchObject({ waiting: 0, completed: 0 });
  });
});
