// A child-queue worker process of test/chaos.test.ts's flows scenario: the BUILT library (its path
// is the first argument) running one Worker on the test Redis. Each handler sleeps a random
// 40 to 120 ms, then prints `finish <id>` as it returns, so that the test can aim a kill -9 at the
// moment the job is finished (finishFlowJob-8) and its notice is on its way to the parent.
const [libPath, redisUrl, queueName, optionsJson] = process.argv.slice(2);
const { Worker } = await import(libPath);
const options = JSON.parse(optionsJson);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const worker = new Worker(queueName, async (job) => {
  await sleep(40 + Math.floor(Math.random() * 80));
  process.stdout.write(`finish ${job.id}\n`);
  return { child: job.id, n: job.data.n };
}, { connection: redisUrl, ...options });
worker.on('error', (error) => console.log(`error ${String(error?.message ?? error)}`));
worker.once('ready', () => console.log(`ready ${worker.id}`));
