import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker as Thread, type ResourceLimits } from 'node:worker_threads';
import { CHILD_KEY, readFromSandbox, type FromSandbox, type ToSandbox } from './sandbox-messages.js';

/**
 * The host every sandbox runs: a plain .mjs beside this file, in lib/ (Jest runs the sources) as
 * in dist/ (tsc emits it there: allowJs in tsconfig.build.json).
 */
// @ts-ignore TS1343 in the CommonJS build, whose emit scripts/build-package.mjs rewrites (docs/loading.md)
const HOST = new URL('./host.mjs', import.meta.url);

/** What a channel tells its sandbox. */
export interface ChannelEvents {
  message(message: FromSandbox): void;
  /**
   * It ended: `how` says so in words ("exited with code 3", "was killed by SIGKILL", "ran out of
   * memory"); `stack` is the uncaught error's, when one ended it, and `started` the runs the host
   * had begun then (its 'fatal' message said so; undefined when it could not say).
   */
  exit(how: string, stack?: string, started?: readonly number[]): void;
  /**
   * It sent something that is not the host's: a message the processor's code sent its parent itself
   * (`via`: process.send, parentPort.postMessage), or one of the host's that does not read. Dropped.
   */
  foreign(via: string): void;
}

/**
 * One thread or child process running the host, behind one small interface. Messages cross as JSON
 * both ways and in both kinds: to the host as JSON text through a thread's port or a fork's 'json'
 * serialization; from it as JSON text the host encodes with the checks values get in process
 * (host.mjs), on a MessagePort of the host's own in a thread, wrapped in an object with a key of its
 * own in a child: what the processor's code sends its parent itself is dropped, and what comes is
 * read with its fields checked (readFromSandbox), never trusted to be the host's. JSON because it is what Redis stores of data, progress and results anyway (so a value
 * fares as it would in process: a function in a result is refused, not dropped), because threads
 * and processes then carry the same values, and because a fork's 'advanced' (structured clone)
 * serialization costs about twice the main process's CPU per message.
 */
export interface SandboxChannel {
  /** "worker thread 4" or "child process 1234", for the reasons given to failed jobs. */
  readonly label: string;
  /** The thread's id or the child's pid (0 when a child could not start). */
  readonly id: number;
  send(message: ToSandbox): void;
  /** Ends it now: a thread terminated, a child sent SIGKILL. */
  kill(): void;
  /** An orderly end when idle: a thread terminated, a child's channel closed (its host exits on it). */
  stop(): void;
}

/**
 * Starts the host in a worker thread (`threads`, with `resourceLimits` when given) or a child
 * process, loading the processor at `fileUrl`.
 */
export function openChannel(fileUrl: string, threads: boolean, events: ChannelEvents, resourceLimits?: ResourceLimits): SandboxChannel {
  return threads ? openThread(fileUrl, events, resourceLimits) : openChild(fileUrl, events);
}

/**
 * The host gets a MessagePort of its own (in workerData): the thread's parentPort is left to the
 * processor's code, and what it posts there is not read as the host's.
 */
