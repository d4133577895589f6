import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { firstSeqOfKey, segmentKey } from '../../shared/chain/storage-keys.js';
import { canonicalJson } from '../../shared/domain/canonical.js';
import { InvalidInputError, TamperedLedgerError } from '../../shared/domain/errors.js';
import {
  encodePreimage,
  genesisHash,
  hashLedgerEvent,
  type LedgerEvent,
  sealBatch,
  toLedgerEvent,
} from '../../shared/domain/event.js';
import { sha256Hex } from '../../shared/domain/hashing.js';
import { decodeSegment, encodeSegment } from '../../shared/domain/segment.js';
import { decodeChain, verifyEvents, verifySegments } from '../../shared/domain/verify.js';

const TENANT = 'acme';
const STREAM = 'run-1';
const GENESIS = genesisHash(TENANT, STREAM);
const meta = {
  tenant: TENANT,
  stream: STREAM,
  epoch: 0,
  idempotencyKey: 'k1',
  requestDigest: null,
  createdAt: 1_000,
};

const inputs = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({
    type: 'observation',
    payload: { turn: from + i, text: `model said ${from + i}`, tags: ['a', 'ü'] },
  }));

/** Builds `count` segments of `size` events each, chained from genesis. */
const chain = (count: number, size: number) => {
  const bodies: Uint8Array[] = [];
  let seq = 0;
  let hash = GENESIS;
  for (let s = 0; s < count; s++) {
    const events = sealBatch(seq, hash, 1_700_000_000_000 + s, inputs(size, seq));
    bodies.push(encodeSegment(meta, events));
    const last = events.at(-1);
    seq = last?.seq ?? seq;
    hash = last?.hash ?? hash;
  }
  return { bodies, head: { seq, hash } };
};

describe('canonical encoding', () => {
  it('orders object keys and formats numbers per RFC 8785', () => {
    expect(canonicalJson({ b: 1, a: [1e21, 0.1, -0], c: 'é\u2028' })).toBe(
      '{"a":[1e+21,0.1,0],"b":1,"c":"é\u2028"}',
    );
  });

  it('refuses values that are not JSON', () => {
    expect(() => canonicalJson(Number.NaN)).toThrow(InvalidInputError);
    expect(() => canonicalJson(undefined)).toThrow(InvalidInputError);
    expect(() => canonicalJson({ big: 1n })).toThrow(InvalidInputError);
  });
});

describe('event hash', () => {
  it('matches the documented preimage layout (test vector)', () => {
    const pre = encodePreimage(1, 2, 't', '00'.repeat(32), '{"a":1}');
    expect(pre.toString('hex')).toBe(
      `01${'0000000000000001'}${'0000000000000002'}${'00'.repeat(32)}00000001${'74'}00000007${Buffer.from('{"a":1}').toString('hex')}`,
    );
    expect(sealBatch(0, '00'.repeat(32), 2, [{ type: 't', payload: { a: 1 } }])[0]?.hash).toBe(
      sha256Hex(pre),
    );
  });

  it('gives different hashes to events whose fields would concatenate alike', () => {
    const prev = '11'.repeat(32);
    const a = encodePreimage(1, 5, 'ab', prev, '"c"');
    const b = encodePreimage(1, 5, 'a', prev, '"bc"');
    expect(sha256Hex(a)).not.toBe(sha256Hex(b));
  });

  it('does not depend on payload key order', () => {
    const [x] = sealBatch(0, GENESIS, 7, [{ type: 't', payload: { a: 1, b: 2 } }]);
    const [y] = sealBatch(0, GENESIS, 7, [{ type: 't', payload: { b: 2, a: 1 } }]);
    expect(x?.hash).toBe(y?.hash);
  });

  it('binds the genesis hash to tenant and stream without ambiguity', () => {
    expect(genesisHash('a', 'bc')).not.toBe(genesisHash('ab', 'c'));
    expect(genesisHash('acme', 'run-1')).not.toBe(genesisHash('acme', 'run-2'));
    expect(genesisHash('acme', 'run-1')).toBe(GENESIS);
  });

  it('is recomputable from the public event fields', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ minLength: 1, maxLength: 20 }), (payload, type) => {
        const [sealed] = sealBatch(41, GENESIS, 123, [{ type, payload: payload as never }]);
        if (!sealed) return false;
        const event = toLedgerEvent(sealed);
        return event.seq === 42 && hashLedgerEvent(event) === sealed.hash;
      }),
      { numRuns: 200 },
    );
  });
});

