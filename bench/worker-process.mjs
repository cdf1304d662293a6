// A worker in a process of its own, for the multi-process scenarios. argv: system id, queue, url,
// concurrency. It tells its parent `ready`, runs on `start`, reports `progress` (jobs finished and
// its CPU since start, at most once per event-loop turn) and on `stop` closes and sends `result`.
import { systemById } from './systems.mjs';

const [systemName, queueName, url, concurrency] = process.argv.slice(2);
const system = systemById(systemName);
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

await system.ready(worker);
process.send({ type: 'ready' });
