import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, type JsonValue } from '../../shared/domain/canonical.js';
import { NotFoundError } from '../../shared/domain/errors.js';
import type { JsonObject } from '../../shared/domain/state.js';
import {
  digestV2,
  listChunks,
  MerkleState,
  proveFromChunks,
  proveState,
  readAt,
  type StateProof,
  verifyProof,
} from '../../shared/domain/state-v2/index.js';
import { escapeSegment, valueAt } from '../../shared/domain/state-v2/pointer.js';
import { chunkStore, stateArb } from './state-v2-arbitraries.js';

/** Every path of a value (pointers), the root included. */
const pathsOf = (value: JsonValue, prefix = '', out: string[] = []): string[] => {
  out.push(prefix);
  if (typeof value === 'object' && value !== null) {
    const entries = Array.isArray(value)
      ? value.map((v, i) => [String(i), v] as const)
      : Object.entries(value);
    for (const [k, v] of entries.slice(0, 40))
      pathsOf(v as JsonValue, `${prefix}/${escapeSegment(k)}`, out);
  }
  return out;
};

const chat = (messages: number): JsonObject => ({
  turn: messages,
  status: 'answered',
  messages: Array.from({ length: messages }, (_, i) => ({
    role: i % 2 ? 'assistant' : 'user',
    content: `message ${i} ${'lorem ipsum '.repeat(i % 20)}`,
  })),
  profile: { name: 'Zoë', tags: ['a', 'b'] },
});

describe('Merkle path proofs', () => {
  it('prove any path of any state, the same from memory and from chunks', async () => {
    await fc.assert(
      fc.asyncProperty(stateArb, fc.nat(), async (state, pick) => {
        const ms = MerkleState.of(state);
        const store = chunkStore();
        store.put(listChunks(ms.root()));
        const paths = pathsOf(ms.state);
        for (const path of [paths[pick % paths.length] as string, paths.at(-1) as string]) {
          const proof = proveState(ms, path);
          expect(canonicalJson(proof.value)).toBe(
            canonicalJson(
              valueAt(
                ms.state,
                path
                  .split('/')
                  .slice(1)
                  .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')),
              ) ?? null,
            ),
          );
          expect(verifyProof(proof, ms.digest())).toEqual({ ok: true, value: proof.value });
          const stored = await proveFromChunks(ms.digest(), path, store.source);
          expect(canonicalJson(stored as unknown as JsonValue)).toBe(
            canonicalJson(proof as unknown as JsonValue),
          );
          expect(canonicalJson(await readAt(ms.digest(), path, store.source))).toBe(
            canonicalJson(proof.value),
          );
        }
      }),
      { numRuns: 60 },
    );
  });

  it('refuses a proof whose value, nodes, path or digest were changed', () => {
    const ms = MerkleState.of(chat(5000));
    const digest = ms.digest();
    for (const path of ['/messages/4321', '/messages/4321/content', '/profile/name', '/turn']) {
      const proof = proveState(ms, path);
      expect(verifyProof(proof, digest).ok).toBe(true);
      const variants: StateProof[] = [
        { ...proof, value: 'forged' },
        { ...proof, nodes: proof.nodes.slice(0, -1) },
        { ...proof, nodes: [...proof.nodes, proof.nodes[0] as string] },
        { ...proof, nodes: [...proof.nodes].reverse() },
        { ...proof, path: path.replace('4321', '4322') },
        { ...proof, digest: digestV2({}) },
      ];
      for (const forged of variants) {
        if (JSON.stringify(forged) === JSON.stringify(proof)) continue;
        expect(verifyProof(forged, digest).ok).toBe(false);
      }
      expect(verifyProof(proof, digestV2({})).ok).toBe(false);
    }
    expect(() => proveState(ms, '/messages/5000')).toThrow(NotFoundError);
    expect(() => proveState(ms, '/profile/__proto__')).toThrow(NotFoundError);
    // Reads assign nothing: a stored `__proto__` or `constructor/prototype` member is read.
    const odd = MerkleState.of(JSON.parse('{"__proto__":{"x":1},"constructor":{"prototype":2}}'));
    for (const path of ['/__proto__/x', '/constructor/prototype']) {
      expect(verifyProof(proveState(odd, path), odd.digest()).ok).toBe(true);
    }
  });

  it('keeps a proof small: the nodes on the path, not the state', () => {
    const ms = MerkleState.of(chat(10_000));
    const proof = proveState(ms, '/messages/3');
    expect(JSON.stringify(proof).length).toBeLessThan(8 * 1024);
    expect(Buffer.byteLength(canonicalJson(ms.state))).toBeGreaterThan(1024 * 1024);
  });
});
