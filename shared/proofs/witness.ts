import { toHead } from '../chain/layout.js';
import {
  headKey,
  WORK_SHARDS,
  witnessObjectKey,
  witnessObjectPrefix,
  witnessPk,
} from '../chain/storage-keys.js';
import { ConflictError, InvalidFormatError } from '../domain/errors.js';
import { type HeadKeys, parseSignedTreeHead, type SignedTreeHead } from '../domain/signed-head.js';
import type { Clock, IdSource } from '../ports/clock.js';
import type { Item, RecordStore, TransactOp } from '../ports/record-store.js';
import type { WitnessStore } from '../ports/witness-store.js';

/**
 * The witness (docs/proofs.md, "Witness"): the scheduled compactor publishes the signed tree
 * heads of the streams that moved since its last run, one object per tenant per run, to
 * write-once storage (WitnessStore). An operator who later rewrites bucket and table (or
 * restores an old table backup) cannot make a published head go away, so an audit finds the
 * contradiction.
 *
 *   1. Read the witness markers (`wit#{shard}`, put by the first commit after the stream was
 *      last published, tree-commit.ts), at most `maxStreams`.
 *   2. Read each marked head; its `treeHead` is the receipt of its last commit, signed by the
 *      API (the compactor holds no key).
 *   3. Publish one object per tenant: `w/{tenant}/{pad16(publishedAt)}-{runId}.json`, holding
 *      every head of the tenant's marked streams, each signed on its own.
 *   4. Per stream, in one transaction: clear the head's `witPending` (conditional on the tree
 *      size published and on `witPending`) and delete the marker. A stream that moved since 2
 *      keeps both, and the next run publishes its newer head. Dies before 4: the next run
 *      publishes the heads again (an audit takes the duplicate as what it is).
 */

export const WITNESS_FORMAT = 'hefesto/witness/v1';

export interface WitnessObject {
  format: typeof WITNESS_FORMAT;
  tenant: string;
  publishedAt: number;
  runId: string;
  heads: SignedTreeHead[];
}

export interface WitnessDeps {
  records: RecordStore;
  clock: Clock;
  ids: IdSource;
  witness: WitnessStore;
}

export interface WitnessReport {
  /** Heads published, and objects written (one per tenant with a moved stream). */
  headsWitnessed: number;
  witnessObjects: number;
}

export const publishWitness = async (
  deps: WitnessDeps,
  maxStreams = 1000,
): Promise<WitnessReport> => {
  const { records, clock, witness } = deps;
  // 1. The markers.
  const markers: Item[] = [];
  for (let shard = 0; shard < WORK_SHARDS && markers.length < maxStreams; shard++) {
    let after: string | undefined;
    do {
      const page = await records.query(witnessPk(shard), { after, limit: 100 });
      markers.push(...page.items);
      after = page.next;
    } while (after !== undefined && markers.length < maxStreams);
  }
  // 2. Their heads, by tenant.
  const byTenant = new Map<
    string,
    Array<{ marker: Item; head: SignedTreeHead | undefined; size?: number }>
  >();
  for (const marker of markers.slice(0, maxStreams)) {
    const tenant = String(marker.tenant);
    const item = await records.get(headKey(tenant, String(marker.stream)));
    const head = item ? toHead(item) : undefined;
    const list = byTenant.get(tenant) ?? [];
    list.push({ marker, head: head?.treeHead, ...(head ? { size: head.treeSize } : {}) });
    byTenant.set(tenant, list);
  }
  const publishedAt = clock.now();
  const runId = deps.ids.newId();
  let headsWitnessed = 0;
  let witnessObjects = 0;
  for (const [tenant, streams] of byTenant) {
    const heads = streams.flatMap((s) => (s.head ? [s.head] : []));
    // 3. One object for the tenant.
    if (heads.length > 0) {
      const body: WitnessObject = { format: WITNESS_FORMAT, tenant, publishedAt, runId, heads };
      const key = witnessObjectKey(tenant, publishedAt, runId);
      await witness.publish(key, Buffer.from(JSON.stringify(body), 'utf8'));
      headsWitnessed += heads.length;
      witnessObjects++;
    }
    // 4. Published: the markers go, unless the stream moved meanwhile.
    for (const s of streams) {
      const key = headKey(tenant, String(s.marker.stream));
      const ops: TransactOp[] = [{ kind: 'delete', key: { pk: s.marker.pk, sk: s.marker.sk } }];
      if (s.size !== undefined) {
        ops.unshift({
          kind: 'update',
          key,
          update: { remove: ['witPending'] },
          conditions: [
            { op: 'eq', attr: 'treeSize', value: s.size },
            { op: 'eq', attr: 'witPending', value: true },
          ],
        });
      }
      try {
        await records.transact(ops);
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
      }
    }
  }
  return { headsWitnessed, witnessObjects };
};

