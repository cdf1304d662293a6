// @ts-check
/**
 * The sandbox host: the code that runs inside a sandbox (a worker thread or a child process started
 * by lib/runtime/sandbox/sandbox-channel.ts). Plain JavaScript, so the same file runs from the
 * sources (Jest) and from dist/ (tsc emits it there with allowJs, tsconfig.build.json): a thread or
 * a fork needs a real .js entry whatever runs the main side.
 *
 * It loads the processor file (its default export is the handler) and runs one job at a time, as
 * its parent sends them. The messages (sandbox-messages.ts has their types on the main side):
 * - in:  run { id, job, token }, abort { id, reason }, reply { call, ok, value | error }
 * - out: done { id, ok, value | error, load? } (load: the processor file failed to load),
 *        call { id, call, method, args },
 *        fatal { error, running } (an uncaught exception or unhandled rejection, just before the
 *        sandbox exits, with the runs it had begun; a thread's out-of-memory end reaches its parent
 *        as the thread's 'error' event instead)
 * Every message crosses as JSON text (sandbox-channel.ts says why): in a thread on a MessagePort of
 * the host's own, in a child wrapped as { [CHILD_KEY]: text }, so what the processor's code sends
 * its parent itself is not taken for the host's. What the handler sends (its result, its progress,
 * its new data) is encoded with the checks Redis-bound values get in process
 * (lib/runtime/core/serialize.ts, toJson), so a value JSON would change or drop fails the same way.
 */
import { isMainThread, workerData } from 'node:worker_threads';

/**
 * In a thread, the MessagePort its parent made for the host (parentPort is left to the processor's
 * code: what it posts there is not taken for the host's). In a child, none: the IPC channel.
 * @type {import('node:worker_threads').MessagePort | undefined}
 */
const port = isMainThread ? undefined : workerData.port;
/** The processor file, as a file: URL string. */
const processorFile = port ? workerData.processorFile : process.argv[2];
/** A child's messages go wrapped under this key (CHILD_KEY of sandbox-messages.ts), told apart from the processor code's own process.send. */
const CHILD_KEY = '@echomq/sandbox';

/** Sends a message already encoded as JSON text. @type {(text: string) => void} */
const sendText = port
  ? (text) => port.postMessage(text)
  : (text) => {
      if (process.connected) /** @type {NonNullable<typeof process.send>} */ (process.send)({ [CHILD_KEY]: text });
    };

/** @param {unknown} message */
const send = (message) => sendText(JSON.stringify(message));

/** The handler: the file's default export (a CommonJS file's module.exports, or its exports.default). */
const handler = import(processorFile).then((module) => {
  const candidate = typeof module.default === 'function' ? module.default : module.default?.default;
  if (typeof candidate !== 'function') {
    throw new TypeError(`processorFile ${processorFile} has no default export function: export default async (job, { token, signal }) => result`);
  }
  return /** @type {(job: SandboxJob, context: { token?: string, signal: AbortSignal }) => unknown} */ (candidate);
}, (error) => {
  // A syntax error, a throw at the module's top level, a missing import: said as the file's, with its stack.
  const described = describeError(error, false);
  const failure = new Error(`processorFile ${processorFile} failed to load: ${described.name}: ${described.message}`);
  failure.stack = `${failure.message}\n${described.stack?.split('\n').slice(1).join('\n') ?? ''}`;
  throw failure;
});
handler.catch(() => undefined); // reported to each job it fails (as not to be retried), not as an unhandled rejection

/** The job being run, by its run id: its context, whose signal an abort message aborts. */
/** @type {Map<number, HandlerContext>} */
const running = new Map();
/** The job API calls waiting for the main side's answer. */
/** @type {Map<number, { resolve: (value: any) => void, reject: (error: Error) => void }>} */
const calls = new Map();
let callCount = 0;

/** EchoMQOptionError's shape (lib/protocol/errors.ts), rebuilt by name on the main side. */
class EchoMQOptionError extends TypeError {
  /** @override */
  name = 'EchoMQOptionError';

