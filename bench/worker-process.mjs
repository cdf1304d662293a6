// A worker in a process of its own, for the multi-process scenarios. argv: system id, queue, url,
// concurrency, and warm-up jobs (optional, 0 by default). It warms up first (below), tells its
// parent `ready`, runs on `start`, reports `progress` (jobs finished and its CPU since start, at
// most once per event-loop turn) and on `stop` closes and sends `result`.
import { preload } from './add-scenarios.mjs';
import { systemById } from './systems.mjs';

const [systemName, queueName, url, concurrency, warmJobs = '0'] = process.argv.slice(2);
const system = systemById(systemName);

/**
 * Runs `count` no-op jobs through a worker of its own on a queue of its own (the timed queue's name
 * + "-warm"), untimed, then closes both. A fresh process runs its first thousands of jobs in code
 * V8 has not optimized yet, and compiles it on the way, on the same two cores: in a timed run of
 * 2,500 jobs a process, that start-up was about 30% of each system's Node CPU a job
 * (bench/README.md, "4 processes x 10: warm workers"). Workers run for hours; the timed phase then
 * measures them as they run after their start.
 */
async function warmUp(count) {
  const name = `${queueName}-warm`;
  const queue = system.queue(name, url);
  const worker = system.worker(name, url, async () => undefined, Number(concurrency));
  worker.on('error', (error) => console.error(`${system.name} warm-up worker error:`, error.message));
  let done = 0;
  const finished = new Promise((resolve) => worker.on('completed', () => { if (++done === count) resolve(); }));
  await preload(queue, count);
  void worker.run();
  await finished;
  await worker.close();
  await queue.close();
}

const ran = [];
let finished = 0;
let cpuAtStart;
let reportPending = false;

const worker = system.worker(queueName, url, async (job) => { ran.push(job.data.i); }, Number(concurrency));
worker.on('error', (error) => console.error(`${system.name} worker process error:`, error.message));
worker.on('completed', () => {
  finished++;
  if (reportPending) return;
  reportPending = true;
  setImmediate(() => {
    reportPending = false;
    const cpu = process.cpuUsage(cpuAtStart);
    process.send({ type: 'progress', finished, cpuMicros: cpu.user + cpu.system });
  });
});

// The parent gone (killed, or stopped by a signal), nobody will send `stop`: do not outlive it.
process.on('disconnect', () => process.exit(1));

process.on('message', async (message) => {
  if (message.type === 'start') {
    cpuAtStart = process.cpuUsage();
    void worker.run();
  } else if (message.type === 'stop') {
    await worker.close();
    system.disconnect?.();
    process.send({ type: 'result', ran }, () => process.exit(0));
  }
});

if (Number(warmJobs) > 0) await warmUp(Number(warmJobs));
await system.ready(worker);
process.send({ type: 'ready' });
