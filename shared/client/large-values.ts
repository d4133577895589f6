import { canonicalJson, type JsonValue } from '../domain/canonical.js';
import type { ParsedChunk } from '../domain/state-v2/chunk-parse.js';
import { TAG, toHex } from '../domain/state-v2/format.js';
import {
  boundedSource,
  type Chunk,
  type ChunkSource,
  INLINE_MAX,
  listChunks,
  MAX_VALUE_BYTES,
  parseChunk,
  readValue,
  verifyChunk,
} from '../domain/state-v2/index.js';
import { build } from '../domain/state-v2/node.js';
import { ClientVerificationError, HefestoApiError, ValueTooLargeError } from './errors.js';
import type { Transport } from './http.js';
import { asInput } from './input.js';
import type { Json } from './types.js';

/**
 * Large values (docs/state-v2.md, "Large values"), client side: a value far larger than one
 * request travels as its v2 chunks (each at most 1 MiB, one `PUT /v1/chunks/{hash}` each),
 * then a checkpoint names it by reference. Every chunk is content-addressed, so an upload is
 * idempotent (a retry after a lost reply stores nothing twice) and a read checks each chunk
 * against the hash that names it, trusting neither the server nor its bucket.
 *
 * Upload, in numbered steps (a crash after any of them leaves nothing half-visible):
 * 1. Cut the value (`chunksOfValue`, children first) and refuse it, before any request, when
 *    it is over `maxValueBytes`.
 * 2. PUT the chunks, `concurrency` at a time; a chunk is sent only once every chunk it names
 *    is stored (answered 201 with its own hash and size), so the server never holds a chunk
 *    whose children are missing. A lost reply is retried by the transport (idempotent).
 * 3. Return the ref. Nothing names the chunks yet: the upload reference keeps them a day.
 * 4. The caller's checkpoint sets `{op:"set", path, ref}`; the server reads the value from
 *    the chunks (verified), so a chunk that is missing fails the checkpoint, never the state.
 */

/**
 * A value stored as chunks: the v2 hash of the value and the bytes of its canonical JSON.
 *
 * @example
 * ```ts
 * const ref: ValueRef = await client.putValue(bigDocument);
 * ```
 */
export interface ValueRef {
  hash: string;
  size: number;
}

/**
 * A checkpoint op that sets a value uploaded by {@link HefestoClient.putValue}.
 *
 * @example
 * ```ts
 * const op: SetRefOp = { op: 'set', path: '/doc', ref: await client.putValue(doc) };
 * ```
 */
export interface SetRefOp {
  op: 'set';
  path: string;
  ref: ValueRef;
}

/**
 * Options of the large-value calls.
 *
 * @example
 * ```ts
 * const ref = await client.putValue(doc, { concurrency: 8 });
 * ```
 */
export interface ValueTransferOptions {
  /** Chunk requests in flight at once. Default 4. */
  concurrency?: number;
}

/**
 * Chunk requests in flight at once unless told otherwise.
 *
 * @example
 * ```ts
 * const ref = await client.putValue(doc, { concurrency: 2 * DEFAULT_CHUNK_CONCURRENCY });
 * ```
 */
export const DEFAULT_CHUNK_CONCURRENCY = 4;

/**
 * Bytes of values one call sends inline at most, unless told otherwise: below the server's
 * default limit on a checkpoint's ops and on a pending write (256 KiB of canonical JSON), with
 * room for the rest of the request. The harness and the LangGraph saver send the largest
 * values by ref until the rest fits ({@link pickByRef}).
 *
 * @example
 * ```ts
 * const run = await resume(client, 'run-1', { largeValueBytes: INLINE_BUDGET_BYTES / 2 });
 * ```
 */
export const INLINE_BUDGET_BYTES = 192 * 1024;

/**
 * Which values of one call go by ref: every one over `threshold` bytes, then the largest of
 * the others, one at a time, until those left inline add up to at most `budget` (sizes in
 * bytes of canonical JSON, index order for equal sizes). Answers their indexes.
 *
 * @example
 * ```ts
 * pickByRef([10, 300_000, 150_000, 150_000], 256 * 1024, 192 * 1024); // Set {1, 2}
 * ```
 */
