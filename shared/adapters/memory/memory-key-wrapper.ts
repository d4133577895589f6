import { randomBytes } from 'node:crypto';
import { unwrapSecret, type WrapContext, wrapSecret } from '../../domain/privacy/key-wrap.js';
import { STREAM_SECRET_BYTES } from '../../domain/privacy/stream-keys.js';
import type { KeyWrapper } from '../../ports/key-wrapper.js';

/** KEKs held in process, one per tenant (unit tests and the memory tier). */
export class MemoryKeyWrapper implements KeyWrapper {
  readonly id = 'memory';
  readonly #keks = new Map<string, Buffer>();
  /** Calls made, so tests can see the cache spare them. */
  calls = { generate: 0, unwrap: 0 };

  #kek(tenant: string): Buffer {
    let kek = this.#keks.get(tenant);
    if (!kek) {
      kek = randomBytes(32);
      this.#keks.set(tenant, kek);
    }
    return kek;
  }

  async generate(ctx: WrapContext): Promise<{ secret: Buffer; wrapped: Buffer }> {
    this.calls.generate++;
    const secret = randomBytes(STREAM_SECRET_BYTES);
    return { secret, wrapped: wrapSecret(this.#kek(ctx.tenant), ctx, secret, randomBytes(12)) };
  }

  async unwrap(ctx: WrapContext, wrapped: Buffer): Promise<Buffer> {
    this.calls.unwrap++;
    return unwrapSecret(this.#kek(ctx.tenant), ctx, wrapped);
  }
}
