import { UnavailableError } from '../domain/errors.js';

/**
 * The process's memory ceiling as one pool (docs/state-v2.md, "Limits"): HEFESTO_MEMORY_MIB
 * less the runtime's reserve, drawn on by the warm-state cache, the chunk cache and every
 * request's materialised states and values, so that requests each within their work budget
 * cannot add up past it together.
 *
 * - A request has an account (`open`; the HTTP middleware opens one per request and hands it
 *   to the services that materialise states: hydration, checkpoints, forks, reads): what it
 *   charges is given back when the account ends (or, when its response streams a state,
 *   when the stream ends too: `retain`). Passed explicitly, not kept in async context: an
 *   AsyncLocalStorage would put a hook on every promise of the process.
 * - `charge(bytes)`: memory a request is about to materialise (state-v2/budget.ts memoryOf
 *   of a measured extent). When the pool lacks it, the caches give back what they hold
 *   (least recently used first); then the request waits, first come first served, at most
 *   `maxWaitMs`, and is refused with 503 ErrUnavailable and Retry-After. A request that
 *   holds memory already waits ahead of those that hold none (it gives back more, sooner),
 *   and when every account holding memory waits (none can give any back by finishing), the
 *   newest of them is refused at once instead of waiting for its deadline.
 * - The caches hold memory of the pool with no wait (`tryHold`): they keep an entry only if
 *   the pool has room for it, after giving back older entries. A state moving between a
 *   request and the state cache moves its memory with it (`adopt`, `handOver`).
 *
 * Work with no account (the compactor, a service called directly) charges nothing.
 */

/** A cache that holds memory of the pool and gives it back when asked. */
export interface Reclaimable {
  /** Bytes it holds now. */
  readonly held: number;
  /** Drops entries (least recently used first) until `bytes` are freed or none is left. */
  reclaim(bytes: number): void;
}

export interface MemoryPoolOptions {
  /** Bytes the pool lends: the ceiling less what the runtime takes. */
  capacity: number;
  /** How long a charge waits for memory before 503. Default 10 s. */
  maxWaitMs?: number;
  /** Retry-After of that 503. Default 1 s. */
  retryAfterMs?: number;
}

export interface MemoryStats {
  capacity: number;
  /** Held by requests now. */
  requests: number;
  /** Held by the caches now. */
  caches: number;
  /** The most requests and caches ever held together. */
  peak: number;
  /** Charges that waited, and those refused (503). */
  waited: number;
  refused: number;
}

interface Waiter {
  account: MemoryAccount;
  bytes: number;
  /** Order of arrival. */
  since: number;
  resolve(): void;
  reject(err: Error): void;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** What one request holds. */
export class MemoryAccount {
  held = 0;
  waiting = false;
  #retained = 0;
  #ended = false;

  constructor(readonly pool: MemoryPool) {}

  /** `bytes` more, at once or after a wait, else 503 (see above). */
  charge(bytes: number): Promise<void> {
    return this.pool.charge(this, bytes);
  }

  /** Memory built already, moved to this request (a state taken from a cache): no wait. */
  adopt(bytes: number): void {
    this.pool.adopt(this, bytes);
  }

  /** Memory this request charged, moved to a cache that keeps what it built. */
  handOver(bytes: number): void {
    this.pool.handOver(this, bytes);
  }

  /** Keeps the account open past its scope until `done` (a response that streams a state). */
  retain(): () => void {
    this.#retained++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#retained--;
      this.#close();
    };
  }

  /** The scope ended: give everything back unless a stream still holds the account. */
  end(): void {
    this.#ended = true;
    this.#close();
  }

  #close(): void {
    if (this.#ended && this.#retained === 0) this.pool.settle(this);
  }
}

export class MemoryPool {
  readonly capacity: number;
  readonly maxWaitMs: number;
  readonly retryAfterMs: number;
  readonly #caches: Reclaimable[] = [];
  readonly #accounts = new Set<MemoryAccount>();
  readonly #waiters: Waiter[] = [];
  #requests = 0;
  #arrivals = 0;
  #peak = 0;
  #waited = 0;
  #refused = 0;

  constructor(options: MemoryPoolOptions) {
    this.capacity = options.capacity;
    this.maxWaitMs = options.maxWaitMs ?? 10_000;
    this.retryAfterMs = options.retryAfterMs ?? 1000;
  }

  /** A cache whose memory counts in the pool and is given back when requests need it. */
  register(cache: Reclaimable): void {
    this.#caches.push(cache);
  }

  get stats(): MemoryStats {
    return {
      capacity: this.capacity,
      requests: this.#requests,
      caches: this.#cachesHeld(),
      peak: this.#peak,
      waited: this.#waited,
      refused: this.#refused,
    };
  }

  /** Starts the peak over from what is held now (a benchmark's phases). */
  resetPeak(): void {
    this.#peak = this.#requests + this.#cachesHeld();
  }

  /** A new request's account (end it when the request is over). */
  open(): MemoryAccount {
    const account = new MemoryAccount(this);
    this.#accounts.add(account);
    return account;
  }

  /** Runs `work` with an account of its own, ended when it settles. */
  async run<T>(work: (account: MemoryAccount) => Promise<T>): Promise<T> {
    const account = this.open();
    try {
      return await work(account);
    } finally {
      account.end();
    }
  }

