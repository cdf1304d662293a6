// One "app instance" of the job scheduler scenario: a child process of the harness that, like an
// app at boot, calls upsertJobScheduler with the same arguments as its siblings, at the moments the
// harness sends it once it is connected (the first one shared by all instances, to the
// millisecond), on a Queue of the BUILT library. Each call is written to its ledger: when it ran
// and the job it answered.
import { appendFileSync } from 'node:fs';

const config = JSON.parse(process.argv[2]);
const { Queue } = await import(config.libPath);

function record(fields) {
  appendFileSync(config.ledgerFile, JSON.stringify({ app: config.name, t: Date.now(), ...fields }) + '\n');
}

const queue = new Queue(config.queue, { connection: config.redisUrl });
await queue.client.ping(); // connected before the shared moment, as a booted app is
const plan = new Promise((resolve) => process.once('message', resolve));
process.send('ready');
const { upsertAt } = await plan;
try {
  for (const at of upsertAt) {
    // A timer to just before the moment, then a spin to it: the instances call at the same millisecond.
    if (at - Date.now() > 5) await new Promise((resolve) => setTimeout(resolve, at - Date.now() - 5));
    while (Date.now() < at);
    const job = await queue.upsertJobScheduler(config.schedulerId, config.repeat, config.template);
    record({ type: 'upsert', at, job: job?.id ?? null });
  }
} catch (error) {
  record({ type: 'crash', error: String(error?.stack ?? error) });
  process.exitCode = 1;
} finally {
  await queue.close();
  process.disconnect(); // the IPC channel would keep this process alive
}
