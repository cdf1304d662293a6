import { PROCESS_METADATA } from '../echomq.constants.js';

/**
 * Marks a processor method as the handler of a job name (`@Process('resize')`), or as the default
 * handler for every name without its own (`@Process()`). Stack it to handle several names.
 * The method gets `(job, { token, signal })` and its return value is the job's result.
 */
export function Process(jobName?: string): MethodDecorator {
  return (_target, _key, descriptor) => {
    appendMetadata(PROCESS_METADATA, descriptor.value as object, jobName);
    return descriptor;
  };
}

/** Adds a value to a list kept as metadata on a method, so stacked decorators all count. */
export function appendMetadata<T>(key: string, method: object, value: T): void {
  const list: T[] = Reflect.getMetadata(key, method) ?? [];
  Reflect.defineMetadata(key, [...list, value], method);
}
