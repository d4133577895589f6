import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  chunkKey,
  ckptSk,
  effectRecordKey,
  headKey,
  labelKey,
  streamObjectPrefix,
  streamPk,
  tileKey,
  tilesKey,
} from '../../shared/chain/storage-keys.js';
import {
  classifyObjectKey,
  classifyRecordKey,
  STORAGE_KINDS,
} from '../../shared/chain/storage-kinds.js';
import {
  type Detection,
  MUTATIONS,
  type Mutation,
  type StorageKind,
} from '../../shared/chain/storage-kinds-model.js';
import { TamperedLedgerError } from '../../shared/domain/errors.js';
import { allStores } from './stores.js';
import { CONTROL_CASES, controlCase, unclassified } from './tamper-control.js';
import { inStream, keysOfKind, mutate, Tamperer, type Target } from './tamper-mutations.js';
import {
  type Answer,
  type AuditProbe,
  auditProbe,
  type ClientProbe,
  clientProbe,
  LIMITED_READS,
  runReads,
  runVerify,
} from './tamper-probes.js';
import { inventory, recordId } from './tamper-stores.js';
import { JF, JF2, O, S, T, type TamperWorld, tamperWorld } from './tamper-world.js';

/**
 * Issue 20, the tamper matrix that cannot go stale. The kinds come from the storage-kinds
 * module (shared/chain/storage-kinds.ts), which says for each what detects its tampering:
 *
 * - after a scenario that writes one of every kind (test/support/tamper-world.ts), every
 *   record and object stored is claimed by a kind (a new kind written without an entry there
 *   fails here), and every kind has its entry in this matrix;
 * - chain-bound kinds: each record or object is edited, swapped for another stream's or
 *   another seq's, deleted and rolled back to an older version, behind the services' back;
 *   then every read either answers as before or fails closed naming the object (never
 *   another value, never a 409), `/verify` names it, a checkpoint on top is refused, and
 *   nothing is written; a consistent rollback (invisible to the server by design) is caught
 *   by the client's trust store and `hefesto audit --witness`;
 * - control and authority kinds: edited and deleted, reads and `/verify` are unaffected and
 *   the outcome the module documents happens (test/support/tamper-control.ts).
 * Memory, local (SQLite and files) and the emulators (DynamoDB Local, S3), a file each.
 */

/** The scenario and one case each on the emulators: slow there. */
const SLOW = 300_000;
const CASE = 60_000;

/** What each chain-bound kind's cases tamper with (the matrix entry of the kind). */
const TARGETS: Record<string, (w: TamperWorld) => Target | undefined> = {
  head: () => ({ id: recordId(headKey(T, S)), stream: S, twin: O }),
  'segment-index': (w) => inS(w, 'segment-index').at(-1),
  'snapshot-index': (w) => inS(w, 'snapshot-index')[0],
  label: () => ({ id: recordId(labelKey(T, S, 'c5')), stream: S, twin: O }),
  'checkpoint-entry': (w) => ({
    id: recordId({ ...headKey(T, S), sk: ckptSk(w.seqs.c5 as number) }),
    stream: S,
    twin: O,
  }),
  segment: (w) => inS(w, 'segment').at(-1),
  snapshot: (w) => inS(w, 'snapshot').at(-1),
  'fork-origin': (w) => {
    const id = keysOfKind(w.final, kindNamed('fork-origin')).find(inStream(JF));
    return id === undefined ? undefined : { id, stream: JF, twin: JF2 };
  },
  // The tile proofs at the head's size read (the partial tile of the tiled size).
  tile: (w) => {
    const size = Number(w.final.records.get(recordId(tilesKey(T, S)))?.size);
    return { id: tileKey(T, S, { level: 0, index: 0, width: size }), stream: S, twin: O };
  },
  // The root chunk of the value S sets by ref, which its bases and the fork hold too.
  chunk: (w) => ({ id: chunkKey(T, w.refHash), stream: S, twin: O }),
  'witness-object': () => undefined,
  // A write of c2, a checkpoint whose writes c4's delta binds.
  'pending-write': (w) => inS(w, 'pending-write').find((t) => t.id.includes('pw#c2#')),
  // The finished pay-1 (swapped for O's pay-1, or S's pay-2).
  effect: () => ({ id: recordId(effectRecordKey(T, S, 'pay-1')), stream: S, twin: O }),
};

const kindNamed = (name: string): StorageKind => {
  const kind = STORAGE_KINDS.find((k) => k.name === name);
  if (!kind) throw new Error(`no kind ${name}`);
  return kind;
};

const inS = (w: TamperWorld, name: string): Target[] =>
  keysOfKind(w.final, kindNamed(name))
    .filter(inStream(S))
    .map((id) => ({ id, stream: S, twin: O }));

