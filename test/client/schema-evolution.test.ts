import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HefestoClient } from '../../shared/client/client.js';
import {
  HefestoApiError,
  SchemaReplayError,
  SchemaTooNewError,
  UpcasterMissingError,
} from '../../shared/client/errors.js';
import { type DurableRun, resume } from '../../shared/client/harness.js';
import type { StateSchema } from '../../shared/client/schema-migration.js';
import type { Json, LedgerEvent } from '../../shared/client/types.js';
import { createApp } from '../../shared/http/app.js';
import { KeyService } from '../../shared/keys/keys.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Issue 31: schema evolution of the agent's state (docs/schema-evolution.md). A worker declares
 * its state's schema version; resuming an older run upcasts it step by step and commits one
 * `hefesto.migration`; a newer run is refused; replay starts at the migration. In process over
 * memory, local and the emulators, every request counted at the fetch layer.
 */

vi.setConfig({ testTimeout: 300_000 });

const ROOT = 'schema-evolution-root-key-0123456789';
const MIGRATION = 'hefesto.migration';

const serve = (stores: StorePair) => {
  const clock = { now: () => Date.now() };
  const ledger = new Ledger({ ...stores, clock });
  const keys = new KeyService({ records: stores.records, clock, rootKey: ROOT });
  const app = createApp({ ledger, keys, logger: pino({ level: 'silent' }), clock });
  const counts = { requests: 0, checkpoints: 0, sent: 0 };
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    counts.requests++;
    const url = new URL(String(input));
    if (url.pathname.endsWith('/checkpoints') && typeof init?.body === 'string') {
      counts.checkpoints++;
      counts.sent += Buffer.byteLength(init.body);
    }
    return app.fetch(new Request(input, init));
  }) as typeof globalThis.fetch;
  const client = new HefestoClient({ baseUrl: 'http://hefesto.test', apiKey: ROOT, fetch });
  const reset = () => Object.assign(counts, { requests: 0, checkpoints: 0, sent: 0 });
  return { client, counts, reset };
};

/** Version 1 keeps a `todo` list; 2 renames it `tasks`; 3 splits `tasks` into open and done. */
const v2: StateSchema = {
  version: 2,
  upcasters: { 1: ({ todo, ...rest }) => ({ ...rest, tasks: todo ?? [] }) },
};
const v3: StateSchema = {
  version: 3,
  upcasters: {
    ...v2.upcasters,
    2: ({ tasks, ...rest }) => ({
      ...rest,
      open: (tasks as Json[]).filter((t) => !String(t).startsWith('x')),
      done: (tasks as Json[]).filter((t) => String(t).startsWith('x')),
    }),
  },
};

/** A turn of a worker of each version: one observation, one checkpoint in its own shape. */
const turn = async (run: DurableRun, version: number, calls = { n: 0 }) => {
  const t = run.turn;
  const task = await run.observe('model', () => {
    calls.n++;
    return t % 2 === 0 ? `x-task-${t}` : `task-${t}`;
  });
  const list =
    version === 1 ? 'todo' : version === 2 ? 'tasks' : task.startsWith('x') ? 'done' : 'open';
  await run.checkpoint([
    { op: 'set', path: `/${list}/-`, value: task },
    { op: 'set', path: '/turn', value: t },
  ]);
};

const start = async (client: HefestoClient, stream: string, version: number, turns: number) => {
  const run = await resume(
    client,
    stream,
    version === 1 ? {} : { schema: version === 2 ? v2 : v3 },
  );
  if (run.turn === 1 && version === 1)
    await run.checkpoint([{ op: 'set', path: '/todo', value: [] }]);
  if (run.turn === 1 && version === 2)
    await run.checkpoint([{ op: 'set', path: '/tasks', value: [] }]);
  while (run.turn <= turns) await turn(run, version);
  return run;
};

const migrations = async (client: HefestoClient, stream: string): Promise<LedgerEvent[]> =>
  (await client.readEvents(stream, { type: MIGRATION, limit: 1000 })).events;

