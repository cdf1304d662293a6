// One worker process of test/cancel-job.test.ts: the BUILT library (its path is the first argument)
// running one Worker on the test Redis, as another process of an app would. It prints a line per
// thing the test watches, each with this process's clock (ms):
//   ready <worker id>            its worker runs
//   start <job id> <t>           a handler started
//   abort <job id> <t> <name>    a handler's signal aborted (the reason's class name)
//   failed <job id> <t> <message>, cancelled <job id> <by>, error <message>
// Handlers wait for their signal and never return on their own (options.ignoreSignal: they wait
// for ever, ignoring it). Closes its worker on SIGTERM (`closed`).
const [libPath, redisUrl, queueName, optionsJson] = process.argv.slice(2);
const { Worker } = await import(libPath);
const { ignoreSignal = false, ...options } = JSON.parse(optionsJson);

const worker = new Worker(queueName, (job, { signal }) => {
  console.log(`start ${job.id} ${Date.now()}`);
  if (ignoreSignal) return new Promise(() => undefined);
  return new Promise((_, reject) => signal.addEventListener('abort', () => {
    console.log(`abort ${job.id} ${Date.now()} ${signal.reason?.name}`);
    reject(signal.reason);
  }));
}, { connection: redisUrl, ...options });
worker.on('failed', (job, error) => console.log(`failed ${job.id} ${Date.now()} ${error.message}`));
worker.on('error', (error) => console.log(`error ${String(error?.message ?? error)}`));
worker.lockManager.cancelled$.subscribe((event) => console.log(`cancelled ${event.jobId} ${event.by}`));
worker.once('ready', () => console.log(`ready ${worker.id}`));

process.on('SIGTERM', () => {
  void worker.close(true).then(() => {
    console.log('closed');
    process.exit(0);
  });
});
