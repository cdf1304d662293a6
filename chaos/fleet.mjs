// The harness's worker processes: spawn, signal, respawn and stop them, and remember which
// exits the harness caused (a kill -9 is a fault it injected, any other death is a crash).
import { spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const WORKER_SCRIPT = fileURLToPath(new URL('./worker-process.mjs', import.meta.url));

/** A set of worker processes sharing one queue, one ledger directory and one set of options. */
export class Fleet {
  /** Every process ever started, alive or not: { name, child, exit, killedByHarness }. */
  members = [];
  #spawned = 0;

  constructor(settings) {
    this.settings = settings;
  }

  /**
   * Starts one more worker process; resolves once its Workers are connected. `overrides` change
   * the fleet's worker settings for this process (its number of Worker instances, say); a
   * replacement takes them from its victim's `overrides`.
   */
  async spawnWorker(overrides = {}) {
    const name = `w${++this.#spawned}`;
    const ledgerFile = join(this.settings.dir, `${name}.ledger`);
    const config = { ...this.settings.worker, ...overrides, name, ledgerFile };
    const stderr = openSync(join(this.settings.dir, `${name}.stderr`), 'a');
    const child = spawn(process.execPath, [WORKER_SCRIPT, JSON.stringify(config)], { stdio: ['ignore', 'ignore', stderr] });
    const member = { name, ledgerFile, child, overrides, exit: undefined, killedByHarness: false, stopped: false };
    member.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve((member.exit = { code, signal }))));
    this.members.push(member);
    await this.settings.waitReady(member);
    member.ready = true;
    return member;
  }

  /** The workers still running. */
  get alive() {
    return this.members.filter((m) => m.exit === undefined);
  }

  /** kill -9: the process dies holding whatever it holds. */
  async kill(member) {
    member.killedByHarness = true;
    if (member.stopped) member.child.kill('SIGCONT');
    member.child.kill('SIGKILL');
    await member.exited;
  }

  /** SIGTERM: the process closes its Workers (close(): running jobs end, held ones go back) and exits. */
  async close(member) {
    if (member.stopped) this.resume(member);
    member.child.kill('SIGTERM');
    await member.exited;
  }

  /** SIGSTOP: the process freezes, timers and sockets included, as in a long GC pause. */
  pause(member) {
    member.stopped = true;
    member.child.kill('SIGSTOP');
  }

  resume(member) {
    member.stopped = false;
    member.child.kill('SIGCONT');
  }

  /** Asks every live worker to close (it finishes its jobs), then kills what is left after the grace. */
  async stopAll(graceMs = 15_000) {
    const alive = this.alive;
    for (const member of alive) {
      if (member.stopped) this.resume(member);
      member.child.kill('SIGTERM');
    }
    const timer = setTimeout(() => alive.forEach((m) => { if (!m.exit) { m.killedByHarness = true; m.child.kill('SIGKILL'); } }), graceMs);
    await Promise.all(alive.map((m) => m.exited));
    clearTimeout(timer);
  }

  /** kill -9 of every live worker at once, without waiting: the harness itself is being stopped. */
  killAll() {
    for (const member of this.alive) {
      member.killedByHarness = true;
      member.child.kill('SIGKILL');
    }
  }

  /** Processes that died without the harness killing them: crashes. */
  crashes() {
    return this.members.filter((m) => m.exit && !m.killedByHarness && (m.exit.code !== 0 || m.exit.signal));
  }
}
