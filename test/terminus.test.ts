import 'reflect-metadata';
import { afterEach, describe, expect, it } from '@jest/globals';
import { ServiceUnavailableException } from '@nestjs/common';
import { HealthCheckService, TerminusModule } from '@nestjs/terminus';
import type { TestingModule } from '@nestjs/testing';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EchoMQModule, EchoMQOptionError, Process, Processor, type Job } from '../lib/index.js';
import { EchoMQHealthIndicator, EchoMQHealthModule } from '../lib/integrations/terminus/index.js';
import { startApp } from './support/nest.js';
import { freePort, startRedis, type RedisProcess } from './support/redis-process.js';
import { eventually, singleNodeIt, testConnection, uniqueQueueName } from './support/redis.js';

// The terminus indicator in a Nest app on the test Redis: what it reports up, degraded and down.

let app: TestingModule | undefined;
let ownRedis: RedisProcess | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
  await ownRedis?.stop();
  ownRedis = undefined;
});

/** An app with the queues registered on the default configuration, TerminusModule and the indicator. */
async function healthApp(queues: string[], extra: { providers?: any[]; imports?: any[] } = {}) {
  app = await startApp({
    imports: [
      EchoMQModule.forRoot({ connection: testConnection() }),
      EchoMQModule.registerQueue(...queues),
      TerminusModule,
      EchoMQHealthModule,
      ...(extra.imports ?? []),
    ],
    providers: extra.providers ?? [],
  });
  return { health: app.get(HealthCheckService), indicator: app.get(EchoMQHealthIndicator) };
}

describe('EchoMQHealthIndicator', () => {
  it('is up with every registered queue\'s counts, paused state and live workers', async () => {
    const name = uniqueQueueName('health');
    const idle = uniqueQueueName('health');
    @Processor(name)
    class Echo {
      @Process() run(job: Job) {
        return job.data;
      }
    }
    const { health, indicator } = await healthApp([name, idle], { providers: [Echo] });
    const queue = app!.get<any>(`EchoMQQueue:${name}`);
    await queue.add('one', { n: 1 });
    await eventually(async () => ((await queue.getJobCounts('completed')).completed === 1 ? true : undefined), 10_000, 'the job done');
    await eventually(async () => ((await queue.getWorkers()).length === 1 ? true : undefined), 10_000, 'the worker registered');

    const result = await health.check([() => indicator.isHealthy('echomq', { timeoutMs: 2000 })]);
    expect(result.status).toBe('ok');
    const details = result.details.echomq as any;
    expect(details.status).toBe('up');
    expect(details.message).toBeUndefined();
    expect(Object.keys(details.queues).sort()).toEqual([name, idle].sort());
    expect(details.queues[name]).toMatchObject({ paused: false, workers: 1, waiting: 0 });
    expect(details.queues[name].counts).toMatchObject({ completed: 1, waiting: 0, active: 0, failed: 0 });
    expect(details.queues[idle]).toMatchObject({ paused: false, workers: 0, waiting: 0 });
  });

  it('reports a backlog over maxWaiting: degraded by default (200), down with overThreshold down (503)', async () => {
    const name = uniqueQueueName('health');
    const { health, indicator } = await healthApp([name]);
    const queue = app!.get<any>(`EchoMQQueue:${name}`);
    await queue.addBulk([{ name: 'a', data: {} }, { name: 'b', data: {} }, { name: 'c', data: {} }]);
    await queue.pause();
    await queue.add('d', {}, { priority: 3 });

    const atThreshold = await health.check([() => indicator.isHealthy('echomq', { timeoutMs: 2000, maxWaiting: 4 })]);
    expect(atThreshold.status).toBe('ok');

    const over = await health.check([() => indicator.isHealthy('echomq', { timeoutMs: 2000, maxWaiting: 3 })]);
    expect(over.status).toBe('degraded');
    const details = over.details.echomq as any;
    expect(details.status).toBe('degraded');
    expect(details.message).toBe(`queue ${name} has 4 jobs waiting, over maxWaiting 3`);
    expect(details.queues[name]).toMatchObject({ paused: true, waiting: 4, workers: 0 });

    const refused = await health.check([() => indicator.isHealthy('echomq', { timeoutMs: 2000, maxWaiting: 3, overThreshold: 'down' })]).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ServiceUnavailableException);
    expect(((refused as ServiceUnavailableException).getResponse() as any).error.echomq.status).toBe('down');
  });

  it('counts the failures of the last minute against maxFailedPerMinute (from the failed set)', async () => {
    const name = uniqueQueueName('health');
    @Processor(name)
    class Failing {
      @Process() run() {
        throw new Error('no');
      }
    }
    const { indicator } = await healthApp([name], { providers: [Failing] });
    const queue = app!.get<any>(`EchoMQQueue:${name}`);
    await queue.addBulk([{ name: 'a', data: {} }, { name: 'b', data: {} }]);
    await eventually(async () => ((await queue.getJobCounts('failed')).failed === 2 ? true : undefined), 10_000, 'two failures');
    const fine = await indicator.isHealthy('echomq', { timeoutMs: 2000, maxFailedPerMinute: 2 });
    expect(fine.echomq).toMatchObject({ status: 'up', queues: { [name]: { failedLastMinute: 2 } } });
    const over = await indicator.isHealthy('echomq', { timeoutMs: 2000, maxFailedPerMinute: 1 });
    expect(over.echomq.status).toBe('degraded');
    expect(over.echomq.message).toBe(`queue ${name} had 2 jobs fail in the last minute, over maxFailedPerMinute 1`);
  });

  it('is down within timeoutMs when a queue\'s Redis does not answer (a closed port)', async () => {
    const live = uniqueQueueName('health');
    const dead = uniqueQueueName('health');
    const port = await freePort(); // nothing listens there
    app = await startApp({
      imports: [
        EchoMQModule.forRoot({ connection: testConnection() }),
        EchoMQModule.forRoot('nowhere', { connection: `redis://127.0.0.1:${port}` }),
        EchoMQModule.registerQueue(live, { name: dead, configKey: 'nowhere' }),
        TerminusModule,
        EchoMQHealthModule,
      ],
    });
    const indicator = app.get(EchoMQHealthIndicator);
    const health = app.get(HealthCheckService);

    const started = Date.now();
    const result = await indicator.isHealthy('echomq', { timeoutMs: 300 });
    const took = Date.now() - started;
    expect(result.echomq.status).toBe('down');
    // Only the silent server is named, with ioredis's state (connecting, or reconnecting after a refusal).
    expect(result.echomq.message).toMatch(new RegExp(`^Redis did not answer within 300 ms \\(127\\.0\\.0\\.1:${port} (re)?connecting\\)$`));
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(1000);
    await expect(health.check([() => indicator.isHealthy('echomq', { timeoutMs: 300 })])).rejects.toBeInstanceOf(ServiceUnavailableException);

    // The live queue alone is up.
    expect((await indicator.isHealthy('echomq', { timeoutMs: 300, queues: [live] })).echomq.status).toBe('up');
  });

  // Its own redis-server, configured to evict: a CONFIG SET on the shared one would touch every test.
  singleNodeIt('is degraded when Redis may evict job keys (maxmemory-policy)', async () => {
    ownRedis = await startRedis({ args: ['--maxmemory-policy', 'allkeys-lru'] });
    const name = uniqueQueueName('health');
    app = await startApp({
      imports: [EchoMQModule.forRoot({ connection: ownRedis.url }), EchoMQModule.registerQueue(name), TerminusModule, EchoMQHealthModule],
    });
    const result = await app.get(EchoMQHealthIndicator).isHealthy('echomq', { timeoutMs: 2000 });
    expect(result.echomq.status).toBe('degraded');
    expect(result.echomq.message).toMatch(/maxmemory-policy is "allkeys-lru"/);
  });

  it('refuses bad options by name before asking Redis anything', async () => {
    const name = uniqueQueueName('health');
    const { indicator } = await healthApp([name]);
    const cases: Array<[unknown, RegExp]> = [
      [undefined, /isHealthy options/],
      [{}, /timeoutMs/],
      [{ timeoutMs: 0 }, /timeoutMs/],
      [{ timeoutMs: 100, maxWaiting: -1 }, /maxWaiting/],
      [{ timeoutMs: 100, maxFailedPerMinute: 1.5 }, /maxFailedPerMinute/],
      [{ timeoutMs: 100, queues: 'a' }, /queues/],
      [{ timeoutMs: 100, queues: [name, 'nope'] }, /queues\[1\].*"nope" is not a registered queue/],
      [{ timeoutMs: 100, overThreshold: 'up' }, /overThreshold/],
    ];
    for (const [options, field] of cases) {
      const error = await indicator.isHealthy('echomq', options as any).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(EchoMQOptionError);
      expect((error as Error).message).toMatch(field);
    }
  });
});

