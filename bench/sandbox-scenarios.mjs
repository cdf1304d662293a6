// Sandboxed processors: no-op jobs through a processor file, EchoMQ's sandboxes against BullMQ's,
// in worker threads and in child processes, one worker at concurrency 8.
import { fileURLToPath } from 'node:url';
import { preload } from './add-scenarios.mjs';
import { measure } from './measure.mjs';
import { Tally } from './tally.mjs';
import { verifyCounts, verifyTally } from './verify.mjs';

const FILE = fileURLToPath(new URL('./sandbox-noop.mjs', import.meta.url));
const CONCURRENCY = 8;
/** Jobs run before the timed phase: every sandbox started (both pools start theirs on demand), and warm. */
const WARM = 8 * CONCURRENCY;

function sandboxed(useWorkerThreads) {
  return {
    name: `sandboxed no-op, concurrency ${CONCURRENCY}, ${useWorkerThreads ? 'worker threads' : 'child processes'}`,
    size: (sizes) => sizes.sandboxed,
    // The handler runs in other threads or processes: this process's CPU would not be the cost.
    figures: [['jobsPerSec', 'jobs/s'], ['redisCpuUsPerJob', 'Redis CPU µs/job'], ['commandsPerJob', 'Redis commands/job']],
    async run(system, ctx) {
      const total = ctx.sizes.sandboxed;
      const name = ctx.queueName();
      const queue = system.queue(name, ctx.url);
      const warm = new Tally(WARM);
      const tally = new Tally(total);
      const worker = system.sandboxWorker(name, ctx.url, FILE, CONCURRENCY, useWorkerThreads);
      worker.on('completed', (_job, i) => {
        if (i < WARM) {
          warm.ran(i);
          warm.completed();
        } else {
          tally.ran(i - WARM);
          tally.completed();
        }
      });
      worker.on('error', (error) => console.error(`${system.name} worker error:`, error.message));
      worker.on('failed', (job, error) => console.error(`${system.name} job ${job?.id} failed:`, error.message));
      let closed = false;
      try {
        await preload(queue, WARM + total);
        await system.ready(worker);
        void worker.run();
        await warm.whenDone(ctx.timeoutMs);
        const figures = await measure(ctx.meter, total, () => tally.whenDone(ctx.timeoutMs));
        await worker.close();
        closed = true;
        verifyTally(warm);
        verifyTally(tally);
        await verifyCounts(ctx.meter, system, name, { wait: 0, active: 0, completed: WARM + total });
        return figures;
      } finally {
        if (!closed) await worker.close(true);
        await queue.close();
      }
    },
  };
}

export const sandboxedThreads = sandboxed(true);
export const sandboxedProcesses = sandboxed(false);
