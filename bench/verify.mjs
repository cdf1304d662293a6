// The self-checks every run makes against Redis after its measured phase.
import { check } from './measure.mjs';

/** Checks the queue's lists and sets hold exactly what `expected` says ({ wait, active, completed, failed }). */
export async function verifyCounts(meter, system, queueName, expected) {
  const [wait, active, completed, failed] = await Promise.all([
    meter.llen(system.key(queueName, 'wait')),
    meter.llen(system.key(queueName, 'active')),
    meter.zcard(system.key(queueName, 'completed')),
    meter.zcard(system.key(queueName, 'failed')),
  ]);
  const found = { wait, active, completed, failed };
  for (const [state, count] of Object.entries(expected)) {
    check(found[state] === count, `${state} holds ${found[state]} jobs, expected ${count}`);
  }
}

/**
 * verifyCounts through an EchoMQ queue's own getJobCounts, which sums over every partition and
 * reaches each one's node on a Cluster.
 */
export async function verifyQueueCounts(queue, expected) {
  const found = await queue.getJobCounts(...Object.keys(expected));
  for (const [state, count] of Object.entries(expected)) {
    check(found[state] === count, `${state} holds ${found[state]} jobs, expected ${count}`);
  }
}

/** Checks a tally: every job ran, none twice. */
export function verifyTally(tally) {
  const { missing, duplicates } = tally.problems();
  check(missing === 0, `${missing} jobs never ran`);
  check(duplicates === 0, `${duplicates} jobs ran more than once`);
}

/** Checks that `ids` holds `count` distinct job ids. */
export function verifyIds(ids, count) {
  check(ids.length === count, `got ${ids.length} job ids, expected ${count}`);
  check(new Set(ids.map(String)).size === count, 'job ids repeat');
}
