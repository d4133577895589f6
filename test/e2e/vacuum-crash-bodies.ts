import { createHash } from 'node:crypto';

/** The bytes of an object of vacuum-crash.test.ts: derived from its key, incompressible. */
export const bodyOf = (key: string, size = 8192): Uint8Array => {
  const out = new Uint8Array(size);
  let block = createHash('sha256').update(key).digest();
  for (let i = 0; i < size; i += 32) {
    out.set(block.subarray(0, Math.min(32, size - i)), i);
    block = createHash('sha256').update(block).digest();
  }
  return out;
};
