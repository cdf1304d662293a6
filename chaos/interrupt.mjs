// What to undo when the harness itself is stopped by a signal mid-scenario (a test's timeout sends
// SIGTERM): the scenarios' finally blocks do not run then, and their redis-servers and worker
// processes would outlive the harness. Each scenario registers its undo while it runs.
const pending = new Set();

/** Registers `undo` (bounded, it must not hang) until the returned function is called. */
export function onInterrupt(undo) {
  pending.add(undo);
  return () => pending.delete(undo);
}

/** On SIGINT or SIGTERM: every registered undo, then exit with the signal's status. */
export function undoOnSignals() {
  for (const [signal, status] of [['SIGINT', 130], ['SIGTERM', 143]]) {
    process.once(signal, async () => {
      await Promise.allSettled([...pending].map((undo) => undo()));
      process.exit(status);
    });
  }
}