describe('the optional peers stay out of the core entry', () => {
  /** Every module specifier reachable from `entry` through the repository's own relative imports. */
  function reachableImports(entry: string): Set<string> {
    const seen = new Set<string>();
    const packages = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const source = readFileSync(file, 'utf8');
      // Static imports and re-exports (import type excluded: erased), and dynamic import().
      const specifiers = [...source.matchAll(/^\s*(?:import|export)\s+(?!type\b)[^'"]*?from\s+'([^']+)'/gm), ...source.matchAll(/import\(\s*'([^']+)'\s*\)/g), ...source.matchAll(/^import\s+'([^']+)'/gm)]
        .map((match) => match[1]);
      for (const specifier of specifiers) {
        if (specifier.startsWith('.')) visit(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
        else packages.add(specifier);
      }
    };
    visit(fileURLToPath(new URL(entry, import.meta.url)));
    return packages;
  }

  it('lib/index.ts never loads @nestjs/terminus or prom-client; the subpath entries do', () => {
    const core = reachableImports('../lib/index.ts');
    expect(core.has('@nestjs/common')).toBe(true); // the walk does reach the Nest files
    expect([...core].filter((name) => name.startsWith('@nestjs/terminus') || name.startsWith('prom-client'))).toEqual([]);
    expect(reachableImports('../lib/integrations/terminus/index.ts').has('@nestjs/terminus')).toBe(true);
    expect(reachableImports('../lib/integrations/prometheus/index.ts').has('prom-client')).toBe(true);
  });

  it('package.json has both subpaths in "exports" and both peers optional', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    expect(pkg.exports['./terminus']).toEqual({ import: { types: './dist/esm/terminus.d.ts', default: './dist/esm/terminus.js' }, default: { types: './dist/cjs/lib/integrations/terminus/index.d.ts', default: './dist/cjs/lib/integrations/terminus/index.js' } });
    expect(pkg.exports['./prometheus']).toEqual({ import: { types: './dist/esm/prometheus.d.ts', default: './dist/esm/prometheus.js' }, default: { types: './dist/cjs/lib/integrations/prometheus/index.d.ts', default: './dist/cjs/lib/integrations/prometheus/index.js' } });
    expect(pkg.peerDependenciesMeta).toMatchObject({ '@nestjs/terminus': { optional: true }, 'prom-client': { optional: true } });
  });
});
