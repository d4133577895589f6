import type { ChunkSource } from '../domain/state-v2/index.js';

/**
 * Turns of the event loop during long work on large states (issue 21: no request blocks the
 * loop for more than 100 ms at a time). Reading, measuring, hashing, writing and serializing
 * a 64 MiB value is seconds of CPU, in thousands of small steps (a chunk verified, a batch of
 * entries assembled, a page encoded); chunks served from memory resolve at once, so without
 * turns the steps run back to back as one long turn and /healthz waits behind them.
 *
 * One pacer for the whole process, so all the steps of all the requests share one slice of
 * synchronous work per turn. Every step asks first, and starts at once (synchronously: no
 * await between the question and the work) when the answer is undefined:
 *
 *     for (let turn = pause(); turn; turn = pause()) await turn;
 *     ...the step...
 *
 * `pause()` answers undefined while the slice is under `sliceMs` (the first step of a slice
 * always runs, so a slow step or `sliceMs: 0` still makes progress, one step a turn), else a
 * promise settled on the next turn of the loop, with a fresh slice, after which the step asks
 * again. Many steps waiting at once (a read fans out over a tree) all wake on that turn, but
 * each asks again just before its own work, after the work of those woken before it, so only
 * a slice of them runs in it; the rest wait for the next turn. (A promise that admitted its
 * waiter would not do: waiters resume one microtask apart, all before any of their work.)
 *
 *   turn n:   step, step, ..., step (slice spent)  -> the rest wait
 *   (poll: sockets, timers: /healthz answered)
 *   turn n+1: a fresh slice: the waiters, in order, until it is spent again
 */

export interface PacerOptions {
  /** Synchronous work in one turn before steps wait for the next. Default 10 ms; 0: one step. */
  sliceMs?: number;
  /** The clock the slice is measured by (ms). */
  now?: () => number;
}

export class Pacer {
  readonly sliceMs: number;
  readonly #now: () => number;
  #sliceStart: number;
  /** Steps begun in the current slice. */
  #steps = 0;
  #next: Promise<void> | undefined;
  #turns = 0;

  constructor(options: PacerOptions = {}) {
    this.sliceMs = options.sliceMs ?? 10;
    this.#now = options.now ?? (() => performance.now());
    this.#sliceStart = this.#now();
  }

  /** Turns of the loop the steps waited for, since the pacer was made (tests count them). */
  get turns(): number {
    return this.#turns;
  }

  /**
   * Undefined: the step may start now (and is counted in the slice). Else the next turn of
   * the loop, after which the step asks again (see above).
   */
  readonly pause = (): Promise<void> | undefined => (this.#step() ? undefined : this.#turn());

  /** Whether a step may begin in this slice (and counts it). */
  #step(): boolean {
    if (this.#steps > 0 && this.#now() - this.#sliceStart >= this.sliceMs) return false;
    this.#steps++;
    return true;
  }

  #turn(): Promise<void> {
    this.#next ??= new Promise<void>((resolve) =>
      setImmediate(() => {
        this.#next = undefined;
        this.#sliceStart = this.#now();
        this.#steps = 0;
        this.#turns++;
        resolve();
      }),
    );
    return this.#next;
  }

  /**
   * A source whose fetches are steps: a fan-out of fetches that do work of their own (a local
   * store reads and inflates synchronously) spreads over turns. The caller's step on the
   * bytes (verify, parse) asks on its own (state-v2 ReadOptions `pause`): an answer here
   * would be a microtask away from that work.
   */
  source(source: ChunkSource): ChunkSource {
    return async (hash) => {
      for (let turn = this.pause(); turn; turn = this.pause()) await turn;
      return source(hash);
    };
  }
}

/** The process's pacer: one event loop, one slice. */
export const loopPacer = new Pacer();
