import { afterEach, describe, expect, it } from '@jest/globals';
import { fileURLToPath } from 'node:url';
import { EchoMQOptionError, Keys, LockLostError, Queue, UnrecoverableError, Worker, type Job, type SandboxedProcessor } from '../lib/index.js';
import { childExecArgv, sandboxPoolOf, type SandboxPool } from '../lib/internal.js';
import { eventually, newClient, onCluster, queueKeys, sleep, testConnection, uniqueQueueName } from './support/redis.js';

const FIXTURES = new URL('./fixtures/sandbox/', import.meta.url);
const PROCESSOR = new URL('processor.mjs', FIXTURES);

/** A worker's sandboxes. */
function poolOf(worker: Worker): SandboxPool {
  return sandboxPoolOf(worker)!;
}

/** Whether a process is still there (a child's pid; the pool drops a child once it exited and was reaped). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A job's outcome once it finished, from Redis. */
async function finished(queue: Queue, id: string, timeoutMs = 15_000): Promise<{ state: 'completed' | 'failed'; job: Job }> {
  return (await eventually(async () => {
    // The state first: a hash read before it could predate the finish.
    const state = await (await queue.getJob(id))?.getState();
    return state === 'completed' || state === 'failed' ? { state, job: (await queue.getJob(id))! } : undefined;
  }, timeoutMs, `job ${id} finished`))!;
}

/** A queue, its workers, what they emitted; closed after each test. */
class Setup {
  readonly name = uniqueQueueName('sandbox');
  readonly queue = new Queue(this.name, { connection: testConnection() });
  readonly workers: Worker[] = [];
  readonly seen: string[] = [];
  readonly errors: Error[] = [];

  worker(useWorkerThreads: boolean, opts: ConstructorParameters<typeof Worker>[2] = {}, file: string | URL = PROCESSOR): Worker {
    const worker = new Worker(this.name, file, { connection: testConnection(), useWorkerThreads, ...opts });
    worker.on('completed', (job) => this.seen.push(`completed ${job.id}`));
    worker.on('failed', (job, error, willRetry) => this.seen.push(`failed ${job.id} ${error.name}${willRetry ? ' (retry)' : ''}`));
    worker.on('lockLost', (job, error) => this.seen.push(`lockLost ${job.id} ${error.name}`));
    worker.on('stalled', (jobId) => this.seen.push(`stalled ${jobId}`));
    worker.on('error', (error) => this.errors.push(error));
    this.workers.push(worker);
    return worker;
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.close(true)));
    await this.queue.close();
  }
}

let setup: Setup | undefined;
afterEach(async () => {
  await setup?.close();
  setup = undefined;
});

describe('the public types of a processor file', () => {
  it('SandboxedProcessor types the default export: the job (its data, its methods) and { token, signal }', async () => {
    // Compiles only if the types are exported and fit a handler.
    const typed: SandboxedProcessor<{ n: number }, number> = async (job, { signal }) => {
      await job.log(`n is ${job.data.n}`);
      signal.throwIfAborted();
      return job.data.n * 2;
    };
    expect(typeof typed).toBe('function');
  });
});

