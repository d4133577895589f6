import { expect } from 'vitest';
import {
  apiKeyRecordKey,
  streamIndexKey,
  streamKeyKey,
  writerLeaseKey,
} from '../../shared/chain/storage-keys.js';
import { classifyObjectKey, classifyRecordKey } from '../../shared/chain/storage-kinds.js';
import type { StorageKind } from '../../shared/chain/storage-kinds-model.js';
import { TamperedHistoryError } from '../../shared/client/proofs.js';
import { MemoryTrustStore } from '../../shared/client/trust-store.js';
import { ContentSealedError, TamperedLedgerError } from '../../shared/domain/errors.js';
import type { SignedTreeHead } from '../../shared/domain/signed-head.js';
import { checkSigningKeys, SigningKeyMissingError } from '../../shared/keys/signing-keys.js';
import type { Item } from '../../shared/ports/record-store.js';
import { inStream, keysOfKind, resync, Tamperer } from './tamper-mutations.js';
import type { Answer } from './tamper-probes.js';
import { runReads, runVerify } from './tamper-probes.js';
import { type Inventory, recordId } from './tamper-stores.js';
import {
  E,
  FENCED,
  httpClient,
  IDEM_EVENTS,
  IDEM_KEY,
  S,
  T,
  type TamperWorld,
} from './tamper-world.js';

/**
 * The control and authority kinds of the tamper matrix: each edited and deleted behind the
 * services' back, after which reads and `/verify` must be unaffected (a control record never
 * changes what a read serves, unless the module documents a limit) and the outcome the
 * module documents is checked here. A case whose check writes (a refused writer's object, a
 * key created again) is put back with `resync`.
 */

type Mutation = 'edit' | 'delete';

export interface ControlCase {
  /** The record id or object key it tampers with (default: the kind's first in S). */
  target?(w: TamperWorld): string;
  /** How the matrix edits a record (or an object's bytes) of the kind. */
  edit(item: Item): Item;
  editObject?(body: Uint8Array): Uint8Array;
  /** The documented outcome, checked after the tampering. */
  outcome?: Partial<Record<Mutation, (w: TamperWorld, item: Item) => Promise<void>>>;
}

const set =
  (fields: Record<string, unknown>) =>
  (item: Item): Item => ({ ...item, ...(fields as Item) });
const bump = (attr: string, by: number) => (item: Item) => ({
  ...item,
  [attr]: Number(item[attr]) + by,
});

const headOf = async (w: TamperWorld, stream: string) => w.ledger().appender.readHead(T, stream);

/** The answer a retry of the idempotent append of S gets. */
const retry = (w: TamperWorld) =>
  httpClient(w).append(S, IDEM_EVENTS, { idempotencyKey: IDEM_KEY });

