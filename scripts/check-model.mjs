#!/usr/bin/env node
// The model checker's long profile (test/model.test.ts, docs/reliability.md):
//
//   npm run check:model -- --runs 200            200 random sequences, shrinking a failure
//   npm run check:model -- --minutes 30          as many as fit in 30 minutes
//   npm run check:model -- --seed S --path P [--replay R]
//                                                replays the sequence a failure printed (R: its replayPath)
//   ... --max-commands 40 --cluster              longer sequences; on a Redis Cluster
//
// It runs the same Jest test as npm test, with its budget from the environment.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const value = (name) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : undefined;
};
const env = { ...process.env, MODEL_SHRINK: '1', MODEL_FIGURES: '1', NODE_OPTIONS: '--experimental-vm-modules' };
for (const [flag, name] of [['runs', 'MODEL_RUNS'], ['minutes', 'MODEL_MINUTES'], ['seed', 'MODEL_SEED'], ['path', 'MODEL_PATH'], ['replay', 'MODEL_REPLAY'], ['max-commands', 'MODEL_MAX_COMMANDS']]) {
  const given = value(flag);
  if (given !== undefined) env[name] = given;
}
if (args.includes('--cluster')) env.ECHOMQ_TEST_CLUSTER = '1';
const jest = join(root, 'node_modules', 'jest', 'bin', 'jest.js');
const result = spawnSync(process.execPath, [jest, '--runInBand', '--forceExit', 'test/model.test.ts'], { cwd: root, env, stdio: 'inherit' });
process.exitCode = result.status ?? 1;
