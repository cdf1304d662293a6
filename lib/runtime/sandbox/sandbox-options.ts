import { statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ResourceLimits } from 'node:worker_threads';
import { EchoMQOptionError } from '../../protocol/errors.js';
import { describe } from '../../protocol/names.js';
import { MAX_TIMER_MS } from '../core/sleeper.js';

/** How long a sandbox may go on after its job's signal aborted, by default, before it is killed. */
export const DEFAULT_SANDBOX_GRACE_MS = 5000;

/** What a pool of sandboxes needs, checked. */
export interface SandboxSpec {
  /** The processor file, as a file: URL string (what the host imports). */
  fileUrl: string;
  /** Worker threads (true) or child processes (false). */
  threads: boolean;
  /** ms a sandbox may go on after its job's signal aborted before it is killed. */
  graceMs: number;
  /** A thread's heap and stack limits (threads only); Node's defaults when absent. */
  resourceLimits?: ResourceLimits;
}

/**
 * What a worker thread sandbox is started with, beyond what the host needs: BullMQ's option name,
 * narrowed to `resourceLimits`. The rest of Node's thread options (workerData, transferList,
 * stdio, eval) would break the host's own channel, so they are not taken.
 */
export interface WorkerThreadsOptions {
  /**
   * The heap and stack limits of each thread (Node's `resourceLimits`). A thread that reaches its
   * heap limit is ended by Node and its job fails with "ran out of memory"; the process lives on.
   * Without it a thread's heap may grow to the process's limit. A `--max-old-space-size` of the
   * process overrides `maxOldGenerationSizeMb`.
   */
  resourceLimits?: ResourceLimits;
}

/** The sandbox options of a Worker (part of WorkerOptions). */
export interface SandboxOptionsInput {
  useWorkerThreads?: boolean;
  sandboxGracePeriod?: number;
  workerThreadsOptions?: WorkerThreadsOptions;
}

/** The fields of Node's ResourceLimits, each a number of MB above 0. */
const RESOURCE_LIMITS = ['maxOldGenerationSizeMb', 'maxYoungGenerationSizeMb', 'codeRangeSizeMb', 'stackSizeMb'] as const;

/**
 * Checks a processor file and the sandbox options, before anything is opened or sent: a path
 * (absolute) or a file: URL (string or URL) of a file that exists. EchoMQOptionError names
 * `processorFile`, `useWorkerThreads`, `sandboxGracePeriod` or `workerThreadsOptions` (and its field).
 */
export function sandboxSpec(processorFile: unknown, opts: SandboxOptionsInput): SandboxSpec {
  const path = processorPath(processorFile);
  let isFile: boolean;
  try {
    isFile = statSync(path).isFile();
  } catch (error) {
    throw new EchoMQOptionError('processorFile', `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  if (!isFile) throw new EchoMQOptionError('processorFile', `${path} is not a file`);
  const threads = opts.useWorkerThreads ?? false;
  if (typeof threads !== 'boolean') throw new EchoMQOptionError('useWorkerThreads', `must be true (worker threads) or false (child processes), got ${describe(threads)}`);
  const spec: SandboxSpec = { fileUrl: pathToFileURL(path).href, threads, graceMs: graceOf(opts.sandboxGracePeriod) };
  const resourceLimits = resourceLimitsOf(opts.workerThreadsOptions, threads);
  if (resourceLimits) spec.resourceLimits = resourceLimits;
  return spec;
}

/** workerThreadsOptions checked: an object with resourceLimits only, given with worker threads. */
function resourceLimitsOf(options: unknown, threads: boolean): ResourceLimits | undefined {
  if (options === undefined) return undefined;
  const field = 'workerThreadsOptions';
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new EchoMQOptionError(field, `must be an object such as { resourceLimits: { maxOldGenerationSizeMb: 256 } }, got ${describe(options)}`);
  if (!threads) throw new EchoMQOptionError(field, 'applies to worker threads (useWorkerThreads: true); child processes take their heap limit from the worker\'s execArgv or NODE_OPTIONS');
  for (const key of Object.keys(options)) {
    if (key !== 'resourceLimits') throw new EchoMQOptionError(`${field}.${key}`, 'is not taken: only resourceLimits is (the sandbox sets the rest of the thread\'s options itself)');
  }
  const limits = (options as WorkerThreadsOptions).resourceLimits;
  if (limits === undefined) return undefined;
  if (typeof limits !== 'object' || limits === null || Array.isArray(limits)) throw new EchoMQOptionError(`${field}.resourceLimits`, `must be an object such as { maxOldGenerationSizeMb: 256 }, got ${describe(limits)}`);
  const checked: ResourceLimits = {};
  for (const [key, value] of Object.entries(limits)) {
    if (!(RESOURCE_LIMITS as readonly string[]).includes(key)) throw new EchoMQOptionError(`${field}.resourceLimits.${key}`, `is not a resource limit; known: ${RESOURCE_LIMITS.join(', ')}`);
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw new EchoMQOptionError(`${field}.resourceLimits.${key}`, `must be a number of MB above 0, got ${describe(value)}`);
    checked[key as (typeof RESOURCE_LIMITS)[number]] = value;
  }
  return checked;
}

/** The file's absolute path, from a path or a file: URL. */
function processorPath(file: unknown): string {
  const expected = 'must be a function (run in process), or the absolute path or file: URL of a module whose default export is the handler';
  let url: URL | undefined;
  if (file instanceof URL) url = file;
  else if (typeof file === 'object' && file !== null && typeof (file as URL).href === 'string' && typeof (file as URL).protocol === 'string') url = new URL((file as URL).href); // a URL of another realm
  else if (typeof file === 'string' && file.startsWith('file:')) {
    try {
      url = new URL(file);
    } catch {
      throw new EchoMQOptionError('processorFile', `${describe(file)} is not a valid file: URL`);
    }
  } else if (typeof file !== 'string' || file === '') throw new EchoMQOptionError('processorFile', `${expected}, got ${describe(file)}`);
  if (url) {
    if (url.protocol !== 'file:') throw new EchoMQOptionError('processorFile', `${expected}; ${url.protocol} URLs are not files`);
    return fileURLToPath(url);
  }
  if (!isAbsolute(file as string)) {
    throw new EchoMQOptionError('processorFile', `${describe(file)} is relative; give an absolute path (path.resolve) or a URL (new URL('./file.mjs', import.meta.url)), so it does not depend on the working directory`);
  }
  return file as string;
}

function graceOf(value: unknown): number {
  if (value === undefined) return DEFAULT_SANDBOX_GRACE_MS;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_TIMER_MS) {
    throw new EchoMQOptionError('sandboxGracePeriod', `must be a whole number of ms from 0 to ${MAX_TIMER_MS}, got ${describe(value)}`);
  }
  return value;
}
