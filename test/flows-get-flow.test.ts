import { afterEach, describe, expect, it } from '@jest/globals';
import { FlowProducer, Queue, Worker, type FlowTreeNode, type ProcessorFunction } from '../lib/index.js';
import { Redis } from 'ioredis';
import { Keys } from '../lib/protocol/keys.js';
import { firstPages, hscanNoValues, listChildren, queueFirstPages, scanPlan } from '../lib/runtime/flows/child-scan.js';
import { parseRedisVersion } from '../lib/runtime/core/redis-health.js';
import { FaultyProxy } from './support/faulty-proxy.js';
import { eventually, newClient, redisUrl, singleNodeIt, testConnection, uniqueQueueName } from './support/redis.js';
import { monitorCommands } from './support/monitor.js';

// FlowProducer.getFlow (docs/flows.md): a tree read back from Redis, its levels in other queues
// (other hash slots: on the cluster run, other nodes).

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});

function producer(): FlowProducer {
  const flow = new FlowProducer({ connection: testConnection() });
  closers.push(() => flow.close());
  return flow;
}

function worker(name: string, processor: ProcessorFunction, concurrency = 1): Worker {
  const w = new Worker(name, processor, { connection: testConnection(), concurrency });
  closers.push(() => w.close(true));
  return w;
}

function queue(name: string): Queue {
  const q = new Queue(name, { connection: testConnection() });
  closers.push(() => q.close());
  return q;
}

/** The tree as names and ids, to compare with what was added. */
function shape(node: FlowTreeNode): unknown {
  const own = { name: node.job?.name, id: node.job?.id, queue: node.job?.queueName };
  return node.children ? { ...own, children: node.children.map(shape) } : own;
}

