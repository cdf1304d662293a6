import { DEFAULT_CONFIG_KEY } from './echomq.constants.js';

/** The injection token of a registered queue: use with @Inject, or @InjectQueue(name). */
export function getQueueToken(name: string): string {
  return `EchoMQQueue:${name}`;
}

/** The injection token of a root configuration's options (forRoot / forRootAsync). */
export function getConfigToken(configKey: string = DEFAULT_CONFIG_KEY): string {
  return `EchoMQConfig:${configKey}`;
}
