import { Injectable } from '@nestjs/common';
import { EchoMQOptionError } from '../protocol/errors.js';
import { resolvePartitions } from '../protocol/partitions.js';
import { Queue } from '../runtime/queue/queue.js';
import { ConfigRegistry } from './config.registry.js';
import { DEFAULT_CONFIG_KEY } from './echomq.constants.js';
import type { QueueSettings } from './echomq.interfaces.js';
import { QUEUE_CONFIG_CONFLICT, QUEUE_PARTITIONS_CONFLICT } from './echomq.messages.js';

/** One Queue per name for the whole app, however many modules register it. */
@Injectable()
export class QueueRegistry {
  private readonly queues = new Map<string, { queue: Queue; configKey: string }>();

  constructor(private readonly configs: ConfigRegistry) {}

  /** The queue `name`, created on first registration on its configuration's shared connection. */
  register(name: string, configKey: string = DEFAULT_CONFIG_KEY, settings: Omit<QueueSettings, 'schedulers' | 'removeUndeclaredSchedulers'> = {}): Queue {
    const existing = this.queues.get(name);
    if (existing) {
      if (existing.configKey !== configKey) throw new Error(QUEUE_CONFIG_CONFLICT(name, existing.configKey, configKey));
      // The count decides where jobs go: two registrations that differ would depend on which module ran first.
      const partitions = resolvePartitions(settings.partitions);
      if (partitions !== existing.queue.partitions) {
        throw new EchoMQOptionError('partitions', QUEUE_PARTITIONS_CONFLICT(name, existing.queue.partitions, partitions));
      }
      return existing.queue;
    }
    const { options, client } = this.configs.get(configKey, `queue "${name}"`);
    const queue = new Queue(name, {
      connection: client,
      prefix: options.prefix,
      ...settings,
      defaultJobOptions: { ...options.defaultJobOptions, ...settings.defaultJobOptions },
      telemetry: settings.telemetry ?? options.telemetry,
    });
    this.queues.set(name, { queue, configKey });
    return queue;
  }

  /** The registered queue `name`, if any. */
  get(name: string): Queue | undefined {
    return this.queues.get(name)?.queue;
  }

  /** The registered queue `name` and its configuration key, if any. */
  registration(name: string): { queue: Queue; configKey: string } | undefined {
    return this.queues.get(name);
  }

  /** Every registered queue, by name, in registration order (a health check or a dashboard reads them all). */
  all(): ReadonlyMap<string, Queue> {
    return new Map([...this.queues].map(([name, { queue }]) => [name, queue]));
  }

  /** Closes every queue (their shared connections are closed by the ConfigRegistry). */
  async close(): Promise<void> {
    const queues = [...this.queues.values()];
    this.queues.clear();
    await Promise.all(queues.map(({ queue }) => queue.close()));
  }
}
