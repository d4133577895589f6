import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type LedgerEvent, verifyEvents } from '../../packages/client/src/index.js';

/**
 * test/vectors/privacy-v1.json through the client SDK's entry point (`@hefesto/client`):
 * format 2 events as the API shows them (header fields `format`, `size`, `commitment`) verify
 * with the stream's commitment key, payload bound; verify as headers only without it; and a
 * changed payload, size or commitment is refused. (test/unit/privacy-vectors.test.ts checks
 * the same file against the domain code and a naive implementation.)
 */

interface Vectors {
  keys: { commit: string };
  genesis: string;
  events: Array<Omit<LedgerEvent, 'format' | 'size' | 'commitment'> & { header: string }>;
}

const vectors = JSON.parse(
  readFileSync(join(import.meta.dirname, '../vectors/privacy-v1.json'), 'utf8'),
) as Vectors;
const commitKey = Buffer.from(vectors.keys.commit, 'hex');
// The API's public form of each vector event: the header's size and commitment are its tail.
const shown: LedgerEvent[] = vectors.events.map(({ header, ...e }) => {
  const h = Buffer.from(header, 'hex');
  return {
    ...e,
    format: 2,
    size: h.readUInt32BE(h.length - 36),
    commitment: h.subarray(h.length - 32).toString('hex'),
  };
});
const from = { seq: 0, hash: vectors.genesis };

describe('client: event format 2 vectors', () => {
  it('verifies the chain with the commitment key, binding each payload', () => {
    expect(verifyEvents(shown, from, { commitKey })).toEqual({
      ok: true,
      seq: 3,
      hash: vectors.events.at(-1)?.hash,
    });
  });

  it('verifies the headers alone without any key (an auditor)', () => {
    const blind = shown.map((e) => ({ ...e, payload: null }));
    expect(verifyEvents(blind, from, { headersOnly: true }).ok).toBe(true);
  });

  it('refuses a format 2 event it cannot bind when asked to bind payloads', () => {
    expect(verifyEvents(shown, from)).toMatchObject({ ok: false, firstBadSeq: 1 });
  });

  it('refuses a changed payload, size or commitment', () => {
    const changed = (i: number, edit: Partial<LedgerEvent>) =>
      shown.map((e, j) => (j === i ? { ...e, ...edit } : e));
    expect(
      verifyEvents(changed(1, { payload: { approved: false } }), from, { commitKey }),
    ).toMatchObject({ ok: false, firstBadSeq: 2, reason: expect.stringMatching(/commitment/) });
    expect(verifyEvents(changed(0, { size: 1 }), from, { headersOnly: true })).toMatchObject({
      ok: false,
      firstBadSeq: 1,
    });
    expect(
      verifyEvents(changed(2, { commitment: 'ab'.repeat(32) }), from, { headersOnly: true }),
    ).toMatchObject({ ok: false, firstBadSeq: 3 });
    // another stream's key binds nothing
    expect(verifyEvents(shown, from, { commitKey: Buffer.alloc(32, 1) })).toMatchObject({
      ok: false,
      firstBadSeq: 1,
    });
  });
});
