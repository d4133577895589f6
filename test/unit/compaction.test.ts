import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SegmentIndexRecord } from '../../shared/chain/layout.js';
import {
  firstSeqOfKey,
  mergedSegmentKey,
  parseSegmentKey,
  segmentKey,
} from '../../shared/chain/storage-keys.js';
import { planRuns } from '../../shared/compaction/compact-merge.js';
import { InvalidInputError, TamperedLedgerError } from '../../shared/domain/errors.js';
import { genesisHash, type SealedEvent, sealBatch } from '../../shared/domain/event.js';
import { decodeSegment, encodeSegment, mergeSegments } from '../../shared/domain/segment.js';

const T = 'acme';
const S = 'run-1';

/** `sizes[i]` events per segment, chained from genesis; each with its own createdAt. */
const segments = (sizes: number[]) => {
  let head = { seq: 0, hash: genesisHash(T, S) };
  return sizes.map((n, i) => {
    const events = sealBatch(
      head.seq,
      head.hash,
      1000 + i,
      Array.from({ length: n }, (_, j) => ({
        type: 'obs',
        payload: { i, j, text: 'ü'.repeat(j) },
      })),
    );
    const bytes = encodeSegment(
      {
        tenant: T,
        stream: S,
        epoch: i % 2,
        idempotencyKey: `k${i}`,
        requestDigest: null,
        createdAt: 1000 + i,
      },
      events,
    );
    const last = events.at(-1) as SealedEvent;
    const expect = { tenant: T, stream: S, firstSeq: head.seq + 1, prevHash: head.hash };
    head = { seq: last.seq, hash: last.hash };
    return { bytes, header: decodeSegment(bytes, expect).header, events };
  });
};

describe('merging segments', () => {
  it('copies every event record byte for byte under one header', () => {
    const parts = segments([3, 1, 4]);
    const merged = mergeSegments(parts);
    const decoded = decodeSegment(merged.bytes, {
      tenant: T,
      stream: S,
      firstSeq: 1,
      prevHash: genesisHash(T, S),
    });
    const all = parts.flatMap((p) => p.events);
    expect(
      decoded.events.map((e) => [e.seq, e.hash, Buffer.from(e.preimage).toString('hex')]),
    ).toEqual(all.map((e) => [e.seq, e.hash, Buffer.from(e.preimage).toString('hex')]));
    expect(decoded.header).toEqual({
      format: 1,
      tenant: T,
      stream: S,
      firstSeq: 1,
      lastSeq: 8,
      prevHash: genesisHash(T, S),
      lastHash: all.at(-1)?.hash,
      epoch: 0,
      idempotencyKey: null,
      requestDigest: null,
      createdAt: 1002,
    });
  });

  it('writes the same bytes for the same run whatever merges led there', () => {
    const parts = segments([2, 2, 2, 2]);
    const direct = mergeSegments(parts);
    const left = mergeSegments(parts.slice(0, 2));
    const right = mergeSegments(parts.slice(2));
    const nested = mergeSegments([left, right]);
    expect(Buffer.from(nested.bytes).equals(Buffer.from(direct.bytes))).toBe(true);
  });

  it('refuses parts that do not chain, and fewer than two', () => {
    const parts = segments([1, 1, 1]);
    expect(() => mergeSegments([parts[0], parts[2]] as never)).toThrow(InvalidInputError);
    expect(() => mergeSegments(parts.slice(0, 1))).toThrow(InvalidInputError);
  });

  it('still detects a flipped byte anywhere in a merged segment', () => {
    const merged = mergeSegments(segments([2, 3]));
    const expect5 = { tenant: T, stream: S, firstSeq: 1, prevHash: genesisHash(T, S) };
    fc.assert(
      fc.property(fc.integer({ min: 0, max: merged.bytes.length - 1 }), (at) => {
        const copy = Uint8Array.from(merged.bytes);
        copy[at] = (copy[at] ?? 0) ^ 0x01;
        expect(() => decodeSegment(copy, expect5)).toThrow(TamperedLedgerError);
      }),
      { numRuns: 200 },
    );
  });

  it('names merged objects apart from every key an append races for', () => {
    const key = mergedSegmentKey(T, S, 5, 12);
    expect(key).toBe(`${segmentKey(T, S, 5)}-0000000000000012`);
    expect(firstSeqOfKey(key)).toBeUndefined();
    expect(parseSegmentKey(key)).toEqual({ firstSeq: 5, lastSeq: 12 });
    expect(parseSegmentKey(segmentKey(T, S, 5))).toEqual({ firstSeq: 5 });
    expect(parseSegmentKey(`t/${T}/s/${S}/snap/0000000000000005-ab`)).toBeUndefined();
  });
});

describe('planning merges', () => {
  const records = (sizes: number[]): SegmentIndexRecord[] => {
    let seq = 0;
    return sizes.map((size) => {
      seq++;
      return {
        firstSeq: seq,
        lastSeq: seq,
        prevHash: 'p',
        lastHash: 'h',
        objectKey: `k${seq}`,
        size,
      };
    });
  };
  const plan = (sizes: number[], target = 1000, max = 90) =>
    planRuns(records(sizes), target, max).map((run) => run.map((r) => r.lastSeq));

  it('merges consecutive small segments up to the target size', () => {
    expect(plan([100, 100, 100, 100])).toEqual([[1, 2, 3, 4]]);
    expect(plan([400, 400, 400, 400])).toEqual([
      [1, 2],
      [3, 4],
    ]);
  });

  it('leaves segments at the target alone and never merges one segment', () => {
    expect(plan([100, 1000, 100, 100, 1000, 100])).toEqual([[3, 4]]);
  });

  it('merges a large segment only once the ones after it add up to it', () => {
    expect(plan([600, 100, 100])).toEqual([[2, 3]]);
    expect(plan([200, 100, 100])).toEqual([[1, 2, 3]]);
  });

  it('caps a run at the inputs one transaction can publish', () => {
    expect(plan(Array(10).fill(1), 1000, 4)).toEqual([
      [1, 2, 3, 4],
      [5, 6, 7, 8],
      [9, 10],
    ]);
  });

  it('rewrites each byte only logarithmically often as a stream grows', () => {
    // Simulate: 16 new 100 B segments at a time, merged after each batch.
    let sizes: number[] = [];
    let rewritten = 0;
    for (let round = 0; round < 64; round++) {
      sizes.push(...Array(16).fill(100));
      // Apply the runs from the last: earlier positions stay where they were.
      for (const run of planRuns(records(sizes), 1_000_000, 95).reverse()) {
        const first = run[0]?.lastSeq ?? 0;
        const total = run.reduce((n, r) => n + (r.size ?? 0), 0);
        rewritten += total;
        sizes = [...sizes.slice(0, first - 1), total, ...sizes.slice(first - 1 + run.length)];
      }
    }
    const written = 64 * 16 * 100;
    expect(rewritten / written).toBeLessThanOrEqual(Math.log2(64 * 16) + 1);
    expect(sizes.length).toBeLessThanOrEqual(Math.log2(64) + 1);
  });
});
