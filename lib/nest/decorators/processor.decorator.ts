import { Injectable, SetMetadata } from '@nestjs/common';
import { PROCESSOR_METADATA } from '../echomq.constants.js';
import type { ProcessorOptions } from '../echomq.interfaces.js';

/** Marks a provider class as the processor of a queue: `@Processor('mail')` or `@Processor({ name, concurrency, ... })`. */
export function Processor(queueOrOptions: string | ProcessorOptions): ClassDecorator {
  const options: ProcessorOptions = typeof queueOrOptions === 'string' ? { name: queueOrOptions } : { ...queueOrOptions };
  return (target) => {
    Injectable(options.scope === undefined ? undefined : { scope: options.scope })(target);
    SetMetadata(PROCESSOR_METADATA, options)(target);
  };
}
