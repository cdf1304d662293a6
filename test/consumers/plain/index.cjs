// A plain Node CommonJS process: it requires the package and each subpath, checks that import()
// reaches the same copy of it, and runs one job through a Queue and a Worker.
const assert = require('node:assert/strict');
const echomq = require('@echomq/nestjs');

const SUBPATHS = ['internal', 'bull-board', 'terminus', 'prometheus', 'otel'];

async function main() {
  const loaded = { '.': Object.keys(echomq).length };
  for (const subpath of SUBPATHS) loaded[subpath] = Object.keys(require(`@echomq/nestjs/${subpath}`)).length;

  // One copy, however it is loaded: the same classes through require() and import().
  const imported = await import('@echomq/nestjs');
  assert.equal(imported.Queue, echomq.Queue);
  assert.equal(imported.EchoMQError, echomq.EchoMQError);
  assert.equal((await import('@echomq/nestjs/terminus')).EchoMQHealthIndicator, require('@echomq/nestjs/terminus').EchoMQHealthIndicator);

  const options = { connection: process.env.REDIS_URL, prefix: process.env.ECHOMQ_PREFIX };
  const queue = new echomq.Queue('plain', options);
  const events = new echomq.QueueEvents('plain', options);
  const worker = new echomq.Worker('plain', async (job) => job.data.n * 2, options);
  try {
    const job = await queue.add('double', { n: 21 });
    const result = await job.waitUntilFinished(events, 20_000);
    console.log(JSON.stringify({ loaded, result }));
  } finally {
    await worker.close();
    await events.close();
    await queue.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
