import { pino } from 'pino';
import { MemoryKeyWrapper } from '../../shared/adapters/memory/memory-key-wrapper.js';
import { legacyIdempotencyKey } from '../../shared/chain/storage-keys.js';
import { StreamKeyring } from '../../shared/chain/stream-keyring.js';
import { HefestoClient } from '../../shared/client/client.js';
import type { TrustStore } from '../../shared/client/trust-store.js';
import type { CompactStep } from '../../shared/compaction/compact-types.js';
import { Compactor } from '../../shared/compaction/compactor.js';
import type { JsonValue } from '../../shared/domain/canonical.js';
import { CrashInjectedError } from '../../shared/domain/errors.js';
import { sha256Hex } from '../../shared/domain/hashing.js';
import type { DeltaOp } from '../../shared/domain/state.js';
import { chunksOfValue } from '../../shared/domain/state-v2/index.js';
import { createApp } from '../../shared/http/app.js';
import { KeyService } from '../../shared/keys/keys.js';
import { checkSigningKeys } from '../../shared/keys/signing-keys.js';
import { Ledger, type LedgerSettings } from '../../shared/ledger/ledger.js';
import type { KeyWrapper } from '../../shared/ports/key-wrapper.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import { counterIds, crashAt, manualClock } from './compaction.js';
import type { StoreFactory } from './stores.js';
import { type Inventory, inventory, type StoresView, tracked } from './tamper-stores.js';
import { makeWitness } from './witness.js';

/**
 * A deployment with one of every storage kind in it (test/support/tamper-matrix-suite.ts):
 * streams with events, idempotent appends, labelled checkpoints (metadata, parents), a value
 * set by ref, bases (snapshots v2, and v1 in a stream of its own), forks of both, pending
 * writes, an effect, writer leases, a fenced writer refused, compaction passes (merges, tiles,
 * garbage, orphans, the chunk GC) and witness runs, API keys and the signing-keys record.
 *
 * The services write through `tracked` stores, which count what is written, so a test can say
 * "nothing was written" after a read; the test tampers through `stores`, behind their back.
 * `early` is the inventory after the first half: what a table backup of then held.
 */

const notes = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({ type: 'note', payload: { tag, i } }));

export const T = 'default';
/** The stream every case tampers with, and its twin (the same operations, one event ahead). */
export const S = 'run';
export const O = 'other';
/** Forks of S (snapshots v2: a root in the fork event) and of J (v1: an origin object). */
export const F = 'fork';
/** A stream whose bases and fork origin are v1 (JCS) snapshot objects. */
export const J = 'jcs';
export const JF = 'jcs-fork';
export const JF2 = 'jcs-fork-2';
/** A stream whose unfenced writer an exclusive lease refused. */
export const FENCED = 'fenced';
/** A fork deleted, which releases its chunk reference. */
export const GONE = 'gone';
/** A stream encrypted at rest (docs/privacy.md): its key record is a kind of its own. */
export const E = 'sealed';
export const ROOT = 'tamper-root-key-0123456789abcdef';
export const LABELS = ['c1', 'c2', 'c3', 'c4', 'c5', 'c6'] as const;
export const REF_PATH = '/doc';
/** An append sent with an Idempotency-Key (through the API, as a client retries it). */
export const IDEM_KEY = 'k-notes';
export const IDEM_EVENTS = notes(2, 'e');

export interface TamperWorld extends StoresView {
  factory: StoreFactory;
  clock: ReturnType<typeof manualClock>;
  ring: KeyRing;
  /** Where the CLI finds the witness (a directory, or s3://bucket). */
  witnessArg: string;
  /** A new ledger: no cache of an earlier read. */
  ledger(settings?: LedgerSettings): Ledger;
  /** A new ledger holding the stream keys (a cold keyring over the world's tenant KEKs). */
  sealing(): Ledger;
  /** The tenant KEKs E's key record is wrapped by. */
  wrapper: KeyWrapper;
  keys(): KeyService;
  compact(o?: { advance?: boolean; crash?: CompactStep }): Promise<void>;
  /** The inventory after the first half of the scenario, and at its end. */
  early: Inventory;
  final: Inventory;
  /** Seqs of the labelled checkpoints of S, by label. */
  seqs: Record<string, number>;
  /** The hash of the value S sets by ref (its root chunk). */
  refHash: string;
  /** An API key of tenant T (read and write), as its holder has it. */
  apiKey: string;
  cleanup(): Promise<void>;
}

