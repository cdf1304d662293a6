import { Inject } from '@nestjs/common';
import { getFlowProducerToken } from '../echomq.tokens.js';

/** Injects the FlowProducer registered under this name (EchoMQModule.registerFlowProducer); default `default`. */
export function InjectFlowProducer(name?: string): PropertyDecorator & ParameterDecorator {
  return Inject(getFlowProducerToken(name));
}