const chainBound = STORAGE_KINDS.filter((k) => k.class === 'chain-bound' && k.tamper);
const cases = chainBound.flatMap((kind) =>
  MUTATIONS.map((mutation) => ({ kind, mutation, expected: kind.tamper?.[mutation] })),
);

/** Every read is as before or failed closed; the ones the detection names fail so. */
const checkReads = (
  honest: Record<string, Answer>,
  now: Record<string, Answer>,
  d: Detection,
): void => {
  const off: string[] = [];
  let named = false;
  for (const [read, answer] of Object.entries(now)) {
    if (JSON.stringify(answer) === JSON.stringify(honest[read])) continue;
    if (read in LIMITED_READS) continue;
    if ('tampered' in answer) {
      if (answer.tampered === d.read) named = true;
      continue;
    }
    if ('error' in answer && answer.error === d.read) {
      named = true;
      continue;
    }
    off.push(`${read}: ${'error' in answer ? `${answer.error} ${answer.message}` : 'a new value'}`);
  }
  expect(off, 'reads that served something else than before, or failed open').toEqual([]);
  if (d.read !== undefined) expect(named, `no read failed naming ${d.read}`).toBe(true);
};

/**
 * The matrix on one store pair, one test file each (test/integration/tamper-matrix.*.test.ts),
 * so that vitest's workers run the three side by side: on the emulators alone it is minutes.
 */
export const tamperMatrixOn = (name: 'memory' | 'local' | 'aws'): void =>
  describe.each(allStores.filter((f) => f.enabled && f.name === name))(
    'the tamper matrix on $name',
    (factory) => {
      let w: TamperWorld;
      let honest: Record<string, Answer>;
      let client: ClientProbe;
      let audit: AuditProbe;
      beforeAll(async () => {
        w = await tamperWorld(factory);
        honest = await runReads(w);
        client = await clientProbe(w);
        audit = await auditProbe(w);
      }, SLOW);
      afterAll(async () => {
        await audit?.close();
        await w?.cleanup();
      });

      it('stores one of every kind, and nothing no kind claims', async () => {
        expect(unclassified(w.final)).toEqual([]);
        const present = new Set<string>();
        for (const item of w.final.records.values())
          present.add(classifyRecordKey(item)?.name ?? '');
        for (const key of w.final.objects.keys()) present.add(classifyObjectKey(key)?.name ?? '');
        for (const v of w.final.witness)
          present.add(classifyObjectKey(v.key, 'witness')?.name ?? '');
        expect(STORAGE_KINDS.map((k) => k.name).filter((n) => !present.has(n))).toEqual([]);
      });

      it(
        'reports a record and an object of a kind nobody registered, written beside the others',
        async () => {
          const record = { pk: streamPk(T, S), sk: 'newkind#0000000000000001' };
          const object = `${streamObjectPrefix(T, S)}newthing/1`;
          await w.track.records.put({ ...record, seq: 1 });
          await w.stores.objects.putIfAbsent(object, Buffer.from('new'));
          try {
            expect(unclassified(await inventory(w))).toEqual([
              `${record.pk}\u0000${record.sk}`,
              object,
            ]);
          } finally {
            await w.stores.records.delete(record);
            await w.stores.objects.delete(object);
          }
          expect(unclassified(await inventory(w))).toEqual([]);
        },
        CASE,
      );

      it('has a matrix entry for every kind', () => {
        const missing = STORAGE_KINDS.filter((k) =>
          k.class === 'chain-bound' && k.tamper ? !(k.name in TARGETS) : !(k.name in CONTROL_CASES),
        ).filter((k) => !k.limit || k.tamper || k.outcome);
        expect(missing.map((k) => k.name)).toEqual([]);
      });

      it.each(cases)(
        'detects the $mutation of a $kind.name',
        async ({ kind, mutation, expected }) => {
          if (kind.store === 'witness') {
            await witnessCase(w, audit, mutation, expected);
            return;
          }
          const target = TARGETS[kind.name]?.(w);
          if (typeof expected === 'string') {
            await expectImpossible(w, kind, mutation, target, expected);
            return;
          }
          if (!target || !expected) throw new Error(`no target for ${kind.name}`);
          const t = new Tamperer(w);
          try {
            const did = await mutate(t, kind, target, mutation);
            expect(did, 'the world holds something to tamper with').toBeDefined();
            const writes = w.track.writes();
            if (!expected.invisible) checkReads(honest, await runReads(w), expected);
            const verify = await runVerify(w);
            expect(verify[target.stream]).toEqual(
              expected.verify ? { ok: false, object: expected.verify } : { ok: true },
            );
            if (expected.harmless) {
              expect(Object.values(verify).every((v) => (v as { ok: boolean }).ok)).toBe(true);
            }
            if (expected.trustStore) {
              const reads = await client.run();
              expect(Object.values(reads)).toEqual(
                Object.keys(reads).map(() => ({ history: expected.trustStore })),
              );
            }
            if (expected.witness) {
              const run = await audit.run(target.stream);
              expect(run.stdout).toContain('a head the witness published');
              expect(run.code).toBe(1);
            }
            expect(w.track.writes(), 'a detector wrote').toBe(writes);
            if (expected.refusesCheckpoint) {
              const head = await w.stores.records.get(headKey(T, target.stream));
              const attempt = w.ledger().checkpoints.checkpoint({
                tenant: T,
                stream: target.stream,
                ops: [{ op: 'set', path: '/on-top', value: 1 }],
                baseDigest: String(head?.stateDigest),
              });
              await expect(attempt).rejects.toBeInstanceOf(TamperedLedgerError);
              expect(w.track.writes(), 'a refused checkpoint wrote').toBe(writes);
            }
          } finally {
            await t.restore();
          }
        },
        CASE,
      );

      it.each(
        STORAGE_KINDS.filter((k) => k.name in CONTROL_CASES).flatMap((kind) =>
          (['edit', 'delete'] as const).map((mutation) => ({ kind, mutation })),
        ),
      )(
        'serves every read as before after the $mutation of a $kind.name ($kind.class), and does what it says',
        async ({ kind, mutation }) => {
          await controlCase(w, kind, mutation, {
            honest,
            checkReads: (now) => checkReads(honest, now, {}),
          });
        },
        CASE,
      );

      it(
        'detects an edited migration: its segment fails closed, its state is never served',
        async () => {
          const seq = w.seqs.migration as number;
          const key = keysOfKind(w.final, kindNamed('segment'))
            .filter(inStream(S))
            .find((id) => {
              const [first, last = first] = (id.split('/seg/')[1] ?? '').split('-').map(Number);
              return (first as number) <= seq && seq <= (last as number);
            });
          expect(key, 'a segment holds the migration').toBeDefined();
          const stored = await w.stores.objects.get(key as string);
          const body = Buffer.from(stored?.body ?? []);
          const at = body.indexOf('"to":2');
          expect(at).toBeGreaterThan(0);
          const t = new Tamperer(w);
          try {
            // The migration now claims version 3: same length, the event's hash no longer holds.
            await t.putObject(key as string, Uint8Array.from(body).fill(0x33, at + 5, at + 6));
            const writes = w.track.writes();
            await expect(
              w.ledger().states.hydrate(T, S, (w.seqs.migration as number) + 1),
            ).rejects.toBeInstanceOf(TamperedLedgerError);
            expect((await runVerify(w))[S]).toEqual({ ok: false, object: 'segment' });
            const reads = await runReads(w);
            checkReads(honest, reads, { read: 'segment' });
            expect(w.track.writes(), 'a detector wrote').toBe(writes);
          } finally {
            await t.restore();
          }
        },
        CASE,
      );

      it(
        'answers every read as before the matrix, every case undone',
        async () => {
          expect(await runReads(w)).toEqual(honest);
          expect(Object.values(await runVerify(w))).toEqual(
            Object.values(await runVerify(w)).map(() => ({ ok: true })),
          );
        },
        CASE,
      );
    },
  );