  /**
   * `bytes` more for `account`: at once when the pool has them (after the caches give back
   * what they must), else after a wait, else 503 (see above).
   */
  async charge(account: MemoryAccount, bytes: number): Promise<void> {
    if (bytes <= 0 || !this.#accounts.has(account)) return;
    if (bytes > this.capacity) {
      this.#refused++;
      throw this.#unavailable(`needs ${bytes} bytes, more than the process has (${this.capacity})`);
    }
    if (this.#waiters.length === 0 && this.#fit(bytes)) {
      this.#take(account, bytes);
      return;
    }
    this.#waited++;
    await new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        account,
        bytes,
        since: this.#arrivals++,
        resolve,
        reject,
        timer: undefined,
      };
      account.waiting = true;
      // Holders first, each group first come first served.
      const behind = account.held > 0 ? this.#waiters.findIndex((w) => w.account.held === 0) : -1;
      this.#waiters.splice(behind < 0 ? this.#waiters.length : behind, 0, waiter);
      waiter.timer = setTimeout(
        () => this.#drop(waiter, `no memory came free within ${this.maxWaitMs} ms`),
        this.maxWaitMs,
      );
      this.#pump();
    });
  }

  /** Memory already built moved to `account` (from a cache): no wait. */
  adopt(account: MemoryAccount, bytes: number): void {
    if (bytes > 0 && this.#accounts.has(account)) this.#take(account, bytes);
  }

  /**
   * Memory `account` charged, handed to a cache that keeps what the request built: the
   * request holds that much less (never below nothing).
   */
  handOver(account: MemoryAccount, bytes: number): void {
    if (!this.#accounts.has(account)) return;
    const moved = Math.min(account.held, bytes);
    account.held -= moved;
    this.#requests -= moved;
    this.#pump();
  }

  /**
   * Whether a cache may hold `bytes` more: the pool has room now (no request waits, and the
   * other caches keep what they hold). The cache gives back its own older entries first.
   */
  tryHold(cache: Reclaimable, bytes: number): boolean {
    if (this.#waiters.length > 0) return false;
    const free = this.capacity - this.#requests - this.#cachesHeld();
    if (free < bytes) cache.reclaim(bytes - free);
    const ok = this.capacity - this.#requests - this.#cachesHeld() >= bytes;
    if (ok) this.#peak = Math.max(this.#peak, this.#requests + this.#cachesHeld() + bytes);
    return ok;
  }

  /** An account's scope and streams are over: all it held goes back. */
  settle(account: MemoryAccount): void {
    if (!this.#accounts.delete(account)) return;
    this.#requests -= account.held;
    account.held = 0;
    this.#pump();
  }

  #cachesHeld(): number {
    let n = 0;
    for (const cache of this.#caches) n += cache.held;
    return n;
  }

  /** Whether `bytes` fit now, once the caches gave back what they must. */
  #fit(bytes: number): boolean {
    let over = this.#requests + this.#cachesHeld() + bytes - this.capacity;
    for (const cache of this.#caches) {
      if (over <= 0) break;
      const before = cache.held;
      cache.reclaim(over);
      over -= before - cache.held;
    }
    return over <= 0;
  }

  #take(account: MemoryAccount, bytes: number): void {
    account.held += bytes;
    this.#requests += bytes;
    this.#peak = Math.max(this.#peak, this.#requests + this.#cachesHeld());
  }

  /**
   * Serves waiters in order while the first fits; then, if every account holding memory is
   * waiting, refuses the newest of those (its memory comes back when its request ends).
   */
  #pump(): void {
    for (;;) {
      const first = this.#waiters[0];
      if (!first || !this.#fit(first.bytes)) break;
      this.#waiters.shift();
      clearTimeout(first.timer);
      first.account.waiting = this.#waiters.some((w) => w.account === first.account);
      this.#take(first.account, first.bytes);
      first.resolve();
    }
    if (!this.#deadlocked()) return;
    const holders = this.#waiters.filter((w) => w.account.held > 0);
    const newest = holders.reduce<Waiter | undefined>(
      (a, w) => (a === undefined || w.since > a.since ? w : a),
      undefined,
    );
    if (newest) this.#drop(newest, 'and every other request holding memory wait for more');
  }

  /** Every account that holds memory is waiting: none will give any back by finishing. */
  #deadlocked(): boolean {
    let holders = 0;
    for (const account of this.#accounts) {
      if (account.held === 0) continue;
      holders++;
      if (!account.waiting) return false;
    }
    return holders > 0;
  }

  #drop(waiter: Waiter, why: string): void {
    const at = this.#waiters.indexOf(waiter);
    if (at < 0) return;
    this.#waiters.splice(at, 1);
    clearTimeout(waiter.timer);
    waiter.account.waiting = this.#waiters.some((w) => w.account === waiter.account);
    this.#refused++;
    waiter.reject(this.#unavailable(why));
    this.#pump();
  }

  #unavailable(why: string): UnavailableError {
    return new UnavailableError(`memory ceiling: this request ${why}`, {
      retryAfterMs: this.retryAfterMs,
      detail: 'The server is at its memory ceiling with other requests; retry after a moment.',
    });
  }
}
