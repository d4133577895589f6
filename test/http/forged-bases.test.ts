import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toSnapshotIndex } from '../../shared/chain/layout.js';
import { headKey, snapshotIndexKey, snapshotKey } from '../../shared/chain/storage-keys.js';
import { HefestoClient } from '../../shared/client/client.js';
import { MemoryTrustStore } from '../../shared/client/trust-store.js';
import type { EventInput } from '../../shared/domain/event.js';
import { encodeChunkSnapshot } from '../../shared/domain/snapshot.js';
import type { JsonObject } from '../../shared/domain/state.js';
import { EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import { createApp } from '../../shared/http/app.js';
import { KeyService } from '../../shared/keys/keys.js';
import type { Item } from '../../shared/ports/record-store.js';
import { compactionWorld, manualClock } from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Issue 20 item 1, as an attacker with write access to the stores would try it: chunks of a
 * chosen state, a snapshot object naming its digest and the `snap#` record repointed at it
 * (no segment, chain hash or signed head touched). Every read that would use the base fails
 * closed with ErrTamperedLedger (500), never 409 and never the forged value: /verify,
 * GET /state?at=, the path read with proof=true, the SDK's getState with verify: true,
 * POST /fork; with the base at the head and head.stateDigest edited too, the next checkpoint
 * does not build on it.
 */

const ROOT = 'root-key-for-forged-bases-0123456789';
const T = 'acme';
const FORGED: JsonObject = { owner: 'mallory', balance: 1_000_000 };

describe.each(allStores.filter((f) => f.enabled))('forged base snapshots on $name', (factory) => {
  let stores: StorePair;
  let world: ReturnType<typeof compactionWorld>;
  let app: ReturnType<typeof createApp>;
  let key: string;

  const request = (path: string, body?: unknown) =>
    Promise.resolve(
      app.request(path, {
        method: body === undefined ? 'GET' : 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
  const expectTampered = async (res: Promise<Response>) => {
    const r = await res;
    const body = (await r.json()) as { code?: string };
    expect({ status: r.status, code: body.code }).toEqual({
      status: 500,
      code: 'ErrTamperedLedger',
    });
    expect(JSON.stringify(body)).not.toContain('mallory');
  };
  const client = () =>
    new HefestoClient({
      baseUrl: 'http://hefesto.test',
      apiKey: key,
      tenant: T,
      verify: true,
      trustStore: new MemoryTrustStore(),
      sleep: async () => {},
      fetch: async (input, init) => app.request(String(input), init),
    });

  /** A process of its own (no warm state): another instance behind the same stores. */
  const coldProcess = () => {
    const clock = manualClock();
    world = compactionWorld(stores, { snapshotEvery: 5 }, clock);
    const keys = new KeyService({ records: stores.records, clock, rootKey: ROOT });
    app = createApp({ ledger: world.ledger, keys, logger: pino({ level: 'silent' }), clock });
  };

  beforeEach(async () => {
    stores = await factory.make();
    coldProcess();
    const res = await app.request('/v1/keys', {
      method: 'POST',
      headers: { authorization: `Bearer ${ROOT}`, 'content-type': 'application/json' },
      body: JSON.stringify({ tenant: T, scopes: ['read', 'write'] }),
    });
    key = ((await res.json()) as { key: string }).key;
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  const events = (n: number): EventInput[] =>
    Array.from({ length: n }, (_, i) => ({ type: 'observation', payload: { i } }));
  let digest = EMPTY_STATE_DIGEST_V2;
  const checkpoint = async (stream: string, i: number) => {
    digest = (
      await world.ledger.checkpoints.checkpoint({
        tenant: T,
        stream,
        ops: [{ op: 'set', path: `/k${i}`, value: i }],
        baseDigest: digest,
      })
    ).stateDigest;
    return digest;
  };

  /** Replaces the base at `seq` by one of FORGED, as storage access allows. */
  const forge = async (stream: string, seq: number, legacy = false) => {
    const item = (await stores.records.get(snapshotIndexKey(T, stream, seq))) as Item;
    const record = toSnapshotIndex(item);
    const stored = await world.ledger.states.snapshots.storeState(
      T,
      { stream, kind: 'base', id: seq },
      FORGED,
    );
    const forged = stored.root.digest;
    const objectKey = snapshotKey(T, stream, seq, forged);
    const stateSeq = legacy ? {} : { stateSeq: record.stateSeq };
    await stores.objects.putIfAbsent(
      objectKey,
      encodeChunkSnapshot({
        tenant: T,
        stream,
        seq,
        hash: record.hash,
        stateDigest: forged,
        root: stored.root,
        ...stateSeq,
      }),
    );
    const { stateSeq: _dropped, ...rest } = item;
    await stores.records.put({
      ...(legacy ? rest : item),
      stateDigest: forged,
      objectKey,
    });
    return forged;
  };

  /** Seqs 1..7 checkpoints (a base at 5), 8..9 events, a base at 9, 10 a checkpoint. */
  const history = async (stream: string) => {
    digest = EMPTY_STATE_DIGEST_V2;
    for (let i = 1; i <= 7; i++) await checkpoint(stream, i);
    await world.ledger.appender.append({ tenant: T, stream, events: events(2) });
    await world.ledger.states.writeBaseAt(T, stream, 9);
    const at9 = digest;
    await checkpoint(stream, 8);
    return at9;
  };

  it('fails every read of a base that is not a checkpoint closed (verify, state, path, SDK, fork)', async () => {
    await history('run');
    await forge('run', 9);
    coldProcess();

    expect(await (await request('/v1/streams/run/verify')).json()).toMatchObject({
      ok: false,
      code: 'ErrTamperedLedger',
      object: 'snapshot',
      seq: 9,
    });
    await expectTampered(request('/v1/streams/run/state?at=9'));
    await expectTampered(request('/v1/streams/run/state?at=9&path=/owner&proof=true'));
    await expectTampered(request('/v1/streams/run/state?path=/k8&proof=true'));
    // Past the base: ErrTamperedLedger, not the 409 a divergence would answer.
    await expectTampered(request('/v1/streams/run/state'));
    await expect(client().getState('run', { at: 9 })).rejects.toMatchObject({
      code: 'ErrTamperedLedger',
    });
    await expectTampered(request('/v1/streams/run/fork', { newStreamId: 'copy', at: 9 }));
    expect((await request('/v1/streams/copy')).status).toBe(404);
  });

  it('fails reads of a forged base at a checkpoint closed, its stateSeq dropped as before it was kept', async () => {
    await history('run');
    await forge('run', 5, true);
    coldProcess();

    expect(await (await request('/v1/streams/run/verify')).json()).toMatchObject({
      ok: false,
      object: 'snapshot',
      seq: 5,
    });
    await expectTampered(request('/v1/streams/run/state?at=5'));
    await expectTampered(request('/v1/streams/run/state?at=6&path=/owner&proof=true'));
    await expectTampered(request('/v1/streams/run/fork', { newStreamId: 'copy', at: 5 }));
  });

  it('never builds a checkpoint on a forged base at the head whose head digest was edited too', async () => {
    await history('run');
    await world.ledger.appender.append({ tenant: T, stream: 'run', events: events(1) }); // 11
    await world.ledger.states.writeBaseAt(T, 'run', 11); // a drain's base at the head
    const forged = await forge('run', 11);
    await stores.records.update(headKey(T, 'run'), { set: { stateDigest: forged } });
    coldProcess();

    await expectTampered(request('/v1/streams/run/state'));
    await expectTampered(request('/v1/streams/run/state?path=/owner&proof=true'));
    await expectTampered(
      request('/v1/streams/run/checkpoints', {
        baseDigest: forged,
        ops: [{ op: 'set', path: '/spent', value: true }],
      }),
    );
    await expect(client().getState('run')).rejects.toMatchObject({ code: 'ErrTamperedLedger' });
    expect(await world.ledger.reader.head(T, 'run')).toMatchObject({ seq: 11 });
    expect(await (await request('/v1/streams/run/verify')).json()).toMatchObject({
      ok: false,
      code: 'ErrTamperedLedger',
    });
  });

  it('answers the honest history as before: reads, path reads, a fork and /verify', async () => {
    const at9 = await history('run');
    // The base at 9 (not a checkpoint) names the checkpoint it holds the state of, seq 7.
    const base = toSnapshotIndex((await stores.records.get(snapshotIndexKey(T, 'run', 9))) as Item);
    expect(base).toMatchObject({ seq: 9, stateSeq: 7, stateDigest: at9 });
    coldProcess();
    expect(await (await request('/v1/streams/run/state?at=9')).json()).toMatchObject({
      seq: 9,
      stateDigest: at9,
    });
    expect(await (await request('/v1/streams/run/state?path=/k8&proof=true')).json()).toMatchObject(
      { value: 8 },
    );
    expect((await request('/v1/streams/run/fork', { newStreamId: 'copy', at: 9 })).status).toBe(
      201,
    );
    expect(await (await request('/v1/streams/run/verify')).json()).toMatchObject({ ok: true });
    expect(await (await request('/v1/streams/copy/verify')).json()).toMatchObject({ ok: true });
  });
});
