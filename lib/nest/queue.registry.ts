import { Injectable } from '@nestjs/common';
import { EchoMQOptionError } from '../protocol/errors.js';
import { resolvePartitions } from '../protocol/partitions.js';
import { Queue } from '../runtime/queue/queue.js';
import { ConfigRegistry } from './config.registry.js';
import { DEFAULT_CONFIG_KEY } from './echomq.constants.js';
import type { QueueSettings } from './echomq.interfaces.js';
import { QUEUE_CONFIG_CONFLICT, QUEUE_PARTITIONS_CONFLICT, QUEUE_TELEMETRY_CONFLICT } from './echomq.messages.js';

/** A registered queue, with what its registrations said of it that its worker needs. */
export interface QueueRegistration {
  queue: Queue;
  configKey: string;
  /**
   * The registration's own `telemetry`, as given: undefined (none given: the queue took its
   * configuration's), null (none at all) or a Telemetry. Its processor's worker takes it before
   * the configuration's `worker.telemetry`, which the queue's own `options.telemetry` cannot tell.
   */
  telemetry: QueueSettings['telemetry'];
}

/** One Queue per name for the whole app, however many modules register it. */
@Injectable()
export class QueueRegistry {
  private readonly queues = new Map<string, QueueRegistration>();

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
      // Which of two differing settings the queue took would depend on which module ran first, too.
      // A registration that gives none has no say (the @nestjs/bullmq habit: a name-only
      // registerQueue in each consumer module); one that gives what the queue already took agrees.
      if (!this.telemetryAgrees(existing, settings.telemetry)) {
        const [first, second] = telemetryLabels(existing.telemetry, settings.telemetry);
        throw new EchoMQOptionError('telemetry', QUEUE_TELEMETRY_CONFLICT(name, first, second));
      }
      return existing.queue;
    }
    const { options, client } = this.configs.get(configKey, `queue "${name}"`);
    const queue = new Queue(name, {
      connection: client,
      prefix: options.prefix,
      ...settings,
      defaultJobOptions: { ...options.defaultJobOptions, ...settings.defaultJobOptions },
      telemetry: settings.telemetry === null ? undefined : settings.telemetry ?? options.telemetry,
    });
    this.queues.set(name, { queue, configKey, telemetry: settings.telemetry });
    return queue;
  }

  /**
   * Whether a later registration's `telemetry` says what the queue has: none given (no say), the
   * same setting, or, after a first registration that gave none, the configuration's own (what the
   * queue took). The registration then keeps the explicit one for its worker's precedence.
   */
  private telemetryAgrees(existing: QueueRegistration, telemetry: QueueSettings['telemetry']): boolean {
    if (telemetry === undefined || telemetry === existing.telemetry) return true;
    if (existing.telemetry !== undefined) return false;
    const { options } = this.configs.get(existing.configKey, `queue "${existing.queue.name}"`);
    if (telemetry !== (options.telemetry ?? null)) return false;
    existing.telemetry = telemetry;
    return true;
  }

  /** The registered queue `name`, if any. */
  get(name: string): Queue | undefined {
    return this.queues.get(name)?.queue;
  }

  /** The registered queue `name`, its configuration key and its own telemetry setting, if any. */
  registration(name: string): QueueRegistration | undefined {
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

/** Two differing telemetry settings of one queue, as a refusal names them. */
function telemetryLabels(first: QueueSettings['telemetry'], second: QueueSettings['telemetry']): [string, string] {
  const label = (telemetry: QueueSettings['telemetry']) =>
    telemetry === undefined ? 'no telemetry given (the configuration\'s)' : telemetry === null ? 'telemetry: null (none)' : 'a telemetry';
  const [a, b] = [label(first), label(second)];
  return a === b ? ['a telemetry', 'another telemetry object'] : [a, b];
}