export const pickByRef = (sizes: number[], threshold: number, budget: number): Set<number> => {
  const picked = new Set<number>();
  let inline = 0;
  for (const [i, size] of sizes.entries()) {
    if (size > threshold) picked.add(i);
    else inline += size;
  }
  const largest = sizes
    .map((size, i) => ({ size, i }))
    .filter(({ i }) => !picked.has(i))
    .sort((a, b) => b.size - a.size || a.i - b.i);
  for (const { size, i } of largest) {
    if (inline <= budget) break;
    picked.add(i);
    inline -= size;
  }
  return picked;
};

/**
 * The bytes of a value's canonical JSON, as the server measures its limits.
 *
 * @example
 * ```ts
 * canonicalBytes({ a: 'é' }); // 10
 * ```
 */
export const canonicalBytes = (value: Json): number =>
  new TextEncoder().encode(canonicalJson(value as JsonValue)).length;

const HASH = /^[0-9a-f]{64}$/;

/** The hashes of the chunks a chunk names (children stored apart, or string pages). */
const childrenOf = (chunk: Chunk): string[] => {
  const parsed = parseChunk(chunk.bytes);
  if ('pages' in parsed) return parsed.pages.map((p) => p.toString('hex'));
  if ('slots' in parsed)
    return parsed.slots.filter((s) => s.inline === undefined).map((s) => s.hash.toString('hex'));
  return [];
};

/**
 * Runs `put` over the chunks, `concurrency` at a time, each after every chunk it names.
 * Chunks come children first, so every child was taken before its parent: the earliest chunk
 * not yet stored always has its children stored, and the workers cannot all be waiting.
 */
const putInOrder = async (
  chunks: Chunk[],
  concurrency: number,
  put: (chunk: Chunk) => Promise<void>,
): Promise<void> => {
  const stored = new Map<string, Promise<void>>();
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < chunks.length) {
      const chunk = chunks[next++] as Chunk;
      const done = (async () => {
        await Promise.all(childrenOf(chunk).map((h) => stored.get(h)));
        await put(chunk);
      })();
      stored.set(chunk.hash, done);
      done.catch(() => {
        failed = true;
      });
      await done;
    }
  };
  const workers = Array.from({ length: Math.max(1, Math.min(concurrency, chunks.length)) }, worker);
  await Promise.all(workers);
};

/**
 * Large-value transfers over the client's transport; {@link HefestoClient} holds one.
 *
 * @example
 * ```ts
 * const values = new ValueTransfer(new Transport({ baseUrl, apiKey }));
 * const ref = await values.put({ text: 'x'.repeat(10_000_000) });
 * ```
 */
export class ValueTransfer {
  readonly #http: Transport;
  readonly maxValueBytes: number;

  constructor(http: Transport, maxValueBytes = MAX_VALUE_BYTES) {
    this.#http = http;
    this.maxValueBytes = maxValueBytes;
  }

