import type { ChunkSource } from '../domain/state-v2/index.js';

/**
 * Turns of the event loop during long reads (issue 21: no request blocks the loop for more
 * than 100 ms). Chunks served from memory (the chunk cache, a request's own fetched map)
 * resolve at once, so reading a tree of thousands of them would otherwise be one long turn.
 */

/**
 * A source that gives the event loop a turn every YIELD_MS: chunks served from memory
 * resolve at once, and a tree of thousands of them would otherwise be read in one turn.
 */
const YIELD_MS = 10;
export const yielding = (source: ChunkSource): ChunkSource => {
  let since = performance.now();
  return async (hash) => {
    if (performance.now() - since > YIELD_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      since = performance.now();
    }
    return source(hash);
  };
};

/** A `pause` for reads (state-v2 ReadOptions): a turn of the event loop every YIELD_MS. */
export const loopTurns = (): (() => Promise<void> | undefined) => {
  let since = performance.now();
  return () => {
    if (performance.now() - since <= YIELD_MS) return undefined;
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        since = performance.now();
        resolve();
      }),
    );
  };
};
