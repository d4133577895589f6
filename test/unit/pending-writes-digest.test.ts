import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../shared/domain/canonical.js';
import { sha256Hex } from '../../shared/domain/hashing.js';
import {
  compareWrites,
  type DigestedWrite,
  pendingWritesDigest,
} from '../../shared/domain/pending-writes.js';

/**
 * test/vectors/pending-writes.json against the domain code the server runs (the client SDK
 * checks the same file: test/client/pending-writes-digest.test.ts). The digest is recomputed
 * here from its definition too, so the vectors pin the format, not only the code.
 */

interface Vectors {
  vectors: Array<{
    name: string;
    writes: DigestedWrite[];
    sorted: Array<[string, string, number]>;
    canonical: string;
    digest: string;
  }>;
}

const pendingWriteVectors = JSON.parse(
  readFileSync(join(import.meta.dirname, '../vectors/pending-writes.json'), 'utf8'),
) as Vectors;

describe('pending-write digest vectors', () => {
  it.each(pendingWriteVectors.vectors.map((v) => [v.name, v] as const))('%s', (_, v) => {
    const sorted = [...v.writes].sort(compareWrites);
    expect(sorted.map((w) => [w.taskPath, w.taskId, w.idx])).toEqual(v.sorted);
    const list = sorted.map((w) => ({
      taskPath: w.taskPath,
      taskId: w.taskId,
      idx: w.idx,
      channel: w.channel,
      ...(w.ref ? { ref: w.ref } : { value: w.value ?? null }),
    }));
    expect(canonicalJson(list)).toBe(v.canonical);
    expect(sha256Hex(`hefesto/pending-writes/v1\n${v.canonical}`)).toBe(v.digest);
    expect(pendingWritesDigest(v.writes)).toBe(v.digest);
    expect(pendingWritesDigest([...v.writes].reverse())).toBe(v.digest);
  });

  it('changes with any field of any write', () => {
    const v = pendingWriteVectors.vectors[1] as Vectors['vectors'][number];
    const base = pendingWritesDigest(v.writes);
    const [first, ...rest] = v.writes as [DigestedWrite, ...DigestedWrite[]];
    const variants: DigestedWrite[] = [
      { ...first, value: 'other' },
      { ...first, channel: 'other' },
      { ...first, idx: first.idx + 1000 },
      { ...first, taskId: `${first.taskId}x` },
      { ...first, taskPath: `${first.taskPath}x` },
    ];
    for (const changed of variants) expect(pendingWritesDigest([changed, ...rest])).not.toBe(base);
    expect(pendingWritesDigest(rest)).not.toBe(base);
  });
});
