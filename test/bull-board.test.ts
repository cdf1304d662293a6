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
import { EchoMQModule, Queue, Worker } from '../lib/index.js';
import { BOARD_METRICS_MINUTES, EchoMQAdapter, echoMQBoardAdapters } from '../lib/integrations/bull-board/index.js';
import { recordMetrics } from '../lib/protocol/metrics.js';
import { startApp } from './support/nest.js';
import { eventually, masters, onCluster, testConnection, uniqueQueueName } from './support/redis.js';

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
    expect(pkg.exports['./bull-board']).toEqual({
      types: './dist/lib/integrations/bull-board/index.d.ts',
      import: './dist/lib/integrations/bull-board/index.js',
    });
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
    expect(await (await queue.getJob(ids.failed))!.getState()).toBe('wait');
    expect((await call('PUT', `/api/queues/${queue.name}/${ids.delayed}/promote`)).status).toBe(204);
    expect(await (await queue.getJob(ids.delayed))!.getState()).toBe('wait');
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
    const info = parseInfo(await new EchoMQAdapter(queue).getRedisInfo());
    expect(info.get('redis_version')).toMatch(/^\d+\.\d+/);
    const nodes = await masters(queue.client);
    const each = await Promise.all(nodes.map(async (node) => parseInfo(await node.info())));
    if (!onCluster) {
      expect(info.get('redis_mode')).toBe(each[0].get('redis_mode'));
      expect(info.get('cluster_masters')).toBeUndefined();
      return;
    }
    expect(nodes.length).toBeGreaterThan(1);
    expect(info.get('redis_mode')).toBe('cluster');
    expect(info.get('cluster_masters')).toBe(String(nodes.length));
    expect(info.get('cluster_masters_answered')).toBe(String(nodes.length));
    // Summed: more than any one master holds; the youngest master's uptime; the oldest version.
    const field = (fields: Map<string, string>, name: string) => Number(fields.get(name));
    expect(field(info, 'used_memory')).toBeGreaterThan(Math.max(...each.map((f) => field(f, 'used_memory'))));
    expect(field(info, 'connected_clients')).toBeGreaterThan(Math.max(...each.map((f) => field(f, 'connected_clients'))));
    expect(field(info, 'uptime_in_seconds')).toBeLessThanOrEqual(Math.max(...each.map((f) => field(f, 'uptime_in_seconds'))));
    expect(each.map((f) => f.get('redis_version'))).toContain(info.get('redis_version'));
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
