import type { JobLock } from '../locks/tracked-job.js';
import type { ProcessorContext } from '../queue/processor.js';

/**
 * The second argument of a handler: the run's token, and a `signal` whose AbortController is made
 * only if the handler reads it. `signal` is an own, enumerable property, so `{ ...context }` and
 * `const { signal } = context` still carry it.
 *
 * Why a class with one shared getter, and not the object literal
 * `{ token, get signal() { return lock.signal; } }`: V8 gives an object literal with a getter
 * slow (dictionary) properties and keeps each accessor in an AccessorPair allocated in the old
 * generation. With a new getter closure per run, every job's pair pointed at its getter, whose
 * closure held the job's lock and, through the lock's pending race, the whole run. The
 * young-generation collector keeps whatever an old object points at, so every run was copied,
 * promoted, and left for a full collection (bench/README.md, "Where EchoMQ's time goes"). One
 * getter, shared by every context through one descriptor, keeps the contexts' fast properties
 * and nothing old pointing at a run.
 */
export class HandlerContext implements ProcessorContext {
  declare readonly signal: AbortSignal;
  readonly #lock: JobLock;

  constructor(public token: string, lock: JobLock) {
    this.#lock = lock;
    Object.defineProperty(this, 'signal', HandlerContext.#signalProperty);
  }

  static readonly #signalProperty: PropertyDescriptor = {
    enumerable: true,
    configurable: true,
    get(this: HandlerContext): AbortSignal {
      return this.#lock.signal;
    },
  };
}