describe('a bad processor file is refused before anything is opened or written', () => {
  const cases: Array<[string, unknown, object, string, RegExp]> = [
    ['a missing file', fileURLToPath(new URL('missing.mjs', FIXTURES)), {}, 'processorFile', /cannot read .*missing\.mjs: ENOENT/],
    ['a number', 42, {}, 'processorFile', /must be a function .* or the absolute path or file: URL .* got 42/],
    // null is no processor at all: a worker that takes its jobs by hand (test/manual-processing.test.ts).
    ['an empty string', '', {}, 'processorFile', /got ""/],
    ['a relative path', './test/fixtures/sandbox/processor.mjs', {}, 'processorFile', /is relative; give an absolute path/],
    ['an http URL', new URL('https://example.com/processor.mjs'), {}, 'processorFile', /https: URLs are not files/],
    ['a folder', FIXTURES, {}, 'processorFile', /is not a file/],
    ['a negative grace', PROCESSOR, { sandboxGracePeriod: -1 }, 'sandboxGracePeriod', /whole number of ms from 0/],
    ['a grace in a string', PROCESSOR, { sandboxGracePeriod: '500' }, 'sandboxGracePeriod', /got "500"/],
    ['useWorkerThreads not a boolean', PROCESSOR, { useWorkerThreads: 'yes' }, 'useWorkerThreads', /must be true .* or false/],
    ['useWorkerThreads with a function', async () => 1, { useWorkerThreads: false }, 'useWorkerThreads', /applies to a processor file run in sandboxes .* this worker runs a function, in process/],
    ['sandboxGracePeriod with a function', async () => 1, { sandboxGracePeriod: 100 }, 'sandboxGracePeriod', /applies to a processor file run in sandboxes/],
    ['workerThreadsOptions with a function', async () => 1, { workerThreadsOptions: {} }, 'workerThreadsOptions', /applies to a processor file run in sandboxes/],
    ['workerThreadsOptions with child processes', PROCESSOR, { workerThreadsOptions: { resourceLimits: { maxOldGenerationSizeMb: 64 } } }, 'workerThreadsOptions', /applies to worker threads \(useWorkerThreads: true\)/],
    ['workerThreadsOptions not an object', PROCESSOR, { useWorkerThreads: true, workerThreadsOptions: 64 }, 'workerThreadsOptions', /must be an object .* got 64/],
    ['a thread option other than resourceLimits', PROCESSOR, { useWorkerThreads: true, workerThreadsOptions: { workerData: {} } }, 'workerThreadsOptions.workerData', /is not taken: only resourceLimits is/],
    ['an unknown resource limit', PROCESSOR, { useWorkerThreads: true, workerThreadsOptions: { resourceLimits: { heapMb: 64 } } }, 'workerThreadsOptions.resourceLimits.heapMb', /is not a resource limit; known: maxOldGenerationSizeMb/],
    ['a resource limit of 0', PROCESSOR, { useWorkerThreads: true, workerThreadsOptions: { resourceLimits: { maxOldGenerationSizeMb: 0 } } }, 'workerThreadsOptions.resourceLimits.maxOldGenerationSizeMb', /must be a number of MB above 0, got 0/],
    ['a resource limit in a string', PROCESSOR, { useWorkerThreads: true, workerThreadsOptions: { resourceLimits: { stackSizeMb: '4' } } }, 'workerThreadsOptions.resourceLimits.stackSizeMb', /got "4"/],
  ];

  it.each(cases)('%s', async (_what, file, opts, field, message) => {
    const name = uniqueQueueName('sandbox-bad');
    let refused: unknown;
    try {
      new Worker(name, file as string, { connection: testConnection(), ...opts });
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(EchoMQOptionError);
    expect((refused as EchoMQOptionError).field).toBe(field);
    expect((refused as Error).message).toMatch(message);
    const client = newClient();
    expect(await queueKeys(client, name)).toEqual([]);
    client.disconnect();
  });
});

describe('a child process\'s execArgv', () => {
  it('is the worker\'s without the inspector\'s flags, which would make every child fight for its port', () => {
    expect(childExecArgv([
      '--max-old-space-size=512', '--inspect', '--inspect-brk=0.0.0.0:9229', '--inspect=9230', '--inspect-port', '9231',
      '--inspect-port=9232', '--inspect-wait', '--enable-source-maps', '--debug-port=1', '--conditions=dev',
    ])).toEqual(['--max-old-space-size=512', '--enable-source-maps', '--conditions=dev']);
  });
});

// The cluster run takes the thread kind only: a sandbox never talks to Redis (the main side sends
// the same commands for both kinds), and both kinds over again would add half a minute to CI.
describe.each([
  ['worker threads', true],
  ...(onCluster ? [] : [['child processes', false] as [string, boolean]]),
] as Array<[string, boolean]>)('sandboxed processors in %s', (kind, threads) => {
  const inSandbox = threads ? /^worker thread \d+$/ : /^child process \d+$/;
  const sandboxLabel = threads ? 'worker thread \\d+' : 'child process \\d+';
  /** Where a job ran: a thread id or a process id. */
  const placeOf = (result: { pid: number; threadId: number }) => (threads ? `thread ${result.threadId}` : `pid ${result.pid}`);

  it('a handler that blocks its thread for 10 x lockDuration keeps its lock and completes once', async () => {
    setup = new Setup();
    const worker = setup.worker(threads, { lockDuration: 1000, stalledInterval: 1000 });
    const job = await setup.queue.add('busy', { mode: 'busy', ms: 10_000 });
    const { state, job: done } = await finished(setup.queue, job.id, 25_000);
    expect(state).toBe('completed');
    expect(done.returnvalue).toMatchObject({ busy: 10_000 });
    expect(done.attemptsStarted).toBe(1);
    expect(done.attemptsMade).toBe(1);
    await sleep(1500); // a stalled sweep has run since: nothing left to find
    expect(setup.seen).toEqual([`completed ${job.id}`]);
    expect(worker.lockManager.trackedCount()).toBe(0);
    expect(setup.errors).toEqual([]);
  }, 40_000);

  it('the handler gets the job fields, its token and signal; the result crosses as JSON', async () => {
    setup = new Setup();
    setup.worker(threads);
    const job = await setup.queue.add('fields', { mode: 'job', nested: { list: [1, 'two'] } }, { attempts: 2 });
    const { state, job: done } = await finished(setup.queue, job.id);
    expect(state).toBe('completed');
    expect(done.returnvalue).toEqual({
      id: job.id, name: 'fields', data: { mode: 'job', nested: { list: [1, 'two'] } }, opts: { attempts: 2 },
      attemptsStarted: 1, attemptsMade: 0, timestamp: job.timestamp, queueName: setup.name,
      token: 'string', signal: true, aborted: false, date: new Date(0).toISOString(),
    });
  });

  it('job.updateProgress and job.log reach Redis, and settle once the main side stored them', async () => {
    setup = new Setup();
    const worker = setup.worker(threads);
    const progress: unknown[] = [];
    worker.on('progress', (_job, value) => progress.push(value));
    const job = await setup.queue.add('progress', { mode: 'progress' });
    const { state, job: done } = await finished(setup.queue, job.id);
    expect(state).toBe('completed');
    // job.log resolved with the count Redis kept, after the line was stored; progress was set locally after its call.
    expect(done.returnvalue).toEqual({ lines: 1, progress: 75 });
    expect(done.progress).toBe(75);
    expect(progress).toEqual([{ step: 1 }, 75]);
    expect(await setup.queue.getJobLogs(job.id)).toEqual({ logs: ['first line', 'second line'], count: 2 });
  });

  it('values cross as JSON with the checks they get in process: what JSON would change is refused the same way', async () => {
    setup = new Setup();
    setup.worker(threads);
    const inProcess = new Worker(`${setup.name}-in-process`, (await import(PROCESSOR.href)).default, { connection: testConnection() });
    const inProcessQueue = new Queue(`${setup.name}-in-process`, { connection: testConnection() });
    try {
      for (const mode of ['dates', 'function result', 'bigint result', 'circular', 'bad progress']) {
        const [sandboxed, local] = await Promise.all([setup.queue.add(mode, { mode }), inProcessQueue.add(mode, { mode })]);
        const [a, b] = await Promise.all([finished(setup.queue, sandboxed.id), finished(inProcessQueue, local.id)]);
        const outcome = ({ state, job }: { state: string; job: Job }) => ({ state, returnvalue: job.returnvalue, failedReason: job.failedReason });
        expect({ mode, ...outcome(a) }).toEqual({ mode, ...outcome(b) });
      }
      const byMode = async (mode: string) => (await setup!.queue.getJobs(['completed', 'failed'])).find((job) => job.name === mode)!;
      expect((await byMode('dates')).returnvalue).toEqual({ date: new Date(0).toISOString(), list: [null, 1] });
      expect((await byMode('function result')).failedReason).toBe('returnvalue.fn: is a function, which JSON cannot carry');
      expect((await byMode('circular')).failedReason).toMatch(/^returnvalue: cannot be represented as JSON: Converting circular structure to JSON/);
      expect((await byMode('bad progress')).returnvalue).toBe('refused: EchoMQOptionError: progress.ratio: is NaN, which JSON would turn into null');
    } finally {
      await inProcess.close();
      await inProcessQueue.close();
    }
  });

  it('job.updateData and job.moveToDelayed + DelayedError run a job in steps, as in process', async () => {
    setup = new Setup();
    setup.worker(threads);
    const job = await setup.queue.add('steps', { mode: 'steps', step: 1 });
    const { state, job: done } = await finished(setup.queue, job.id);
    expect(state).toBe('completed');
    // The second run read the data the first stored; moving to delayed counted no attempt.
    expect(done.returnvalue).toMatchObject({ step: 2, attemptsMade: 0 });
    expect(done.attemptsStarted).toBe(2);
    expect(done.attemptsMade).toBe(1);
    expect(setup.seen).toEqual([`completed ${job.id}`]); // neither failed nor completed by the first run
  });

  it('a CommonJS file (module.exports) and a file: URL string work too', async () => {
    setup = new Setup();
    setup.worker(threads, {}, new URL('processor.cjs', FIXTURES).href);
    const job = await setup.queue.add('cjs', { n: 21 });
    const { state, job: done } = await finished(setup.queue, job.id);
    expect(state).toBe('completed');
    expect(done.returnvalue).toEqual({ commonjs: true, doubled: 42 });
  });

  it('a file without a default export fails each job, saying so, not retried; the sandbox stays', async () => {
    setup = new Setup();
    const worker = setup.worker(threads, {}, fileURLToPath(new URL('no-default.mjs', FIXTURES)));
    const jobs = [await setup.queue.add('none', {}, { attempts: 3 }), await setup.queue.add('none', {}, { attempts: 3 })];
    for (const job of jobs) {
      const { state, job: done } = await finished(setup.queue, job.id);
      expect({ state, attemptsMade: done.attemptsMade }).toEqual({ state: 'failed', attemptsMade: 1 });
      expect(done.failedReason).toMatch(/^processorFile .*no-default\.mjs has no default export function/);
    }
    expect(setup.seen).toEqual(jobs.map((job) => `failed ${job.id} UnrecoverableError`));
    expect(poolOf(worker).size).toBe(1);
  });

  it.each([
    ['a syntax error', 'syntax-error.mjs', /^processorFile .*syntax-error\.mjs failed to load: SyntaxError: Unexpected token/, /^\s+at /],
    ['a throw at its top level', 'throws-at-import.mjs', /^processorFile .*throws-at-import\.mjs failed to load: RangeError: DATABASE_URL is not set$/, /^\s+at .*throws-at-import\.mjs:2:7/],
  ])('a file that fails to load (%s) fails each job with that error, not retried', async (_what, file, reason, where) => {
    setup = new Setup();
    setup.worker(threads, {}, fileURLToPath(new URL(file, FIXTURES)));
    const job = await setup.queue.add('broken', {}, { attempts: 3 });
    const { state, job: done } = await finished(setup.queue, job.id);
    expect({ state, attemptsMade: done.attemptsMade }).toEqual({ state: 'failed', attemptsMade: 1 });
    expect(done.failedReason).toMatch(reason);
    const [first, second] = done.stacktrace[0].split('\n');
    expect(first).toBe(done.failedReason);
    expect(second).toMatch(where); // the load error's own stack (a syntax error's has no line of the file)
  });

  it('sandboxes that die as they load are started again after a growing wait, not at once for every job', async () => {
    setup = new Setup();
    setup.worker(threads, {}, fileURLToPath(new URL('exits-at-import.mjs', FIXTURES)));
    const jobs = await setup.queue.addBulk([1, 2, 3, 4, 5].map((n) => ({ name: `exit ${n}`, data: {} })));
    const ends: number[] = [];
    for (const job of jobs) {
      const { state, job: done } = await finished(setup.queue, job.id);
      expect(state).toBe('failed');
      expect(done.failedReason).toMatch(new RegExp(`^the sandbox \\(${sandboxLabel}\\) exited with code 7 while running job ${job.id}$`));
      ends.push(done.finishedOn!);
    }
    // Waits of 100, 200, 400 and 800 ms before the 2nd to 5th sandboxes (more on a busy machine, never less).
    expect(ends[4] - ends[0]).toBeGreaterThanOrEqual(1500 - 20);
  });

  it.each([
    ['process.exit(3)', 'exit', 'exited with code 3'],
    ['an exception thrown in a timer', 'throw later', 'failed with an uncaught Error: thrown in a timer'],
    ['an unhandled rejection', 'reject later', 'failed with an uncaught RangeError: nobody caught this'],
  ])('a sandbox that dies (%s) fails only its job, saying so; the next job runs in a replacement', async (_what, mode, how) => {
    setup = new Setup();
    const worker = setup.worker(threads, { concurrency: 2 });
    const [first] = await setup.queue.addBulk([{ name: 'where', data: { mode: 'where' } }]);
    const before = (await finished(setup.queue, first.id)).job.returnvalue as { pid: number; threadId: number };
    const crash = await setup.queue.add('crash', { mode }, { attempts: 1 });
    const { state, job: crashed } = await finished(setup.queue, crash.id);
    expect(state).toBe('failed');
    expect(crashed.failedReason).toMatch(new RegExp(`^the sandbox \\(${sandboxLabel}\\) ${how} while running job ${crash.id}$`));
    // The sandbox that had run the first job: its thread id or pid, exactly.
    expect(Number(/^the sandbox \((?:worker thread|child process) (\d+)\)/.exec(crashed.failedReason!)![1])).toBe(threads ? before.threadId : before.pid);
    if (mode !== 'exit') expect(crashed.stacktrace[0]).toMatch(/\n\s+at .*fixtures\/sandbox\/processor\.mjs/); // where it died
    const next = await setup.queue.add('where', { mode: 'where' });
    const after = (await finished(setup.queue, next.id)).job.returnvalue as { pid: number; threadId: number };
    expect(placeOf(after)).not.toBe(placeOf(before));
    expect(setup.seen).toEqual([`completed ${first.id}`, `failed ${crash.id} Error`, `completed ${next.id}`]);
    expect(worker.isRunning()).toBe(true);
  });

  // What ends a sandbox from outside its handler's JavaScript: V8 at a thread's heap limit, a signal
  // to a child (the kernel's OOM killer, a kill -9). Each kind gets the one that can happen to it:
  // a child has no heap limit of its own to set here, and a SIGKILL in a thread is the worker's process.
  const [death, deadlyMode, how, deadlyOptions] = threads
    ? ['runs out of memory (a thread past its resourceLimits)', 'out of memory', 'ran out of memory', { workerThreadsOptions: { resourceLimits: { maxOldGenerationSizeMb: 32 } } }]
    : ['is killed by SIGKILL', 'kill self', 'was killed by SIGKILL', {}];
  it(`a sandbox that ${death} fails only its job, saying so; a job running beside it completes, the next runs, the worker goes on`, async () => {
    setup = new Setup();
    const worker = setup.worker(threads, { concurrency: 2, ...deadlyOptions });
    const pool = poolOf(worker);
    const first = await setup.queue.add('where', { mode: 'where' });
    const before = (await finished(setup.queue, first.id)).job.returnvalue as { pid: number; threadId: number };
    // A job that runs through the crash, in the sandbox the first job left idle.
    const beside = await setup.queue.add('beside', { mode: 'after the previous', ms: 3000 });
    await eventually(() => worker.runningCount === 1, 5000, 'the job beside running');
    const crash = await setup.queue.add('crash', { mode: deadlyMode }, { attempts: 1 });
    const { state, job: crashed } = await finished(setup.queue, crash.id);
    expect(state).toBe('failed');
    expect(crashed.failedReason).toMatch(new RegExp(`^the sandbox \\(${sandboxLabel}\\) ${how} while running job ${crash.id}$`));
    const dead = Number(/^the sandbox \((?:worker thread|child process) (\d+)\)/.exec(crashed.failedReason!)![1]);
    expect(dead).not.toBe(threads ? before.threadId : before.pid); // a sandbox of its own, started for it

    const { state: besideState, job: besideDone } = await finished(setup.queue, beside.id);
    expect({ state: besideState, attemptsStarted: besideDone.attemptsStarted }).toEqual({ state: 'completed', attemptsStarted: 1 });
    expect(placeOf(besideDone.returnvalue as { pid: number; threadId: number })).toBe(placeOf(before));
    // It was running when the other sandbox died, and finished after: untouched by the crash.
    expect(besideDone.processedOn!).toBeLessThanOrEqual(crashed.finishedOn!);
    expect(besideDone.finishedOn!).toBeGreaterThanOrEqual(crashed.finishedOn!);

    const next = await setup.queue.add('where', { mode: 'where' });
    const after = (await finished(setup.queue, next.id)).job.returnvalue as { pid: number; threadId: number };
    expect(threads ? after.threadId : after.pid).not.toBe(dead);
    expect(pool.ids).not.toContain(dead); // replaced, not kept
    if (!threads) expect(alive(dead)).toBe(false);
    expect(setup.seen).toEqual([`completed ${first.id}`, `failed ${crash.id} Error`, `completed ${beside.id}`, `completed ${next.id}`]);
    expect(worker.isRunning()).toBe(true);
    expect(setup.errors).toEqual([]);
  }, 30_000);

  it('a job.log() the previous job did not await, refused as too late, does not end the sandbox nor fail the next job', async () => {
    setup = new Setup();
    setup.worker(threads);
    const left = await setup.queue.add('left', { mode: 'leave a late log' });
    const next = await setup.queue.add('next', { mode: 'after the previous', ms: 300 });
    expect((await finished(setup.queue, left.id)).state).toBe('completed');
    const { state, job: done } = await finished(setup.queue, next.id);
    expect({ state, failedReason: done.failedReason }).toEqual({ state: 'completed', failedReason: undefined });
    expect((await setup.queue.getJobLogs(left.id)).count).toBe(0); // refused: its run had ended
  });

  it('a sandbox that dies of what the previous job left, before it started the next, runs that job on a fresh sandbox', async () => {
    setup = new Setup();
    setup.worker(threads);
    const left = await setup.queue.add('left', { mode: 'leave a crash', ms: 600 });
    const next = await setup.queue.add('next', { mode: 'after the previous', ms: 0 });
    expect((await finished(setup.queue, left.id)).state).toBe('completed');
    const { state, job: done } = await finished(setup.queue, next.id);
    expect({ state, failedReason: done.failedReason, attemptsStarted: done.attemptsStarted }).toEqual({ state: 'completed', failedReason: undefined, attemptsStarted: 1 });
    expect(setup.seen).toEqual([`completed ${left.id}`, `completed ${next.id}`]);
  });

  it('a thrown error keeps its name, message, stack and plain properties; UnrecoverableError is not retried', async () => {
    setup = new Setup();
    const worker = setup.worker(threads);
    const errors: Error[] = [];
    worker.on('failed', (_job, error) => errors.push(error));
    const plain = await setup.queue.add('fail', { mode: 'fail' });
    const unrecoverable = await setup.queue.add('unrecoverable', { mode: 'unrecoverable' }, { attempts: 5 });
    const quota = await setup.queue.add('quota', { mode: 'quota' }, { attempts: 2 });
    const text = await setup.queue.add('string', { mode: 'throw string' });
    const discarded = await setup.queue.add('discard', { mode: 'discard' }, { attempts: 5 });
    for (const job of [plain, unrecoverable, text, discarded]) expect((await finished(setup.queue, job.id)).state).toBe('failed');
    const quotaDone = await finished(setup.queue, quota.id);

    const failedPlain = (await setup.queue.getJob(plain.id))!;
    expect(failedPlain.failedReason).toBe('bad input, as thrown');
    expect(failedPlain.stacktrace[0]).toMatch(/^TypeError: bad input, as thrown\n\s+at .*fixtures\/sandbox\/processor\.mjs/);
    const failedUnrecoverable = (await setup.queue.getJob(unrecoverable.id))!;
    expect(failedUnrecoverable.attemptsMade).toBe(1);
    expect(errors[1]).toBeInstanceOf(UnrecoverableError);
    // Its retryAfter (50 ms) ruled the retry, as in process; the name and code came along.
    expect(quotaDone.state).toBe('failed');
    expect(quotaDone.job.attemptsMade).toBe(2);
    const quotaErrors = errors.filter((error) => error.name === 'QuotaError');
    expect(quotaErrors).toHaveLength(2);
    expect(quotaErrors[0]).toMatchObject({ message: 'over quota', code: 'E_QUOTA', retryAfter: 50 });
    expect((await setup.queue.getJob(text.id))!.failedReason).toBe('a string, not an Error');
    const failedDiscarded = (await setup.queue.getJob(discarded.id))!;
    expect(failedDiscarded.attemptsMade).toBe(1); // discard() reached the main side's Job before the failure
    expect(setup.seen).toContain(`failed ${quota.id} QuotaError (retry)`);
  });

  it('an error\'s cause comes along, one level deep', async () => {
    setup = new Setup();
    const worker = setup.worker(threads);
    const failed = new Promise<Error>((resolve) => worker.once('failed', (_job, error) => resolve(error)));
    await setup.queue.add('cause', { mode: 'with cause' });
    const error = await failed;
    expect(error.message).toBe('could not fetch');
    expect(error.cause).toBeInstanceOf(Error);
    expect(error.cause).toMatchObject({ name: 'TypeError', message: 'socket hang up', code: 'ECONNRESET' });
    expect((error.cause as Error).cause).toBeUndefined(); // its own cause is not carried
  });

  it('every handler context keeps V8\'s fast properties (one shared signal getter) and its own token, rateLimit and signal', async () => {
    setup = new Setup();
    setup.worker(threads, { concurrency: 4 });
    const { queue } = setup;
    const jobs = await queue.addBulk(Array.from({ length: 8 }, () => ({ name: 'shape', data: { mode: 'context shape' } })));
    const done = await Promise.all(jobs.map((job) => finished(queue, job.id)));
    expect(done.map(({ state, job }) => [state, job.returnvalue])).toEqual(
      Array(8).fill(['completed', { fast: true, keys: ['token', 'rateLimit', 'signal'] }]),
    );
  });

  it('rateLimit(ms) from the handler\'s context sets the worker\'s rate limit; RateLimitError then gives the job back unattempted', async () => {
    setup = new Setup();
    setup.worker(threads);
    const job = await setup.queue.add('limited', { mode: 'rate limited', ms: 300 }, { attempts: 1 });
    const { state, job: done } = await finished(setup.queue, job.id);
    expect(state).toBe('completed');
    // Run twice, the first attempt not counted: the second saw attemptsMade 0.
    expect(done.returnvalue).toEqual({ attemptsStarted: 2, attemptsMade: 0 });
    const client = newClient();
    const until = Number(await client.hget(new Keys(setup.name).meta, 'rateLimitedUntil'));
    client.disconnect();
    expect(until).toBeGreaterThanOrEqual(done.timestamp + 300);
    expect(done.finishedOn!).toBeGreaterThanOrEqual(until - 50); // the worker took nothing until the limit lifted
    expect(setup.seen).toEqual([`completed ${job.id}`]);
  });

  it('RateLimitError without rateLimit(ms) first fails its attempt as any error, rather than running the job again at once forever', async () => {
    setup = new Setup();
    setup.worker(threads);
    const job = await setup.queue.add('unlimited', { mode: 'rate limit error only' }, { attempts: 3 });
    const { state, job: failed } = await finished(setup.queue, job.id);
    expect(state).toBe('failed');
    expect(failed.attemptsStarted).toBe(3);
    expect(failed.attemptsMade).toBe(3);
    expect(failed.failedReason).toMatch(/^429, and no limit set \(RateLimitError thrown in a sandbox without rateLimit\(ms\) first/);
  });

  it('an error named after what Object.prototype has (toString, __proto__, constructor), or with an own __proto__, fails only its job', async () => {
    setup = new Setup();
    const worker = setup.worker(threads);
    const errors: Error[] = [];
    worker.on('failed', (_job, error) => errors.push(error));
    const cases = [
      { name: 'toString' }, { name: '__proto__' }, { name: 'constructor' }, { name: 'hasOwnProperty' },
      { name: 'UnrecoverableError', proto: true }, { name: 'TypeError', constructorProp: true },
    ];
    const jobs = [];
    for (const data of cases) jobs.push(await setup.queue.add('hostile', { mode: 'hostile error', ...data }));
    for (const [i, job] of jobs.entries()) {
      const { state, job: failed } = await finished(setup.queue, job.id);
      expect({ state, failedReason: failed.failedReason }).toEqual({ state: 'failed', failedReason: `hostile: ${cases[i].name}` });
    }
    expect(errors.map((error) => [error instanceof Error, error.name])).toEqual(cases.map(({ name }) => [true, name]));
    expect(Object.getPrototypeOf(errors[4])).not.toBeNull(); // the __proto__ property did not become the prototype
    const next = await setup.queue.add('where', { mode: 'where' });
    expect((await finished(setup.queue, next.id)).state).toBe('completed');
    expect(worker.isRunning()).toBe(true);
    expect(setup.errors).toEqual([]);
  });

  it('messages the processor code sends its parent itself are dropped, said once on the worker\'s error event', async () => {
    setup = new Setup();
    const worker = setup.worker(threads);
    const jobs = [];
    for (let i = 0; i < 2; i++) jobs.push(await setup.queue.add('foreign', { mode: 'foreign messages' }));
    for (const job of jobs) {
      const { state, job: done } = await finished(setup.queue, job.id);
      expect({ state, returnvalue: done.returnvalue }).toEqual({ state: 'completed', returnvalue: 'sent' });
    }
    const next = await setup.queue.add('where', { mode: 'where' });
    expect((await finished(setup.queue, next.id)).state).toBe('completed');
    expect(setup.errors.map((error) => error.message)).toEqual([
      expect.stringMatching(new RegExp(`^the sandbox \\(${sandboxLabel}\\) sent a message that is not EchoMQ's \\(${threads ? 'parentPort.postMessage' : 'process.send'} by the processor's code\\?\\): dropped, as any other will be`)),
    ]);
    expect(worker.isRunning()).toBe(true);
  });

  it('a lost lock aborts the signal in the sandbox with the same name and message; a handler that stops in time keeps its sandbox', async () => {
    setup = new Setup();
    const worker = setup.worker(threads, { lockDuration: 5000, lockRenewTime: 200 });
    const lost = new Promise<Error>((resolve) => worker.once('lockLost', (_job, error) => resolve(error)));
    const first = await setup.queue.add('where', { mode: 'where' });
    const before = (await finished(setup.queue, first.id)).job.returnvalue as { pid: number; threadId: number };
    const job = await setup.queue.add('cooperative', { mode: 'wait for abort' });
    await eventually(() => worker.lockManager.trackedCount() === 1, 5000, 'the job running');
    const client = newClient();
    await client.set(new Keys(setup.name).lock(job.id), 'someone-else', 'PX', 10_000);
    const error = await lost;
    expect(error).toBeInstanceOf(LockLostError);
    // The handler's signal aborted with an Error of the same name and message (it logged them), and it stopped.
    await eventually(async () => (await setup!.queue.getJobLogs(job.id)).count === 1, 5000, 'the log line of the abort');
    expect((await setup.queue.getJobLogs(job.id)).logs).toEqual([`aborted: an Error, LockLostError: ${error.message}`]);
    const next = await setup.queue.add('where', { mode: 'where' });
    const after = (await finished(setup.queue, next.id)).job.returnvalue as { pid: number; threadId: number };
    expect(placeOf(after)).toBe(placeOf(before)); // the same sandbox: it was not killed
    expect(setup.seen).toEqual([`completed ${first.id}`, `lockLost ${job.id} LockLostError`, `completed ${next.id}`]);
    client.disconnect();
  });

  it('a handler that ignores the abort is killed after sandboxGracePeriod and replaced', async () => {
    setup = new Setup();
    const worker = setup.worker(threads, { lockDuration: 5000, lockRenewTime: 200, sandboxGracePeriod: 400 });
    const abortedAt: number[] = [];
    worker.lockManager.renewalFailed$.subscribe(() => abortedAt.push(Date.now()));
    const lost = new Promise<[Job, Error, number]>((resolve) => worker.once('lockLost', (job, error) => resolve([job, error, Date.now()])));
    const first = await setup.queue.add('where', { mode: 'where' });
    const before = (await finished(setup.queue, first.id)).job.returnvalue as { pid: number; threadId: number };
    const job = await setup.queue.add('stubborn', { mode: 'ignore abort' });
    await eventually(() => worker.lockManager.trackedCount() === 1, 5000, 'the job running');
    const client = newClient();
    await client.set(new Keys(setup.name).lock(job.id), 'someone-else', 'PX', 10_000);
    const [lostJob, error, lostAt] = await lost;
    expect(lostJob.id).toBe(job.id);
    expect(error).toBeInstanceOf(LockLostError); // the job's promise rejected with the signal's reason
    expect(lostAt - abortedAt[0]).toBeGreaterThanOrEqual(380);
    const next = await setup.queue.add('where', { mode: 'where' });
    const after = (await finished(setup.queue, next.id)).job.returnvalue as { pid: number; threadId: number };
    expect(placeOf(after)).not.toBe(placeOf(before)); // a fresh sandbox
    await eventually(() => poolOf(worker).size === 1, 5000, 'the stubborn sandbox gone');
    expect(poolOf(worker).ids).toEqual([threads ? after.threadId : after.pid]);
    if (!threads) expect(alive(before.pid)).toBe(false);
    client.disconnect();
  });

  it('a timeout fails the job at once; a handler that ignores it has its sandbox killed after the grace, and the worker goes on', async () => {
    setup = new Setup();
    const worker = setup.worker(threads, { sandboxGracePeriod: 1500 });
    const pool = poolOf(worker);
    let busyAtFailure: number | undefined;
    worker.on('failed', () => (busyAtFailure = pool.busy));
    const first = await setup.queue.add('where', { mode: 'where' });
    const before = (await finished(setup.queue, first.id)).job.returnvalue as { pid: number; threadId: number };
    const job = await setup.queue.add('stubborn', { mode: 'ignore abort' }, { timeout: 300 });
    const { state, job: failed } = await finished(setup.queue, job.id);
    expect(state).toBe('failed');
    expect(failed.failedReason).toBe(`job ${job.id} timed out after 300 ms`);
    expect(busyAtFailure).toBe(1); // failed while the handler still ran: held neither by it nor by the grace
    const next = await setup.queue.add('where', { mode: 'where' });
    const after = (await finished(setup.queue, next.id)).job.returnvalue as { pid: number; threadId: number };
    expect(placeOf(after)).not.toBe(placeOf(before)); // the stubborn sandbox was busy, then killed
    await eventually(() => pool.size === 1, 10_000, 'the stubborn sandbox killed after the grace');
    expect(pool.ids).toEqual([threads ? after.threadId : after.pid]);
    if (!threads) expect(alive(before.pid)).toBe(false);
    expect(worker.isRunning()).toBe(true);
  });

  it('close() while a sandbox still runs a job that timed out ends that sandbox too, without waiting for the grace: none is left', async () => {
    setup = new Setup();
    const worker = setup.worker(threads, { sandboxGracePeriod: 30_000 });
    const pool = poolOf(worker);
    const job = await setup.queue.add('stubborn', { mode: 'ignore abort' }, { timeout: 150 });
    expect((await finished(setup.queue, job.id)).state).toBe('failed');
    expect(pool.busy).toBe(1); // its handler lingers, for up to 30 s
    const ids = pool.ids;
    const started = Date.now();
    await worker.close();
    expect(Date.now() - started).toBeLessThan(15_000); // the 30 s grace is not waited for
    expect(pool.size).toBe(0);
    if (!threads) for (const pid of ids) expect(alive(pid)).toBe(false);
    expect(setup.errors).toEqual([]);
  });

  it('a handler given up (timed out) can no longer change its job: updateData, updateProgress and moveToDelayed are refused, log is kept', async () => {
    setup = new Setup();
    setup.worker(threads);
    const job = await setup.queue.add('late', { mode: 'update after abort' }, { timeout: 150 });
    const { state, job: failed } = await finished(setup.queue, job.id);
    expect(state).toBe('failed');
    await eventually(async () => (await setup!.queue.getJobLogs(job.id)).count === 1, 5000, 'the handler\'s log line');
    const refusal = `refused: the worker gave this run of job ${job.id} up (JobTimeoutError: job ${job.id} timed out after 150 ms)`;
    expect((await setup.queue.getJobLogs(job.id)).logs[0].split('\n')).toEqual([
      `updateData: job.updateData(): ${refusal}`, `updateProgress: job.updateProgress(): ${refusal}`, `moveToDelayed: job.moveToDelayed(): ${refusal}`,
    ]);
    const after = (await setup.queue.getJob(job.id))!;
    expect({ data: after.data, progress: after.progress, state: await after.getState() }).toEqual({ data: failed.data, progress: 0, state: 'failed' });
  });

  it('repeated timeouts of handlers that ignore them keep the sandboxes at most twice the concurrency; the extra ones end', async () => {
    setup = new Setup();
    const worker = setup.worker(threads, { concurrency: 2, sandboxGracePeriod: 1500 });
    const pool = poolOf(worker);
    const counts: number[] = [];
    worker.on('failed', () => counts.push(pool.active));
    const jobs = await setup.queue.addBulk(Array.from({ length: 16 }, () => ({ name: 'stubborn', data: { mode: 'ignore abort' }, opts: { timeout: 150 } })));
    for (const job of jobs) expect((await finished(setup.queue, job.id)).state).toBe('failed');
    expect(counts).toHaveLength(16);
    expect(Math.max(...counts)).toBeLessThanOrEqual(4); // 2 running + at most 2 lingering
    // Past the grace, the lingering ones are killed; what is left runs nothing and is at most concurrency.
    await eventually(() => pool.size <= 2, 10_000, 'the lingering sandboxes gone');
    expect(worker.isRunning()).toBe(true);
  });

  it('sandboxes freed once their given-up handlers stop are trimmed down to the concurrency', async () => {
    setup = new Setup();
    const worker = setup.worker(threads, { concurrency: 2 });
    const pool = poolOf(worker);
    const jobs = await setup.queue.addBulk(Array.from({ length: 8 }, () => ({ name: 'slow stop', data: { mode: 'slow after abort', ms: 400 }, opts: { timeout: 100 } })));
    for (const job of jobs) expect((await finished(setup.queue, job.id)).state).toBe('failed');
    // Every handler stops 400 ms after its abort, and its sandbox is freed: none is kept beyond 2.
    await eventually(() => pool.busy === 0 && pool.size <= 2, 10_000, 'the freed sandboxes trimmed');
    expect(pool.active).toBeLessThanOrEqual(2);
    const next = await setup.queue.add('where', { mode: 'where' });
    expect((await finished(setup.queue, next.id)).state).toBe('completed');
  });

  it('worker.cancelJob aborts the sandbox\'s signal with JobCancelledError; a handler that stops keeps its sandbox', async () => {
    setup = new Setup();
    const worker = setup.worker(threads);
    const first = await setup.queue.add('where', { mode: 'where' });
    const before = (await finished(setup.queue, first.id)).job.returnvalue as { pid: number; threadId: number };
    const job = await setup.queue.add('cooperative', { mode: 'wait for abort' }, { attempts: 3 });
    await eventually(() => worker.lockManager.trackedCount() === 1, 5000, 'the job running');
    expect(worker.cancelJob(job.id, 'the user asked')).toBe(true);
    const { state, job: failed } = await finished(setup.queue, job.id);
    expect(state).toBe('failed');
    expect(failed.failedReason).toBe(`job ${job.id} was cancelled: the user asked`);
    expect(failed.attemptsMade).toBe(1); // not retried
    await eventually(async () => (await setup!.queue.getJobLogs(job.id)).count === 1, 5000, 'the log line of the abort');
    expect((await setup.queue.getJobLogs(job.id)).logs).toEqual([`aborted: an Error, JobCancelledError: job ${job.id} was cancelled: the user asked`]);
    await eventually(() => poolOf(worker).busy === 0, 5000, 'its sandbox free again'); // the handler returns right after its log line
    const next = await setup.queue.add('where', { mode: 'where' });
    const after = (await finished(setup.queue, next.id)).job.returnvalue as { pid: number; threadId: number };
    expect(placeOf(after)).toBe(placeOf(before));
  });

  it('close() waits for the running jobs, then ends every sandbox: none is left', async () => {
    setup = new Setup();
    const worker = setup.worker(threads, { concurrency: 3 });
    const pool = poolOf(worker);
    const jobs = await setup.queue.addBulk([1, 2, 3].map(() => ({ name: 'busy', data: { mode: 'busy', ms: 800 } })));
    await eventually(() => worker.runningCount === 3, 5000, 'three jobs running');
    expect(pool.size).toBe(3);
    const ids = pool.ids;
    await worker.close();
    for (const job of jobs) expect((await setup.queue.getJob(job.id))!.finishedOn).toBeDefined();
    expect(setup.seen.sort()).toEqual(jobs.map((job) => `completed ${job.id}`).sort());
    expect(pool.size).toBe(0); // each thread or child process exited
    if (!threads) for (const pid of ids) expect(alive(pid)).toBe(false);
  });

  it('close(true) kills the sandboxes at once, without waiting for a handler that ignores its signal', async () => {
    setup = new Setup();
    const worker = setup.worker(threads, { concurrency: 2, sandboxGracePeriod: 30_000 });
    const pool = poolOf(worker);
    await setup.queue.addBulk([1, 2].map(() => ({ name: 'stubborn', data: { mode: 'ignore abort' } })));
    await eventually(() => worker.runningCount === 2 && pool.size === 2, 5000, 'two jobs running');
    const ids = pool.ids;
    const started = Date.now();
    await worker.close(true);
    expect(Date.now() - started).toBeLessThan(15_000); // the 30 s grace is not waited for
    expect(pool.size).toBe(0);
    if (!threads) for (const pid of ids) expect(alive(pid)).toBe(false);
    await eventually(() => setup!.seen.length === 2, 2000, 'both runs given up');
    expect(setup.seen.every((line) => line.startsWith('lockLost '))).toBe(true);
  });

  it(`runs in ${kind}`, async () => {
    setup = new Setup();
    setup.worker(threads);
    const job = await setup.queue.add('where', { mode: 'where' });
    const where = (await finished(setup.queue, job.id)).job.returnvalue as { pid: number; threadId: number };
    if (threads) {
      expect(where.pid).toBe(process.pid);
      expect(where.threadId).toBeGreaterThan(0);
    } else {
      expect(where.pid).not.toBe(process.pid);
      expect(where.threadId).toBe(0);
    }
    expect(inSandbox.test(threads ? `worker thread ${where.threadId}` : `child process ${where.pid}`)).toBe(true);
  });
});
