import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, type JsonValue } from '../../shared/domain/canonical.js';
import { NotFoundError } from '../../shared/domain/errors.js';
import { listChunks, MerkleState, proveState } from '../../shared/domain/state-v2/index.js';
import { applyPartial, loadPartial, provePartial } from '../../shared/domain/state-v2/partial.js';
import { escapeSegment } from '../../shared/domain/state-v2/pointer.js';
import { choiceArb, chunkStore, deltaFor, stateArb } from './state-v2-arbitraries.js';

/**
 * Partial states (shared/domain/state-v2/partial.ts): deltas applied to a state loaded from
 * chunks only where the ops go re-hash to the digests a whole tree gives, and proofs by path
 * from it are the ones a whole tree gives.
 */

/** Every pointer of `value` (depth-first, at most `max`). */
const pathsOf = (value: JsonValue, max = 40): string[] => {
  const out: string[] = [];
  const visit = (v: JsonValue, at: string) => {
    if (out.length >= max || typeof v !== 'object' || v === null) return;
    const keys = Array.isArray(v) ? v.map((_, i) => String(i)) : Object.keys(v);
    for (const k of keys) {
      const path = `${at}/${escapeSegment(k)}`;
      out.push(path);
      visit((v as Record<string, JsonValue>)[k] as JsonValue, path);
    }
  };
  visit(value, '');
  return out;
};

/** The proof as JSON (a -0 kept in memory is 0 once stored), or 'missing'. */
const proofOrMissing = async (prove: () => unknown) => {
  try {
    return JSON.parse(canonicalJson((await prove()) as JsonValue));
  } catch (err) {
    if (err instanceof NotFoundError) return 'missing';
    throw err;
  }
};

describe('partial states', () => {
  it('re-hash deltas to the whole tree digests and prove paths as the whole tree does', async () => {
    await fc.assert(
      fc.asyncProperty(
        stateArb,
        fc.array(fc.array(choiceArb, { minLength: 1, maxLength: 5 }), {
          minLength: 1,
          maxLength: 5,
        }),
        async (state, deltas) => {
          const store = chunkStore();
          const whole = MerkleState.of(state);
          store.put(listChunks(whole.root()));
          const partial = await loadPartial(whole.digest(), store.source);
          for (const choices of deltas) {
            const ops = deltaFor(whole.state, choices);
            try {
              MerkleState.of(whole.state).apply(ops);
            } catch {
              break; // a delta the service refuses is never recorded
            }
            whole.apply(ops);
            expect(await applyPartial(partial, ops, store.source)).toBe(true);
            expect(partial.digest()).toBe(whole.digest());
          }
          for (const path of [...pathsOf(whole.state), '/nope', '/0/x']) {
            const want = await proofOrMissing(() => proveState(whole, path));
            const got = await proofOrMissing(() => provePartial(partial, path, store.source));
            expect(got, path).toEqual(want);
          }
        },
      ),
      { numRuns: 60 },
    );
    // 60 runs of hashing and proving: CPU-bound, about 10 s quiet, over 30 s at load 18.
  }, 120_000);

  it('reads only the chunks the ops and the path go through', async () => {
    const messages = Array.from({ length: 10_000 }, (_, i) => ({ role: 'user', i }));
    const state = { messages, notes: { title: 'n' }, turn: 0 };
    const store = chunkStore();
    const whole = MerkleState.of(state);
    store.put(listChunks(whole.root()));
    const partial = await loadPartial(whole.digest(), store.source);
    const ops = [
      { op: 'set' as const, path: '/turn', value: 1 },
      { op: 'set' as const, path: '/notes/title', value: 'm' },
    ];
    whole.apply(ops);
    await applyPartial(partial, ops, store.source);
    expect(partial.digest()).toBe(whole.digest());
    const proof = await provePartial(partial, '/messages/3', store.source);
    expect(proof).toEqual(proveState(whole, '/messages/3'));
    expect(store.reads.length).toBeLessThanOrEqual(4); // state root, array root, 2 pages
  });
});
