import { describe, expect, it } from 'vitest';
import { applyOps, type DeltaOp } from '../../shared/domain/state.js';

describe('applyOps', () => {
  it('leaves the ops as they were when a later op changes what an earlier one set', () => {
    const ops: DeltaOp[] = [
      { op: 'set', path: '/a', value: { b: 1, c: 2 } },
      { op: 'delete', path: '/a/b' },
    ];
    const before = structuredClone(ops);
    expect(applyOps({}, ops)).toEqual({ a: { c: 2 } });
    expect(ops).toEqual(before);
  });
});