describe.each(allStores.filter((s) => s.enabled))('schema evolution on $name', (f) => {
  let stores: StorePair;
  let world: ReturnType<typeof serve>;
  beforeAll(async () => {
    stores = await f.make();
    world = serve(stores);
  });
  afterAll(async () => {
    await stores.cleanup();
  });

  it('upcasts 1 -> 2 -> 3 step by step, one migration each time, and the chain verifies', async () => {
    const { client } = world;
    await start(client, 'chain', 1, 5);
    const at2 = await resume(client, 'chain', { schema: v2 });
    expect(at2.state).toEqual({ tasks: ['x-task-2', 'task-3', 'x-task-4', 'task-5'], turn: 5 });
    expect(at2.turn).toBe(6);
    await turn(at2, 2);
    // Version 1 straight to 3 in the client, as one event (a second stream).
    await start(client, 'direct', 1, 3);
    const direct = await resume(client, 'direct', { schema: v3 });
    expect(direct.state).toEqual({ open: ['task-3'], done: ['x-task-2'], turn: 3 });
    const [jump] = await migrations(client, 'direct');
    expect(jump?.payload).toMatchObject({ from: 1, to: 3 });
    const at3 = await resume(client, 'chain', { schema: v3 });
    expect(at3.state).toMatchObject({
      open: ['task-3', 'task-5'],
      done: ['x-task-2', 'x-task-4', 'x-task-6'],
    });
    await turn(at3, 3);
    expect(at3.state).toMatchObject({ open: ['task-3', 'task-5', 'task-7'] });
    const found = await migrations(client, 'chain');
    expect(
      found.map((e) => [(e.payload as { from: number }).from, (e.payload as { to: number }).to]),
    ).toEqual([
      [1, 2],
      [2, 3],
    ]);
    // Resuming a run at the worker's own version writes nothing.
    const again = await resume(client, 'chain', { schema: v3 });
    expect(again.stateDigest).toBe(at3.stateDigest);
    expect(await migrations(client, 'chain')).toHaveLength(2);
    // The server hydrates the same state from the chain, and the chain verifies.
    const served = await client.getState('chain');
    expect(served.stateDigest).toBe(at3.stateDigest);
    expect((await client.verify('chain')).ok).toBe(true);
    const head = await client.getStream('chain');
    expect(head.deltas).toBe(7); // 6 turns + the v1 init; migrations are no turns
  });

  it('two workers resuming an old run at once commit one migration, and both go on from it', async () => {
    const { client } = world;
    await start(client, 'race', 1, 4);
    const [a, b] = await Promise.all([
      resume(client, 'race', { schema: v3 }),
      resume(client, 'race', { schema: v3 }),
    ]);
    expect(await migrations(client, 'race')).toHaveLength(1);
    expect(a.stateDigest).toBe(b.stateDigest);
    expect(a.turn).toBe(b.turn);
    // Upcasters that do not agree (a timestamp, say): the loser's migration is refused, it
    // reads again, sees the winner's, and goes on from its state.
    await start(client, 'race-2', 1, 4);
    let stamp = 0;
    const stamped: StateSchema = {
      version: 2,
      upcasters: {
        1: ({ todo, ...rest }) => ({ ...rest, tasks: todo ?? [], migratedAt: ++stamp }),
      },
    };
    const [c, d] = await Promise.all([
      resume(client, 'race-2', { schema: stamped }),
      resume(client, 'race-2', { schema: stamped }),
    ]);
    const [one, ...more] = await migrations(client, 'race-2');
    expect(more).toHaveLength(0);
    expect(c.stateDigest).toBe(d.stateDigest);
    expect(c.state).toEqual(d.state);
    expect(one?.payload).toMatchObject({ stateDigest: c.stateDigest });
    // The same turn from both: the second is answered the first's writes (same keys, bodies).
    await turn(c, 2);
    await turn(d, 2);
    expect(d.stateDigest).toBe(c.stateDigest);
  });

  it('refuses a worker older than the stream, naming both versions, and writes nothing', async () => {
    const { client } = world;
    await start(client, 'newer', 1, 3);
    const early = await resume(client, 'newer', { schema: v2 }); // migrates 1 -> 2
    await resume(client, 'newer', { schema: v3 }); // then 2 -> 3, under the early worker
    const before = await client.getStream('newer');
    const refused = await resume(client, 'newer', { schema: v2 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SchemaTooNewError);
    expect(refused).toMatchObject({ code: 'ErrSchemaTooNew', streamVersion: 3, workerVersion: 2 });
    expect((refused as Error).message).toMatch(/version 3.*is 2/);
    // A worker that declares no schema is at version 1.
    await expect(resume(client, 'newer')).rejects.toMatchObject({
      streamVersion: 3,
      workerVersion: 1,
    });
    // The worker that resumed before the migration: its next write is refused the same way.
    const calls = { n: 0 };
    const late = await turn(early, 2, calls).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(SchemaTooNewError);
    expect(late).toMatchObject({ streamVersion: 3, workerVersion: 2 });
    // Its observation was recorded, under its version: a version-3 run calls its own model.
    const current = await resume(client, 'newer', { schema: v3 });
    await turn(current, 3, calls);
    expect(calls.n).toBe(2);
    // The server checks a migration's `from` itself: a stale one is 409 ErrSchemaTooNew.
    const raw = await client
      .checkpoint('newer', {
        ops: [],
        baseDigest: before.stateDigest,
        migration: { from: 2, to: 3 },
      })
      .catch((e: unknown) => e);
    expect(raw).toBeInstanceOf(HefestoApiError);
    expect(raw).toMatchObject({ code: 'ErrSchemaTooNew', status: 409 });
    expect((raw as HefestoApiError).problem).toMatchObject({ streamVersion: 3, workerVersion: 3 });
    const after = await client.getStream('newer');
    expect(after.deltas).toBe(before.deltas + 1); // the version-3 turn only
    expect(await migrations(client, 'newer')).toHaveLength(2);
  });

  it('records a version change that leaves the state as it was: a migration with no ops', async () => {
    const { client } = world;
    await start(client, 'same', 1, 2);
    const before = await client.getStream('same');
    const bumped = await resume(client, 'same', {
      schema: { version: 2, upcasters: { 1: (s) => s } },
    });
    const [only] = await migrations(client, 'same');
    expect(only?.payload).toMatchObject({ from: 1, to: 2, ops: [] });
    expect(bumped.stateDigest).toBe(before.stateDigest);
    expect((await client.getStream('same')).deltas).toBe(before.deltas);
    await expect(resume(client, 'same')).rejects.toBeInstanceOf(SchemaTooNewError);
    expect((await client.verify('same')).ok).toBe(true);
  });

  it('says which upcaster it lacks, and writes nothing', async () => {
    const { client } = world;
    await start(client, 'lacking', 1, 2);
    const before = await client.getStream('lacking');
    const only2: StateSchema = { version: 3, upcasters: { 2: v3.upcasters?.[2] as never } };
    const err = await resume(client, 'lacking', { schema: only2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpcasterMissingError);
    expect(err).toMatchObject({ code: 'ErrUpcasterMissing', missing: 1, workerVersion: 3 });
    expect((err as Error).message).toMatch(/no upcaster from version 1 \(upcasters\[1\]\)/);
    expect((await client.getStream('lacking')).seq).toBe(before.seq);
  });

  it('replays from the migration with the recorded observations, and refuses turns of another version', async () => {
    const { client } = world;
    await start(client, 'replay', 1, 4);
    const migrated = await resume(client, 'replay', { schema: v2 });
    const calls = { n: 0 };
    while (migrated.turn <= 7) await turn(migrated, 2, calls);
    expect(calls.n).toBe(3);
    const replay = await resume(client, 'replay', { schema: v2, replay: true });
    expect(replay.turn).toBe(5); // the first turn written at version 2
    expect(replay.replaying).toBe(true);
    while (replay.turn <= 7) await turn(replay, 2, calls);
    expect(calls.n).toBe(3); // the model was not called again
    expect(replay.stateDigest).toBe(migrated.stateDigest);
    // The divergence trap compares with the migrated digests: another turn 5 is caught.
    const other = await resume(client, 'replay', { schema: v2, replay: true });
    await other.observe('model', () => 'never');
    await expect(
      other.checkpoint([{ op: 'set', path: '/tasks/-', value: 'other' }]),
    ).rejects.toThrow(/turn 5 produced state/);
    // A version-3 worker cannot replay turns run by version-2 code.
    await resume(client, 'replay', { schema: v3 }); // migrates to 3
    const v3replay = await resume(client, 'replay', { schema: v3, replay: true });
    expect(v3replay.turn).toBe(8);
    const refused = await resume(client, 'replay-old', { schema: v2, replay: true })
      .then(async () => {
        await start(client, 'replay-old', 1, 2);
        return resume(client, 'replay-old', { schema: v2, replay: true });
      })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SchemaReplayError);
    expect(refused).toMatchObject({
      code: 'ErrDivergenceDetected',
      turn: 1,
      recorded: 1,
      workerVersion: 2,
    });
  });

  it('a fork keeps the schema version of its source', async () => {
    const { client } = world;
    await start(client, 'fork-src', 1, 3);
    const src = await resume(client, 'fork-src', { schema: v3 });
    await client.fork('fork-src', {
      at: (await client.getStream('fork-src')).seq,
      newStreamId: 'fork-dst',
    });
    const forked = await resume(client, 'fork-dst', { schema: v3 });
    expect(forked.stateDigest).toBe(src.stateDigest);
    expect(await migrations(client, 'fork-dst')).toHaveLength(0);
    await expect(resume(client, 'fork-dst', { schema: v2 })).rejects.toBeInstanceOf(
      SchemaTooNewError,
    );
  });
});
