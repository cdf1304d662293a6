import { expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clusterUnsupported } from './support/redis-cluster-replicated.js';
import { singleNodeDescribe } from './support/redis.js';

const SINGLE = ['kill -9', 'SIGSTOP > lockDuration', 'CLIENT KILL', 'Redis restart (AOF)', 'blocking handler', 'all mixed', 'all mixed on 4 partitions'];
// They start a six-node cluster of their own (chaos/run-failover.mjs); without redis-cli the harness skips them.
const FAILOVER = clusterUnsupported() ? [] : ['failover (kill -9 of the queue master)', 'failover (replica behind)'];

/**
 * The chaos harness's short profile (`node chaos/run.mjs --profile ci`): worker processes running the
 * built library against their own redis-servers, under kill -9, SIGSTOP, CLIENT KILL, Redis restarts
 * and blocking handlers, and against a replicated cluster of their own whose queue master is killed.
 * The library is built into a private folder so the run never races others' dist/.
 */
// Single-node: the harness kills, stops and restarts redis-servers of its own.
singleNodeDescribe('chaos (ci profile)', () => {
  it('loses no job, accepts no stale completion, and traces every duplicate to a fault', () => {
    const out = mkdtempSync(join(tmpdir(), 'echomq-chaos-test-'));
    const lib = 'node_modules/.cache/echomq-chaos-test';
    try {
      execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json', '--outDir', lib], { stdio: 'inherit' });
      const report = join(out, 'report.json');
      let status = 0;
      try {
        execFileSync(process.execPath, ['chaos/run.mjs', '--profile', 'ci', '--lib', `${lib}/lib/index.js`, '--json', report], { stdio: 'inherit', timeout: 170_000 });
      } catch (error) {
        status = (error as { status?: number }).status ?? -1;
      }
      const rows = JSON.parse(readFileSync(report, 'utf8')) as Array<Record<string, unknown>>;
      expect(rows.map((r) => r.scenario)).toEqual([...SINGLE, ...FAILOVER]);
      for (const row of rows) {
        expect({ scenario: row.scenario, problems: row.problems }).toEqual({ scenario: row.scenario, problems: [] });
        expect(row).toMatchObject({ lost: 0, left: 0, failed: 0, staleAccepted: 0, untraced: 0, unexpected: 0, crashes: 0 });
        // A failover may lose adds the dead master acknowledged and never replicated: accounted, not lost.
        expect(row.completed).toBe(Number(row.jobs) - Number(row.lostInWindow ?? 0));
      }
      // The pause and the blocking handler must have hit held jobs: their late results were refused.
      expect(rows[1].refused).toBeGreaterThan(0);
      expect(rows[4].refused).toBeGreaterThan(0);
      expect(rows[0].recoverySamples).toBeGreaterThan(0);
      // The kill of the queue's master landed under load (held jobs were run again), and every
      // worker went on by itself on the promoted replica.
      for (const row of rows.slice(SINGLE.length)) {
        expect(row.heldAtKill).toBeGreaterThan(0);
        expect(row.workersNotRecovered).toEqual([]);
      }
      expect(status).toBe(0);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 240_000);
});