  /** @param {string} field @param {string} message */
  constructor(field, message) {
    super(`${field}: ${message}`);
    this.field = field;
  }
}

/**
 * toJson of lib/runtime/core/serialize.ts, without the size cap: JSON text that refuses what JSON
 * would silently change or drop (functions, symbols, BigInt, NaN and Infinity, Map and Set) and
 * cycles, naming the path. Keep the two alike (test/sandbox.test.ts compares their refusals).
 * @param {unknown} value
 * @param {string} field
 */
function toJson(value, field) {
  /** @type {string | undefined} */
  let text;
  try {
    /** @param {string} key */
    const where = (key) => (key === '' ? field : `${field}.${key}`);
    text = JSON.stringify(value === undefined ? {} : value, (key, item) => {
      switch (typeof item) {
        case 'function':
        case 'symbol':
          throw new EchoMQOptionError(where(key), `is a ${typeof item}, which JSON cannot carry`);
        case 'bigint':
          throw new EchoMQOptionError(where(key), 'is a BigInt, which JSON cannot carry; send it as a string');
        case 'number':
          if (!Number.isFinite(item)) throw new EchoMQOptionError(where(key), `is ${item}, which JSON would turn into null`);
          break;
        case 'object':
          if (item instanceof Map || item instanceof Set) {
            throw new EchoMQOptionError(where(key), `is a ${item.constructor.name}, which JSON would turn into {}; send an array or object`);
          }
      }
      return item;
    });
  } catch (error) {
    if (error instanceof EchoMQOptionError) throw error;
    throw new EchoMQOptionError(field, `cannot be represented as JSON: ${/** @type {Error} */ (error).message.split('\n')[0]}`);
  }
  if (text === undefined) throw new EchoMQOptionError(field, 'cannot be represented as JSON');
  return text;
}

/** What each argument of a Job method is called in a refusal, as the same call names it in process. */
/** @type {Record<string, string[]>} */
const ARGUMENTS = { updateProgress: ['progress'], log: ['log line'], updateData: ['data'], moveToDelayed: ['timestamp', 'token'], discard: [], rateLimit: ['expireTimeMs'] };

/**
 * An Error as plain data: its name, message and stack, its own enumerable properties that are
 * plain values (retryAfter, code...), and its `cause` (one level: the cause's own cause is not
 * carried), so the main side can rebuild it. Whatever the error holds, what comes out is JSON.
 * @param {unknown} error
 * @param {boolean} [withCause]
 * @returns {{ name: string, message: string, stack?: string, props?: Record<string, string | number | boolean | null>, cause?: object }}
 */
function describeError(error, withCause = true) {
  if (!(error instanceof Error)) return { name: 'Error', message: text(error) };
  /** @type {Record<string, string | number | boolean | null>} */
  const props = {};
  for (const [key, value] of Object.entries(error)) {
    if (value === null || typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) {
      Object.defineProperty(props, key, { value, enumerable: true, writable: true, configurable: true });
    }
  }
  const name = typeof error.name === 'string' && error.name !== '' ? error.name : 'Error';
  const data = { name, message: text(error.message), stack: typeof error.stack === 'string' ? error.stack : undefined, props };
  return withCause && error.cause !== undefined ? { ...data, cause: describeError(error.cause, false) } : data;
}

