import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../shared/domain/canonical.js';
import {
  encodePreimage,
  genesisHash,
  type LedgerEvent,
  sealBatch,
  toLedgerEvent,
} from '../../shared/domain/event.js';
import {
  checkChain,
  eventPreimage,
  genesisHashWith,
  webCryptoHash,
} from '../../shared/domain/hash-port.js';

/**
 * The hash port (what the console runs in the browser) against the server's node:crypto
 * encoding: the same preimage bytes, the same hashes, the same first bad seq.
 */

const chain = (tenant: string, stream: string, payloads: unknown[]): LedgerEvent[] =>
  sealBatch(
    0,
    genesisHash(tenant, stream),
    1_800_000_000_000,
    payloads.map((payload) => ({ type: 'observation', payload: payload as never })),
  ).map(toLedgerEvent);

const json = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);

describe('hash port (WebCrypto)', () => {
  it('encodes every event exactly as the server does', () => {
    fc.assert(
      fc.property(
        fc.nat({ max: Number.MAX_SAFE_INTEGER }),
        fc.nat({ max: Number.MAX_SAFE_INTEGER }),
        fc.string({ unit: 'grapheme', maxLength: 20 }),
        json,
        (seq, ts, type, payload) => {
          const prevHash = genesisHash('t', type);
          const ours = eventPreimage({ seq, ts, type, prevHash, payload });
          const server = encodePreimage(seq, ts, type, prevHash, canonicalJson(payload));
          expect(Buffer.from(ours).equals(server)).toBe(true);
        },
      ),
    );
  });

  it('computes the genesis hash of any tenant and stream as the server does', async () => {
    for (const [tenant, stream] of [
      ['acme', 'run-1'],
      ['t', 'ü:ñ.x'],
      ['a', ''],
    ] as const) {
      expect(await genesisHashWith(webCryptoHash, tenant, stream)).toBe(
        genesisHash(tenant, stream),
      );
    }
  });

  it('accepts an untouched chain from genesis, and a page from its middle', async () => {
    const events = chain('acme', 'run-1', [{ a: 1 }, 'two', [3], null, { z: 'ü', a: 0.5 }]);
    const genesis = await genesisHashWith(webCryptoHash, 'acme', 'run-1');

    expect(await checkChain(webCryptoHash, events, genesis)).toEqual({ ok: true, checked: 5 });
    expect(await checkChain(webCryptoHash, events.slice(2), genesis)).toEqual({
      ok: true,
      checked: 3,
    });
  });

  it('names the first bad seq of a changed payload, type, ts or link', async () => {
    const events = chain('acme', 'run-1', [1, 2, 3, 4, 5]);
    const genesis = genesisHash('acme', 'run-1');
    const at = (i: number, change: Partial<LedgerEvent>) =>
      events.map((e, j) => (j === i ? { ...e, ...change } : e));

    const cases = [
      [at(2, { payload: 30 }), 3, 'hash does not match the event'],
      [at(1, { type: 'other' }), 2, 'hash does not match the event'],
      [at(3, { ts: 1 }), 4, 'hash does not match the event'],
      [at(4, { prevHash: events[0]?.hash }), 5, 'prevHash is not the previous hash'],
      [[...events.slice(0, 2), ...events.slice(3)], 4, 'seq 4 follows 2'],
    ] as const;
    for (const [tampered, firstBadSeq, reason] of cases) {
      expect(await checkChain(webCryptoHash, [...tampered], genesis)).toMatchObject({
        ok: false,
        firstBadSeq,
        reason,
      });
    }
  });

  it("refuses seq 1 of another stream's chain (the genesis binds tenant and stream)", async () => {
    const theirs = chain('acme', 'run-2', [1, 2]);
    const genesis = genesisHash('acme', 'run-1');

    expect(await checkChain(webCryptoHash, theirs, genesis)).toMatchObject({
      ok: false,
      firstBadSeq: 1,
    });
  });
});