  /** Uploads `value` as chunks (steps 1-3 above) and returns its ref. */
  async put(value: Json, options: ValueTransferOptions = {}): Promise<ValueRef> {
    // The tree first (hashes only), the chunks' bytes only for a value within the limit.
    const [node] = asInput(() => build(value as JsonValue, 0));
    if (node.size > this.maxValueBytes) throw new ValueTooLargeError(node.size, this.maxValueBytes);
    const ref = { hash: toHex(node.hash), size: node.size };
    const chunks = listChunks(node);
    await putInOrder(chunks, options.concurrency ?? DEFAULT_CHUNK_CONCURRENCY, async (chunk) => {
      const { body } = await this.#http.call<{ hash: string; size: number }>(
        'PUT',
        `/v1/chunks/${chunk.hash}`,
        { bytes: chunk.bytes, repeatable: true },
      );
      // Proven stored only by an answer naming this chunk: anything else is not a success.
      if (body?.hash !== chunk.hash || body.size !== chunk.bytes.length) {
        throw new HefestoApiError(
          'ErrInternal',
          201,
          `the server did not confirm chunk ${chunk.hash} as sent`,
        );
      }
    });
    return ref;
  }

  /**
   * The tenant's chunks as a source for the domain's readers: GET, 404 as missing. (Typed
   * inline, not as the domain's ChunkSource: the published types must not need @types/node.)
   */
  source(
    concurrency = DEFAULT_CHUNK_CONCURRENCY,
  ): (hash: string) => Promise<Uint8Array | undefined> {
    const get: ChunkSource = async (hash) => {
      try {
        return (await this.#http.callBytes('GET', `/v1/chunks/${hash}`)).body;
      } catch (err) {
        if (err instanceof HefestoApiError && err.code === 'ErrNotFound') return undefined;
        throw err;
      }
    };
    return boundedSource(get, concurrency);
  }

  /** The whole value of `ref`, every chunk checked against its hash and the tree canonical. */
  async read(ref: ValueRef | string, options: ValueTransferOptions = {}): Promise<Json> {
    const { hash, size } = typeof ref === 'string' ? { hash: ref, size: undefined } : ref;
    checkHash(hash);
    const inner = this.source(options.concurrency);
    let rootMissing = false;
    const source: ChunkSource = async (h) => {
      const bytes = await inner(h);
      if (bytes === undefined && h === hash) rootMissing = true;
      return bytes;
    };
    const { node } = await verified(hash, () => readValue(hash, source)).catch((err: unknown) => {
      // No root: no such value for this key's tenant (never uploaded, or another tenant's).
      throw rootMissing ? notFound(hash) : err;
    });
    if (size !== undefined && node.size !== size) {
      throw new ClientVerificationError(0, `value ${hash} is ${node.size} bytes, not ${size}`);
    }
    return node.value as Json;
  }

  /**
   * The items of an array value, one page (up to 64 items) at a time, in order: only the
   * chunks of the page being read are fetched, each checked against the hash its parent
   * names, so memory holds one page, not the value.
   */
  async *pages(ref: ValueRef | string, options: ValueTransferOptions = {}): AsyncGenerator<Json[]> {
    const hash = typeof ref === 'string' ? ref : ref.hash;
    checkHash(hash);
    const source = this.source(options.concurrency);
    const fetch = async (h: string) => {
      const bytes = await source(h);
      if (bytes === undefined) throw new ClientVerificationError(0, `chunk ${h} is missing`);
      return verified(hash, async () => verifyChunk(bytes, h));
    };
    const rootBytes = await source(hash);
    if (rootBytes === undefined) throw notFound(hash);
    const root = await verified(hash, async () => verifyChunk(rootBytes, hash));
    if (root.tag !== TAG.arrayRoot) {
      // A small array is one leaf: one page, read (and checked canonical) whole.
      const value = await this.read(hash, options);
      if (!Array.isArray(value)) {
        throw new HefestoApiError('ErrInvalidInput', 0, `value ${hash} is not an array`);
      }
      return yield value;
    }
    let items = 0;
    const walk = async function* (page: ParsedChunk): AsyncGenerator<Json[]> {
      if (!('slots' in page)) throw new ClientVerificationError(0, 'a page is out of place');
      if (page.level === 0) {
        const values = await Promise.all(
          page.slots.map(async (slot) => {
            if (slot.inline !== undefined) return JSON.parse(slot.inline.toString('utf8')) as Json;
            const h = slot.hash.toString('hex');
            const { node } = await verified(hash, () => readValue(h, source));
            if (node.size <= INLINE_MAX) {
              throw new ClientVerificationError(0, 'a small item is stored apart');
            }
            return node.value as Json;
          }),
        );
        items += values.length;
        return yield values;
      }
      for (const slot of page.slots) {
        const child = await fetch(slot.hash.toString('hex'));
        if (child.tag !== TAG.arrayPage || child.level !== page.level - 1) {
          throw new ClientVerificationError(0, 'a page is out of place');
        }
        yield* walk(child);
      }
    };
    yield* walk(root);
    if (items !== (root as { count?: number }).count) {
      throw new ClientVerificationError(0, `value ${hash} holds another count of items`);
    }
  }
}

const notFound = (hash: string) =>
  new HefestoApiError('ErrNotFound', 404, `no value ${hash} in this tenant`);

const checkHash = (hash: string): void => {
  if (!HASH.test(hash)) throw new HefestoApiError('ErrInvalidInput', 0, 'a ref hash is 64 hex');
};

/** Runs a domain read, turning a bad or missing chunk into the client's verification error. */
const verified = async <T>(hash: string, read: () => Promise<T>): Promise<T> => {
  try {
    return await read();
  } catch (err) {
    if (err instanceof HefestoApiError) throw err;
    throw new ClientVerificationError(0, `value ${hash}: ${(err as Error).message}`);
  }
};
