import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { headKey } from '../../shared/chain/storage-keys.js';
import {
  checkConsistency,
  verifyEventInclusion,
  verifyReceipt,
} from '../../shared/client/proofs.js';
import { sha256 } from '../../shared/domain/hashing.js';
import { HeadKeys, type SignedTreeHead } from '../../shared/domain/signed-head.js';
import { EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import {
  createHarness,
  events,
  type Harness,
  type ProblemBody,
  ROOT_KEY,
  readJson,
  STORE_FACTORIES,
} from './harness.js';

/**
 * The proof routes (docs/proofs.md) checked by the client's own verification code and against
 * an RFC 9162 tree written out naively here (independent of shared/domain/merkle).
 */

const h0 = (...parts: Uint8Array[]) => new Uint8Array(sha256(Buffer.concat(parts)));
const LEAF = Uint8Array.of(0);
const NODE = Uint8Array.of(1);
const split = (n: number) => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};
const mth = (d: Uint8Array[]): Uint8Array => {
  if (d.length === 0) return h0();
  if (d.length === 1) return h0(LEAF, d[0] as Uint8Array);
  const k = split(d.length);
  return h0(NODE, mth(d.slice(0, k)), mth(d.slice(k)));
};
const path = (m: number, d: Uint8Array[]): Uint8Array[] => {
  if (d.length <= 1) return [];
  const k = split(d.length);
  return m < k
    ? [...path(m, d.slice(0, k)), mth(d.slice(k))]
    : [...path(m - k, d.slice(k)), mth(d.slice(0, k))];
};
const subproof = (m: number, d: Uint8Array[], b: boolean): Uint8Array[] => {
  if (m === d.length) return b ? [] : [mth(d)];
  const k = split(d.length);
  return m <= k
    ? [...subproof(m, d.slice(0, k), b), mth(d.slice(k))]
    : [...subproof(m - k, d.slice(k), false), mth(d.slice(0, k))];
};
const proof = (m: number, d: Uint8Array[]) =>
  m === 0 || m === d.length ? [] : subproof(m, d, true);
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe.each(STORE_FACTORIES)('proof routes on $name stores', (factory) => {
  let h: Harness;
  let key: string;
  const ring = new KeyRing(new FakeSigner('routes'));
  beforeEach(async () => {
    h = createHarness(factory, { ledger: { signing: ring } });
    key = await h.newKey('acme', ['read', 'write']);
  });
  afterEach(() => h.close());

  const get = <T>(path: string, k = key) => readJson<T>(h.request(path, { key: k }));
  const jwks = async () => new HeadKeys(await get('/v1/signing-keys'));
  /** Appends `sizes` batches, returns every receipt and the chain hashes as entries. */
  const build = async (stream: string, sizes: number[]) => {
    const receipts: unknown[] = [];
    for (const n of sizes) {
      const res = await h.append(key, stream, events(n));
      expect(res.status).toBe(201);
      receipts.push(((await res.json()) as { treeHead: unknown }).treeHead);
      h.advance(1000);
    }
    const page = await get<{ events: Array<{ seq: number; hash: string }> }>(
      `/v1/streams/${stream}/events?limit=1000`,
    );
    return {
      receipts,
      events: page.events,
      entries: page.events.map((e) => Buffer.from(e.hash, 'hex')),
    };
  };

  it('answers every append and checkpoint with a receipt the published keys verify', async () => {
    const keys = await jwks();
    const { receipts, entries } = await build('run-1', [1, 3, 2]);
    let size = 0;
    for (const [i, r] of receipts.entries()) {
      size += [1, 3, 2][i] as number;
      const head = verifyReceipt(r, keys, { tenant: 'acme', streamId: 'run-1' });
      expect(head.treeSize).toBe(size);
      expect(head.rootHash).toBe(hex(mth(entries.slice(0, size))));
    }
    const res = await h.request('/v1/streams/cp/checkpoints', {
      key,
      body: { ops: [{ op: 'set', path: '/a', value: 1 }], baseDigest: EMPTY_STATE_DIGEST_V2 },
    });
    const body = (await res.json()) as { treeHead: unknown };
    expect(verifyReceipt(body.treeHead, keys, { tenant: 'acme', streamId: 'cp' }).treeSize).toBe(1);
  });

  it('answers an idempotent retry with the original receipt', async () => {
    const first = await h.append(key, 'run-1', events(2), { idempotencyKey: 'k-1' });
    h.advance(60_000);
    await h.append(key, 'run-1', events(1));
    const retry = await h.append(key, 'run-1', events(2), { idempotencyKey: 'k-1' });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const body = (res: Response) => res.json() as Promise<{ treeHead: unknown }>;
    expect((await body(retry)).treeHead).toEqual((await body(first)).treeHead);
  });

  it('serves the tree head and every proof the client code and a naive RFC 9162 tree accept', async () => {
    const keys = await jwks();
    const { events: evs, entries } = await build('run-1', [3, 1, 5, 8, 2]); // 19 events
    const head = verifyReceipt(await get('/v1/streams/run-1/tree-head'), keys, {
      tenant: 'acme',
      streamId: 'run-1',
    });
    expect(head).toMatchObject({ treeBase: 0, treeSize: 19, rootHash: hex(mth(entries)) });
    for (const size of [1, 2, 7, 8, 13, 19]) {
      for (const e of evs.filter((x) => x.seq <= size)) {
        const p = await get<{ path: string[] }>(
          `/v1/streams/run-1/proofs/inclusion?seq=${e.seq}&treeSize=${size}`,
        );
        expect(p.path).toEqual(path(e.seq - 1, entries.slice(0, size)).map(hex));
        const at = { ...head, treeSize: size, rootHash: hex(mth(entries.slice(0, size))) };
        verifyEventInclusion(at, e, p);
      }
    }
    for (let from = 0; from <= 19; from++) {
      for (const to of [from, 8, 13, 19].filter((t) => t >= from)) {
        const p = await get<{ path: string[] }>(
          `/v1/streams/run-1/proofs/consistency?from=${from}&to=${to}`,
        );
        expect(p.path).toEqual(proof(from, entries.slice(0, to)).map(hex));
        const older = { ...head, treeSize: from, rootHash: hex(mth(entries.slice(0, from))) };
        const newer = { ...head, treeSize: to, rootHash: hex(mth(entries.slice(0, to))) };
        checkConsistency(older as SignedTreeHead, newer as SignedTreeHead, p);
      }
    }
    // The default `to` is the current tree.
    const p = await get<{ to: number }>('/v1/streams/run-1/proofs/consistency?from=5');
    expect(p.to).toBe(19);
  });

  it('refuses sizes past the tree, from > to and a seq not in the tree as bad input', async () => {
    await build('run-1', [4]);
    for (const q of [
      'inclusion?seq=5',
      'inclusion?seq=1&treeSize=5',
      'inclusion?seq=3&treeSize=2',
      'inclusion?seq=0',
      'consistency?from=3&to=2',
      'consistency?from=1&to=5',
      'consistency?from=-1',
    ]) {
      const res = await h.request(`/v1/streams/run-1/proofs/${q}`, { key });
      expect(res.status, q).toBe(400);
      expect(((await res.json()) as ProblemBody).code).toBe('ErrInvalidInput');
    }
  });

  it('never shows another tenant its streams, and needs a key with read scope', async () => {
    await build('run-1', [2]);
    const other = await h.newKey('other', ['read', 'write']);
    const res = await h.request('/v1/streams/run-1/tree-head', { key: other });
    expect(res.status).toBe(404);
    expect(((await res.json()) as ProblemBody).code).toBe('ErrStreamNotFound');
    await h.append(other, 'run-1', events(2));
    const theirs = await get<SignedTreeHead>('/v1/streams/run-1/tree-head', other);
    const ours = await get<SignedTreeHead>('/v1/streams/run-1/tree-head');
    expect(theirs.tenant).toBe('other');
    expect(theirs.rootHash).not.toBe(ours.rootHash);
    expect((await h.request('/v1/streams/run-1/tree-head')).status).toBe(401);
    const writeOnly = await h.newKey('acme', ['write']);
    expect((await h.request('/v1/signing-keys', { key: writeOnly })).status).toBe(403);
  });

  it('answers 404 ErrNotFound for a stream written before trees existed', async () => {
    await build('old', [2]);
    await h.records.update(headKey('acme', 'old'), {
      remove: ['treeBase', 'treeSize', 'frontier', 'treeHead', 'witPending'],
    });
    const res = await h.request('/v1/streams/old/tree-head', { key });
    expect(res.status).toBe(404);
    expect(((await res.json()) as ProblemBody).code).toBe('ErrNotFound');
    const appended = await h.append(key, 'old', events(1));
    expect(((await appended.json()) as { treeHead?: unknown }).treeHead).toBeUndefined();
  });

  it('refuses to serve a proof from a tree that does not match the head', async () => {
    await build('run-1', [4, 3]);
    const item = await h.records.get(headKey('acme', 'run-1'));
    const frontier = [...((item?.frontier as string[]) ?? [])];
    frontier[0] = 'f'.repeat(64); // the head record edited: its frontier no longer the chain's
    await h.records.update(headKey('acme', 'run-1'), { set: { frontier } });
    const res = await h.request('/v1/streams/run-1/proofs/inclusion?seq=6', { key });
    expect(res.status).toBe(500);
    expect(((await res.json()) as ProblemBody).code).toBe('ErrTamperedLedger');
  });

  it('documents the four routes with their error responses', async () => {
    const doc = await get<{
      paths: Record<string, { get: { responses: Record<string, unknown> } }>;
    }>('/v1/openapi.json', ROOT_KEY);
    for (const p of [
      '/v1/signing-keys',
      '/v1/streams/{streamId}/tree-head',
      '/v1/streams/{streamId}/proofs/inclusion',
      '/v1/streams/{streamId}/proofs/consistency',
    ]) {
      const responses = Object.keys(doc.paths[p]?.get.responses ?? {});
      expect(responses, p).toEqual(expect.arrayContaining(['200', '401', '403']));
    }
    expect(
      Object.keys(doc.paths['/v1/streams/{streamId}/proofs/inclusion']?.get.responses ?? {}),
    ).toEqual(expect.arrayContaining(['400', '404', '410', '500']));
  });
});
