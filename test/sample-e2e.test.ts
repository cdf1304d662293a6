import 'reflect-metadata';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { AddressInfo } from 'node:net';
import { AppModule } from '../sample/app.module.js';
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
        return view.state === 'completed' && view;
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
});