/** A value as text, whatever it is (a symbol, an object whose toString throws). @param {unknown} value */
function text(value) {
  if (typeof value === 'string') return value;
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/**
 * An error sent as plain data (describeError's shape), rebuilt with the same name and message.
 * @param {{ name: string, message: string, stack?: string, props?: Record<string, unknown> }} data
 */
function rebuildError(data) {
  const error = new Error(data.message);
  // Own properties whatever their names (an assignment to `__proto__` would set the prototype).
  for (const [key, value] of Object.entries(data.props ?? {})) {
    if (key !== 'name') Object.defineProperty(error, key, { value, writable: true, enumerable: true, configurable: true });
  }
  if (data.name !== 'Error') Object.defineProperty(error, 'name', { value: data.name, configurable: true, writable: true });
  if (data.stack !== undefined) Object.defineProperty(error, 'stack', { value: data.stack, configurable: true, writable: true });
  return error;
}

/**
 * A promise whose rejection, if nobody handles it, is no unhandled rejection: what a handler did
 * not await (a job.log() called late, refused as its run had ended) must not end the sandbox, which
 * may already run the next job. A caller that awaits it still gets the rejection.
 * @template T
 * @param {Promise<T>} promise
 * @returns {Promise<T>}
 */
function quiet(promise) {
  promise.catch(() => undefined);
  return promise;
}

/**
 * A job API call, answered by the main side (which calls the real Job's method).
 * @param {number} id the run
 * @param {string} method
 * @param {unknown[]} args
 * @returns {Promise<any>}
 */
function call(id, method, args) {
  return quiet(new Promise((resolve, reject) => {
    const names = ARGUMENTS[method];
    // Encoded first: a value JSON cannot carry rejects here, before anything is sent.
    const encoded = args.map((arg, i) => (arg === undefined ? 'null' : toJson(arg, names[i] ?? `argument ${i + 1}`)));
    const number = ++callCount;
    sendText(`{"t":"call","id":${id},"call":${number},"method":${JSON.stringify(method)},"args":[${encoded.join(',')}]}`);
    calls.set(number, { resolve, reject });
  }));
}

/**
 * The job as the handler sees it: the fields of the main side's Job, and the methods that act on it
 * through the main side (they settle when the main side's call settled).
 */
class SandboxJob {
  /** @type {number} */
  #run;
  #discarded = false;

  /**
   * @param {number} run
   * @param {Record<string, unknown>} fields
   */
  constructor(run, fields) {
    this.#run = run;
    Object.assign(this, fields);
  }

  // Each method returns call()'s promise or one made from it with quiet(): not awaited, a refusal
  // is no unhandled rejection.

  /** Stores progress (any JSON value) and emits the worker's `progress` event. @param {unknown} progress */
  updateProgress(progress) {
    return quiet(call(this.#run, 'updateProgress', [progress]).then(() => {
      /** @type {any} */ (this).progress = progress;
    }));
  }

  /** Appends a line to the job's log; resolves with how many lines it keeps. @param {string} line */
  log(line) {
    return call(this.#run, 'log', [line]);
  }

  /** Replaces the job's data. @param {unknown} data */
  updateData(data) {
    return quiet(call(this.#run, 'updateData', [data]).then(() => {
      /** @type {any} */ (this).data = data;
    }));
  }

  /**
   * Sends the running job to delayed until `timestamp` (then throw an error named DelayedError).
   * @param {number} timestamp
   * @param {string} token
   */
  moveToDelayed(timestamp, token) {
    return quiet(call(this.#run, 'moveToDelayed', [timestamp, token]).then((delay) => {
      /** @type {any} */ (this).delay = delay;
    }));
  }

  /** If this run fails, the job fails for good. Sent before the run's end, so the worker sees it in time. */
  discard() {
    this.#discarded = true;
    call(this.#run, 'discard', []).catch(() => undefined);
  }

  get discarded() {
    return this.#discarded;
  }
}

/**
 * A handler's second argument: its token, rateLimit(ms), and a `signal` whose AbortController is
 * made when the handler first reads it (most never do). `signal` is one getter shared by every
 * context, not a getter in an object literal: V8 gives such a literal slow properties and an
 * accessor pair in the old generation, whose per-run closure then kept every run alive past the
 * young-generation collections (HandlerContext in lib/runtime/worker/handler-context.ts, the same
 * in process).
 */
class HandlerContext {
  /** @type {AbortController | undefined} */
  #controller;
  /** @type {Error | undefined} */
  #abortedWith;

