import { asError } from '../core/error-channel.js';
import type { ContextManager, Telemetry } from '../core/telemetry.js';

/**
 * `fn` run with `context` active, by a ContextManager that may throw (a Telemetry that throws never
 * costs a job): the manager's error goes to `onError`, and `fn` runs all the same, exactly once
 * (untraced when the manager never ran it). What `fn` returns or throws is the answer, whatever
 * the manager does around it.
 */
export function runWithin<T>(contextManager: ContextManager, context: unknown, fn: () => T, onError: (error: Error) => void): T {
  let outcome: { value: T } | { error: unknown } | undefined;
  let started = false;
  const run = (): T => {
    // Once: a manager that calls back twice, or late (after the fallback below ran fn), runs nothing more.
    if (started) throw new Error('EchoMQ: a ContextManager ran the same callback twice; the second run was refused');
    started = true;
    try {
      const value = fn();
      outcome = { value };
      return value;
    } catch (error) {
      outcome = { error };
      throw error;
    }
  };
  try {
    contextManager.with(context, run);
  } catch (thrown) {
    // fn's own throw, passed on by the manager, is fn's answer, not the manager's fault.
    if (!(outcome && 'error' in outcome && outcome.error === thrown)) onError(asError(thrown));
  }
  if (!started) {
    started = true;
    return fn();
  }
  // Started but not done: a manager that deferred the callback (it cannot be waited for here).
  if (outcome === undefined) throw new Error('EchoMQ: a ContextManager deferred the callback it was given; it must run it before with() returns');
  if ('error' in outcome) throw outcome.error;
  return outcome.value;
}

/**
 * `fn` run under the Telemetry's empty context (ContextManager.root), when it has one: what a
 * Worker starts there (its fetch loop, its sweeps, its sandboxes) then carries no context of its
 * caller. Without a telemetry, or without `root`, `fn` runs as it is.
 */
export function underRootContext<T>(telemetry: Telemetry | undefined, fn: () => T, onError: (error: Error) => void): T {
  const contextManager = telemetry?.contextManager;
  if (contextManager?.root === undefined) return fn();
  let root: unknown;
  try {
    root = contextManager.root();
  } catch (error) {
    onError(asError(error));
    return fn();
  }
  return runWithin(contextManager, root, fn, onError);
}
