import 'reflect-metadata';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import type { AddressInfo } from 'node:net';
import { AppModule } from '../sample/app.module.js';
import { mountBoard } from '../sample/board.js';
import { eventually, redisUrl, singleNodeDescribe, uniqueQueueName } from './support/redis.js';

/** Reads a Server-Sent Events stream in the background, keeping each event's parsed data. */
function readEvents(url: string) {
  const controller = new AbortController();
  const events: Array<Record<string, unknown>> = [];
  const done = (async () => {
    const response = await fetch(url, { signal: controller.signal, headers: { accept: 'text/event-stream' } });
    expect(response.headers.get('content-type')).toMatch(/text\/event-stream/);
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const data = buffer.slice(0, end).split('\n').find((line) => line.startsWith('data: '));
        if (data) events.push(JSON.parse(data.slice(6)));
        buffer = buffer.slice(end + 2);
      }
    }
  })().catch((error: Error) => {
    if (error.name !== 'AbortError') throw error;
  });
  return { events, stop: async () => { controller.abort(); await done; } };
}

// Single-node: the sample service takes a redis:// URL, which is one node.
singleNodeDescribe('the sample app over HTTP', () => {
  let app: INestApplication;
  let base: string;
  beforeAll(async () => {
    // Its own prefix: the sample's queue name is fixed, the keys must not meet other runs'.
    app = await NestFactory.create(AppModule.register({ redisUrl: redisUrl(), prefix: uniqueQueueName('sample') }), { logger: false });
    mountBoard(app); // as main.ts does
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await app.close();
  });

  const post = async (name: string, body: unknown) => {
    const response = await fetch(`${base}/jobs/${name}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(response.status).toBe(202);
    return (await response.json()) as { id: string };
  };
  const show = async (id: string) => (await (await fetch(`${base}/jobs/${id}`)).json()) as Record<string, unknown>;

  it('enqueues jobs, shows them complete, and streams the slow job\'s heartbeats', async () => {
    const stream = readEvents(`${base}/locks/events`);
    try {
      await eventually(async () => (await fetch(`${base}/jobs/none`)).status === 404, 5_000, 'the API');
      const render = await post('render', { pages: 6 }); // 3 s of work under a 2 s lock
      const sum = await post('sum', { numbers: [1, 2, 3, 4] });
      expect(await eventually(async () => (await show(sum.id)).state === 'completed' && show(sum.id), 15_000, 'the sum job'))
        .toMatchObject({ name: 'sum', state: 'completed', result: 10 });
      const done = await eventually(async () => {
        const view = await show(render.id);
        return view.state === 'completed' ? view : undefined;
      }, 20_000, 'the render job');
      expect(done).toMatchObject({ name: 'render', progress: 100, result: { pages: 6 }, attemptsStarted: 1 });
      const mine = await eventually(() => {
        const about = stream.events.filter((e) => e.jobId === render.id || (e.jobIds as string[] | undefined)?.includes(render.id));
        return about.some((e) => e.type === 'released') && about;
      }, 10_000, 'the render job\'s lock events') as Array<Record<string, unknown>>;
      expect(mine[0]).toMatchObject({ type: 'acquired', queue: 'reports' });
      expect(mine.filter((e) => e.type === 'renewed').length).toBeGreaterThanOrEqual(2);
      expect(mine.at(-1)).toMatchObject({ type: 'released', reason: 'completed' });
    } finally {
      await stream.stop();
    }
  });

  it('cancels a running render job: it fails as cancelled, not retried; a finished job is not cancelled', async () => {
    const render = await post('render', { pages: 20 }); // 10 s of work
    await eventually(async () => (await show(render.id)).state === 'active', 10_000, 'the render job running');
    const cancel = async (id: string, reason?: string) =>
      (await fetch(`${base}/jobs/${id}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ reason }) })).json();
    expect(await cancel(render.id, 'changed my mind')).toEqual({ id: render.id, cancelled: true });
    const failed = await eventually(async () => {
      const view = await show(render.id);
      return view.state === 'failed' && view;
    }, 10_000, 'the cancelled job failed');
    expect(failed).toMatchObject({ failedReason: `job ${render.id} was cancelled: changed my mind`, attemptsStarted: 1 });
    expect(await cancel(render.id)).toEqual({ id: render.id, cancelled: false });
  });

  it('runs its digest schedule: the first job at boot, the next one delayed, both listed', async () => {
    const get = async (path: string) => {
      const response = await fetch(`${base}${path}`);
      expect(response.status).toBe(200);
      return response.json();
    };
    // The first job was due at boot (immediately: true): it ran on the digest handler.
    const ran = await eventually(async () => {
      const completed = (await get('/jobs?state=completed')) as Array<Record<string, unknown>>;
      return completed.find((job) => job.repeatJobKey === 'queue-digest');
    }, 15_000, 'the first digest job') as Record<string, unknown>;
    expect(ran).toMatchObject({ name: 'digest', state: 'completed', id: expect.stringMatching(/^repeat:queue-digest:\d+$/) });
    expect(ran.result).toEqual(expect.objectContaining({ wait: expect.any(Number), completed: expect.any(Number) }));
    // The scheduler, and its next job delayed until its slot (read again if a slot passed between the two reads).
    const [scheduler, next] = await eventually(async () => {
      const [listed] = (await get('/schedulers')) as Array<Record<string, unknown>>;
      const delayed = (await get('/jobs?state=delayed')) as Array<Record<string, unknown>>;
      const job = delayed.find((j) => j.id === listed?.nextJobId);
      return job && [listed, job];
    }, 15_000, 'the scheduler and its next job') as Array<Record<string, unknown>>;
    expect(scheduler).toMatchObject({ id: 'queue-digest', jobName: 'digest', every: 10_000 });
    expect(Date.parse(scheduler.next as string) % 10_000).toBe(0); // every slot is a multiple of `every`
    expect(next).toMatchObject({ name: 'digest', state: 'delayed', repeatJobKey: 'queue-digest' });
    expect((await fetch(`${base}/jobs?state=nonsense`)).status).toBe(400);
  });

  it('fails a job name the processor does not handle, and says why', async () => {
    const job = await post('unknown', {});
    const view = await eventually(async () => {
      const current = await show(job.id);
      return current.state === 'failed' && current;
    }, 15_000, 'the unknown job') as Record<string, unknown>;
    expect(view.failedReason).toMatch(/"unknown" has no handler in processor ReportsProcessor/);
    expect((await fetch(`${base}/jobs/does-not-exist`)).status).toBe(404);
    // Ids that name one of the queue's own keys (these exist now) are no job either: they answered 500 (WRONGTYPE).
    for (const key of ['failed', 'completed', 'events']) expect((await fetch(`${base}/jobs/${key}`)).status).toBe(404);
  });

  it('serves the lock timeline page and runs its demo job: bad settings refused by name, one demo at a time', async () => {
    const page = await fetch(`${base}/`);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(await page.text()).toContain('The lock timeline');
    for (const script of ['control.js', 'timeline.js']) {
      expect((await fetch(`${base}/${script}`)).headers.get('content-type')).toMatch(/text\/javascript/);
    }
    const start = (body: unknown) => fetch(`${base}/locks/demo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const refused = await start({ renewMs: 1000, lockMs: 'long' });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { message: string }).message).toMatch(/^lockMs must be a whole number of ms/);
    const stream = readEvents(`${base}/locks/events`);
    try {
      await eventually(async () => (await fetch(`${base}/locks/demo`)).ok, 5_000, 'the API');
      const started = await start({ renewMs: 400, lockMs: 1000, workMs: 1500 });
      expect(started.status).toBe(202);
      const run = (await started.json()) as Record<string, unknown>;
      expect(run).toMatchObject({ queue: 'lock-demo', renewMs: 400, lockMs: 1000, workMs: 1500, lapses: false });
      expect((await start({})).status).toBe(409);
      await eventually(async () => ((await (await fetch(`${base}/locks/demo`)).json()) as { running: unknown }).running === null, 15_000, 'the demo worker closed');
      const mine = await eventually(() => {
        const about = stream.events.filter((e) => e.queue === 'lock-demo' && (e.jobId === run.jobId || (e.jobIds as string[] | undefined)?.includes(run.jobId as string)));
        return about.some((e) => e.type === 'released') && about;
      }, 5_000, 'the demo job\'s lock events') as Array<Record<string, unknown>>;
      expect(mine[0]).toMatchObject({ type: 'acquired', workerId: run.workerId });
      expect(mine.filter((e) => e.type === 'renewed').length).toBeGreaterThanOrEqual(2);
      expect(mine.at(-1)).toMatchObject({ type: 'released', reason: 'completed' });
    } finally {
      await stream.stop();
    }
  });

  it('builds a report flow: the parent waits for its pages, then sums what they returned; the board lists the sample\'s queues', async () => {
    const response = await fetch(`${base}/reports`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ pages: 4 }) });
    expect(response.status).toBe(202);
    const { id, children } = (await response.json()) as { id: string; children: string[] };
    expect(children).toHaveLength(4);
    expect(['waiting-children', 'wait', 'active', 'completed']).toContain((await show(id)).state);
    const done = await eventually(async () => {
      const view = await show(id);
      return view.state === 'completed' ? view : undefined;
    }, 15_000, 'the report flow') as Record<string, unknown>;
    expect(done.result).toEqual({ pages: 4, words: expect.any(Number) });
    const boardResponse = await fetch(`${base}/board/api/queues`);
    const boardText = await boardResponse.text();
    expect({ status: boardResponse.status, body: boardText.slice(0, 300) }).toMatchObject({ status: 200 });
    const board = JSON.parse(boardText) as { queues: Array<{ name: string; counts: Record<string, number> }> };
    expect(board.queues.map((q) => q.name).sort()).toEqual(['lock-demo', 'pages', 'reports']);
    expect(board.queues.find((q) => q.name === 'pages')?.counts.completed).toBe(4);
  });

  // Before the two tests below, so these are the routes' first calls: a connection opened lazily shows.
  it('GET /health and GET /metrics open no connection: the same Redis clients before and after', async () => {
    const admin = new Redis(redisUrl());
    try {
      const clients = async () => new Map(((await admin.client('LIST')) as string).trim().split('\n')
        .map((line) => [/\bid=(\d+)/.exec(line)![1], /\bname=(\S*)/.exec(line)?.[1] ?? ''] as const));
      const before = await clients();
      for (const path of ['/health', '/metrics', '/health', '/metrics']) expect((await fetch(`${base}${path}`)).status).toBe(200);
      const after = await clients();
      expect([...after].filter(([id]) => !before.has(id)).map(([id, name]) => `id=${id} name=${name}`)).toEqual([]);
      expect(after.size).toBe(before.size);
    } finally {
      admin.disconnect();
    }
  });

  it('answers GET /health with Terminus: ok, every queue up with its counts and workers', async () => {
    const response = await fetch(`${base}/health`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { status: string; info: { queues: { status: string; queues: Record<string, { counts: Record<string, number>; workers: number; paused: boolean }> } } };
    expect(body.status).toBe('ok');
    expect(body.info.queues.status).toBe('up');
    expect(Object.keys(body.info.queues.queues).sort()).toEqual(['lock-demo', 'pages', 'reports']);
    expect(body.info.queues.queues.reports).toMatchObject({ paused: false, workers: 1 });
    expect(body.info.queues.queues.pages.counts.completed).toBeGreaterThanOrEqual(4);
  });

  it('answers GET /metrics with Prometheus text: job counts, completed totals from the workers\' metrics, the lock metrics', async () => {
    // The workers send their per-minute counts about 5 s after a finish: poll until the pages' are in.
    const text = await eventually(async () => {
      const response = await fetch(`${base}/metrics`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      const body = await response.text();
      const completed = /^echomq_job_completed_total\{queue="pages",app="echomq-sample"\} (\d+)$/m.exec(body);
      return completed && Number(completed[1]) >= 4 && body;
    }, 15_000, 'the pages\' completed total') as string;
    expect(text).toMatch(/^echomq_job_count\{queue="pages",state="completed",app="echomq-sample"\} [4-9]\d*$/m);
    expect(text).toMatch(/^echomq_job_failed_total\{queue="reports",app="echomq-sample"\} \d+$/m);
    // The render jobs' heartbeats were renewals of the reports queue's locks.
    expect(text).toMatch(/^echomq_lock_renewal_round_trip_seconds_count\{queue="reports"\} [1-9]\d*$/m);
    // One scrape: each metric's TYPE once.
    const types = text.split('\n').filter((line) => line.startsWith('# TYPE ')).map((line) => line.split(' ')[2]);
    expect(types).toEqual([...new Set(types)]);
    expect(types).toEqual(expect.arrayContaining(['echomq_job_count', 'echomq_job_completed_total', 'echomq_job_failed_total', 'echomq_lock_jobs_held', 'echomq_lock_lost_total']));
  });
});
