// One worker process of test/limits-processes.test.ts: the BUILT library (its path is the first
// argument) running one Worker on the test Redis, as a separate process of an app would. It prints
// `ready <worker id>` once its worker runs and closes it on SIGTERM (`closed`); a SIGKILL leaves
// its registry entry behind to expire. Every handler sleeps `workMs`.
const [libPath, redisUrl, queueName, optionsJson] = process.argv.slice(2);
const { Worker } = await import(libPath);
const { workMs = 10, ...options } = JSON.parse(optionsJson);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const worker = new Worker(queueName, async () => {
  await sleep(workMs);
  return 'ok';
}, { connection: redisUrl, ...options });
// A worker error is the test's business: print it, the test reads stdout.
worker.on('error', (error) => console.log(`error ${String(error?.message ?? error)}`));
worker.once('ready', () => console.log(`ready ${worker.id}`));

process.on('SIGTERM', () => {
  void worker.close().then(() => {
    console.log('closed');
    process.exit(0);
  });
});
