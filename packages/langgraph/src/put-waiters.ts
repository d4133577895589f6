/**
 * Wakes a putWrites waiting for its checkpoint's label when this saver's put of it lands
 * (keys are `${stream}#${checkpoint id}`). A waiter also wakes after its own timeout, so a
 * put made elsewhere (another process) is found by the caller's next try.
 *
 * It also says whether this saver's puts of a stream are making progress (one in flight, or
 * one landed within `quietMs`): LangGraph chains a thread's puts, so while they progress the
 * label a putWrites waits for is still coming, however long the queue ahead of it takes on a
 * slow store; once they stop, the wait gives up.
 */
export class PutWaiters {
  readonly #waiters = new Map<string, Set<() => void>>();
  readonly #inFlight = new Map<string, number>();
  readonly #lastLanded = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  /** A put of `stream` begins; call the answer when it ends (landed or failed). */
  started(stream: string): () => void {
    this.#inFlight.set(stream, (this.#inFlight.get(stream) ?? 0) + 1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const left = (this.#inFlight.get(stream) ?? 1) - 1;
      if (left > 0) this.#inFlight.set(stream, left);
      else this.#inFlight.delete(stream);
      this.#lastLanded.set(stream, this.now());
    };
  }

  /** Whether a put of `stream` is in flight, or one ended less than `quietMs` ago. */
  progressing(stream: string, quietMs: number): boolean {
    if ((this.#inFlight.get(stream) ?? 0) > 0) return true;
    const last = this.#lastLanded.get(stream);
    return last !== undefined && this.now() - last < quietMs;
  }

  landed(key: string): void {
    const waiters = this.#waiters.get(key);
    this.#waiters.delete(key);
    for (const wake of waiters ?? []) wake();
  }

  wait(key: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const set = this.#waiters.get(key) ?? new Set<() => void>();
      this.#waiters.set(key, set);
      const wake = () => {
        clearTimeout(timer);
        set.delete(wake);
        if (set.size === 0 && this.#waiters.get(key) === set) this.#waiters.delete(key);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      set.add(wake);
    });
  }
}
