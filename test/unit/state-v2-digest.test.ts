import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../shared/domain/canonical.js';
import { InvalidDeltaError } from '../../shared/domain/errors.js';
import { applyOps, type DeltaOp, type JsonObject } from '../../shared/domain/state.js';
import { keyRank } from '../../shared/domain/state-v2/format.js';
import {
  digestV2,
  EMPTY_STATE_DIGEST_V2,
  INLINE_MAX,
  MerkleState,
  OBJECT_MAX_FANOUT,
  STRING_PAGE,
} from '../../shared/domain/state-v2/index.js';
import { type Choice, choiceArb, deltaFor, stateArb } from './state-v2-arbitraries.js';

/**
 * The incremental digest (MerkleState: re-hash only what the ops touch) must equal the digest
 * from scratch at every step, and the state must be exactly what v1's applyOps makes of the
 * same ops, refusals included (same op index, same partial state).
 */

const bytes = (state: JsonObject) => Buffer.byteLength(canonicalJson(state), 'utf8');

/** Applies a delta to both models and checks they agree; answers the v1 result. */
const step = (ms: MerkleState, v1: JsonObject, ops: DeltaOp[]): JsonObject => {
  const next = structuredClone(v1);
  let v1Error: unknown;
  let v2Error: unknown;
  try {
    applyOps(next, ops);
  } catch (err) {
    v1Error = err;
  }
  try {
    ms.apply(ops);
  } catch (err) {
    v2Error = err;
  }
  if (v1Error !== undefined) expect(v1Error).toBeInstanceOf(InvalidDeltaError);
  if (v2Error !== undefined) expect(v2Error).toBeInstanceOf(InvalidDeltaError);
  expect((v2Error as InvalidDeltaError | undefined)?.opIndex).toBe(
    (v1Error as InvalidDeltaError | undefined)?.opIndex,
  );
  expect(canonicalJson(ms.state)).toBe(canonicalJson(next));
  expect(ms.digest()).toBe(digestV2(next));
  expect(ms.size).toBe(bytes(next));
  return next;
};

const run = (initial: JsonObject, deltas: Choice[][], settleEachOp: boolean) => {
  const ms = MerkleState.of(initial);
  let v1 = structuredClone(initial);
  expect(ms.digest()).toBe(digestV2(initial));
  for (const choices of deltas) {
    const ops = deltaFor(v1, choices);
    if (settleEachOp) for (const op of ops) v1 = step(ms, v1, [op]);
    else v1 = step(ms, v1, ops);
  }
  // A tree built fresh from the final state is the same tree.
  expect(MerkleState.of(v1).digest()).toBe(ms.digest());
};

