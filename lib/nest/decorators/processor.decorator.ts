import { Injectable, SetMetadata } from '@nestjs/common';
import { PROCESSOR_METADATA } from '../echomq.constants.js';
import type { ProcessorOptions, WorkerDefaults } from '../echomq.interfaces.js';

/**
 * Marks a provider class as the processor of a queue: `@Processor('mail')`, `@Processor({ name,
 * concurrency, ... })`, or @nestjs/bullmq's positional form `@Processor('mail', { concurrency: 5 })`
 * (its worker options second, over the first argument's).
 */
export function Processor(queueOrOptions: string | ProcessorOptions, workerOptions?: WorkerDefaults): ClassDecorator {
  const named: ProcessorOptions = typeof queueOrOptions === 'string' ? { name: queueOrOptions } : { ...queueOrOptions };
  const options: ProcessorOptions = workerOptions === undefined ? named : { ...named, ...workerOptions };
  return (target) => {
    Injectable(options.scope === undefined ? undefined : { scope: options.scope })(target);
    SetMetadata(PROCESSOR_METADATA, options)(target);
  };
}
