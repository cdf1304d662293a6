import { afterEach, describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import { EchoMQOptionError, LockManager, Queue, Worker } from '../lib/index.js';
import { collectLockMetrics, joinPrometheusTexts } from '../lib/integrations/prometheus/index.js';
import { eventually, newClient, sleep, testConnection, uniqueQueueName } from './support/redis.js';

// queue.exportPrometheusMetrics (no dependency) and the prom-client metrics of a LockManager.

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  // Workers first: a queue's connection may be one they share.
  for (const thing of opened.splice(0).reverse()) await thing.close();
});
function track<T extends { close(): Promise<void> }>(thing: T): T {
  opened.push(thing);
  return thing;
}

/** One sample line of the text format: name{labels} value. */
const SAMPLE = /^[a-zA-Z_:][a-zA-Z0-9_:]*\{([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\} -?\d+(\.\d+)?$/;

describe('queue.exportPrometheusMetrics', () => {
  it('is a gauge of the job counts per state, BullMQ\'s state names, with the queue label', async () => {
    const name = uniqueQueueName('prom');
    const queue = track(new Queue(name, { connection: testConnection() }));
    await queue.addBulk([{ name: 'a', data: {} }, { name: 'b', data: {} }]);
    await queue.add('later', {}, { delay: 60_000 });
    await queue.add('urgent', {}, { priority: 1 });
    const text = await queue.exportPrometheusMetrics();
    expect(text).toBe([
      '# HELP echomq_job_count Number of jobs in the queue by state',
      '# TYPE echomq_job_count gauge',
      `echomq_job_count{queue="${name}",state="active"} 0`,
      `echomq_job_count{queue="${name}",state="completed"} 0`,
      `echomq_job_count{queue="${name}",state="delayed"} 1`,
      `echomq_job_count{queue="${name}",state="failed"} 0`,
      `echomq_job_count{queue="${name}",state="paused"} 0`,
      `echomq_job_count{queue="${name}",state="prioritized"} 1`,
      `echomq_job_count{queue="${name}",state="waiting"} 2`,
      `echomq_job_count{queue="${name}",state="waiting-children"} 0`,
      '# HELP echomq_job_completed_total Jobs completed, as counted by workers with the metrics option',
      '# TYPE echomq_job_completed_total counter',
      `echomq_job_completed_total{queue="${name}"} 0`,
      '# HELP echomq_job_failed_total Jobs failed with no retry left, as counted by workers with the metrics option',
      '# TYPE echomq_job_failed_total counter',
      `echomq_job_failed_total{queue="${name}"} 0`,
      '',
    ].join('\n'));
  });

  it('counts the jobs completed and failed for good, as workers with metrics record them (getMetrics\' meta.count)', async () => {
    const name = uniqueQueueName('prom');
    const connection = testConnection();
    const queue = track(new Queue(name, { connection }));
    const worker = new Worker(name, async (job) => {
      if (job.name === 'bad') throw new Error('no');
      return 'ok';
    }, { connection, metrics: { maxDataPoints: 60 } });
    let settled = 0;
    worker.on('completed', () => settled++);
    worker.on('failed', () => settled++);
    await queue.addBulk([{ name: 'ok', data: {} }, { name: 'ok', data: {} }, { name: 'ok', data: {} }, { name: 'bad', data: {} }]);
    await eventually(() => settled === 4, 10_000, 'four jobs');
    await worker.close(); // sends its counts
    const text = await queue.exportPrometheusMetrics({ env: 'test' });
    expect(text).toContain(`echomq_job_completed_total{queue="${name}",env="test"} 3\n`);
    expect(text).toContain(`echomq_job_failed_total{queue="${name}",env="test"} 1\n`);
    expect(text).toContain(`echomq_job_count{queue="${name}",state="completed",env="test"} 3\n`);
  });

  it('puts the extra labels on every sample, their values escaped as the text format wants', async () => {
    const name = uniqueQueueName('prom');
    const queue = track(new Queue(name, { connection: testConnection() }));
    await queue.add('a', {});
    const text = await queue.exportPrometheusMetrics({ env: 'prod', note: 'say "hi"\\\nbye' });
    const samples = text.split('\n').filter((line) => line.length > 0 && !line.startsWith('#'));
    expect(samples).toHaveLength(10);
    for (const line of samples) {
      expect(line).toMatch(SAMPLE);
      expect(line).toContain(',env="prod",note="say \\"hi\\"\\\\\\nbye"}');
    }
    expect(samples).toContain(`echomq_job_count{queue="${name}",state="waiting",env="prod",note="say \\"hi\\"\\\\\\nbye"} 1`);
  });

  it('sums a partitioned queue\'s partitions', async () => {
    const name = uniqueQueueName('prom');
    const queue = track(new Queue(name, { connection: testConnection(), partitions: 3 }));
    await queue.addBulk(Array.from({ length: 7 }, (_, i) => ({ name: `j${i}`, data: {} })));
    expect(await queue.exportPrometheusMetrics()).toContain(`echomq_job_count{queue="${name}",state="waiting"} 7\n`);
  });

  it('refuses a label that would break the scrape, by name, before reading Redis', async () => {
    const queue = track(new Queue(uniqueQueueName('prom'), { connection: testConnection() }));
    const cases: Array<[unknown, RegExp]> = [
      ['env', /^labels: /],
      [{ queue: 'x' }, /labels\.queue.*set by exportPrometheusMetrics/],
      [{ state: 'x' }, /labels\.state/],
      [{ '1x': 'y' }, /labels\.1x.*not a Prometheus label name/],
      [{ 'a-b': 'y' }, /labels\.a-b/],
      [{ __name__: 'y' }, /labels\.__name__/],
      [{ env: 3 }, /labels\.env.*must be a string/],
    ];
    for (const [labels, message] of cases) {
      const error = await queue.exportPrometheusMetrics(labels as Record<string, string>).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(EchoMQOptionError);
      expect((error as Error).message).toMatch(message);
    }
  });
});

describe('joinPrometheusTexts (@echomq/nestjs/prometheus)', () => {
  /** Each family's lines: its HELP and TYPE once, first, and its samples in one group. */
  function expectWellFormed(text: string): Map<string, string[]> {
    const families = new Map<string, string[]>();
    let current = '';
    for (const line of text.split('\n').filter((l) => l.length > 0)) {
      const header = /^# (HELP|TYPE) (\S+)/.exec(line);
      const sample = /^[^\s{]+/.exec(line)![0];
      const name = header ? header[2] : sample === current || (sample.startsWith(current) && /^_(bucket|sum|count)$/.test(sample.slice(current.length))) ? current : sample;
      if (name !== current) {
        expect({ line, seenBefore: families.has(name) }).toEqual({ line, seenBefore: false });
        families.set(name, []);
        current = name;
      }
      families.get(name)!.push(line);
    }
    for (const [name, lines] of families) {
      expect({ name, help: lines.filter((l) => l.startsWith('# HELP ')).length, type: lines.filter((l) => l.startsWith('# TYPE ')).length }).toEqual({ name, help: 1, type: 1 });
    }
    return families;
  }

  it('serves several queues and a prom-client registry on one route: each family once, its samples together', async () => {
    const [a, b] = [uniqueQueueName('prom-a'), uniqueQueueName('prom-b')];
    const [qa, qb] = [track(new Queue(a, { connection: testConnection() })), track(new Queue(b, { connection: testConnection() }))];
    await qa.add('x', {});
    await qb.addBulk([{ name: 'y', data: {} }, { name: 'z', data: {} }]);
    const registry = new Registry();
    const lockManager = new LockManager();
    const metrics = collectLockMetrics(lockManager, { registry });
    try {
      const joined = joinPrometheusTexts(await qa.exportPrometheusMetrics(), await qb.exportPrometheusMetrics(), await registry.metrics());
      const families = expectWellFormed(joined);
      expect([...families.keys()]).toEqual([
        'echomq_job_count', 'echomq_job_completed_total', 'echomq_job_failed_total',
        'echomq_lock_jobs_held', 'echomq_lock_renewal_round_trip_seconds', 'echomq_lock_heartbeat_late_total', 'echomq_lock_lost_total', 'echomq_lock_heartbeat_errors_total',
      ]);
      const counts = families.get('echomq_job_count')!;
      expect(counts).toContain(`echomq_job_count{queue="${a}",state="waiting"} 1`);
      expect(counts).toContain(`echomq_job_count{queue="${b}",state="waiting"} 2`);
      expect(counts.filter((l) => !l.startsWith('#'))).toHaveLength(16);
      expect(families.get('echomq_job_completed_total')!.filter((l) => !l.startsWith('#'))).toEqual([`echomq_job_completed_total{queue="${a}"} 0`, `echomq_job_completed_total{queue="${b}"} 0`]);
      // Concatenated as they are, the texts repeat the queue families' headers: what the join is for.
      const concatenated = (await qa.exportPrometheusMetrics()) + (await qb.exportPrometheusMetrics());
      expect(() => expectWellFormed(concatenated)).toThrow();
      expect(joinPrometheusTexts()).toBe('');
    } finally {
      metrics.stop();
      await lockManager.close();
    }
  });

  it('keeps a histogram\'s _bucket, _sum and _count with their family, and a sample without headers in its own', () => {
    const histogram = ['# HELP h a histogram', '# TYPE h histogram', 'h_bucket{le="1"} 1', 'h_bucket{le="+Inf"} 1', 'h_sum 0.5', 'h_count 1', ''].join('\n');
    const joined = joinPrometheusTexts(histogram, 'loose 3\n', histogram.replace(/ 1$/gm, ' 2'));
    expect(joined).toBe([
      '# HELP h a histogram', '# TYPE h histogram', 'h_bucket{le="1"} 1', 'h_bucket{le="+Inf"} 1', 'h_sum 0.5', 'h_count 1',
      'h_bucket{le="1"} 2', 'h_bucket{le="+Inf"} 2', 'h_sum 0.5', 'h_count 2', 'loose 3', '',
    ].join('\n'));
  });

  it('a sample extends a family only by a suffix its TYPE allows: a gauge\'s `job_other_total` is a family of its own', () => {
    const joined = joinPrometheusTexts('# TYPE job gauge\njob 1\njob_other_total 2\n', '# TYPE job_other_total counter\njob_other_total 3\n');
    expect(joined).toBe('# TYPE job gauge\njob 1\n# TYPE job_other_total counter\njob_other_total 2\njob_other_total 3\n');
    // A counter's _total and _created, a summary's _sum and _count, each with its family, also from
    // a text without the family's headers; a summary has no _bucket, a histogram no _total.
    const counter = '# HELP c a counter\n# TYPE c counter\nc_total 1\nc_created 5\n';
    const summary = '# TYPE s summary\ns{quantile="0.5"} 1\ns_sum 2\ns_count 3\ns_bucket 4\n';
    const histogram = '# TYPE h histogram\nh_bucket{le="+Inf"} 1\nh_total 9\n';
    expect(joinPrometheusTexts(counter, summary, histogram, 'c_total 2\ns_count 6\n')).toBe([
      '# HELP c a counter', '# TYPE c counter', 'c_total 1', 'c_created 5', 'c_total 2',
      '# TYPE s summary', 's{quantile="0.5"} 1', 's_sum 2', 's_count 3', 's_count 6',
      's_bucket 4',
      '# TYPE h histogram', 'h_bucket{le="+Inf"} 1',
      'h_total 9', '',
    ].join('\n'));
  });

  it('two queues of one name under two prefixes: a label per prefix keeps their series apart', async () => {
    const name = uniqueQueueName('prom-same');
    const prefixes = ['pa', 'pb'];
    const queues = prefixes.map((prefix) => track(new Queue(name, { connection: testConnection(), prefix })));
    await queues[1].add('x', {});
    const samples = (text: string) => text.split('\n').filter((l) => l.length > 0 && !l.startsWith('#'));
    const bare = samples(joinPrometheusTexts(...await Promise.all(queues.map((q) => q.exportPrometheusMetrics()))));
    expect(new Set(bare).size).toBeLessThan(bare.length); // without: the same series twice
    const labelled = samples(joinPrometheusTexts(...await Promise.all(queues.map((q, i) => q.exportPrometheusMetrics({ prefix: prefixes[i] })))));
    expect(new Set(labelled.map((l) => l.split(' ')[0])).size).toBe(labelled.length);
    expect(labelled).toContain(`echomq_job_count{queue="${name}",state="waiting",prefix="pb"} 1`);
  });

  it('trims lines (leading blanks, CRLF) and drops lines that parse as neither a header nor a sample', () => {
    const joined = joinPrometheusTexts('  # HELP a a gauge \r\n  # TYPE a gauge\r\n  a{x="1"} 1\r\n\r\n', 'a{x="2"} 2 1700000000000\r\n{x="3"} 3\r\n9lives 1\r\nno_value\r\n# TYPE b\r\nb{x="1} 1\r\n');
    expect(joined).toBe('# HELP a a gauge\n# TYPE a gauge\na{x="1"} 1\na{x="2"} 2 1700000000000\n');
    expect(joined).not.toContain('\r');
  });

  it('throws a clear error when one name has two TYPEs: no join of them is a valid scrape', () => {
    let error: unknown;
    try {
      joinPrometheusTexts('# TYPE jobs gauge\njobs 1\n', '# TYPE other gauge\nother 1\n', '# TYPE jobs counter\njobs 2\n');
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(EchoMQOptionError);
    expect((error as EchoMQOptionError).field).toBe('texts[2]');
    expect((error as Error).message).toMatch(/metric jobs is typed counter here and gauge before/);
    // The same TYPE again is the join's ordinary case.
    expect(joinPrometheusTexts('# TYPE jobs gauge\njobs 1\n', '# TYPE jobs gauge\njobs 2\n')).toBe('# TYPE jobs gauge\njobs 1\njobs 2\n');
  });
});

describe('collectLockMetrics (@echomq/nestjs/prometheus)', () => {
  /** A sample's value from the registry's text, 0 when it has none yet. */
  async function sample(registry: Registry, line: string): Promise<number> {
    const text = await registry.metrics();
    const found = text.split('\n').find((l) => l.startsWith(line + ' '));
    return found === undefined ? 0 : Number(found.slice(line.length + 1));
  }

  it('reports jobs held, renewal round trips, late heartbeats and lost locks', async () => {
    const name = uniqueQueueName('prom');
    const registry = new Registry();
    const lockManager = new LockManager();
    const metrics = collectLockMetrics(lockManager, { registry });
    const queue = track(new Queue(name, { connection: testConnection() }));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const worker = new Worker(name, async (job) => {
      if (job.name === 'cpu') {
        await sleep(300); // one tick on time
        const until = Date.now() + 600;
        while (Date.now() < until) { /* blocks the event loop: the next tick fires late */ }
        await sleep(300);
        return 'ok';
      }
      await released; // held until the test has deleted its lock
      return 'late';
    }, { connection: testConnection(), lockManager, lockDuration: 3000, lockRenewTime: 100, heartbeatLateThreshold: 100 });
    track({ close: async () => { await worker.close(); await lockManager.close(); metrics.stop(); } });

    const held = await queue.add('hold', {});
    expect(await eventually(async () => ((await sample(registry, `echomq_lock_jobs_held{queue="${name}"}`)) === 1 ? true : undefined), 5000, 'one job held')).toBe(true);
    await eventually(async () => ((await sample(registry, `echomq_lock_renewal_round_trip_seconds_count{queue="${name}"}`)) >= 2 ? true : undefined), 5000, 'renewals');
    const sum = await sample(registry, `echomq_lock_renewal_round_trip_seconds_sum{queue="${name}"}`);
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThan(1); // round trips to a local Redis, in seconds

    // Its lock gone under it: the next renewal finds -2, and the job is lost.
    const client = newClient();
    await client.del(queue.keys.lock(held.id));
    await client.quit();
    await eventually(async () => ((await sample(registry, `echomq_lock_lost_total{queue="${name}",code="-2"}`)) === 1 ? true : undefined), 5000, 'the lost lock');
    release();

    const cpu = await queue.add('cpu', {});
    await eventually(async () => ((await cpu.getState()) === 'completed' ? true : undefined), 10_000, 'the cpu job');
    expect(await sample(registry, `echomq_lock_heartbeat_late_total{queue="${name}"}`)).toBeGreaterThanOrEqual(1);
    await eventually(async () => ((await sample(registry, `echomq_lock_jobs_held{queue="${name}"}`)) === 0 ? true : undefined), 5000, 'no job held');
    expect(await sample(registry, `echomq_lock_heartbeat_errors_total{queue="${name}"}`)).toBe(0);
  });

  it('stop() unsubscribes and takes its metrics out of the registry; a bad option is refused by name', async () => {
    const registry = new Registry();
    const lockManager = new LockManager();
    const metrics = collectLockMetrics(lockManager, { registry, prefix: 'app_' });
    expect(registry.getMetricsAsArray().map((m) => m.name).sort()).toEqual([
      'app_lock_heartbeat_errors_total', 'app_lock_heartbeat_late_total', 'app_lock_jobs_held', 'app_lock_lost_total', 'app_lock_renewal_round_trip_seconds',
    ]);
    metrics.stop();
    metrics.stop();
    expect(registry.getMetricsAsArray()).toEqual([]);
    expect(() => collectLockMetrics(lockManager, { registry, prefix: 'bad-prefix' })).toThrow(/prefix/);
    expect(() => collectLockMetrics(lockManager, { registry, renewalBuckets: [] })).toThrow(/renewalBuckets/);
    expect(registry.getMetricsAsArray()).toEqual([]);
    await lockManager.close();
  });
});
