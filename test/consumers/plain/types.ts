// Type-checked, never run: each entry's types as an app sees them. tsc compiles this file under
// module commonjs, node16, nodenext (this app's package is CommonJS, so it is a CommonJS file there)
// and bundler, and its copy types.mts (apps.test.mjs writes it) as an ES module under node16 and nodenext.
import { EchoMQError, Queue, Worker, type Job, type JobOptions } from '@echomq/nestjs';
import { Scripts } from '@echomq/nestjs/internal';
import { EchoMQAdapter } from '@echomq/nestjs/bull-board';
import { EchoMQHealthIndicator } from '@echomq/nestjs/terminus';
import { collectLockMetrics } from '@echomq/nestjs/prometheus';
import { EchoMQOtel } from '@echomq/nestjs/otel';

const options: JobOptions = { attempts: 3, backoff: { type: 'exponential', delay: 100 } };
export async function typed(queue: Queue<{ n: number }>): Promise<Job<{ n: number }>> {
  return queue.add('double', { n: 1 }, options);
}
export const worker = (connection: string) => new Worker<{ n: number }>('q', async (job) => job.data.n * 2, { connection });
export const error: typeof EchoMQError = EchoMQError;
export const entries = [Scripts, EchoMQAdapter, EchoMQHealthIndicator, collectLockMetrics, EchoMQOtel] as const;
// @ts-expect-error: a name the package does not export fails to compile, so the types are really read
export { NotAnExport } from '@echomq/nestjs';
