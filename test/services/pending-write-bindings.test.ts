import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { labelKey, pendingWriteSk, streamPk } from '../../shared/chain/storage-keys.js';
import {
  type DigestedWrite,
  pendingWritesDigest,
  WRITES_EVENT,
} from '../../shared/domain/pending-writes.js';
import { DELTA_EVENT } from '../../shared/domain/state.js';
import type { Item, RecordStore } from '../../shared/ports/record-store.js';
import { Checkpointer } from '../../shared/state/checkpoint.js';
import { compactionWorld, manualClock, readAll, type World } from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Issue 20 item 2: a checkpoint's pending writes (`pw#`) are bound to the chain. The delta
 * that moves the head's state off a checkpoint freezes its writes (`leaves`), the next delta
 * commits their digest (`pendingWrites`), and writes to a frozen checkpoint are a
 * `hefesto.writes` event. A read of a bound checkpoint's writes recomputes the digest: an
 * edited, deleted, added or swapped-in write is ErrTamperedLedger naming `pending-writes` and
 * the checkpoint's seq, never the stored value; /verify reports the same. The writes of the
 * tip and of the checkpoint it left are unbound (the stated limit), and checkpoints written
 * before the binding are served as stored.
 */

const T = 'acme';
const S = 'thread';
const vectors = JSON.parse(
  readFileSync(join(import.meta.dirname, '../vectors/pending-writes.json'), 'utf8'),
) as { vectors: Array<{ name: string; writes: DigestedWrite[]; digest: string }> };
const tampered = { code: 'ErrTamperedLedger', object: 'pending-writes' };