/**
 * The witness store takes no edit, only new versions (write-once): a forged one, published
 * beside the genuine ones, is reported and does not count.
 */
const witnessCase = async (
  w: TamperWorld,
  audit: AuditProbe,
  mutation: Mutation,
  expected: Detection | string | undefined,
) => {
  if (mutation !== 'edit') {
    expect(typeof expected).toBe('string');
    return;
  }
  const [genuine] = w.final.witness;
  if (!genuine) throw new Error('the witness holds nothing');
  const object = JSON.parse(Buffer.from(genuine.body).toString('utf8'));
  object.heads = object.heads.map((h: { treeSize: number }) => ({
    ...h,
    treeSize: h.treeSize + 1,
  }));
  await w.witness.publish(
    genuine.key.replace('.json', '-forged.json'),
    Buffer.from(JSON.stringify(object)),
  );
  const run = await audit.run(S);
  expect(run.stdout).toContain('witness: ignored');
  expect(run.code).toBe(0);
};

/** A tampering the module says cannot happen to a kind: the world holds nothing to do it with. */
const expectImpossible = async (
  w: TamperWorld,
  kind: StorageKind,
  mutation: Mutation,
  target: Target | undefined,
  why: string,
) => {
  expect(why.length).toBeGreaterThan(10);
  if (!target) return; // the witness: its store takes no such write (witness-object cases)
  const t = new Tamperer(w);
  try {
    expect(await mutate(t, kind, target, mutation)).toBeUndefined();
  } finally {
    await t.restore();
  }
};
