import { Injectable } from '@nestjs/common';
import { Cluster } from 'ioredis';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { EchoMQOptionError } from '../../protocol/errors.js';
import type { RedisClient } from '../../protocol/script.js';
import type { Queue } from '../../runtime/queue/queue.js';
import { evictionPolicyWarning, redisVersionProblem } from '../../runtime/core/redis-health.js';
import { withinMs } from '../../runtime/core/within-ms.js';
import { QueueRegistry } from '../../nest/queue.registry.js';
import { checkHealthOptions, type EchoMQHealthOptions } from './health-options.js';
import { readQueueHealth, type QueueHealth } from './queue-health.js';

/** What one check found: the worst status, why, and what it read. */
interface Findings {
  status: 'up' | 'degraded' | 'down';
  problems: string[];
  queues: Record<string, QueueHealth>;
}

/**
 * A @nestjs/terminus health indicator for the app's EchoMQ queues:
 * `() => echomq.isHealthy('queues', { timeoutMs: 1000, maxWaiting: 10_000 })` in a HealthCheckService.check list.
 *
 * down: a Redis did not answer within timeoutMs, answered with an error, or runs a version the
 * scripts cannot run on. degraded (or down, with overThreshold 'down'): a queue's backlog passes
 * maxWaiting or its failures of the last minute pass maxFailedPerMinute; degraded also when a
 * Redis's maxmemory-policy may evict job keys. The details carry every queue's counts, paused
 * state and live workers. It reads on the registered queues' own connections and opens none.
 */
@Injectable()
export class EchoMQHealthIndicator {
  /** One PING in flight per connection: checks that come while Redis is away do not pile up on it. */
  private readonly pings = new WeakMap<RedisClient, Promise<unknown>>();

  constructor(
    private readonly health: HealthIndicatorService,
    private readonly registry: QueueRegistry,
  ) {}

  async isHealthy<const Key extends string>(key: Key, options: EchoMQHealthOptions): Promise<HealthIndicatorResult<Key>> {
    const checked = checkHealthOptions(options);
    const queues = this.pick(checked.queues);
    const session = this.health.check(key);
    const findings = await this.inspect(queues, checked);
    const details = { queues: findings.queues, ...(findings.problems.length > 0 ? { message: findings.problems.join('; ') } : {}) };
    if (findings.status === 'down') return session.down(details);
    if (findings.status === 'degraded') return session.degraded(details);
    return session.up(details);
  }

  /** The queues named (each must be registered), or every registered queue. */
  private pick(names: string[] | undefined): Map<string, Queue> {
    const registered = this.registry.all();
    if (names === undefined) return new Map(registered);
    return new Map(names.map((name, i) => {
      const queue = registered.get(name);
      if (!queue) throw new EchoMQOptionError(`queues[${i}]`, `"${name}" is not a registered queue (EchoMQModule.registerQueue); registered: ${[...registered.keys()].join(', ') || 'none'}`);
      return [name, queue];
    }));
  }

  private async inspect(queues: Map<string, Queue>, options: ReturnType<typeof checkHealthOptions>): Promise<Findings> {
    const deadline = Date.now() + options.timeoutMs;
    const clients = [...new Set([...queues.values()].map((queue) => queue.client))];
    const findings: Findings = { status: 'up', problems: [], queues: {} };
    const down = (problem: string): Findings => ({ ...findings, status: 'down', problems: [...findings.problems, problem] });
    try {
      // A PING first, so a Redis that is away gets one command per check, not the whole read.
      const silent = new Set(clients);
      const pings = clients.map((client) => this.ping(client).then(() => silent.delete(client)));
      const answered = await withinMs(Promise.all(pings), options.timeoutMs);
      if (answered === undefined) return down(`Redis did not answer within ${options.timeoutMs} ms (${[...silent].map(describeClient).join(', ')})`);
      const read = await withinMs(this.read(clients, queues, options.maxFailedPerMinute !== undefined), Math.max(1, deadline - Date.now()));
      if (read === undefined) return down(`Redis did not answer the health reads within ${options.timeoutMs} ms`);
      findings.queues = read.queues;
      if (read.tooOld.length > 0) return down(read.tooOld.join('; '));
      const raise = (to: 'degraded' | 'down', problem: string) => {
        findings.problems.push(problem);
        if (findings.status !== 'down') findings.status = to;
      };
      for (const warning of read.eviction) raise('degraded', warning);
      for (const [name, health] of Object.entries(read.queues)) {
        if (options.maxWaiting !== undefined && health.waiting > options.maxWaiting) {
          raise(options.overThreshold, `queue ${name} has ${health.waiting} jobs waiting, over maxWaiting ${options.maxWaiting}`);
        }
        const failed = health.failedLastMinute;
        if (options.maxFailedPerMinute !== undefined && failed !== undefined && failed > options.maxFailedPerMinute) {
          raise(options.overThreshold, `queue ${name} had ${failed} jobs fail in the last minute, over maxFailedPerMinute ${options.maxFailedPerMinute}`);
        }
      }
      return findings;
    } catch (error) {
      return down(`Redis answered with an error: ${(error as Error).message}`);
    }
  }

  /** Every server-wide check per connection, and every queue's state, at once. */
  private async read(clients: RedisClient[], queues: Map<string, Queue>, countFailures: boolean) {
    const [versions, evictions, states] = await Promise.all([
      Promise.all(clients.map((client) => redisVersionProblem(client))),
      Promise.all(clients.map((client) => evictionPolicyWarning(client))),
      Promise.all([...queues].map(async ([name, queue]) => [name, await readQueueHealth(queue, countFailures)] as const)),
    ]);
    return {
      tooOld: versions.filter((problem): problem is string => problem !== undefined),
      eviction: [...new Set(evictions.filter((warning): warning is string => warning !== undefined))],
      queues: Object.fromEntries(states),
    };
  }

  private ping(client: RedisClient): Promise<unknown> {
    const pending = this.pings.get(client);
    if (pending) return pending;
    const ping = client.ping().finally(() => this.pings.delete(client));
    this.pings.set(client, ping);
    return ping;
  }
}

/** Where a connection goes and its state as ioredis names it: `127.0.0.1:6390 reconnecting`. */
function describeClient(client: RedisClient): string {
  const where = client instanceof Cluster ? 'cluster' : client.options.path ?? `${client.options.host}:${client.options.port}`;
  return `${where} ${client.status}`;
}
