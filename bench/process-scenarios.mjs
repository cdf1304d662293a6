// Processing no-op jobs: one worker at concurrency 1 and 50, and 4 worker processes.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CheckFailed, measure } from './measure.mjs';
import { preload } from './add-scenarios.mjs';
import { Tally } from './tally.mjs';
import { verifyCounts, verifyTally } from './verify.mjs';

const CHILD = fileURLToPath(new URL('./worker-process.mjs', import.meta.url));
export const PROCESSES = 4;
/** Each of the 4 processes runs this many jobs at once. */
export const CHILD_CONCURRENCY = 10;
/**
 * Jobs each of the 4 processes runs untimed, on a queue of its own, before the timed phase
 * (worker-process.mjs, warmUp): by then both systems' CPU a job has settled (bench/README.md,
 * "4 processes x 10: warm workers").
 */
export const CHILD_WARM_JOBS = 2000;

/**
 * What a finished job leaves behind, the retention matrix of the processing scenarios: keep all
 * (the default of both), removeOnComplete: true (what most production queues set) and a bounded
 * history. Each is a job option of both systems, given at the add; `completed` is what the
 * completed set holds after `total` jobs.
 */
export const RETENTIONS = [
  { label: '', opts: undefined, completed: (total) => total },
  { label: ', removeOnComplete: true', opts: { removeOnComplete: true }, completed: () => 0 },
  { label: ', removeOnComplete: { count: 1000 }', opts: { removeOnComplete: { count: 1000 } }, completed: (total) => Math.min(total, 1000) },
];

function oneWorker(concurrency, sizeOf, retention = RETENTIONS[0], prefetch = 0) {
  return {
    name: `process, concurrency ${concurrency}${prefetch ? `, EchoMQ prefetch ${prefetch}` : ''}${retention.label}`,
    size: sizeOf,
    async run(system, ctx) {
      const total = sizeOf(ctx.sizes);
      const name = ctx.queueName();
      const queue = system.queue(name, ctx.url);
      const tally = new Tally(total);
      const worker = system.worker(name, ctx.url, async (job) => { tally.ran(job.data.i); }, concurrency, prefetch);
      worker.on('completed', () => tally.completed());
      worker.on('error', (error) => console.error(`${system.name} worker error:`, error.message));
      let closed = false;
      try {
        await preload(queue, total, retention.opts);
        await system.ready(worker);
        const figures = await measure(ctx.meter, total, async () => {
          void worker.run();
          await tally.whenDone(ctx.timeoutMs);
        });
        await worker.close();
        closed = true;
        verifyTally(tally);
        await verifyCounts(ctx.meter, system, name, { wait: 0, active: 0, completed: retention.completed(total) });
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
/**
 * EchoMQ's opt-in prefetch (docs/prefetch.md) at concurrency 1, in each retention setting: one
 * handler at a time, one more job held locked. BullMQ, which has no such option, runs at
 * concurrency 1 as in the row above: the row says what the option buys against BullMQ's best at
 * one job at a time.
 */
export const processConcurrency1Prefetch = RETENTIONS.map((retention) => oneWorker(1, (sizes) => sizes.process1, retention, 1));
/** One worker, 50 jobs at a time. */
export const processConcurrency50 = oneWorker(50, (sizes) => sizes.process50);
/** The same two with each other retention setting. */
export const processWithRetention = RETENTIONS.slice(1).flatMap((retention) => [
  oneWorker(1, (sizes) => sizes.process1, retention),
  oneWorker(50, (sizes) => sizes.process50, retention),
]);

/** Starts a worker child process; resolves once it ran its warm-up (warmJobs) and its worker is connected. */
function startChild(systemId, name, url, concurrency, warmJobs) {
  const child = fork(CHILD, [systemId, name, url, String(concurrency), String(warmJobs)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
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

/**
 * `count` worker processes on one queue, each one worker at `concurrency`: start() forks them and
 * waits until each has run `warmJobs` jobs of its own untimed (0: none) and is connected;
 * run(total, timeoutMs) lets them work until `total` jobs finished and answers { nodeCpuMicros }
 * (theirs, summed: what measure() takes); stop(tally) closes their workers and tallies what their
 * handlers ran; kill() ends any left (for a finally).
 */
export class WorkerProcesses {
  constructor(systemId, name, url, count, concurrency, warmJobs = 0) {
    Object.assign(this, { systemId, name, url, count, concurrency, warmJobs });
    this.children = [];
  }

  async start() {
    for (let i = 0; i < this.count; i++) this.children.push(await startChild(this.systemId, this.name, this.url, this.concurrency, this.warmJobs));
  }

  async run(total, timeoutMs) {
    let finished = 0;
    let resolveDone;
    const done = new Promise((resolve) => (resolveDone = resolve));
    for (const child of this.children) {
      child.on('message', (message) => {
        if (message.type !== 'progress') return;
        finished += message.finished - child.finished;
        child.finished = message.finished;
        child.cpuMicros = message.cpuMicros;
        if (finished >= total) resolveDone();
      });
    }
    for (const child of this.children) child.send({ type: 'start' });
    let timer;
    await Promise.race([done, new Promise((_, reject) => {
      timer = setTimeout(() => reject(new CheckFailed(`only ${finished} of ${total} jobs finished in ${timeoutMs} ms`)), timeoutMs);
    })]).finally(() => clearTimeout(timer));
    return { nodeCpuMicros: this.children.reduce((sum, child) => sum + child.cpuMicros, 0) };
  }

  async stop(tally) {
    for (const child of this.children) for (const i of await stopChild(child)) tally.ran(i);
  }

  async kill() {
    for (const child of this.children) if (child.exitCode === null) child.kill();
    await Promise.all(this.children.map((child) => child.exited));
  }
}

/** 4 worker processes (child processes) on one queue; Node CPU is theirs, summed. */
function fourProcesses(retention = RETENTIONS[0]) {
  return {
    name: `process, ${PROCESSES} processes x ${CHILD_CONCURRENCY}${retention.label}`,
    size: (sizes) => sizes.processes4,
    async run(system, ctx) {
      const total = ctx.sizes.processes4;
      const name = ctx.queueName();
      const queue = system.queue(name, ctx.url);
      const workers = new WorkerProcesses(system.id, name, ctx.url, PROCESSES, CHILD_CONCURRENCY, CHILD_WARM_JOBS);
      try {
        await preload(queue, total, retention.opts);
        await workers.start();
        const figures = await measure(ctx.meter, total, () => workers.run(total, ctx.timeoutMs));
        const tally = new Tally(total);
        await workers.stop(tally);
        verifyTally(tally);
        await verifyCounts(ctx.meter, system, name, { wait: 0, active: 0, completed: retention.completed(total) });
        return figures;
      } finally {
        await workers.kill();
        await queue.close();
      }
    },
  };
}
export const processFourProcesses = fourProcesses();
export const processFourProcessesWithRetention = RETENTIONS.slice(1).map(fourProcesses);