export const CONTROL_CASES: Record<string, ControlCase> = {
  idempotency: {
    edit: set({ digest: 'f'.repeat(64) }),
    outcome: {
      // The stored digest no longer matches: the retry is refused, nothing written. The
      // answer edited instead (its receipt's root): the server signs it again as it is, and
      // only a client that trusts a head of the stream refuses it.
      edit: async (w, item) => {
        const before = w.track.writes();
        await expect(retry(w)).rejects.toMatchObject({ code: 'ErrIdempotencyKeyReused' });
        const receipt = item.receipt as { rootHash: string };
        const forged = `${receipt.rootHash.slice(0, -1)}${receipt.rootHash.endsWith('0') ? 1 : 0}`;
        await w.stores.records.put({ ...item, receipt: { ...receipt, rootHash: forged } });
        const answered = await retry(w);
        expect(answered).toMatchObject({ replayed: true, treeHead: { rootHash: forged } });
        expect(w.ring.verifier().verify(answered.treeHead as SignedTreeHead).ok).toBe(true);
        const trusting = httpClient(w, new MemoryTrustStore());
        await trusting.readEvents(S, { limit: 1000 });
        await expect(
          trusting.append(S, IDEM_EVENTS, { idempotencyKey: IDEM_KEY }),
        ).rejects.toBeInstanceOf(TamperedHistoryError);
        expect(w.track.writes()).toBe(before);
      },
      // Gone: the retry is a new request, committed again (a second batch).
      delete: async (w) => {
        const seq = (await headOf(w, S)).seq;
        const again = await retry(w);
        expect(again.firstSeq).toBe(seq + 1);
      },
    },
  },
  'idempotency-legacy': {
    edit: set({ stream: S, createdAt: Date.now() }),
    // Never read: the head has an incarnation and no legacy window.
    outcome: {
      edit: async (w) => {
        const head = await headOf(w, S);
        const stored = await w
          .ledger()
          .appender.storedResult(
            { tenant: T, stream: S, events: [], idempotency: { key: 'k-legacy', digest: 'x' } },
            head,
          );
        expect(stored).toBeUndefined();
      },
    },
  },
  'idempotency-service': {
    edit: set({ status: 500 }),
    // The effect record keeps its event's seq: begin answers the result, appends nothing.
    outcome: {
      edit: async (w) => expectEffectAnswered(w),
      delete: async (w) => expectEffectAnswered(w),
    },
  },
  'writer-lease': {
    edit: bump('epoch', 1),
    outcome: {
      edit: async (w) => expectFenced(w, Number((await leaseOf(w)).epoch) - 1),
      delete: async (w) => expectFenced(w, 1),
    },
  },
  refused: { edit: set({ hash: 'ab'.repeat(32) }) },
  tiles: { edit: bump('size', -5) },
  'compactor-lease': { edit: set({ until: Number.MAX_SAFE_INTEGER }) },
  'base-due': { edit: bump('seq', -1) },
  garbage: { edit: set({ objects: [] }) },
  orphan: { edit: set({ deleteAfter: 0 }) },
  sweep: { edit: set({ dueAt: 0 }) },
  'stream-key': {
    target: () => recordId(streamKeyKey(T, E)),
    edit: (item) => {
      const wrapped = Buffer.from(String(item.wrapped), 'base64');
      wrapped[0] = (wrapped[0] ?? 0) ^ 1;
      return { ...item, wrapped: wrapped.toString('base64') };
    },
    outcome: { edit: async (w) => expectSealed(w), delete: async (w) => expectSealed(w) },
  },
  'stream-index': {
    target: () => recordId(streamIndexKey(T, S)),
    edit: set({ createdAt: 0 }),
    outcome: {
      // The limit: the stream is no longer listed; it reads as before.
      delete: async (w) => {
        const page = await w.ledger().streamList.list(T);
        expect(page.streams.map((s) => s.streamId)).not.toContain(S);
      },
    },
  },
  'chunk-ref': { edit: set({ digest: 'ab'.repeat(32) }) },
  'chunk-gc-marker': { edit: bump('gen', 1) },
  'chunk-gc-due': { edit: set({ dueAt: 0 }) },
  'chunk-gc-list': {
    edit: (item) => item,
    editObject: () => Buffer.from(JSON.stringify([])),
  },
  'work-marker': { edit: set({ seq: 0 }) },
  visit: { edit: set({ tenant: 'nobody' }) },
  'witness-marker': { edit: set({ seq: 0 }) },
  'signing-keys': {
    edit: (item) => {
      const keys = JSON.parse(String(item.keys)) as { keys: Array<Record<string, unknown>> };
      const stranger = { ...keys.keys[0], kid: 'fake-stranger' };
      return { ...item, keys: JSON.stringify({ keys: [stranger, ...keys.keys] }) };
    },
    outcome: {
      // A key the server does not hold is recorded: it refuses to start.
      edit: async (w) => {
        await expect(checkSigningKeys(w.track.records, w.ring)).rejects.toBeInstanceOf(
          SigningKeyMissingError,
        );
      },
      // Gone: the next start records its keys again.
      delete: async (w) => {
        await checkSigningKeys(w.track.records, w.ring);
      },
    },
  },
  'api-key': {
    target: (w) => recordId(apiKeyRecordKey(w.apiKey.split('_')[1] as string)),
    edit: set({ tenant: 'mallory' }),
    outcome: {
      // Authority: the record says who the key is.
      edit: async (w) => {
        expect((await w.keys().authenticate(w.apiKey)).tenant).toBe('mallory');
      },
      delete: async (w) => {
        await expect(w.keys().authenticate(w.apiKey)).rejects.toMatchObject({
          code: 'ErrUnauthorized',
        });
      },
    },
  },
  bootstrap: {
    edit: set({ keyId: 'someone-else' }),
    outcome: {
      edit: async (w) => {
        expect(await w.keys().ensureBootstrapKey()).toBeUndefined();
      },
      // Authority: without the marker, the next start mints another operator key.
      delete: async (w) => {
        expect(await w.keys().ensureBootstrapKey()).toMatchObject({ operator: true });
      },
    },
  },
};