describe('segment codec', () => {
  it('round-trips a batch with its header', () => {
    const events = sealBatch(0, GENESIS, 99, inputs(3));
    const segment = decodeSegment(encodeSegment(meta, events), {
      tenant: TENANT,
      stream: STREAM,
      firstSeq: 1,
      prevHash: GENESIS,
    });
    expect(segment.header).toMatchObject({
      format: 1,
      firstSeq: 1,
      lastSeq: 3,
      prevHash: GENESIS,
      lastHash: events[2]?.hash,
      epoch: 0,
      idempotencyKey: 'k1',
    });
    expect(segment.events.map(toLedgerEvent)).toEqual(events.map(toLedgerEvent));
  });

  it('detects every single flipped byte, naming a seq inside the segment', () => {
    const events = sealBatch(10, '22'.repeat(32), 99, inputs(4));
    const body = encodeSegment(meta, events);
    const expect11 = { tenant: TENANT, stream: STREAM, firstSeq: 11, prevHash: '22'.repeat(32) };
    for (let i = 0; i < body.length; i++) {
      for (const mask of [0x01, 0x80]) {
        const copy = Uint8Array.from(body);
        copy[i] = (copy[i] ?? 0) ^ mask;
        let err: unknown;
        try {
          decodeSegment(copy, expect11);
        } catch (e) {
          err = e;
        }
        expect(err, `byte ${i} mask ${mask}`).toBeInstanceOf(TamperedLedgerError);
        const bad = (err as TamperedLedgerError).firstBadSeq;
        expect(bad).toBeGreaterThanOrEqual(11);
        expect(bad).toBeLessThanOrEqual(14);
      }
    }
  });

  it('names the first altered event when a payload byte changes', () => {
    const events = sealBatch(0, GENESIS, 99, inputs(5));
    const body = Buffer.from(encodeSegment(meta, events));
    const at = body.indexOf('model said 3');
    body[at] = 'M'.charCodeAt(0);
    expect(() =>
      decodeSegment(body, { tenant: TENANT, stream: STREAM, firstSeq: 1, prevHash: GENESIS }),
    ).toThrow(expect.objectContaining({ firstBadSeq: 4 }));
  });

  it('refuses truncation, trailing bytes, and a segment moved to another stream or seq', () => {
    const body = encodeSegment(meta, sealBatch(0, GENESIS, 99, inputs(2)));
    const ok = { tenant: TENANT, stream: STREAM, firstSeq: 1, prevHash: GENESIS };
    const cases: Array<[Uint8Array, typeof ok]> = [
      [body.subarray(0, body.length - 1), ok],
      [Buffer.concat([body, Buffer.from([0])]), ok],
      [body, { ...ok, stream: 'run-2' }],
      [body, { ...ok, tenant: 'other' }],
      [body, { ...ok, firstSeq: 2 }],
      [body, { ...ok, prevHash: '00'.repeat(32) }],
      [new Uint8Array(0), ok],
    ];
    for (const [bytes, expectation] of cases) {
      expect(() => decodeSegment(bytes, expectation)).toThrow(TamperedLedgerError);
    }
  });

  it('refuses a segment copied to another stream even with a rewritten header', () => {
    const events = sealBatch(0, GENESIS, 99, inputs(2));
    const moved = encodeSegment({ ...meta, stream: 'run-2' }, events);
    const result = verifySegments(TENANT, 'run-2', { seq: 0, hash: genesisHash(TENANT, 'run-2') }, [
      moved,
    ]);
    expect(result).toMatchObject({ ok: false, firstBadSeq: 1 });
  });

  it('keys segments so that listing order is seq order', () => {
    const keys = [1, 9, 10, 100, 2].map((s) => segmentKey(TENANT, STREAM, s));
    expect([...keys].sort().map(firstSeqOfKey)).toEqual([1, 2, 9, 10, 100]);
    expect(firstSeqOfKey('t/acme/s/run-1/snap/0000000000000001')).toBeUndefined();
  });
});

describe('verification', () => {
  it('verifies a chain of segments and returns its head', () => {
    const { bodies, head } = chain(5, 3);
    expect(verifySegments(TENANT, STREAM, { seq: 0, hash: GENESIS }, bodies)).toEqual({
      ok: true,
      ...head,
    });
  });

  it('verifies any range starting from a trusted point', () => {
    const { bodies, head } = chain(5, 3);
    const [first] = decodeChain(TENANT, STREAM, { seq: 0, hash: GENESIS }, bodies.slice(0, 1));
    const from = { seq: 3, hash: first?.header.lastHash ?? '' };
    expect(verifySegments(TENANT, STREAM, from, bodies.slice(1))).toEqual({ ok: true, ...head });
  });

  it('reports a missing segment as a gap at its first seq', () => {
    const { bodies } = chain(4, 2);
    const result = verifySegments(TENANT, STREAM, { seq: 0, hash: GENESIS }, [
      bodies[0] as Uint8Array,
      bodies[2] as Uint8Array,
    ]);
    expect(result).toMatchObject({ ok: false, code: 'ErrTamperedLedger', firstBadSeq: 3 });
  });

  it('reports the first bad seq of a tampered public event range', () => {
    const { bodies } = chain(2, 4);
    const events: LedgerEvent[] = decodeChain(TENANT, STREAM, { seq: 0, hash: GENESIS }, bodies)
      .flatMap((s) => s.events)
      .map(toLedgerEvent);
    expect(verifyEvents(events, { seq: 0, hash: GENESIS })).toMatchObject({ ok: true, seq: 8 });
    const tampered = events.map((e) => (e.seq === 6 ? { ...e, payload: { forged: true } } : e));
    expect(verifyEvents(tampered, { seq: 0, hash: GENESIS })).toMatchObject({
      ok: false,
      firstBadSeq: 6,
    });
    const reordered = [events[0], events[2], events[1]] as LedgerEvent[];
    expect(verifyEvents(reordered, { seq: 0, hash: GENESIS })).toMatchObject({ firstBadSeq: 2 });
    const relinked = events.map((e) => (e.seq === 3 ? { ...e, prevHash: GENESIS } : e));
    expect(verifyEvents(relinked, { seq: 0, hash: GENESIS })).toMatchObject({ firstBadSeq: 3 });
  });
});
