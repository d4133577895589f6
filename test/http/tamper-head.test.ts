import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { headKey, SNAPSHOT_INDEX_PREFIX, streamPk } from '../../shared/chain/storage-keys.js';
import { sha256Hex } from '../../shared/domain/hashing.js';
import {
  createHarness,
  events,
  type Harness,
  type ProblemBody,
  readJson as read,
  STORE_FACTORIES,
} from './harness.js';

/**
 * Issue 11 items 8-10 over HTTP: /verify names a bad snapshot or head; a head whose hash was
 * edited, or that was deleted, fails every route closed with 500 ErrTamperedLedger (never 200,
 * 404 or 503); an admin repairs it with POST /v1/streams/{streamId}/repair.
 */

interface Appended {
  head: { seq: number; hash: string };
}

describe.each(STORE_FACTORIES)('tampered heads over HTTP on $name stores', (factory) => {
  let h: Harness;
  let admin: string;
  let writer: string;
  const tenant = 'acme';

  beforeEach(async () => {
    h = createHarness(factory, { ledger: { snapshotEvery: 2 } });
    admin = await h.newKey(tenant, ['read', 'write', 'admin']);
    writer = await h.newKey(tenant, ['read', 'write']);
  });
  afterEach(() => h.close());

  const stream = async (name = 'run-1') => {
    await h.append(writer, name, events(3));
    let digest = (
      await read<{ stateDigest: string }>(h.request(`/v1/streams/${name}`, { key: writer }))
    ).stateDigest;
    for (let i = 0; i < 4; i++) {
      const res = await h.request(`/v1/streams/${name}/checkpoints`, {
        key: writer,
        body: { baseDigest: digest, ops: [{ op: 'set', path: `/k${i}`, value: i }] },
      });
      digest = (await read<{ stateDigest: string }>(res)).stateDigest;
    }
    return read<Appended>(h.append(writer, name, events(1)));
  };
  const expectTampered = async (res: Response | Promise<Response>) => {
    const r = await res;
    expect(r.status).toBe(500);
    expect(await read<ProblemBody>(r)).toMatchObject({ code: 'ErrTamperedLedger' });
  };

  it('names a bad base snapshot in /verify, and nothing of where it is stored', async () => {
    await stream();
    const snaps = (
      await h.records.query(streamPk(tenant, 'run-1'), { skPrefix: SNAPSHOT_INDEX_PREFIX })
    ).items;
    const newest = snaps[0];
    if (!newest) throw new Error('no snapshot');
    await h.objects.delete(String(newest.objectKey));

    const res = await h.request('/v1/streams/run-1/verify', { key: writer });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      ok: false,
      code: 'ErrTamperedLedger',
      firstBadSeq: newest.seq,
      object: 'snapshot',
      seq: newest.seq,
    });
  });

  it('fails every route closed when the head hash was edited, until an admin repairs it', async () => {
    const last = await stream();
    await h.records.update(headKey(tenant, 'run-1'), { set: { hash: sha256Hex('forged') } });

    await expectTampered(h.request('/v1/streams/run-1', { key: writer }));
    await expectTampered(h.request('/v1/streams/run-1/events', { key: writer }));
    await expectTampered(h.request('/v1/streams/run-1/state', { key: writer }));
    await expectTampered(h.append(writer, 'run-1', events(1)));
    const verify = await h.request('/v1/streams/run-1/verify', { key: writer });
    expect(await verify.json()).toEqual({
      ok: false,
      code: 'ErrTamperedLedger',
      firstBadSeq: 8,
      object: 'head',
      seq: 8,
    });

    const refused = await h.request('/v1/streams/run-1/repair', { method: 'POST', key: writer });
    expect(refused.status).toBe(403);
    const repaired = await h.request('/v1/streams/run-1/repair', { method: 'POST', key: admin });
    expect(repaired.status).toBe(200);
    expect(await repaired.json()).toMatchObject({
      repaired: true,
      before: { seq: 8, hash: sha256Hex('forged') },
      head: { seq: 8, hash: last.head.hash, deltas: 4 },
    });
    expect((await h.request('/v1/streams/run-1/events', { key: writer })).status).toBe(200);
    expect((await h.append(writer, 'run-1', events(1))).status).toBe(201);
    expect(
      await (await h.request('/v1/streams/run-1/verify', { key: writer })).json(),
    ).toMatchObject({
      ok: true,
      seq: 9,
    });
  });

  it('answers a deleted head with ErrTamperedLedger, not 404 or 503, until it is repaired', async () => {
    const last = await stream();
    await h.records.delete(headKey(tenant, 'run-1'));

    await expectTampered(h.request('/v1/streams/run-1', { key: writer }));
    await expectTampered(h.request('/v1/streams/run-1/events', { key: writer }));
    await expectTampered(h.append(writer, 'run-1', events(1)));
    expect(
      await (await h.request('/v1/streams/run-1/verify', { key: writer })).json(),
    ).toMatchObject({
      ok: false,
      object: 'head',
    });
    // Another tenant's admin cannot reach it: its stream of that name does not exist.
    const other = await h.newKey('globex', ['read', 'write', 'admin']);
    const elsewhere = await h.request('/v1/streams/run-1/repair', { method: 'POST', key: other });
    expect(elsewhere.status).toBe(404);

    const repaired = await h.request('/v1/streams/run-1/repair', { method: 'POST', key: admin });
    expect(await repaired.json()).toMatchObject({ repaired: true, before: null, head: last.head });
    expect(await read(h.request('/v1/streams/run-1', { key: writer }))).toMatchObject({
      seq: 8,
      hash: last.head.hash,
    });
    const again = await h.request('/v1/streams/run-1/repair', { method: 'POST', key: admin });
    expect(await again.json()).toMatchObject({ repaired: false, before: last.head });
  });

  it('answers 404 to a repair of a stream that does not exist', async () => {
    const res = await h.request('/v1/streams/nope/repair', { method: 'POST', key: admin });
    expect(res.status).toBe(404);
    expect(await read<ProblemBody>(res)).toMatchObject({ code: 'ErrStreamNotFound' });
  });
});
