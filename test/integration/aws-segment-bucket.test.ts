import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoRecordStore } from '../../shared/adapters/aws/dynamo-record-store.js';
import { S3ObjectStore } from '../../shared/adapters/aws/s3-object-store.js';
import { segmentKey, streamObjectPrefix } from '../../shared/chain/storage-keys.js';
import { ConflictError } from '../../shared/domain/errors.js';
import {
  createTestBucket,
  createTestTable,
  hasAwsEmulators,
  makeDynamoClient,
  makeS3Client,
  type TestResource,
} from '../support/aws.js';
import {
  batch,
  compactionWorld,
  leftovers,
  manualClock,
  readAll,
  settle,
  type World,
} from '../support/compaction.js';

/**
 * Ledger segments in a second bucket (HEFESTO_SEGMENT_BUCKET: an S3 Express One Zone directory
 * bucket on AWS). radosgw makes no directory buckets, so both are ordinary buckets here: this
 * proves the routing, not S3 Express itself.
 */
describe.skipIf(!hasAwsEmulators())('segments in their own bucket (S3 emulator)', () => {
  let data: TestResource;
  let segments: TestResource;
  let table: TestResource;
  let s3: S3Client;
  let streams = 0;
  beforeAll(async () => {
    s3 = makeS3Client();
    data = await createTestBucket(s3);
    segments = await createTestBucket(s3);
    table = await createTestTable();
  });
  afterAll(async () => {
    await data?.cleanup();
    await segments?.cleanup();
    await table?.cleanup();
    s3?.destroy();
  });

  const keysIn = async (bucket: string, prefix: string): Promise<string[]> => {
    const out = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
    return (out.Contents ?? []).map((o) => o.Key ?? '');
  };

  const world = (): { world: World; objects: S3ObjectStore; advance: (ms: number) => void } => {
    const clock = manualClock();
    const objects = new S3ObjectStore({
      client: makeS3Client(),
      bucket: data.name,
      segmentBucket: segments.name,
    });
    const records = new DynamoRecordStore({ client: makeDynamoClient(), table: table.name, clock });
    const pair = { objects, records, tamper: async () => {}, cleanup: async () => {} };
    return { world: compactionWorld(pair, {}, clock), objects, advance: (ms) => clock.advance(ms) };
  };

  it('puts appended segments in the segment bucket and nothing else there; reads verify', async () => {
    const { world: w } = world();
    const stream = `s${++streams}`;
    for (let i = 0; i < 3; i++) {
      await w.ledger.appender.append({ tenant: 'acme', stream, events: batch(`e${i}`) });
    }
    const prefix = streamObjectPrefix('acme', stream);
    expect(await keysIn(segments.name, prefix)).toEqual(
      [1, 2, 3].map((n) => segmentKey('acme', stream, n)),
    );
    expect((await keysIn(data.name, prefix)).filter((k) => k.includes('/seg/'))).toEqual([]);
    expect((await readAll(w, 'acme', stream)).length).toBe(3);
    expect(await w.ledger.reader.verify('acme', stream)).toMatchObject({ ok: true, seq: 3 });
  });

  it('compacts and collects the superseded segments in the segment bucket', async () => {
    const { world: w, advance } = world();
    const stream = `s${++streams}`;
    for (let i = 0; i < 8; i++) {
      await w.ledger.appender.append({ tenant: 'acme', stream, events: batch(`e${i}`) });
    }
    await settle(w, advance);
    const left = await leftovers(w, 'acme', stream);
    expect(left).toMatchObject({ indexed: 1, segments: 1, unnamed: [] });
    const prefix = streamObjectPrefix('acme', stream);
    const merged = await keysIn(segments.name, prefix);
    expect(merged).toHaveLength(1);
    expect(merged[0]).toMatch(/\/seg\/\d{16}-\d{16}$/);
    expect((await keysIn(data.name, prefix)).filter((k) => k.includes('/seg/'))).toEqual([]);
    expect(await w.ledger.reader.verify('acme', stream)).toMatchObject({ ok: true, seq: 8 });
    expect((await readAll(w, 'acme', stream)).length).toBe(8);
  });

  it('still refuses to overwrite a segment in the segment bucket', async () => {
    const { objects } = world();
    const key = segmentKey('acme', `s${++streams}`, 1);
    await objects.putIfAbsent(key, new TextEncoder().encode('mine'));
    const err = await objects
      .putIfAbsent(key, new TextEncoder().encode('theirs'))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect(await keysIn(segments.name, key)).toEqual([key]);
    expect(await keysIn(data.name, key)).toEqual([]);
    expect(new TextDecoder().decode((await objects.get(key))?.body)).toBe('mine');
  });

  it("lists a stream's prefix from both buckets in key order, page by page", async () => {
    const { objects } = world();
    const stream = `s${++streams}`;
    const prefix = streamObjectPrefix('acme', stream);
    const keys = [
      ...[1, 2, 3, 4].map((n) => segmentKey('acme', stream, n)),
      `${prefix}snap/0000000000000002-aa`,
      `${prefix}snap/0000000000000004-bb`,
      `${prefix}tile/0/000`,
    ];
    for (const k of keys) await objects.putIfAbsent(k, new TextEncoder().encode(k));
    const seen: string[] = [];
    let after: string | undefined;
    do {
      const page = await objects.list(prefix, { after, limit: 2 });
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items.map((i) => i.key));
      after = page.next;
    } while (after !== undefined);
    expect(seen).toEqual([...keys].sort());
  });
});