  /** @param {number} id @param {string | undefined} token */
  constructor(id, token) {
    this.token = token;
    /** The worker's rateLimit(ms): no job for `ms`; then throw an error named RateLimitError to give this one back. @param {number} ms */
    this.rateLimit = (ms) => quiet(call(id, 'rateLimit', [ms]).then(() => undefined));
    Object.defineProperty(this, 'signal', HandlerContext.#signalProperty);
  }

  /** The main side aborted the run (lost lock, timeout, cancel). @param {Error} reason */
  abort(reason) {
    this.#abortedWith = reason;
    this.#controller?.abort(reason);
  }

  /** @type {PropertyDescriptor} */
  static #signalProperty = {
    enumerable: true,
    configurable: true,
    /** @this {HandlerContext} */
    get() {
      this.#controller ??= new AbortController();
      if (this.#abortedWith && !this.#controller.signal.aborted) this.#controller.abort(this.#abortedWith);
      return this.#controller.signal;
    },
  };
}

/**
 * Runs one job and says how it ended.
 * @param {{ id: number, job: Record<string, unknown>, token?: string }} message
 */
async function run({ id, job, token }) {
  // `signal` is defined in the constructor, which JSDoc cannot declare on the class.
  const context = /** @type {HandlerContext & { readonly signal: AbortSignal }} */ (new HandlerContext(id, token));
  running.set(id, context);
  /** @type {Awaited<typeof handler>} */
  let processor;
  try {
    processor = await handler;
  } catch (error) {
    // The file did not load: every job here would fail the same way, so this one is not retried.
    running.delete(id);
    send({ t: 'done', id, ok: false, load: true, error: describeError(error) });
    return;
  }
  try {
    const value = await processor(new SandboxJob(id, job), context);
    // No value (undefined) is sent as none; the worker stores it as null, as in process.
    const encoded = value === undefined ? '' : `,"value":${toJson(value, 'returnvalue')}`;
    sendText(`{"t":"done","id":${id},"ok":true${encoded}}`);
  } catch (error) {
    send({ t: 'done', id, ok: false, error: describeError(error) });
  } finally {
    running.delete(id);
  }
}

/** An uncaught error came: the host is going, and starts no job meanwhile. */
let dying = false;

/** @param {any} message */
function receive(message) {
  if (typeof message !== 'object' || message === null || dying) return;
  if (message.t === 'run') {
    void run(message);
  } else if (message.t === 'abort') {
    running.get(message.id)?.abort(rebuildError(message.reason));
  } else if (message.t === 'reply') {
    const waiting = calls.get(message.call);
    calls.delete(message.call);
    if (message.ok) waiting?.resolve(message.value);
    else waiting?.reject(rebuildError(message.error));
  }
}

/**
 * An uncaught exception or unhandled rejection (the handler's, or one a finished job left): the
 * sandbox ends, as a Node process would, saying why and which runs it had started. A run the
 * parent sent that is not among them (its message still waiting behind the error) never began
 * here: the parent runs it in a fresh sandbox rather than fail it for another job's error.
 * @param {unknown} error
 */
function fatal(error) {
  if (dying) return;
  dying = true;
  console.error(error);
  const text = JSON.stringify({ t: 'fatal', error: describeError(error), running: [...running.keys()] });
  if (port) {
    port.postMessage(text);
    process.exit(1); // the thread ends now: no message behind the error is read
  } else if (!process.connected) {
    process.exit(1);
  } else {
    /** @type {NonNullable<typeof process.send>} */ (process.send)({ [CHILD_KEY]: text }, () => process.exit(1));
  }
}
process.on('uncaughtException', fatal);
process.on('unhandledRejection', fatal);

if (port) {
  port.on('message', (text) => receive(JSON.parse(text)));
} else {
  process.on('message', receive);
  // The parent closed the channel (worker.close()) or died: nothing more will come.
  process.on('disconnect', () => process.exit(0));
}