function openThread(fileUrl: string, events: ChannelEvents, resourceLimits?: ResourceLimits): SandboxChannel {
  const { port1: port, port2 } = new MessageChannel();
  const thread = new Thread(HOST, { workerData: { processorFile: fileUrl, port: port2 }, transferList: [port2], ...(resourceLimits ? { resourceLimits } : {}) });
  const label = `worker thread ${thread.threadId}`;
  let uncaught: Error | undefined;
  let fatal: Extract<FromSandbox, { t: 'fatal' }> | undefined;
  let killed = false;
  const receive = (text: unknown) => {
    const message = readFromSandbox(text);
    if (!message) events.foreign('a message on its EchoMQ port that does not read');
    else if (message.t === 'fatal') fatal = message;
    else events.message(message);
  };
  port.on('message', receive);
  thread.on('message', () => events.foreign('parentPort.postMessage'));
  // The host reports an uncaught exception or unhandled rejection itself ('fatal'), then exits
  // with code 1; what still comes here is Node's own (out of memory).
  thread.on('error', (error) => (uncaught ??= error));
  thread.on('exit', (code) => {
    // What the host posted before it ended is read first (a port's messages and the thread's
    // 'exit' come by different ways), then the port is closed: it would keep the process alive.
    for (let left = receiveMessageOnPort(port); left; left = receiveMessageOnPort(port)) receive(left.message);
    port.close();
    if ((uncaught as NodeJS.ErrnoException | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY') events.exit('ran out of memory');
    else if (fatal) events.exit(`failed with an uncaught ${fatal.error.name}: ${fatal.error.message}`, fatal.error.stack, fatal.running);
    else if (uncaught) events.exit(`failed with an uncaught ${describeUncaught(uncaught)}`, uncaught.stack);
    else events.exit(killed ? 'was terminated' : `exited with code ${code}`);
  });
  return {
    label,
    id: thread.threadId,
    send: (message) => port.postMessage(JSON.stringify(message)),
    kill: () => {
      killed = true;
      void thread.terminate();
    },
    stop: () => {
      killed = true;
      void thread.terminate(); // between jobs: nothing of the handler's is cut short
    },
  };
}

/**
 * The host wraps each of its messages as `{ [CHILD_KEY]: jsonText }`: anything else on the IPC
 * channel was sent by the processor's code (process.send), and is dropped.
 */
function openChild(fileUrl: string, events: ChannelEvents): SandboxChannel {
  const child = fork(fileURLToPath(HOST), [fileUrl], { serialization: 'json', stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: childExecArgv(process.execArgv) });
  const label = `child process ${child.pid}`;
  let fatal: Extract<FromSandbox, { t: 'fatal' }> | undefined;
  child.on('message', (wrapped: unknown) => {
    const text = typeof wrapped === 'object' && wrapped !== null ? (wrapped as Record<string, unknown>)[CHILD_KEY] : undefined;
    if (text === undefined) return events.foreign('process.send');
    const message = readFromSandbox(text);
    if (!message) events.foreign('a message wrapped as the host\'s that does not read');
    else if (message.t === 'fatal') fatal = message;
    else events.message(message);
  });
  // A failed spawn (no pid) is its end; any other error (a send to a child gone) is followed by 'exit'.
  child.on('error', (error) => {
    if (child.pid === undefined) events.exit(`could not start: ${error.message}`);
  });
  // Handled once the IPC channel is drained too ('disconnect' comes after its last message), so a
  // crash's last message (its 'fatal') has been read. Not 'close': after a disconnect() it never comes.
  child.on('exit', (code, signal) => {
    const ended = () => {
      if (fatal) events.exit(`failed with an uncaught ${fatal.error.name}: ${fatal.error.message}`, fatal.error.stack, fatal.running);
      else if (signal) events.exit(`was killed by ${signal}`);
      else events.exit(`exited with code ${code}`);
    };
    if (child.connected) child.once('disconnect', ended);
    else ended();
  });
  return {
    label,
    id: child.pid ?? 0,
    send: (message) => {
      if (child.connected) child.send(message);
    },
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
    stop: () => {
      if (child.connected) child.disconnect();
    },
  };
}

/**
 * The worker's execArgv for a child, without the inspector's flags: every child would try the
 * worker's inspector port (and with --inspect-brk wait there for a debugger). Heap limits and the
 * rest pass on, as fork passes them by default.
 */
export function childExecArgv(execArgv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const flag = execArgv[i];
    if (/^--(inspect|inspect-brk|inspect-wait|debug|debug-brk)(=.*)?$/.test(flag)) continue;
    if (/^--(inspect-port|debug-port)(=.*)?$/.test(flag)) {
      if (!flag.includes('=')) i++; // its value is the next argument
      continue;
    }
    kept.push(flag);
  }
  return kept;
}

function describeUncaught(error: Error): string {
  return `${error.name ?? 'Error'}: ${error.message}`;
}
