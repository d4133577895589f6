/**
 * This saver's putWrites calls still in flight, per stream and checkpoint label. A put waits
 * for those of the checkpoint it leaves (the thread's tip) first: the server freezes a
 * checkpoint's writes when a commit moves the thread's state off it, and a write arriving
 * after that takes the ledger path (one append instead of a record write;
 * docs/ledger-format.md, "Pending writes"). LangGraph's loop does not order a superstep's
 * putWrites before the next put (durability `async`), so without this a slow write could land
 * after the freeze. Only the tip's: with `async` the loop runs ahead, and writes to a later
 * checkpoint wait for that checkpoint's put, which waits for this one.
 */
export class WritesInFlight {
  readonly #calls = new Map<string, Map<string, Set<Promise<unknown>>>>();

  track<T>(stream: string, label: string, call: Promise<T>): Promise<T> {
    const labels = this.#calls.get(stream) ?? new Map<string, Set<Promise<unknown>>>();
    this.#calls.set(stream, labels);
    const calls = labels.get(label) ?? new Set<Promise<unknown>>();
    labels.set(label, calls);
    calls.add(call);
    const done = () => {
      calls.delete(call);
      if (calls.size === 0 && labels.get(label) === calls) labels.delete(label);
      if (labels.size === 0 && this.#calls.get(stream) === labels) this.#calls.delete(stream);
    };
    call.then(done, done);
    return call;
  }

  /** Settles once every call to the stream's checkpoint `label` made so far has settled. */
  async settled(stream: string, label: string): Promise<void> {
    const calls = this.#calls.get(stream)?.get(label);
    if (calls) await Promise.allSettled([...calls]);
  }
}
