import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  HefestoClient,
  type Json,
  stateMatches,
  verifyStateProof,
} from '../../packages/client/src/index.js';
import { MemoryObjectStore } from '../../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../../shared/adapters/memory/memory-record-store.js';
import { createApp } from '../../shared/http/app.js';
import { KeyService } from '../../shared/keys/keys.js';
import { Ledger } from '../../shared/ledger/ledger.js';

/**
 * test/vectors/state-v2.json through the client SDK's entry points (`@hefesto/client`, as
 * packed): every digest by `stateMatches`, every proof by `verifyStateProof`, and every state
 * as a large value: `putValue` cuts it into chunks whose root hash is the vector's digest, the
 * server accepts each chunk against its key, and `readValue` reads it back verified.
 * (test/unit/state-v2-vectors.test.ts checks the same file against the domain code.)
 */

interface Vectors {
  digests: Array<{ name: string; state: { [key: string]: Json }; digest: string }>;
  proofs: Array<{ name: string; proof: Parameters<typeof verifyStateProof>[0] }>;
}

const vectors = JSON.parse(
  readFileSync(join(import.meta.dirname, '../vectors/state-v2.json'), 'utf8'),
) as Vectors;

const ROOT = 'state-v2-vectors-root-key-0123456789';

const client = () => {
  const clock = { now: () => Date.now() };
  const records = new MemoryRecordStore({ clock });
  const ledger = new Ledger({ objects: new MemoryObjectStore(), records, clock });
  const keys = new KeyService({ records, clock, rootKey: ROOT });
  const app = createApp({ ledger, keys, logger: pino({ level: 'silent' }), clock });
  const fetch = (async (input: string | URL | Request, init?: RequestInit) =>
    app.fetch(new Request(input, init))) as typeof globalThis.fetch;
  return new HefestoClient({ baseUrl: 'http://hefesto.test', apiKey: ROOT, fetch });
};

describe('state v2 vectors in the client SDK', () => {
  it('holds the object whose root is at level 4 (page ranks of docs/state-v2.md)', () => {
    expect(vectors.digests.map((d) => d.name)).toContain(
      'object with its root at level 4: the keys k0…k15999 of rank ≥ 1',
    );
  });

  it.each(vectors.digests.map((d) => [d.name, d] as const))('digest: %s', async (_, d) => {
    expect(stateMatches(d.state, d.digest, 2)).toBe(true);
    const c = client();

    const ref = await c.putValue(d.state);

    expect(ref.hash).toBe(d.digest);
    expect(await c.readValue(ref)).toEqual(d.state);
  });

  it.each(vectors.proofs.map((p) => [p.name, p] as const))('proof: %s', (_, p) => {
    expect(verifyStateProof(p.proof, p.proof.digest)).toEqual({ ok: true, value: p.proof.value });
  });
});