describe('state digest v2, incremental against from scratch', () => {
  it('agrees at every delta on random states and random ops (and with v1 applyOps)', () => {
    fc.assert(
      fc.property(
        stateArb,
        fc.array(fc.array(choiceArb, { minLength: 1, maxLength: 6 }), { maxLength: 12 }),
        (initial, deltas) => run(initial, deltas, false),
      ),
      { numRuns: 80 },
    );
  });

  it('agrees when the digest is taken after every single op', () => {
    fc.assert(
      fc.property(
        stateArb,
        fc.array(fc.array(choiceArb, { minLength: 1, maxLength: 4 }), { maxLength: 6 }),
        (initial, deltas) => run(initial, deltas, true),
      ),
      { numRuns: 40 },
    );
  });

  it('starts a new stream at the digest of {}', () => {
    expect(MerkleState.empty().digest()).toBe(EMPTY_STATE_DIGEST_V2);
    expect(EMPTY_STATE_DIGEST_V2).toMatch(/^[0-9a-f]{64}$/);
  });

  it('grows an array across every page level and shrinks it back, one op at a time', () => {
    const ms = MerkleState.empty();
    let v1: JsonObject = {};
    v1 = step(ms, v1, [{ op: 'set', path: '/list', value: [] }]);
    for (let i = 0; i < 4200; i++) {
      const ops: DeltaOp[] = [{ op: 'set', path: '/list/-', value: { i, t: 'item' } }];
      if (i % 97 === 0) ops.push({ op: 'set', path: `/list/${i >> 1}`, value: i });
      if (i % 500 === 499 || i > 4190) v1 = step(ms, v1, ops);
      else {
        ms.apply(ops);
        applyOps(v1, ops);
      }
    }
    expect(ms.digest()).toBe(digestV2(v1));
    for (const at of [0, 63, 64, 4095, 2000, 4096])
      v1 = step(ms, v1, [{ op: 'delete', path: `/list/${at}` }]);
    while ((v1.list as unknown[]).length > 0) {
      const n = (v1.list as unknown[]).length;
      v1 = step(ms, v1, [
        { op: 'delete', path: `/list/${n - 1}` },
        ...(n > 1 ? [{ op: 'delete', path: `/list/${Math.floor((n - 1) / 2)}` } as DeltaOp] : []),
      ]);
      if (n > 300)
        for (let k = 0; k < 300 && (v1.list as unknown[]).length > 1; k++) {
          ms.apply([{ op: 'delete', path: '/list/0' }]);
          applyOps(v1, [{ op: 'delete', path: '/list/0' }]);
        }
    }
    expect(ms.digest()).toBe(digestV2({ list: [] }));
  });

  it('keeps object pages cut by key rank and by the fanout cap (no rank boundary for long runs)', () => {
    // Keys of rank 0 never end a page, so a long run of them is cut every OBJECT_MAX_FANOUT.
    const flat: string[] = [];
    for (let i = 0; flat.length < 3 * OBJECT_MAX_FANOUT + 7; i++) {
      const key = `r${i}`;
      if (keyRank(Buffer.from(key)) === 0) flat.push(key);
    }
    const initial = { map: Object.fromEntries(flat.map((k, i) => [k, i])) };
    const ms = MerkleState.of(initial);
    let v1: JsonObject = structuredClone(initial);
    expect(ms.digest()).toBe(digestV2(v1));
    const sorted = [...flat].sort();
    for (const [i, key] of [
      sorted[0],
      sorted[5],
      sorted[130],
      sorted[200],
      sorted.at(-1),
    ].entries()) {
      v1 = step(ms, v1, [{ op: 'delete', path: `/map/${key}` }]);
      v1 = step(ms, v1, [{ op: 'set', path: `/map/${key}x${i}`, value: i }]);
      v1 = step(ms, v1, [{ op: 'set', path: `/map/${key}`, value: { back: i } }]);
    }
    // A key that ranks above 0 splits the run where it lands.
    let ranked = 'a';
    for (let i = 0; keyRank(Buffer.from(ranked)) < 2; i++)
      ranked = `r${sorted[100]?.slice(1)}-${i}`;
    v1 = step(ms, v1, [{ op: 'set', path: `/map/${ranked}`, value: 'boundary' }]);
    v1 = step(ms, v1, [{ op: 'delete', path: `/map/${ranked}` }]);
  });

  it('keeps a small object one page and cuts it by key rank past OBJECT_FLAT_MAX members', () => {
    const ms = MerkleState.of({ o: {} });
    let v1: JsonObject = { o: {} };
    for (let i = 0; i < 40; i++)
      v1 = step(ms, v1, [{ op: 'set', path: `/o/member-${i}`, value: 'v'.repeat(40) }]);
    for (let i = 0; i < 40; i += 3) v1 = step(ms, v1, [{ op: 'delete', path: `/o/member-${i}` }]);
  });

  it('switches a container between one leaf and a node as it crosses the threshold', () => {
    const ms = MerkleState.empty();
    let v1: JsonObject = {};
    v1 = step(ms, v1, [{ op: 'set', path: '/o', value: { a: 'x'.repeat(INLINE_MAX - 40) } }]);
    for (let i = 0; i < 6; i++)
      v1 = step(ms, v1, [{ op: 'set', path: `/o/k${i}`, value: 'y'.repeat(10) }]);
    expect(bytes(v1)).toBeGreaterThan(INLINE_MAX);
    for (let i = 0; i < 6; i++) v1 = step(ms, v1, [{ op: 'delete', path: `/o/k${i}` }]);
    v1 = step(ms, v1, [{ op: 'set', path: '/o/a', value: 'short' }]);
    v1 = step(ms, v1, [
      { op: 'set', path: '/o/deep', value: { b: [1, 2, { c: 'z'.repeat(2000) }] } },
    ]);
    v1 = step(ms, v1, [{ op: 'set', path: '/o/deep/b/2/c', value: 'small again' }]);
  });

  it('pages strings above STRING_PAGE and hashes them like any value', () => {
    const ms = MerkleState.empty();
    let v1: JsonObject = {};
    const long = 'é'.repeat(STRING_PAGE); // twice STRING_PAGE bytes of UTF-8
    v1 = step(ms, v1, [{ op: 'set', path: '/doc', value: long }]);
    v1 = step(ms, v1, [{ op: 'set', path: '/docs', value: [long, `${long}!`] }]);
    v1 = step(ms, v1, [{ op: 'set', path: '/doc', value: 'short' }]);
  });

  it('refuses what v2 cannot represent, naming the op', () => {
    const ms = MerkleState.of({ a: {} });
    const refuse = (op: DeltaOp) => {
      let caught: unknown;
      try {
        ms.apply([{ op: 'set', path: '/ok', value: 1 }, op]);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(InvalidDeltaError);
      expect((caught as InvalidDeltaError).opIndex).toBe(1);
    };
    refuse({ op: 'set', path: '/a/k', value: { ['k'.repeat(5000)]: 1 } });
    refuse({ op: 'set', path: '/a/lone', value: '\ud800' });
    refuse({ op: 'set', path: '/a/nan', value: Number.NaN });
    let deep: unknown = 1;
    for (let i = 0; i < 1100; i++) deep = [deep];
    refuse({ op: 'set', path: '/a/deep', value: deep as never });
    // The state is still consistent: the ops before the refused one applied.
    expect(ms.digest()).toBe(digestV2({ a: {}, ok: 1 }));
  });
});
