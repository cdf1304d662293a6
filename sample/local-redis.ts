import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';

/** A Redis the sample can use, and how to let go of it. */
export interface SampleRedis {
  url: string;
  /** Stops the redis-server the sample started (nothing when it found one running). */
  stop(): Promise<void>;
}

/** True when something at host:port answers PING like Redis. */
export function pingRedis(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, host);
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => done(data.toString().startsWith('+PONG') || data.toString().startsWith('-NOAUTH')));
    socket.once('error', () => done(false));
  });
}

const HOW_TO_GET_ONE = [
  'Install one and run it, then start the sample again:',
  '  Debian/Ubuntu: sudo apt-get install redis-server',
  '  macOS:         brew install redis && brew services start redis',
  '  Docker:        docker run --rm -p 6379:6379 redis:7',
  'or point REDIS_URL at a Redis you have: REDIS_URL=redis://host:6379 npm run sample',
].join('\n');

/**
 * REDIS_URL, or 127.0.0.1:6379. When nothing answers there and the address is local, starts
 * `redis-server` on that port if it is installed (without persistence); otherwise explains how to get one.
 */
export async function ensureRedis(url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'): Promise<SampleRedis> {
  const { hostname, port: portText } = new URL(url);
  const host = hostname || '127.0.0.1';
  const port = Number(portText || 6379);
  if (await pingRedis(host, port)) return { url, stop: async () => undefined };
  if (!['127.0.0.1', 'localhost', '::1'].includes(host)) {
    throw new Error(`No Redis answers at ${url}.\n${HOW_TO_GET_ONE}`);
  }
  const child = await startRedisServer(port).catch((error: Error) => {
    throw new Error(`No Redis answers at ${url}, and redis-server could not be started (${error.message}).\n${HOW_TO_GET_ONE}`);
  });
  return {
    url,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function startRedisServer(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject); // ENOENT: not installed
    child.once('spawn', () => resolve());
  });
  for (let tries = 0; tries < 100; tries++) {
    if (await pingRedis('127.0.0.1', port, 200)) return child;
    if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  child.kill('SIGTERM');
  throw new Error('redis-server did not answer within 5 s');
}
