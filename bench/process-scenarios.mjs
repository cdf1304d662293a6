// Processing no-op jobs: one worker at concurrency 1 and 50, and 4 worker processes.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CheckFailed, measure } from './measure.mjs';
import { preload } from './add-scenarios.mjs';
import { Tally } from './tally.mjs';
import { verifyCounts, verifyTally } from './verify.mjs';

const CHILD = fileURLToPath(new URL('./worker-process.mjs', import.meta.url));
const PROCESSES = 4;
/** Each of the 4 processes runs this many jobs at once. */
const CHILD_CONCURRENCY = 10;

function oneWorker(concurrency, sizeOf) {
  return {
    name: `process, concurrency ${concurrency}`,
    size: sizeOf,
    async run(system, ctx) {
      const total = sizeOf(ctx.sizes);
      const name = ctx.queueName();
      const queue = system.queue(name, ctx.url);
      const tally = new Tally(total);
      const worker = system.worker(name, ctx.url, async (job) => { tally.ran(job.data.i); }, concurrency);
      worker.on('completed', () => tally.completed());
      worker.on('error', (error) => console.error(`${system.name} worker error:`, error.message));
      let closed = false;
      try {
        await preload(queue, total);
        await system.ready(worker);
        const figures = await measure(ctx.meter, total, async () => {
          void worker.run();
          await tally.whenDone(ctx.timeoutMs);
        });
        await worker.close();
        closed = true;
        verifyTally(tally);
        await verifyCounts(ctx.meter, system, name, { wait: 0, active: 0, completed: total });
        return figures;
      } finally {
        if (!closed) await worker.close(true);
        await queue.close();
      }
    },
  };
}

/** One worker, one job at a time: the round trip per job is the cost. */
export const processConcurrency1 = oneWorker(1, (sizes) => sizes.process1);
/** One worker, 50 jobs at a time. */
export const processConcurrency50 = oneWorker(50, (sizes) => sizes.process50);

/** Starts a worker child process and resolves when its worker is connected. */
function startChild(systemId, name, url) {
  const child = fork(CHILD, [systemId, name, url, String(CHILD_CONCURRENCY)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  child.finished = 0;
  child.cpuMicros = 0;
  child.exited = new Promise((resolve) => child.once('exit', resolve));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new CheckFailed(`worker process exited early (code ${code})`)));
    child.on('message', function onReady(message) {
      if (message.type !== 'ready') return;
      child.off('message', onReady);
      resolve(child);
    });
  });
}

/** Asks a child to close its worker; resolves with the job numbers its handler ran. */
function stopChild(child) {
  return new Promise((resolve) => {
    child.on('message', (message) => { if (message.type === 'result') resolve(message.ran); });
    child.send({ type: 'stop' });
  });
}

/** 4 worker processes (child processes) on one queue; Node CPU is theirs, summed. */
export const processFourProcesses = {
  name: `process, ${PROCESSES} processes x ${CHILD_CONCURRENCY}`,
  size: (sizes) => sizes.processes4,
  async run(system, ctx) {
    const total = ctx.sizes.processes4;
    const name = ctx.queueName();
    const queue = system.queue(name, ctx.url);
    const children = [];
    try {
      await preload(queue, total);
      for (let i = 0; i < PROCESSES; i++) children.push(await startChild(system.id, name, ctx.url));
      let finished = 0;
      let resolveDone;
      const done = new Promise((resolve) => (resolveDone = resolve));
      for (const child of children) {
        child.on('message', (message) => {
          if (message.type !== 'progress') return;
          finished += message.finished - child.finished;
          child.finished = message.finished;
          child.cpuMicros = message.cpuMicros;
          if (finished >= total) resolveDone();
        });
      }
      const figures = await measure(ctx.meter, total, async () => {
        for (const child of children) child.send({ type: 'start' });
        let timer;
        await Promise.race([done, new Promise((_, reject) => {
          timer = setTimeout(() => reject(new CheckFailed(`only ${finished} of ${total} jobs finished in ${ctx.timeoutMs} ms`)), ctx.timeoutMs);
        })]).finally(() => clearTimeout(timer));
        return { nodeCpuMicros: children.reduce((sum, child) => sum + child.cpuMicros, 0) };
      });
      const tally = new Tally(total);
      for (const child of children) for (const i of await stopChild(child)) tally.ran(i);
      verifyTally(tally);
      await verifyCounts(ctx.meter, system, name, { wait: 0, active: 0, completed: total });
      return figures;
    } finally {
      for (const child of children) if (child.exitCode === null) child.kill();
      await Promise.all(children.map((child) => child.exited));
      await queue.close();
    }
  },
};
