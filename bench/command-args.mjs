// node bench/command-args.mjs: what building one EVALSHA command costs Node, ioredis's way and
// EchoMQ's (lib/protocol/script-command.ts), for the argument counts of a lone finish
// (moveToFinished-14), a finishJobs-13 call of 25 jobs and an addJobs-9 call of 1,000 jobs. No
// Redis: the command is built, not sent (both write the same RESP text, checked first; writing it
// costs both the same and is left out). ioredis's command methods
// hand their arguments to `new Command(name, args)`, whose constructor copies them with
// Array.prototype.flat(); EchoMQ builds the Command without arguments and sets them in place.
import { Command } from 'ioredis';
import { evalshaCommand } from '../dist/lib/protocol/script-command.js';

const SHA = 'f'.repeat(40);
const ROWS = [['a lone finish (moveToFinished-14)', 14, 16], ['finishJobs-13, 25 jobs', 13, 6 + 9 * 25], ['addJobs-9, 1,000 jobs', 9, 2 + 7 * 1000]];

function argsOf(count) {
  return Array.from({ length: count }, (_, i) => (i % 3 === 0 ? String(Date.now() + i) : `field-${i}-value`));
}

/** Microseconds a command built, the median of 9 rounds. */
function time(build, keys, args) {
  const calls = Math.max(200, Math.round(2_000_000 / (keys.length + args.length)));
  const rounds = [];
  for (let round = 0; round < 10; round++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) build(keys, args);
    if (round > 0) rounds.push(Number(process.hrtime.bigint() - started) / 1000 / calls); // the first warms up
  }
  return rounds.sort((a, b) => a - b)[4];
}

const byIoredis = (keys, args) => new Command('evalsha', [SHA, keys.length, ...keys, ...args], { replyEncoding: 'utf8' });
const byEchoMQ = (keys, args) => evalshaCommand({}, SHA, keys, args);

console.log(`${'call'.padEnd(36)} ${'arguments'.padStart(9)} ${'ioredis µs'.padStart(11)} ${'EchoMQ µs'.padStart(10)}`);
for (const [label, keyCount, argCount] of ROWS) {
  const keys = argsOf(keyCount).map((k) => `emq:{q}:${k}`);
  const args = argsOf(argCount);
  if (byIoredis(keys, args).toWritable(undefined) !== byEchoMQ(keys, args).toWritable(undefined)) throw new Error(`${label}: the two commands differ`);
  console.log(`${label.padEnd(36)} ${String(keyCount + argCount + 2).padStart(9)} ${time(byIoredis, keys, args).toFixed(2).padStart(11)} ${time(byEchoMQ, keys, args).toFixed(2).padStart(10)}`);
}
