import { Inject } from '@nestjs/common';
import { getQueueToken } from '../echomq.tokens.js';

/** Injects the Queue registered under this name (EchoMQModule.registerQueue). */
export function InjectQueue(name: string): PropertyDecorator & ParameterDecorator {
  return Inject(getQueueToken(name));
}
