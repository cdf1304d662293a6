// Starts and stops a private Redis Cluster for the cluster run of the suite: three masters on free
// ports, one temp dir (each node's cluster-config-file inside it), no replicas, no persistence.
// The machine's shared Redis on 6379 is never touched.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freeClusterPort } from './redis-process.js';

const run = promisify(execFile);
const MASTERS = 3;

/** One inline command to a node; resolves with its raw reply ('' when the node does not answer). */
function ask(port, command) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    const done = () => { socket.destroy(); resolve(reply); };
    socket.setTimeout(1000, done);
    socket.once('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (data) => {
      reply += data.toString();
      // A bulk reply is complete once it ends with CRLF after its payload; CLUSTER INFO fits in one read.
      if (reply.startsWith('+') || reply.startsWith('-') || (reply.startsWith('$') && reply.endsWith('\r\n') && reply.split('\r\n').length > 2)) done();
    });
    socket.once('error', done);
  });
}

async function waitFor(check, what, timeoutMs = 15000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * startCluster() → { ports, nodes: [{ host, port }], stop() }.
 * Resolves once every master reports cluster_state:ok, so the first test's command finds its slot.
 */
export async function startCluster() {
  const dir = mkdtempSync(join(tmpdir(), 'echomq-cluster-'));
  const ports = [];
  for (let i = 0; i < MASTERS; i += 1) ports.push(await freeClusterPort(ports));
  const children = ports.map((port) => {
    const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir,
      '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '5000',
      '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    child.unref();
    child.exited = new Promise((resolve) => child.once('exit', resolve));
    return child;
  });
  const stop = async () => {
    await Promise.all(children.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.ref(); // waited for: an unreferenced child lets Node exit with code 0 during the await (redis-process.js)
      child.kill('SIGTERM');
      await child.exited;
    }));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) await waitFor(async () => (await ask(port, 'PING')).startsWith('+PONG'), `redis-server on port ${port}`);
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes']);
    for (const port of ports) {
      await waitFor(async () => (await ask(port, 'CLUSTER INFO')).includes('cluster_state:ok'), `cluster_state:ok on port ${port}`);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { ports, nodes: ports.map((port) => ({ host: '127.0.0.1', port })), stop };
}