const SETTINGS: LedgerSettings = { snapshotEvery: 3, markEvery: 2 };
const GRACE = 10_000;
const DAY = 86_400_000;

/** An app over the world's stores, made anew for each use (no cache of an earlier read). */
export const appOf = (world: TamperWorld) =>
  createApp({
    ledger: world.ledger(),
    keys: world.keys(),
    logger: pino({ level: 'silent' }),
    clock: world.clock,
  });

/** A client of a new app for each request; `verify` with a trust store of its own. */
export const httpClient = (world: TamperWorld, trustStore?: TrustStore) =>
  new HefestoClient({
    baseUrl: 'http://hefesto.test',
    apiKey: ROOT,
    fetch: (async (input: string | URL | Request, init?: RequestInit) =>
      appOf(world).fetch(new Request(input, init))) as typeof globalThis.fetch,
    sleep: async () => {},
    ...(trustStore ? { verify: true, trustStore } : {}),
  });

/** Runs the scenario on a fresh pair of stores of `factory`. */
export const tamperWorld = async (factory: StoreFactory): Promise<TamperWorld> => {
  const clock = manualClock(1_800_000_000_000);
  const stores = await factory.make(clock);
  const track = tracked(stores.records, stores.objects);
  const ring = new KeyRing(new FakeSigner('matrix'));
  const madeWitness = await makeWitness(factory.name === 'aws' ? 'aws' : 'local');
  const witness = madeWitness.witness;
  const witnessArg =
    factory.name === 'aws'
      ? `s3://${(witness as unknown as { bucket: string }).bucket}`
      : (witness as unknown as { dir: string }).dir;
  const deps = { records: track.records, objects: track.objects, clock, ids: counterIds('id') };
  const ledger = (settings: LedgerSettings = {}) =>
    new Ledger(deps, { signing: ring, ...SETTINGS, ...settings });
  const keys = () => new KeyService({ records: track.records, clock, rootKey: ROOT });
  const wrapper: KeyWrapper = new MemoryKeyWrapper();
  const sealing = () =>
    new Ledger(
      { ...deps, keyring: new StreamKeyring(track.records, wrapper) },
      { signing: ring, ...SETTINGS },
    );
  let runs = 0;
  const compact = async (o: { advance?: boolean; crash?: CompactStep } = {}) => {
    if (o.advance !== false) clock.advance(GRACE * 3);
    const l = ledger();
    await new Compactor({
      ...deps,
      ids: counterIds(`compactor-${++runs}`),
      states: l.states,
      graceMs: GRACE,
      leaseMs: GRACE / 4,
      witness,
      targetBytes: 1 << 20,
      // Dies on the first stream that needs a base: its lease and work stay behind.
      ...(o.crash === undefined ? {} : { crash: crashAt(o.crash) }),
    })
      .run()
      .catch((err: unknown) => {
        if (!(err instanceof CrashInjectedError)) throw err;
      });
  };

  const world = {
    factory,
    stores,
    track,
    clock,
    ring,
    witness,
    witnessArg,
    ledger,
    sealing,
    wrapper,
    keys,
    compact,
    seqs: {} as Record<string, number>,
    cleanup: async () => {
      await madeWitness.cleanup();
      await stores.cleanup();
    },
  } as TamperWorld;

  await checkSigningKeys(track.records, ring);
  const k = keys();
  await k.ensureBootstrapKey();
  const root = await k.authenticate(ROOT);
  world.apiKey = (await k.create(root, { tenant: T, scopes: ['read', 'write'] })).key;

  const l = ledger();
  const interrupted = ledger({
    snapshotCrash: (step) => {
      throw new CrashInjectedError(step);
    },
    onSnapshotError: () => {},
  });
  const checkpoint = async (stream: string, i: number, extra: DeltaOp[] = [], by = l) => {
    const label = `c${i}`;
    const head = await by.appender.readHead(T, stream);
    const r = await by.checkpoints.checkpoint({
      tenant: T,
      stream,
      ops: [{ op: 'set', path: `/k${i}`, value: i }, ...extra],
      baseDigest: head.stateDigest,
      label,
      meta: { source: 'loop', step: i } as JsonValue,
      ...(i > 1 ? { parentLabel: `c${i - 1}` } : {}),
    });
    if (stream === S) world.seqs[label] = r.seq;
    clock.advance(10);
    return r;
  };
  const value = { rows: Array.from({ length: 40 }, (_, i) => `row ${i}`.padEnd(120, '.')) };
  const { ref, chunks } = chunksOfValue(value as never);
  world.refHash = ref.hash;

  const firstHalf = async (stream: string) => {
    // O is one event ahead of S: a record or object swapped in from O names another seq.
    await l.appender.append({ tenant: T, stream, events: notes(stream === O ? 3 : 2, 'a') });
    for (const c of chunks) await l.states.values.putChunk(T, c.hash, c.bytes);
    await checkpoint(stream, 1);
    await checkpoint(stream, 2);
    await checkpoint(stream, 3, [{ op: 'set', path: REF_PATH, ref } as unknown as DeltaOp]);
    await checkpoint(stream, 4);
    const task = { taskId: 'task-1', taskPath: 'path a' };
    await l.pendingWrites.put(T, stream, 'c2', {
      ...task,
      writes: [
        { idx: 0, channel: 'messages', value: 'hello' },
        { idx: -1, channel: '__error__', value: { message: 'boom' } },
      ],
    });
    await l.pendingWrites.put(T, stream, 'c4', {
      ...task,
      writes: [{ idx: 0, channel: 'messages', value: 'again' }],
    });
    const begun = await l.effects.begin({
      tenant: T,
      stream,
      effectKey: 'pay-1',
      kind: 'payment',
      intent: { amount: 5 },
    });
    if (begun.status !== 'acquired') throw new Error(`effect ${begun.status}`);
    await l.effects.finish({
      tenant: T,
      stream,
      effectKey: 'pay-1',
      holder: begun.holder,
      outcome: { result: { receipt: 'r-1' } },
    });
    // A second effect of the same kind, failed: another effect's record to swap in.
    const second = await l.effects.begin({
      tenant: T,
      stream,
      effectKey: 'pay-2',
      kind: 'payment',
      intent: { amount: 5 },
    });
    if (second.status !== 'acquired') throw new Error(`effect ${second.status}`);
    await l.effects.finish({
      tenant: T,
      stream,
      effectKey: 'pay-2',
      holder: second.holder,
      outcome: { error: { message: 'declined' } },
    });
  };
  const secondHalf = async (stream: string) => {
    await l.appender.append({ tenant: T, stream, events: notes(3, 'b') });
    await checkpoint(stream, 5);
    // A schema migration between two labelled checkpoints (docs/schema-evolution.md): every
    // case after it reads and verifies through a hefesto.migration (the bases after it bind
    // through it), and the matrix's migration case edits it.
    const head = await l.appender.readHead(T, stream);
    const migrated = await l.checkpoints.checkpoint({
      tenant: T,
      stream,
      ops: [
        { op: 'delete', path: '/k5' },
        { op: 'set', path: '/k5v2', value: { was: 5 } },
      ],
      baseDigest: head.stateDigest,
      migration: { from: 1, to: 2 },
    });
    if (stream === S) world.seqs.migration = migrated.seq;
    clock.advance(10);
    await checkpoint(stream, 6);
    await l.appender.append({ tenant: T, stream, events: notes(1, 'c') });
  };

  // A: the first half of S and O; `early` is a table backup taken then.
  await firstHalf(S);
  await firstHalf(O);
  world.early = await inventory(world);

  // B: compaction (merges, tiles, bases) and the witness's first run.
  await compact();

  // C: more of S and O, forks, v1 snapshots, a stray chunk the GC condemns a day later.
  await secondHalf(S);
  await secondHalf(O);
  await l.checkpoints.fork({ tenant: T, source: S, at: world.seqs.c4 as number, newStreamId: F });
  const v1 = ledger({ snapshotEncoding: 'jcs' });
  let digest = (await v1.appender.readHead(T, J)).stateDigest;
  for (let i = 1; i <= 3; i++) {
    digest = (
      await v1.checkpoints.checkpoint({
        tenant: T,
        stream: J,
        ops: [{ op: 'set', path: `/j${i}`, value: i }],
        baseDigest: digest,
      })
    ).stateDigest;
  }
  await v1.checkpoints.fork({ tenant: T, source: J, at: 2, newStreamId: JF });
  await v1.checkpoints.fork({ tenant: T, source: J, at: 3, newStreamId: JF2 });
  const stray = chunksOfValue({ stray: 'x'.repeat(200) } as never).chunks[0];
  if (stray) await l.states.values.putChunk(T, stray.hash, stray.bytes);
  await l.checkpoints.fork({
    tenant: T,
    source: S,
    at: world.seqs.c2 as number,
    newStreamId: GONE,
  });
  await compact();
  clock.advance(DAY);
  await compact();

  // D: work left pending when the matrix runs (its clock stands still from here on): an
  // idempotent append, a fenced writer refused and its segment an orphan, a merge whose
  // garbage waits its grace, a base due, a compactor that died holding its lease, the witness
  // markers of streams that moved, writer leases held.
  const api = httpClient(world);
  for (const stream of [S, O]) {
    await api.append(stream, IDEM_EVENTS, { idempotencyKey: IDEM_KEY });
    for (let i = 7; i <= 8; i++) await checkpoint(stream, i);
  }
  for (let i = 0; i < 3; i++) {
    await l.appender.append({ tenant: T, stream: FENCED, events: notes(1, `f${i}`) });
  }
  await l.leases.acquire(T, FENCED, 'owner', 300_000, { exclusive: true });
  await l.appender
    .append({ tenant: T, stream: FENCED, events: notes(1, 'late') })
    .then(() => Promise.reject(new Error('the unfenced append landed')))
    .catch((err: { code?: string }) => {
      if (err.code !== 'ErrFenced') throw err;
    });
  await compact(); // merges; their sweeps are due a grace later
  const more = async (n: number) => {
    for (const stream of [S, O]) {
      for (let i = 0; i < n; i++) {
        await l.appender.append({ tenant: T, stream, events: notes(1, `m${i}`) });
      }
    }
  };
  await more(2);
  await compact({ crash: 'merge-written' }); // a merged object left unpublished
  await more(1);
  await compact(); // merged again over a longer range: the first merged object is named by none
  // Its deletion releases its chunk reference: the chunk GC condemns the stray chunk.
  await l.streamDeleter.delete(T, GONE);
  await compact(); // the sweeps: it is recorded an orphan; GONE is deleted
  await more(2);
  await compact({ advance: false }); // merges whose garbage waits its grace
  for (const stream of [S, O]) {
    await checkpoint(stream, 9, [], interrupted); // its base is left to the compactor
    await l.leases.acquire(T, stream, 'worker-1', 300_000, { exclusive: false });
  }
  await compact({ advance: false, crash: 'lease-acquired' });
  // A record from before incarnations, as an older version left it (only ever read).
  await track.records.put({
    ...legacyIdempotencyKey(T, 'k-legacy'),
    stream: S,
    digest: sha256Hex('a request of before'),
    status: 201,
    body: { firstSeq: 1, lastSeq: 2, head: { seq: 2, hash: 'ab'.repeat(32) } },
    createdAt: clock.now() - DAY * 400,
  });
  // E: a stream sealed at rest (its key record), written after the last compaction.
  for (let i = 0; i < 2; i++) {
    await sealing().appender.append({ tenant: T, stream: E, events: notes(1, `e${i}`) });
  }
  world.final = await inventory(world);
  return world;
};
