import { promisify } from 'node:util';
import { deflate, inflate, inflateSync } from 'node:zlib';

/**
 * How the local object store keeps an object's bytes in `objects.body` (docs/operations.md,
 * "Embedded storage"). The `size` column is always the object's own length, so a row tells
 * its encoding by itself: `length(body) = size` is the bytes as they are (every row written
 * before this codec), `length(body) < size` is the bytes in zlib format (DEFLATE with an
 * Adler-32 of the bytes), stored only when that is smaller. The etag stays the SHA-256 of the
 * object's own bytes, and hashes the service keeps (event hashes, chunk digests) are over
 * them too: how a row is stored changes no hash.
 *
 * A compressed row whose bytes were changed fails to inflate (Adler-32, or a broken stream);
 * the store then answers the stored bytes as they are, which fail the service's own
 * verification (segment hashes, chunk digests) like any other changed bytes, so tampering is
 * reported where it always was, naming the object.
 */

const deflateAsync = promisify(deflate);
const inflateAsync = promisify(inflate);

/** Smaller objects stay as they are: compressing them saves too little. */
const MIN_COMPRESS = 128;
/** Larger ones are inflated on libuv's thread pool, off the event loop. */
const INFLATE_ON_POOL = 64 * 1024;

/** The bytes to store for `body` (compressed on the thread pool when that is smaller). */
export const encodeObject = async (body: Uint8Array): Promise<Uint8Array> => {
  if (body.length < MIN_COMPRESS) return body;
  const packed = await deflateAsync(body);
  return packed.length < body.length ? packed : body;
};

const view = (buf: Buffer): Uint8Array => new Uint8Array(buf.buffer, buf.byteOffset, buf.length);

/** An object's bytes from its row (`size`: the object's length). */
export const decodeObject = async (stored: Buffer, size: number): Promise<Uint8Array> => {
  if (stored.length >= size) return view(stored);
  try {
    const out = stored.length > INFLATE_ON_POOL ? await inflateAsync(stored) : inflateSync(stored);
    return out.length === size ? view(out) : view(stored);
  } catch {
    return view(stored); // changed bytes: the service's verification names them
  }
};
