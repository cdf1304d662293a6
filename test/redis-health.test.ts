import { afterAll, describe, expect, it } from '@jest/globals';
import { RedisVersionError } from '../lib/index.js';
import { MIN_REDIS_VERSION, PARTITIONS_NEED, parseRedisVersion, redisVersionError, versionErrorOf } from '../lib/runtime/core/redis-health.js';
import { masters, newClient, onCluster } from './support/redis.js';

const info = (version: string) => `# Server\r\nredis_version:${version}\r\nredis_mode:cluster\r\n`;

/** The Redis version check: which servers it asks, and which it names when one is too old. */
describe('the Redis version check', () => {
  it('names every server older than 6.2, oldest first, and only those', () => {
    // A cluster mid-upgrade: one reply per master, as redisVersionError collects them.
    const error = versionErrorOf([
      { server: '10.0.0.1:6379', reply: info('7.2.4') },
      { server: '10.0.0.2:6379', reply: info('6.0.16') },
      { server: '10.0.0.3:6379', reply: info('5.0.14') },
      { server: '10.0.0.4:6379', reply: info('6.2.0') },
    ]);
    expect(error).toBeInstanceOf(RedisVersionError);
    expect(error?.message).toMatch(/needs Redis 6\.2 or later, and 10\.0\.0\.3:6379 runs 5\.0, 10\.0\.0\.2:6379 runs 6\.0: /);
    expect(error?.message).not.toMatch(/10\.0\.0\.[14]/);
  });

  it('asks 7.0 of a partitioned queue\'s servers (sharded pub/sub), naming the need', () => {
    const replies = [{ server: 'a:1', reply: info('7.0.15') }, { server: 'b:2', reply: info('6.2.14') }];
    expect(versionErrorOf(replies)).toBeUndefined();
    expect(versionErrorOf(replies, PARTITIONS_NEED)?.message).toMatch(/needs Redis 7\.0 or later, and b:2 runs 6\.2: a partitioned queue wakes its workers with sharded pub\/sub/);
  });

  it('finds the one old master wherever it is in the list, and compares versions as numbers', () => {
    const replies = ['7.0.15', '10.0.1', '7.0.15'].map((version, n) => ({ server: `127.0.0.1:700${n}`, reply: info(version) }));
    expect(versionErrorOf(replies)).toBeUndefined(); // "10.0" is newer than "6.2", though it sorts before it as text
    for (let old = 0; old < replies.length; old++) {
      const mixed = replies.map((r, n) => (n === old ? { ...r, reply: info('6.0.9') } : r));
      expect(versionErrorOf(mixed)?.message).toMatch(new RegExp(`and 127\\.0\\.0\\.1:700${old} runs 6\\.0: `));
    }
  });

  it('judges nothing it could not read: a refused INFO or a reply without a version', () => {
    expect(versionErrorOf([{ server: 'a:1', reply: undefined }, { server: 'b:2', reply: '# Server\r\n' }])).toBeUndefined();
    expect(versionErrorOf([{ server: 'a:1', reply: undefined }, { server: 'b:2', reply: info('6.0.0') }])?.message).toMatch(/and b:2 runs 6\.0: /);
    expect(parseRedisVersion(info('7.0.15'))).toEqual([7, 0]);
    expect(MIN_REDIS_VERSION).toEqual([6, 2]);
  });

  describe('on the test Redis', () => {
    const client = newClient();
    afterAll(() => client.quit());

    it(`finds no error, and reads INFO once from every ${onCluster ? 'master of the Cluster' : 'server'}`, async () => {
      const servers = await masters(client);
      if (onCluster) expect(servers.length).toBe(3);
      // Each node connection is opened first: its ready check (an INFO of ioredis's) must not count.
      await Promise.all(servers.map((server) => server.ping()));
      const infoCalls = async () => Promise.all(servers.map(async (server) =>
        Number(/cmdstat_info:calls=(\d+)/.exec(await server.info('commandstats'))?.[1] ?? 0)));
      const before = await infoCalls();
      expect(await redisVersionError(client)).toBeUndefined();
      const after = await infoCalls();
      // after - before counts the INFO commandstats that read `before` (a command is counted once it
      // ran) and the check's own INFO server: one of each on every server.
      expect(after.map((calls, n) => calls - before[n])).toEqual(servers.map(() => 2));
    });
  });
});
