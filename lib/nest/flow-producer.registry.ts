import { Injectable } from '@nestjs/common';
import { FlowProducer } from '../runtime/flows/flow-producer.js';
import { ConfigRegistry } from './config.registry.js';
import { DEFAULT_CONFIG_KEY } from './echomq.constants.js';
import type { FlowProducerSettings } from './echomq.interfaces.js';
import { FLOW_PRODUCER_CONFIG_CONFLICT, FLOW_PRODUCER_CONNECTION } from './echomq.messages.js';

/**
 * One FlowProducer per name for the whole app, however many modules register it, on its
 * configuration's shared connection. Closed on shutdown after the workers drained (a running job
 * may still add a flow), before the shared connections.
 */
@Injectable()
export class FlowProducerRegistry {
  private readonly producers = new Map<string, { producer: FlowProducer; configKey: string }>();

  constructor(private readonly configs: ConfigRegistry) {}

  /** The flow producer `name`, created on first registration. */
  register(name: string, configKey: string = DEFAULT_CONFIG_KEY, settings: FlowProducerSettings = {}): FlowProducer {
    const existing = this.producers.get(name);
    if (existing) {
      if (existing.configKey !== configKey) throw new Error(FLOW_PRODUCER_CONFIG_CONFLICT(name, existing.configKey, configKey));
      return existing.producer;
    }
    // Options from a factory are not typed at run time: a connection here would bypass the configuration's.
    if ((settings as { connection?: unknown }).connection !== undefined) throw new Error(FLOW_PRODUCER_CONNECTION(name));
    const { options, client } = this.configs.get(configKey, `flow producer "${name}"`);
    const telemetry = settings.telemetry === null ? undefined : settings.telemetry ?? options.telemetry;
    const producer = new FlowProducer({ prefix: options.prefix, ...settings, telemetry, connection: client });
    this.producers.set(name, { producer, configKey });
    return producer;
  }

  /** Closes every flow producer (their shared connections are closed by the ConfigRegistry). */
  async close(): Promise<void> {
    const producers = [...this.producers.values()];
    this.producers.clear();
    await Promise.all(producers.map(({ producer }) => producer.close()));
  }
}
