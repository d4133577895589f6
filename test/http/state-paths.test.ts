import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../shared/domain/state.js';
import {
  digestV2,
  EMPTY_STATE_DIGEST_V2,
  type StateProof,
  verifyProof,
} from '../../shared/domain/state-v2/index.js';
import { type Metered, meteredObjects } from '../support/chunk-world.js';
import {
  createHarness,
  type Harness,
  type ProblemBody,
  readJson as read,
  STORE_FACTORIES,
} from './harness.js';

/**
 * `GET /v1/streams/{id}/state?at=&path=&proof=` (docs/state-v2.md, "Reads by path and
 * proofs"): one value by RFC 6901 pointer, and with `proof=true` its Merkle path, which
 * checks against the state digest the hash chain records without the rest of the state.
 */

interface ValueBody {
  seq: number;
  stateDigest: string;
  digestVersion: number;
  path: string;
  value: unknown;
  proof?: StateProof;
}

const MESSAGES = Array.from({ length: 300 }, (_, i) => ({ role: i % 2 ? 'ai' : 'user', i }));

describe.each(STORE_FACTORIES)('state reads by path on $name stores', (factory) => {
  let h: Harness;
  let key: string;
  const checkpoint = async (stream: string, ops: unknown[], baseDigest: string, k = key) => {
    const res = await h.request(`/v1/streams/${stream}/checkpoints`, {
      key: k,
      body: { ops, baseDigest },
    });
    expect(res.status).toBe(201);
    return read<{ seq: number; stateDigest: string }>(res);
  };
  const get = (stream: string, query: string, k = key) =>
    h.request(`/v1/streams/${stream}/state?${query}`, { key: k });

  let first: { seq: number; stateDigest: string };
  let second: { seq: number; stateDigest: string };
  beforeEach(async () => {
    h = createHarness(factory, { ledger: { snapshotEvery: 3 } });
    key = await h.newKey('acme');
    first = await checkpoint(
      'agent',
      [
        { op: 'set', path: '/messages', value: MESSAGES },
        { op: 'set', path: '/a~1b', value: { 'x~y': null } },
      ],
      EMPTY_STATE_DIGEST_V2,
    );
    second = await checkpoint(
      'agent',
      [{ op: 'set', path: '/messages/3', value: { role: 'user', edited: true } }],
      first.stateDigest,
    );
  });
  afterEach(() => h.close());

  it('answers only the value at the pointer, at the head and at a past seq', async () => {
    const head = await read<ValueBody>(get('agent', `path=${encodeURIComponent('/messages/3')}`));
    expect(head).toEqual({
      seq: 2,
      stateDigest: second.stateDigest,
      digestVersion: 2,
      path: '/messages/3',
      value: { role: 'user', edited: true },
    });
    const past = await read<ValueBody>(get('agent', 'at=1&path=/messages/3'));
    expect(past).toMatchObject({ seq: 1, stateDigest: first.stateDigest, value: MESSAGES[3] });
    // Escaped segments (~1 is '/', ~0 is '~'), and a JSON null is a value.
    const escaped = await read<ValueBody>(get('agent', `path=${encodeURIComponent('/a~1b/x~0y')}`));
    expect(escaped).toMatchObject({ path: '/a~1b/x~0y', value: null });
  });

  it('answers 404 ErrNotFound for a path the state does not hold, 400 for a bad one', async () => {
    for (const path of ['/messages/300', '/messages/01', '/messages/-', '/nope', '/a~1b/x~0y/z']) {
      const res = await get('agent', `path=${encodeURIComponent(path)}`);
      expect(res.status, path).toBe(404);
      expect((await read<ProblemBody>(res)).code, path).toBe('ErrNotFound');
    }
    for (const query of ['path=messages', 'path=/a~2', 'proof=true', 'path=/a&proof=yes']) {
      const res = await get('agent', query);
      expect(res.status, query).toBe(400);
      expect((await read<ProblemBody>(res)).code, query).toBe('ErrInvalidInput');
    }
    // Another tenant's key finds no such stream; an unknown stream is 404 too.
    const other = await h.newKey('globex');
    expect((await read<ProblemBody>(get('agent', 'path=/messages/3', other))).code).toBe(
      'ErrStreamNotFound',
    );
    expect((await get('nothing', 'path=/a')).status).toBe(404);
  });

  it('proves the value against the digest the chain records; a tampered value or node fails', async () => {
    const body = await read<ValueBody>(get('agent', 'at=1&path=/messages/250&proof=true'));
    const proof = body.proof as StateProof;
    expect(body.value).toEqual(MESSAGES[250]);
    // The digest the client trusts is the one the delta event at seq 1 records.
    const events = await read<{ events: Array<{ payload: { stateDigest: string } }> }>(
      h.request('/v1/streams/agent/events?from=1&limit=1', { key }),
    );
    const recorded = events.events[0]?.payload.stateDigest as string;
    expect(recorded).toBe(digestV2({ messages: MESSAGES, 'a/b': { 'x~y': null } } as JsonObject));
    expect(verifyProof(proof, recorded)).toEqual({ ok: true, value: MESSAGES[250] });
    // The proof is the path only: a root and a page for 300 items, not the 300 items.
    expect(proof.nodes.length).toBeLessThanOrEqual(4);
    expect(JSON.stringify(proof).length).toBeLessThan(8 * 1024);
    expect(verifyProof({ ...proof, value: { role: 'ai', i: 999 } }, recorded).ok).toBe(false);
    const node = Buffer.from(proof.nodes[1] as string, 'base64');
    node[node.length - 1] = (node[node.length - 1] ?? 0) ^ 1;
    const nodes = [...proof.nodes];
    nodes[1] = node.toString('base64');
    expect(verifyProof({ ...proof, nodes }, recorded).ok).toBe(false);
    expect(verifyProof(proof, second.stateDigest).ok).toBe(false);
  });
  it('answers a head read by path from the warm state of the process that wrote it', async () => {
    let metered: Metered | undefined;
    const w = createHarness(factory, {
      ledger: { snapshotEvery: 1 },
      wrapObjects: (objects) => {
        metered = meteredObjects(objects);
        return metered.store;
      },
    });
    try {
      const k = await w.newKey('acme');
      const res = await w.request('/v1/streams/agent/checkpoints', {
        key: k,
        body: {
          ops: [{ op: 'set', path: '/messages', value: MESSAGES }],
          baseDigest: EMPTY_STATE_DIGEST_V2,
        },
      });
      const { stateDigest } = await read<{ stateDigest: string }>(res);
      metered?.reset();
      const body = await read<ValueBody>(
        w.request('/v1/streams/agent/state?path=/messages/250&proof=true', { key: k }),
      );
      expect(metered?.m.gets).toBe(0);
      expect(body).toMatchObject({ seq: 1, stateDigest, value: MESSAGES[250] });
      expect(verifyProof(body.proof as StateProof, stateDigest)).toEqual({
        ok: true,
        value: MESSAGES[250],
      });
    } finally {
      w.close();
    }
  });
});
