/**
 * The promise's value, or undefined when it has not settled within `ms` (its late outcome is ignored).
 * When the timer fires, the answer is given one more pass of the event loop's I/O phase (setImmediate
 * runs after it): a process whose event loop was blocked past `ms` (a big synchronous task beside the
 * worker) has the reply waiting on the socket, and timers run before sockets are read, so without
 * that pass a reply that came in time would be taken for silence.
 */
export async function withinMs<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  promise.catch(() => undefined);
  try {
    return await Promise.race([promise, new Promise<undefined>((resolve) => {
      timer = setTimeout(() => (immediate = setImmediate(() => resolve(undefined))), ms);
    })]);
  } finally {
    clearTimeout(timer);
    if (immediate) clearImmediate(immediate);
  }
}