describe.each(allStores.filter((f) => f.enabled))('pending writes bound on $name', (factory) => {
  let stores: StorePair;
  let world: World;
  beforeEach(async () => {
    stores = await factory.make();
    world = compactionWorld(stores, {}, manualClock());
  });
  afterEach(() => stores.cleanup());

  const fresh = () => compactionWorld(stores, {}, manualClock()).ledger;
  const cp = async (label: string, parentLabel?: string, ledger = world.ledger) => {
    const head = await ledger.appender.readHead(T, S);
    return ledger.checkpoints.checkpoint({
      tenant: T,
      stream: S,
      ops: [{ op: 'set', path: '/n', value: label }],
      baseDigest: head.stateDigest,
      label,
      ...(parentLabel ? { parentLabel } : {}),
    });
  };
  const put = (label: string, taskId: string, writes: Array<{ idx: number; value: unknown }>) =>
    world.ledger.pendingWrites.put(T, S, label, {
      taskId,
      taskPath: `~__pregel_pull, ${taskId}`,
      writes: writes.map((w) => ({ idx: w.idx, channel: 'messages', value: w.value as never })),
    });
  const writeKey = (label: string, taskId: string, idx: number) => ({
    pk: streamPk(T, S),
    sk: pendingWriteSk(label, `~__pregel_pull, ${taskId}`, taskId, idx),
  });
  /** c1 (writes a, b), c2 (writes c), c3: the tip, with writes of its own. */
  const history = async () => {
    const seqs = [(await cp('c1')).seq];
    await put('c1', 'a', [
      { idx: 0, value: 'a0' },
      { idx: 1, value: 'a1' },
    ]);
    await put('c1', 'b', [{ idx: -1, value: { error: 'boom' } }]);
    seqs.push((await cp('c2', 'c1')).seq);
    await put('c2', 'c', [{ idx: 0, value: 'c0' }]);
    seqs.push((await cp('c3', 'c2')).seq);
    await put('c3', 'd', [{ idx: 0, value: 'd0' }]);
    return seqs as [number, number, number];
  };

  it('freezes the checkpoint a delta leaves and binds its writes in the next delta', async () => {
    const [s1, s2, s3] = await history();
    const ledger = fresh();
    const c1 = await ledger.pendingWrites.list(T, S, 'c1');
    expect(c1.map((w) => w.value)).toEqual(['a0', 'a1', { error: 'boom' }]);
    const events = await readAll(world, T, S);
    const at = (seq: number) =>
      events.find((e) => e.seq === seq)?.payload as Record<string, unknown>;
    expect(at(s1)).toMatchObject({ writesBound: true });
    expect(at(s1).leaves).toBeUndefined();
    expect(at(s2)).toMatchObject({ leaves: 'c1' });
    expect(at(s2).pendingWrites).toBeUndefined();
    expect(at(s3)).toMatchObject({
      leaves: 'c2',
      pendingWrites: { label: 'c1', digest: pendingWritesDigest(c1) },
    });
    const label = async (l: string) => stores.records.get(labelKey(T, S, l));
    expect(await label('c1')).toMatchObject({ writesFrozen: s2, writesSeq: s3 });
    expect(await label('c2')).toMatchObject({ writesFrozen: s3 });
    expect((await label('c2'))?.writesSeq).toBeUndefined();
    expect((await label('c3'))?.writesFrozen).toBeUndefined();
    expect(await ledger.pendingWrites.list(T, S, 'c2')).toHaveLength(1);
    expect(await ledger.pendingWrites.list(T, S, 'c3')).toHaveLength(1);
    expect(await ledger.verifier.verify(T, S)).toMatchObject({ ok: true });
  });

  it('commits the digest of test/vectors/pending-writes.json for its superstep’s writes', async () => {
    const vector = vectors.vectors.find((v) => v.name.startsWith('one superstep'));
    if (!vector) throw new Error('vector missing');
    await cp('c1');
    for (const w of vector.writes) {
      await world.ledger.pendingWrites.put(T, S, 'c1', {
        taskId: w.taskId,
        taskPath: w.taskPath,
        writes: [{ idx: w.idx, channel: w.channel, value: w.value ?? null }],
      });
    }
    await cp('c2', 'c1');
    const { seq } = await cp('c3', 'c2');
    const [delta] = (await world.ledger.reader.readEvents(T, S, { from: seq, limit: 1 })).events;
    expect(delta?.payload).toMatchObject({ pendingWrites: { label: 'c1', digest: vector.digest } });
  });

  it('fails closed on an edited, deleted, added or swapped-in write of a bound checkpoint', async () => {
    const [s1, s2] = await history();
    const original = (await stores.records.get(writeKey('c1', 'a', 1))) as Item;
    const other = (await stores.records.get(writeKey('c2', 'c', 0))) as Item;
    const tamperings: Array<[string, () => Promise<void>]> = [
      ['edited', () => stores.records.put({ ...original, valueJson: '"forged"' })],
      ['deleted', () => stores.records.delete(writeKey('c1', 'a', 1))],
      ['added', () => stores.records.put({ ...original, ...writeKey('c1', 'a', 2), idx: 2 })],
      [
        'swapped in',
        () => stores.records.put({ ...other, ...writeKey('c1', 'a', 1), taskId: 'a', idx: 1 }),
      ],
    ];
    for (const [what, tamper] of tamperings) {
      await tamper();
      const ledger = fresh();
      await expect(ledger.pendingWrites.list(T, S, 'c1'), what).rejects.toMatchObject({
        ...tampered,
        seq: s1,
      });
      expect(await ledger.verifier.verify(T, S), what).toMatchObject({
        ok: false,
        object: 'pending-writes',
        seq: s1,
      });
      // Put back (delete what was added first).
      await stores.records.delete(writeKey('c1', 'a', 2));
      await stores.records.put(original);
      expect(await fresh().verifier.verify(T, S), `${what}, put back`).toMatchObject({ ok: true });
    }
    expect(s2).toBeGreaterThan(s1);
  });

  it('fails closed when the binding’s pointer is removed or names another event', async () => {
    const [s1, s2] = await history();
    const key = labelKey(T, S, 'c1');
    const record = (await stores.records.get(key)) as Item;
    const { writesSeq: _, ...unbound } = record;
    await stores.records.put(unbound);
    await expect(fresh().pendingWrites.list(T, S, 'c1')).rejects.toMatchObject({
      ...tampered,
      seq: s1,
    });
    expect(await fresh().verifier.verify(T, S)).toMatchObject({ ok: false, seq: s1 });
    await stores.records.put({ ...record, writesSeq: s2 }); // binds nothing
    await expect(fresh().pendingWrites.list(T, S, 'c1')).rejects.toMatchObject(tampered);
    expect(await fresh().verifier.verify(T, S)).toMatchObject({ ok: false, seq: s1 });
  });

  it('serves the writes of the tip and of the checkpoint it left as stored (the stated limit), then binds them', async () => {
    const [, s2, s3] = await history();
    for (const key of [writeKey('c2', 'c', 0), writeKey('c3', 'd', 0)]) {
      await stores.records.put({ ...((await stores.records.get(key)) as Item), valueJson: '"x"' });
    }
    const ledger = fresh();
    expect((await ledger.pendingWrites.list(T, S, 'c2'))[0]?.value).toBe('x');
    expect((await ledger.pendingWrites.list(T, S, 'c3'))[0]?.value).toBe('x');
    expect(await ledger.verifier.verify(T, S)).toMatchObject({ ok: true });
    await cp('c4', 'c3', ledger); // binds c2 as it is now
    await cp('c5', 'c4', ledger); // binds c3
    await stores.records.delete(writeKey('c2', 'c', 0));
    await stores.records.delete(writeKey('c3', 'd', 0));
    for (const [label, seq] of [
      ['c2', s2],
      ['c3', s3],
    ] as const) {
      await expect(fresh().pendingWrites.list(T, S, label)).rejects.toMatchObject({
        ...tampered,
        seq,
      });
    }
  });

  it('fails closed when the checkpoint the tip left was not frozen or is not the one it names', async () => {
    const [, s2] = await history();
    // The tip (c3) names c2 as the checkpoint it left; c1 is bound, so removing its binding
    // cannot pass it off as c2.
    const key = labelKey(T, S, 'c2');
    const record = (await stores.records.get(key)) as Item;
    const { writesFrozen: _, ...unfrozen } = record;
    await stores.records.put(unfrozen);
    // Not frozen: the next commit does not bind it, and once it is neither the tip nor the
    // one the tip left, its writes fail closed.
    await cp('c4', 'c3');
    await cp('c5', 'c4');
    await expect(fresh().pendingWrites.list(T, S, 'c2')).rejects.toMatchObject({
      ...tampered,
      seq: s2,
    });
    expect(await fresh().verifier.verify(T, S)).toMatchObject({ ok: false, seq: s2 });
  });

  it('adds writes to a frozen checkpoint through the ledger, once', async () => {
    const [s1, s2] = await history();
    const before = (await world.ledger.appender.readHead(T, S)).seq;
    // LangGraph resuming c1 again: RESUME (a negative idx, last wins) and a new task's write.
    await world.ledger.pendingWrites.put(T, S, 'c1', {
      taskId: '00000000-0000-0000-0000-000000000000',
      taskPath: '',
      writes: [{ idx: -4, channel: '__resume__', value: 'yes' }],
    });
    expect(await put('c1', 'e', [{ idx: 0, value: 'e0' }])).toEqual({ written: 1 });
    // Retried as it is: nothing changes, nothing is appended.
    expect(await put('c1', 'e', [{ idx: 0, value: 'e0' }])).toEqual({ written: 0 });
    expect(await put('c1', 'a', [{ idx: 0, value: 'other' }])).toEqual({ written: 0 });
    const events = (await readAll(world, T, S)).filter((e) => e.seq > before);
    expect(events.map((e) => e.type)).toEqual([WRITES_EVENT, WRITES_EVENT]);
    const ledger = fresh();
    const c1 = await ledger.pendingWrites.list(T, S, 'c1');
    expect(c1.map((w) => w.value)).toEqual(['yes', 'a0', 'a1', { error: 'boom' }, 'e0']);
    expect(events.at(-1)?.payload).toMatchObject({ label: 'c1', digest: pendingWritesDigest(c1) });
    expect((await stores.records.get(labelKey(T, S, 'c1')))?.writesSeq).toBe(events.at(-1)?.seq);
    expect(await ledger.verifier.verify(T, S)).toMatchObject({ ok: true });
    // The last binding is the authority: the delta's older digest no longer matches them.
    await stores.records.delete(writeKey('c1', 'e', 0));
    await expect(fresh().pendingWrites.list(T, S, 'c1')).rejects.toMatchObject({
      ...tampered,
      seq: s1,
    });
    await stores.records.put({
      ...writeKey('c1', 'e', 0),
      taskId: 'e',
      taskPath: '~__pregel_pull, e',
      idx: 0,
      channel: 'messages',
      valueJson: '"e0"',
    });
    // c2 is frozen (the tip left it) but not bound yet: a write to it binds it at once.
    expect(await put('c2', 'f', [{ idx: 0, value: 'f0' }])).toEqual({ written: 1 });
    expect((await stores.records.get(labelKey(T, S, 'c2')))?.writesSeq).toBeGreaterThan(s2);
    await stores.records.delete(writeKey('c2', 'c', 0));
    await expect(fresh().pendingWrites.list(T, S, 'c2')).rejects.toMatchObject({
      ...tampered,
      seq: s2,
    });
  });

  it('takes the ledger path for a write whose checkpoint is left after it read the label', async () => {
    await history();
    // The next checkpoint leaves c3 between the write's label read and its transaction.
    let leaveFirst = true;
    const inner = stores.records;
    const records: RecordStore = {
      get: (key) => inner.get(key),
      put: (item, o) => inner.put(item, o),
      update: (key, u, o) => inner.update(key, u, o),
      delete: (key, o) => inner.delete(key, o),
      query: (pk, o) => inner.query(pk, o),
      transact: async (ops) => {
        if (leaveFirst && ops.some((op) => op.kind === 'put' && op.item.sk.startsWith('pw#c3#'))) {
          leaveFirst = false;
          await cp('c4', 'c3', world.ledger);
        }
        return inner.transact(ops);
      },
    };
    const racing = compactionWorld({ ...stores, records }, {}, manualClock()).ledger;
    await racing.pendingWrites.put(T, S, 'c3', {
      taskId: 'late',
      taskPath: '',
      writes: [{ idx: 0, channel: 'messages', value: 'late0' }],
    });
    const events = await readAll(world, T, S);
    expect(events.at(-2)).toMatchObject({ type: DELTA_EVENT, payload: { label: 'c4' } });
    expect(events.at(-1)).toMatchObject({ type: WRITES_EVENT, payload: { label: 'c3' } });
    const c3 = await fresh().pendingWrites.list(T, S, 'c3');
    expect(c3.map((w) => w.value)).toEqual(['late0', 'd0']); // task path '' sorts first
    expect(await fresh().verifier.verify(T, S)).toMatchObject({ ok: true });
  });

  it('freezes nothing when a checkpoint dies before its commit', async () => {
    await history();
    let die = true;
    const dying = compactionWorld(stores, {
      crash: (step) => {
        if (step === 'head-read' && die) {
          die = false;
          throw new Error('died');
        }
      },
    }).ledger;
    const before = (await readAll(world, T, S)).length;
    await expect(cp('c4', 'c3', dying)).rejects.toThrow('died');
    // c3 is still the tip, taking writes directly.
    await put('c3', 'f', [{ idx: 0, value: 'f0' }]);
    expect(await readAll(world, T, S)).toHaveLength(before);
    await cp('c4', 'c3');
    await cp('c5', 'c4');
    expect((await fresh().pendingWrites.list(T, S, 'c3')).map((w) => w.value)).toEqual([
      'd0',
      'f0',
    ]);
    expect(await fresh().verifier.verify(T, S)).toMatchObject({ ok: true });
  });

  it('serves checkpoints written before the binding as stored', async () => {
    const { appender, states, reader, labels } = world.ledger;
    const before = new Checkpointer({ appender, states, reader, labels });
    const legacy = async (label: string, parentLabel?: string) => {
      const head = await appender.readHead(T, S);
      return before.checkpoint({
        tenant: T,
        stream: S,
        ops: [{ op: 'set', path: '/n', value: label }],
        baseDigest: head.stateDigest,
        label,
        ...(parentLabel ? { parentLabel } : {}),
      });
    };
    await legacy('o1');
    await put('o1', 'a', [{ idx: 0, value: 'a0' }]);
    await legacy('o2', 'o1');
    const key = writeKey('o1', 'a', 0);
    await stores.records.put({ ...((await stores.records.get(key)) as Item), valueJson: '"x"' });
    expect((await fresh().pendingWrites.list(T, S, 'o1'))[0]?.value).toBe('x');
    expect(await fresh().verifier.verify(T, S)).toMatchObject({ ok: true });
    // A stray write under a checkpoint the chain does not hold is reported.
    await stores.records.put({ ...key, ...writeKey('nope', 'a', 0), label: 'nope' } as Item);
    expect(await fresh().verifier.verify(T, S)).toMatchObject({
      ok: false,
      object: 'pending-writes',
    });
  });
});
