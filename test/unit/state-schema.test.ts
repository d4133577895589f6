import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../shared/domain/canonical.js';
import { applyOps, type JsonObject } from '../../shared/domain/state.js';
import { opsBetween, schemaVersionOf } from '../../shared/domain/state-schema.js';

/** The ops a migration records between two shapes (docs/schema-evolution.md). */

const yields = (before: JsonObject, after: JsonObject) => {
  const ops = opsBetween(before, after);
  expect(canonicalJson(applyOps(structuredClone(before), ops))).toBe(canonicalJson(after));
  return ops;
};

describe('opsBetween', () => {
  it('renames a top-level field as a delete and a set', () => {
    expect(yields({ notes: ['a'], turn: 2 }, { entries: ['a'], turn: 2 })).toEqual([
      { op: 'delete', path: '/notes' },
      { op: 'set', path: '/entries', value: ['a'] },
    ]);
  });

  it('changes only the nested paths that differ', () => {
    const bio = 'a long biography '.repeat(20);
    const before = { user: { name: 'ana', bio }, log: [1, 2, 3] };
    const ops = yields(before, { user: { fullName: 'ana', bio }, log: [1, 2, 3] });
    expect(ops.map((o) => o.path).sort()).toEqual(['/user/fullName', '/user/name']);
  });

  it('shrinks and reorders arrays, and escapes keys with / and ~', () => {
    yields({ l: [1, 2, 3, 4], 'a/b': 1, 'c~d': 2 }, { l: [4, 2], 'a/b': 3 });
    expect(yields({ '/x': 1 }, {})).toEqual([{ op: 'delete', path: '/~1x' }]);
  });

  it('sets a long list whole rather than two ops per entry', () => {
    const rows = Array.from({ length: 2000 }, (_, i) => ({ text: `row ${i}` }));
    const ops = yields({ rows }, { rows: rows.map(({ text }) => ({ body: text })) });
    expect(ops).toHaveLength(1);
    expect(ops[0]).toMatchObject({ op: 'set', path: '/rows' });
  });

  it('is empty between equal states', () => {
    expect(opsBetween({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toEqual([]);
  });
});

describe('schemaVersionOf', () => {
  it("reads a migration's to, a delta's or fork's schema, else 1", () => {
    expect(schemaVersionOf({ type: 'hefesto.migration', payload: { from: 1, to: 3 } })).toBe(3);
    expect(schemaVersionOf({ type: 'hefesto.delta', payload: { schema: 2 } })).toBe(2);
    expect(schemaVersionOf({ type: 'hefesto.fork', payload: { schema: 4 } })).toBe(4);
    expect(schemaVersionOf({ type: 'hefesto.delta', payload: { ops: [] } })).toBe(1);
    expect(schemaVersionOf({ type: 'hefesto.delta', payload: { schema: 0.5 } })).toBe(1);
    expect(schemaVersionOf({ type: 'hefesto.delta', payload: null })).toBe(1);
  });
});
