// Starts and stops a private redis-server for tests and benchmarks: on a free port, in a temp dir,
// so the machine's shared Redis on 6379 is never touched.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Whether nothing listens on `port` of 127.0.0.1 now (it can be bound). */
function canBind(port) {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A free port for a Redis Cluster node, not in `taken`: a node also binds its cluster bus on
 * port + 10000, so that one must be free too (and at most 65535), or the node exits at start.
 */
export async function freeClusterPort(taken = []) {
  const clash = (port) => taken.some((t) => t === port || t === port + 10000 || t + 10000 === port);
  for (let tries = 0; tries < 100; tries++) {
    const port = await freePort();
    if (port + 10000 <= 65535 && !clash(port) && (await canBind(port + 10000))) return port;
  }
  throw new Error('no free port pair (port, port + 10000) for a cluster node after 100 tries');
}

function ping(port) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => { socket.destroy(); resolve(data.toString().startsWith('+PONG')); });
    socket.once('error', () => resolve(false));
  });
}

async function waitFor(check, what, timeoutMs = 10000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * startRedis({ port?, args? }) → { port, url, stop(), restart() }.
 * restart() stops the server and starts it again on the same port and dir (what AOF or RDB kept
 * survives, as after a real restart).
 */
export async function startRedis({ port, args = [] } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'echomq-redis-'));
  const chosen = port ?? (await freePort());
  let child;
  const launch = async () => {
    child = spawn('redis-server', ['--port', String(chosen), '--bind', '127.0.0.1', '--dir', dir,
      '--save', '', '--appendonly', 'no', ...args], { stdio: 'ignore' });
    child.unref();
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.exited = exited;
    await waitFor(() => ping(chosen), `redis-server on port ${chosen}`);
  };
  const halt = async (signal = 'SIGTERM') => {
    if (!child || child.exitCode !== null) return;
    // Referenced again while we wait for its exit: an unreferenced child lets Node exit with code 0
    // in the middle of this await (in the jest global teardown, that turned a failed run into exit 0).
    child.ref();
    child.kill(signal);
    await child.exited;
  };
  await launch();
  return {
    port: chosen,
    url: `redis://127.0.0.1:${chosen}`,
    pid: () => child.pid,
    async stop() { await halt(); rmSync(dir, { recursive: true, force: true }); },
    async restart({ downMs = 0, signal = 'SIGTERM' } = {}) {
      await halt(signal);
      if (downMs) await new Promise((r) => setTimeout(r, downMs));
      await launch();
    },
  };
}
