import { DEFAULT_CONFIG_KEY, DEFAULT_FLOW_PRODUCER } from './echomq.constants.js';

/** The injection token of a registered queue: use with @Inject, or @InjectQueue(name). */
export function getQueueToken(name: string): string {
  return `EchoMQQueue:${name}`;
}

/** The injection token of a registered FlowProducer: use with @Inject, or @InjectFlowProducer(name). */
export function getFlowProducerToken(name: string = DEFAULT_FLOW_PRODUCER): string {
  return `EchoMQFlowProducer:${name}`;
}

/** The injection token of a root configuration's options (forRoot / forRootAsync). */
export function getConfigToken(configKey: string = DEFAULT_CONFIG_KEY): string {
  return `EchoMQConfig:${configKey}`;
}
