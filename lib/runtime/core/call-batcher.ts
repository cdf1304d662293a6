/** Sends a batch; one result per item, in order: its value, or the Error that refused that item alone. */
export type SendBatch<In, Out> = (batch: In[]) => Promise<Array<Out | Error>>;

/** When a batcher sends without waiting for the end of the event-loop turn. */
export type SendNow = (pending: number, inFlight: number) => boolean;

interface Pending<In, Out> {
  item: In;
  resolve(value: Out): void;
  reject(error: unknown): void;
}

/**
 * Gathers calls made in one turn of the event loop into one batch: the shape of the worker's
 * finishes (FinishBatcher) and of concurrent Queue.add calls. A call waits at most until the end of
 * the turn (setImmediate), less when `sendNow` says nothing more can join; a batch holds at most
 * `maxBatch` items. Each caller gets its own result: an Error in its place rejects that caller
 * only; a failed send (no connection) rejects every caller of that batch.
 */
export class CallBatcher<In, Out> {
  private pending: Array<Pending<In, Out>> = [];
  private inFlight = 0;
  private flushScheduled = false;

  constructor(
    private readonly send: SendBatch<In, Out>,
    private readonly maxBatch: number,
    private readonly sendNow: SendNow,
  ) {}

  submit(item: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (this.pending.length >= this.maxBatch || this.sendNow(this.pending.length, this.inFlight)) {
        this.flush();
      } else if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => {
          this.flushScheduled = false;
          this.flush();
        });
      }
    });
  }

  /**
   * Sends what waits for the end of the turn now. Called before the connection closes: a call
   * made in the same turn as close() still goes ahead of the QUIT, as it would unbatched.
   */
  flush(): void {
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    this.inFlight += batch.length;
    this.send(batch.map((p) => p.item)).then(
      (results) => {
        this.inFlight -= batch.length;
        if (results.length !== batch.length) {
          const error = new Error(`EchoMQ: a batch of ${batch.length} got ${results.length} results`);
          for (const p of batch) p.reject(error);
          return;
        }
        results.forEach((result, i) => (result instanceof Error ? batch[i].reject(result) : batch[i].resolve(result)));
      },
      (error: unknown) => {
        this.inFlight -= batch.length;
        for (const p of batch) p.reject(error);
      },
    );
  }
}
