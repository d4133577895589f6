import type { JsonValue } from '../canonical.js';
import { InvalidFormatError, TamperedLedgerError } from '../errors.js';
import { type ParsedChunk, verifyChunk } from './chunk-parse.js';

/** Where chunks come from, for reads (read.ts, walk.ts): fetched by hash, checked on arrival. */

/** Fetches a chunk's bytes by its hash (hex); undefined when it is not stored. */
export type ChunkSource = (hash: string) => Promise<Uint8Array | undefined>;

export interface ReadOptions {
  /** Seq of the state being read, for the error when a chunk is missing or tampered. */
  seq?: number;
  /**
   * Check that every leaf is canonical JSON (default true). Only a digest taken from the
   * verified chain may skip it: the service computed that digest from canonical JSON, so
   * chunks that hash to it are canonical. A ref a client names must be checked (the default).
   */
  canonical?: boolean;
  /**
   * Asked before every step of work (a chunk verified, a batch of entries assembled, a few
   * pages hashed): undefined, go on at once; a promise, await it and ask again (the
   * caller's way to give the event loop turns: services/loop-turns.ts; the domain keeps no
   * timers), so a tree served from memory is not one long turn of the loop.
   */
  pause?: () => Promise<void> | undefined;
  /**
   * Chunks already verified against their hashes, by hash: fetched and verified again by no
   * read that shares the map (a measure, then the read of the same value: half the hashing
   * and parsing, and of the garbage). Every chunk a read verifies is added.
   */
  verified?: Map<string, VerifiedChunk>;
}

/** A chunk's bytes, checked against its hash, and what they parse to. */
export interface VerifiedChunk {
  bytes: Uint8Array;
  parsed: ParsedChunk;
}

export interface Context {
  source: ChunkSource;
  seq: number;
  canonical: boolean;
  pause: (() => Promise<void> | undefined) | undefined;
  verified: Map<string, VerifiedChunk> | undefined;
}

export const utf8 = new TextDecoder('utf-8', { fatal: true });

export const bad = (why: string): never => {
  throw new InvalidFormatError(`state chunks: ${why}`);
};

export const fetchChunk = async (ctx: Context, hash: string): Promise<VerifiedChunk> => {
  const known = ctx.verified?.get(hash);
  const bytes = known ? known.bytes : await ctx.source(hash);
  if (bytes === undefined) {
    throw new TamperedLedgerError(Math.max(1, ctx.seq), `state chunk ${hash} is missing`);
  }
  // Verifying (hashing up to a MiB, parsing) and what the caller does with the chunk is a
  // step: asked right before it, so many chunks landing at once take as many turns as they
  // need. (A return is a microtask from the caller's work, which asks again per batch.)
  if (ctx.pause) for (let turn = ctx.pause(); turn; turn = ctx.pause()) await turn;
  if (known) return known;
  let chunk: VerifiedChunk;
  try {
    chunk = { bytes, parsed: verifyChunk(bytes, hash) };
  } catch (err) {
    throw new TamperedLedgerError(Math.max(1, ctx.seq), (err as Error).message, { cause: err });
  }
  ctx.verified?.set(hash, chunk);
  return chunk;
};

export const parseJson = (bytes: Uint8Array): [JsonValue, string] => {
  let text = '';
  let value: JsonValue = null;
  try {
    text = utf8.decode(bytes);
    value = JSON.parse(text) as JsonValue;
  } catch {
    bad('a leaf is not JSON');
  }
  return [value, text];
};

export const contextOf = (source: ChunkSource, options: ReadOptions): Context => ({
  source,
  seq: options.seq ?? 0,
  canonical: options.canonical ?? true,
  pause: options.pause,
  verified: options.verified,
});

/** A source that lets at most `limit` fetches run at once (S3 GETs, bounded). */
export const boundedSource = (source: ChunkSource, limit: number): ChunkSource => {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async (hash) => {
    // A finishing fetch hands its slot straight to the next in line, so none can jump in.
    if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    else running++;
    try {
      return await source(hash);
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
};

/** Entries of a container decoded at once between two `pause` calls. */
const BATCH = 16;

/**
 * `run` over every item, all at once; with `ctx.pause`, BATCH at a time with a pause after
 * each batch, so that chunks served from memory never make one long turn of the whole tree
 * (a batch keeps BATCH fetches in flight for chunks that are not).
 */
export const inBatches = async <T, R>(
  ctx: Context,
  items: readonly T[],
  run: (item: T) => R | Promise<R>,
): Promise<R[]> => {
  if (!ctx.pause) return Promise.all(items.map(run));
  const out: R[] = [];
  for (let i = 0; i < items.length; i += BATCH) {
    out.push(...(await Promise.all(items.slice(i, i + BATCH).map(run))));
    for (let turn = ctx.pause(); turn; turn = ctx.pause()) await turn;
  }
  return out;
};