const leaseOf = async (w: TamperWorld) =>
  (await w.stores.records.get(writerLeaseKey(T, S))) ?? { epoch: 0 };

/** The holder's fenced append: refused (the lease is lost), fail safe. */
const expectFenced = async (w: TamperWorld, epoch: number) => {
  await expect(
    w.ledger().appender.append({
      tenant: T,
      stream: S,
      events: [{ type: 'note', payload: { fenced: true } }],
      fence: { epoch, checkpoint: false },
    }),
  ).rejects.toMatchObject({ code: 'ErrFenced' });
};

const expectEffectAnswered = async (w: TamperWorld) => {
  const before = w.track.writes();
  const begun = await w.ledger().effects.begin({
    tenant: T,
    stream: S,
    effectKey: 'pay-1',
    kind: 'payment',
    intent: { amount: 5 },
  });
  expect(begun).toMatchObject({ status: 'completed', result: { receipt: 'r-1' } });
  expect(w.track.writes()).toBe(before);
};

/** The key a control case tampers with: the kind's first in S, else its first anywhere. */
const targetOf = (w: TamperWorld, kind: StorageKind): string => {
  const keys = keysOfKind(w.final, kind);
  const id = keys.find(inStream(S)) ?? keys.find(inStream(FENCED)) ?? keys[0];
  if (id === undefined) throw new Error(`the world holds no ${kind.name}`);
  return id;
};

/** Edits or deletes one record (or object) of a control kind, and checks what follows. */
/** E's content cannot be opened: its read fails closed, an append is refused, nothing written. */
const expectSealed = async (w: TamperWorld) => {
  const writes = w.track.writes();
  const closed = (err: unknown) =>
    err instanceof ContentSealedError || err instanceof TamperedLedgerError;
  const read = await w
    .sealing()
    .reader.readEvents(T, E)
    .catch((err: unknown) => err);
  expect(closed(read), `read served ${JSON.stringify(read)}`).toBe(true);
  const append = await w
    .sealing()
    .appender.append({ tenant: T, stream: E, events: [{ type: 'note', payload: { late: 1 } }] })
    .catch((err: unknown) => err);
  expect(closed(append), `append answered ${JSON.stringify(append)}`).toBe(true);
  expect(w.track.writes(), 'a refused append wrote').toBe(writes);
};

export const controlCase = async (
  w: TamperWorld,
  kind: StorageKind,
  mutation: Mutation,
  o: { honest: Record<string, Answer>; checkReads(now: Record<string, Answer>): void },
) => {
  const spec = CONTROL_CASES[kind.name] as ControlCase;
  const id = spec.target?.(w) ?? targetOf(w, kind);
  const t = new Tamperer(w);
  const writes = w.track.writes();
  try {
    let item: Item;
    if (kind.store === 'records') {
      item = w.final.records.get(id) as Item;
      if (mutation === 'edit') await t.putRecord(spec.edit(item));
      else await t.deleteRecord(item);
    } else {
      item = { pk: id, sk: '' };
      const body = w.final.objects.get(id) as Uint8Array;
      if (mutation === 'edit') await t.putObject(id, (spec.editObject ?? ((b) => b))(body));
      else await t.deleteObject(id);
    }
    o.checkReads(await runReads(w));
    const verify = await runVerify(w);
    expect(Object.values(verify).filter((v) => !(v as { ok: boolean }).ok)).toEqual([]);
    await spec.outcome?.[mutation]?.(w, item);
  } finally {
    await t.restore();
    if (w.track.writes() !== writes) await resync(w);
  }
};

/** The stored keys no kind claims: what a new kind written without an entry leaves. */
export const unclassified = (inv: Inventory): string[] => [
  ...[...inv.records.values()].filter((i) => !classifyRecordKey(i)).map(recordId),
  ...[...inv.objects.keys()].filter((k) => !classifyObjectKey(k)),
  ...inv.witness.filter((v) => !classifyObjectKey(v.key, 'witness')).map((v) => v.key),
];
