/**
 * Wakes a putWrites waiting for its checkpoint's label when this saver's put of it lands
 * (keys are `${stream}#${checkpoint id}`). A waiter also wakes after its own timeout, so a
 * put made elsewhere (another process) is found by the caller's next try.
 */
export class PutWaiters {
  readonly #waiters = new Map<string, Set<() => void>>();

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
