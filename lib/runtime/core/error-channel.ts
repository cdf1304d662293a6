import type { EventEmitter } from 'node:events';

/** Anything thrown, as an Error. */
export function asError(thrown: unknown): Error {
  return thrown instanceof Error ? thrown : new Error(String(thrown));
}

/**
 * Reports an error on an emitter's 'error' channel, or prints it when nobody listens (an 'error'
 * emitted with no listener would throw). Never throws, not even when a listener does: it runs in
 * loops and closes whose promises nobody may be awaiting. `owner` names who reports, for the print.
 */
export function reportOnErrorChannel(emitter: EventEmitter, owner: string, error: Error): void {
  try {
    if (emitter.listenerCount('error') > 0) {
      emitter.emit('error', error);
      return;
    }
  } catch (thrown) {
    console.error(`EchoMQ ${owner}: an 'error' listener threw`, thrown);
  }
  console.error(`EchoMQ ${owner}:`, error);
}