describe('FlowProducer.getFlow', () => {
  it('reads a three-level tree over three queues, as added and as its children finish', async () => {
    const [top, middle, leaves] = [uniqueQueueName('top'), uniqueQueueName('mid'), uniqueQueueName('leaf')];
    const flow = producer();
    const added = await flow.add({
      name: 'root', queueName: top, data: { r: 1 },
      children: [0, 1].map((m) => ({
        name: `mid-${m}`, queueName: middle, data: { m },
        children: [0, 1].map((l) => ({ name: `leaf-${m}.${l}`, queueName: leaves, data: { m, l }, opts: { jobId: `leaf-${m}-${l}` } })),
      })),
    });
    const sortById = (node: FlowTreeNode): unknown => {
      const s = shape(node) as { children?: Array<{ id: string }> };
      if (s.children) s.children = (node.children ?? []).map(sortById).sort((a, b) => ((a as { id: string }).id < (b as { id: string }).id ? -1 : 1)) as Array<{ id: string }>;
      return s;
    };
    const read = await flow.getFlow({ id: added.job.id, queueName: top });
    expect(sortById(read)).toEqual(sortById(added as FlowTreeNode));
    expect(read.job!.data).toEqual({ r: 1 });
    expect(await read.job!.getState()).toBe('waiting-children');
    const mid0 = read.children!.find((c) => c.job!.name === 'mid-0')!;
    expect(mid0.job!.parent).toEqual({ id: added.job.id, queueKey: `emq:{${top}}` });

    // The leaves run (one fails, with no policy): completed, then failed, in the parent's list.
    worker(leaves, async (job) => {
      if (job.id === 'leaf-1-1') throw new Error('leaf broke');
      return `${job.name} done`;
    });
    const leafQueue = queue(leaves);
    await eventually(async () => (await Promise.all(['leaf-0-0', 'leaf-0-1', 'leaf-1-0', 'leaf-1-1'].map((id) => leafQueue.getJob(id))))
      .every((job) => job?.finishedOn !== undefined), 10_000, 'every leaf finished');
    const mid1Id = added.children!.find((c) => c.job.name === 'mid-1')!.job.id;
    await eventually(async () => (await (await queue(middle).getJob(mid1Id))!.getDependenciesCount()).processed === 1, 5000, 'mid-1 settled');
    const after = await flow.getFlow({ id: added.job.id, queueName: top });
    const byName = (node: FlowTreeNode, name: string) => node.children!.find((c) => c.job!.name === name)!;
    const readMid1 = byName(after, 'mid-1');
    expect(readMid1.children!.map((c) => c.job!.id)).toEqual(['leaf-1-0', 'leaf-1-1']);
    expect(readMid1.children![0].job!.returnvalue).toBe('leaf-1.0 done');
    expect(readMid1.children![1].job!.failedReason).toBe('leaf broke');
    expect(await readMid1.job!.getState()).toBe('waiting-children');
    await eventually(async () => (await byName(after, 'mid-0').job!.getState()) === 'waiting', 5000, 'mid-0 ready');

    // Any job of the tree can be the top of a read: a middle one, in its own queue.
    const fromMiddle = await flow.getFlow({ id: mid1Id, queueName: middle });
    expect(fromMiddle.job!.name).toBe('mid-1');
    expect(fromMiddle.children!.map((c) => c.job!.id)).toEqual(['leaf-1-0', 'leaf-1-1']);
  });

  it('stops at depth levels and lists at most maxChildren children of a job', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const flow = producer();
    const added = await flow.add({
      name: 'root', queueName: parents,
      children: [{
        name: 'mid', queueName: parents,
        children: Array.from({ length: 5 }, (_, i) => ({ name: `leaf-${i}`, queueName: children })),
      }],
    });
    const rootOnly = await flow.getFlow({ id: added.job.id, queueName: parents, depth: 1 });
    expect(rootOnly.job!.id).toBe(added.job.id);
    expect(rootOnly.children).toBeUndefined();
    const twoLevels = await flow.getFlow({ id: added.job.id, queueName: parents, depth: 2 });
    expect(twoLevels.children!.map((c) => c.job!.name)).toEqual(['mid']);
    expect(twoLevels.children![0].children).toBeUndefined();

    const all = await flow.getFlow({ id: added.job.id, queueName: parents });
    expect(all.children![0].children).toHaveLength(5);
    expect(all.children![0].children!.every((c) => c.children === undefined)).toBe(true);
    const capped = await flow.getFlow({ id: added.job.id, queueName: parents, maxChildren: 2 });
    expect(capped.children![0].children).toHaveLength(2);
    const leafIds = new Set(added.children![0].children!.map((c) => c.job.id));
    for (const leaf of capped.children![0].children!) expect(leafIds.has(leaf.job!.id)).toBe(true);
  });

  it('refuses bad options before reading, naming the field', async () => {
    const flow = producer();
    const queueName = uniqueQueueName('bad');
    await expect(flow.getFlow({ id: '1', queueName, depth: 0 })).rejects.toMatchObject({ name: 'EchoMQOptionError', field: 'depth' });
    await expect(flow.getFlow({ id: '1', queueName, depth: 1.5 })).rejects.toMatchObject({ field: 'depth' });
    await expect(flow.getFlow({ id: '1', queueName, maxChildren: 0 })).rejects.toMatchObject({ field: 'maxChildren' });
    await expect(flow.getFlow({ id: '1', queueName, maxChildren: '3' as unknown as number })).rejects.toMatchObject({ field: 'maxChildren' });
    await expect(flow.getFlow({ id: '', queueName })).rejects.toMatchObject({ field: 'id' });
    await expect(flow.getFlow({ id: '1', queueName: '' })).rejects.toMatchObject({ field: 'queueName' });
    await expect(flow.getFlow({ id: '1', queueName, prefix: '' })).rejects.toMatchObject({ field: 'prefix' });
  });

  it('answers job undefined for a missing id, and for a child whose job is gone (removeOnComplete)', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const flow = producer();
    expect(await flow.getFlow({ id: 'no-such-job', queueName: parents })).toEqual({ job: undefined });
    expect(await flow.getFlow({ id: 'wait', queueName: parents })).toEqual({ job: undefined }); // a queue key's name, not a job's
    const added = await flow.add({
      name: 'root', queueName: parents,
      children: [
        { name: 'kept', queueName: children, opts: { jobId: 'a-kept' } },
        { name: 'gone', queueName: children, opts: { jobId: 'b-gone', removeOnComplete: true } },
      ],
    });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    worker(children, async (job) => {
      if (job.id === 'a-kept') await gate; // stays active: the parent's key of it stays open
      return 'ok';
    }, 2);
    await eventually(async () => (await added.job.getDependenciesCount()).processed === 1, 10_000, 'the removed child settled');
    const read = await flow.getFlow({ id: added.job.id, queueName: parents });
    // Completed first (its hash is gone: removeOnComplete), then the one not finished.
    expect(read.children!.map((c) => c.job?.id)).toEqual([undefined, 'a-kept']);
    expect(read.children![0]).toEqual({ job: undefined });
    release();
    await eventually(async () => (await added.job.getDependenciesCount()).processed === 2, 10_000, 'the other child settled');
  });

  /** A parent's flow keys, written directly: `open` children not finished, `failed` failed with no policy (in both keys), `done` completed. */
  async function bigParent(counts: { open: number; failed: number; done: number }) {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const pk = new Keys(parents, 'emq');
    const ck = new Keys(children, 'emq');
    const client = newClient();
    closers.push(async () => client.disconnect());
    const key = (kind: string, i: number) => ck.job(`${kind}-${String(i).padStart(6, '0')}`);
    const keys = (kind: string, n: number) => Array.from({ length: n }, (_, i) => key(kind, i));
    const chunks = <T>(all: T[], size = 10_000) => Array.from({ length: Math.ceil(all.length / size) }, (_, i) => all.slice(i * size, (i + 1) * size));
    for (const part of chunks([...keys('open', counts.open), ...keys('failed', counts.failed)])) await client.sadd(pk.flow('p', 'dependencies'), ...part);
    for (const part of chunks(keys('failed', counts.failed))) await client.hset(pk.flow('p', 'unsuccessful'), ...part.flatMap((k) => [k, 'broke']));
    for (const part of chunks(keys('done', counts.done))) await client.hset(pk.flow('p', 'processed'), ...part.flatMap((k) => [k, '1']));
    return { client, pk, key, keys };
  }

  async function childrenListed(client: ReturnType<typeof newClient>, pk: Keys, max: number): Promise<string[]> {
    const plan = scanPlan(max, await hscanNoValues(client));
    const pipeline = client.pipeline();
    queueFirstPages(pipeline, pk, 'p', plan);
    const replies = ((await pipeline.exec()) ?? []).map(([error, reply]) => {
      if (error) throw error;
      return reply;
    });
    return listChildren(client, pk, 'p', firstPages(replies, plan), max, plan);
  }

  it('lists a big parent\'s children by bounded scans, in order: completed, not finished (sorted), failed; each once, at most maxChildren', async () => {
    // 50 not finished among 1,300 dependencies, 1,250 of them failed: the open ones are found
    // only by scanning :dependencies on, with :unsuccessful too big to come whole.
    const big = await bigParent({ open: 50, failed: 1250, done: 3 });
    const listed = await childrenListed(big.client, big.pk, 100);
    expect(listed.slice(0, 53)).toEqual([...big.keys('done', 3), ...big.keys('open', 50)]);
    expect(listed).toHaveLength(100);
    expect(new Set(listed).size).toBe(100);
    expect(listed.slice(53).every((k) => k.includes(':failed-'))).toBe(true);
    // All of them, when maxChildren allows: every child once.
    const all = await childrenListed(big.client, big.pk, 10_000);
    expect(all).toHaveLength(3 + 50 + 1250);
    expect(all.slice(0, 53)).toEqual([...big.keys('done', 3), ...big.keys('open', 50)]);
    expect(new Set(all.slice(53))).toEqual(new Set(big.keys('failed', 1250)));
  });

  // MONITOR sees one server's commands.
  singleNodeIt('reads a parent of 100,000 children with bounded SSCAN steps, never one SMEMBERS or HKEYS reply', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const flow = producer();
    const added = await flow.add({ name: 'p', queueName: parents, children: [{ name: 'real', queueName: children, opts: { jobId: 'real' } }] });
    const client = newClient();
    closers.push(async () => client.disconnect());
    const pk = new Keys(parents, 'emq');
    for (let from = 0; from < 100_000; from += 10_000) {
      await client.sadd(pk.flow(added.job.id, 'dependencies'), ...Array.from({ length: 10_000 }, (_, i) => `emq:{${children}}:x${from + i}`));
    }
    const { hostname, port } = new URL(redisUrl());
    const sent: string[][] = [];
    const marker = `getflow-done-${parents}`;
    const stopMonitor = await monitorCommands(hostname, Number(port), (args) => {
      if (args.some((arg) => arg.includes(parents) || arg === marker)) sent.push(args);
    });
    closers.push(async () => stopMonitor());
    const read = await flow.getFlow({ id: added.job.id, queueName: parents });
    await client.echo(marker);
    await eventually(() => sent.some((args) => args.includes(marker)), 5000, 'the marker seen by MONITOR');
    expect(read.children).toHaveLength(20); // maxChildren's default
    const commands = sent.map((args) => args[0].toLowerCase());
    expect(commands).not.toContain('smembers');
    expect(commands).not.toContain('hkeys');
    expect(commands).toContain('sscan');
  });

  // INFO stats counts one server's bytes.
  singleNodeIt('lists a few completed children without reading every value a scan step meets (NOVALUES on 7.4+, else a step of maxChildren)', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const parent = await queue(parents).add('p', {}, { jobId: 'p' });
    const client = newClient();
    closers.push(async () => client.disconnect());
    // 300 completed children, each with a 2 KB returnvalue (the hash is a table: a step answers about COUNT entries).
    const big = JSON.stringify('x'.repeat(2048));
    await client.hset(new Keys(parents, 'emq').flow(parent.id, 'processed'),
      ...Array.from({ length: 300 }, (_, i) => [`emq:{${children}}:c${i}`, big]).flat());
    const version = parseRedisVersion(await client.info('server'))!;
    expect(await hscanNoValues(client)).toBe(version[0] > 7 || (version[0] === 7 && version[1] >= 4));
    const flow = producer();
    await flow.getFlow({ id: 'p', queueName: parents, depth: 1 }); // connected, and the version read
    const sent = async () => Number(/total_net_output_bytes:(\d+)/.exec(await client.info('stats'))![1]);
    const before = await sent();
    const read = await flow.getFlow({ id: 'p', queueName: parents, maxChildren: 5 });
    const bytes = (await sent()) - before;
    expect(read.children).toHaveLength(5);
    // A step of 100 with values sends about 100 x 2 KB; 5 listed need 5 of them at most.
    expect(bytes).toBeLessThan(40 * 1024);
  });

  singleNodeIt('the NOVALUES check gives up on a server that does not answer (false, not kept): getFlow never waits on it', async () => {
    const proxy = await FaultyProxy.start(redisUrl());
    const client = new Redis(proxy.url);
    closers.push(async () => {
      client.disconnect();
      await proxy.close();
    });
    await client.ping();
    let infos = 0;
    const realInfo = client.info.bind(client) as (...args: unknown[]) => Promise<string>;
    // Counted: INFO server (the check's); ioredis's own ready check on a reconnect asks INFO with no section.
    (client as unknown as { info: (...args: unknown[]) => Promise<string> }).info = (...args) => (args[0] === 'server' && infos++, realInfo(...args));
    proxy.setMode('swallowReplies'); // INFO reaches Redis; its reply never comes back
    const started = Date.now();
    expect(await hscanNoValues(client)).toBe(false);
    expect(Date.now() - started).toBeLessThan(10_000);
    proxy.setMode('pass');
    proxy.cut(); // the swallowed replies' connection goes; ioredis reconnects
    // Not kept: asked again (a second INFO), now answered by the server's version.
    const version = parseRedisVersion(await realInfo('server'))!;
    expect(await hscanNoValues(client)).toBe(version[0] > 7 || (version[0] === 7 && version[1] >= 4));
    expect(infos).toBe(2);
  });

  singleNodeIt('reads on without NOVALUES when a server refuses it although the check said yes (a failover to an older node)', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const client = newClient();
    closers.push(async () => client.disconnect());
    const version = parseRedisVersion(await client.info('server'))!;
    if (version[0] > 7 || (version[0] === 7 && version[1] >= 4)) return; // this server takes NOVALUES: nothing to refuse
    // The connection's INFO claims 7.4, so the check answers yes; the server (older) refuses the argument.
    const realInfo = client.info.bind(client) as (...args: unknown[]) => Promise<string>;
    (client as unknown as { info: (...args: unknown[]) => Promise<string> }).info = async (...args) => (await realInfo(...args)).replace(/redis_version:\S+/, 'redis_version:7.4.0');
    expect(await hscanNoValues(client)).toBe(true);
    const flow = new FlowProducer({ connection: client });
    closers.push(() => flow.close());
    await flow.add({ name: 'p', queueName: parents, opts: { jobId: 'p' }, children: [{ name: 'c', queueName: children, opts: { jobId: 'c' } }] });
    const read = await flow.getFlow({ id: 'p', queueName: parents });
    expect(read.children?.map((child) => child.job?.id)).toEqual(['c']);
    // Asked again next time (and still claiming 7.4: the fallback works each time, it does not break getFlow).
    expect((await flow.getFlow({ id: 'p', queueName: parents })).children).toHaveLength(1);
  });

  it('lists maxChildren children when keys that name no job come first (they are skipped while listing, not after)', async () => {
    const [parents, children] = [uniqueQueueName('parents'), uniqueQueueName('children')];
    const flow = producer();
    const added = await flow.add({
      name: 'p', queueName: parents,
      children: Array.from({ length: 5 }, (_, i) => ({ name: `c${i}`, queueName: children, opts: { jobId: `c${i}` } })),
    });
    const client = newClient();
    closers.push(async () => client.disconnect());
    // Completed children come first: three keys there that name no job (another runtime's, or hand-written).
    await client.hset(new Keys(parents, 'emq').flow(added.job.id, 'processed'),
      'garbage', '1', `emq:{${children}}:wait`, '1', `emq:{${children}}:a:b`, '1');
    const read = await flow.getFlow({ id: added.job.id, queueName: parents, maxChildren: 5 });
    expect(read.children!.map((c) => c.job?.id)).toEqual(['c0', 'c1', 'c2', 'c3', 'c4']);
  });

  it('reads on a closed producer is refused', async () => {
    const flow = new FlowProducer({ connection: testConnection() });
    await flow.close();
    await expect(flow.getFlow({ id: '1', queueName: uniqueQueueName('closed') })).rejects.toThrow(/closed/);
  });
});