/** A head the witness published, with where it was read. */
export interface WitnessedHead {
  head: SignedTreeHead;
  publishedAt: number;
  key: string;
  versionId: string;
}

/**
 * Every head published for `tenant` (optionally one stream), from every version of every
 * witness object. Each head must verify under `keys` and belong to the tenant; an object or
 * a head that does not is reported in `invalid` (a forged version next to locked ones).
 */
export const readWitness = async (
  witness: WitnessStore,
  keys: HeadKeys,
  tenant: string,
  stream?: string,
): Promise<{ heads: WitnessedHead[]; invalid: string[] }> => {
  const heads: WitnessedHead[] = [];
  const invalid: string[] = [];
  for (const v of await witness.versions(witnessObjectPrefix(tenant))) {
    const where = `${v.key}@${v.versionId}`;
    let object: WitnessObject;
    try {
      object = parseWitnessObject(JSON.parse(Buffer.from(v.body).toString('utf8')), tenant);
    } catch (err) {
      invalid.push(`${where}: ${(err as Error).message}`);
      continue;
    }
    for (const head of object.heads) {
      if (stream !== undefined && head.streamId !== stream) continue;
      const verdict = keys.verify(head);
      if (!verdict.ok) invalid.push(`${where}: ${verdict.reason}`);
      else
        heads.push({ head, publishedAt: object.publishedAt, key: v.key, versionId: v.versionId });
    }
  }
  heads.sort((a, b) => a.head.treeSize - b.head.treeSize || a.publishedAt - b.publishedAt);
  return { heads, invalid };
};

const parseWitnessObject = (value: unknown, tenant: string): WitnessObject => {
  const o = value as Partial<WitnessObject> | null;
  if (!o || o.format !== WITNESS_FORMAT || !Array.isArray(o.heads)) {
    throw new InvalidFormatError('not a witness object');
  }
  if (o.tenant !== tenant || typeof o.publishedAt !== 'number') {
    throw new InvalidFormatError('witness object of another tenant or without a time');
  }
  const heads = o.heads.map((h) => parseSignedTreeHead(h));
  if (heads.some((h) => h.tenant !== tenant)) {
    throw new InvalidFormatError('a witnessed head names another tenant');
  }
  return {
    format: WITNESS_FORMAT,
    tenant,
    publishedAt: o.publishedAt,
    runId: String(o.runId),
    heads,
  };
};

/**
 * The heads of one stream as published, unverified (an audit verifies them against the keys
 * it trusts), from every version of every witness object of the tenant. Versions that are
 * not witness objects of the tenant are listed in `invalid`.
 */
export const publishedHeads = async (
  witness: WitnessStore,
  tenant: string,
  stream: string,
): Promise<{
  heads: Array<{ head: unknown; publishedAt: number; where: string }>;
  invalid: string[];
  /** Versions stored for the tenant, of any stream (0: a witness that holds nothing). */
  versions: number;
}> => {
  const heads: Array<{ head: unknown; publishedAt: number; where: string }> = [];
  const invalid: string[] = [];
  const versions = await witness.versions(witnessObjectPrefix(tenant));
  for (const v of versions) {
    const where = `${v.key}@${v.versionId}`;
    try {
      const object = parseWitnessObject(JSON.parse(Buffer.from(v.body).toString('utf8')), tenant);
      for (const head of object.heads) {
        if (head.streamId === stream) heads.push({ head, publishedAt: object.publishedAt, where });
      }
    } catch (err) {
      invalid.push(`${where}: ${(err as Error).message}`);
    }
  }
  return { heads, invalid, versions: versions.length };
};
