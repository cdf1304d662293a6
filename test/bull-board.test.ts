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
import { EchoMQAdapter, echoMQBoardAdapters } from '../lib/integrations/bull-board/index.js';
import { startApp } from './support/nest.js';
import { eventually, testConnection, uniqueQueueName } from './support/redis.js';

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
    await queue.add('w', { n: 4 });
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

  it('pages the jobs of one state', async () => {
    const { body } = await call('GET', `/api/queues?activeQueue=${queue.name}&status=waiting&page=1&jobsPerPage=1`);
    const listed = body.queues.find((q: { name: string }) => q.name === queue.name);
    expect(listed.jobs).toHaveLength(1);
    expect(listed.jobs[0].id).toBe(ids.waiting);
    expect(listed.pagination.pageCount).toBe(2);
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
