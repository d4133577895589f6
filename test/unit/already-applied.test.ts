import { describe, expect, it } from 'vitest';
import {
  deleteApplied,
  jsonEqual,
  putApplied,
  updateApplied,
} from '../../shared/adapters/already-applied.js';

describe('already-applied', () => {
  describe('jsonEqual', () => {
    it('ignores key order and undefined members, and compares arrays in order', () => {
      expect(jsonEqual({ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 })).toBe(true);
      expect(jsonEqual({ a: 1, gone: undefined }, { a: 1 })).toBe(true);
      expect(jsonEqual([1, 2], [2, 1])).toBe(false);
      expect(jsonEqual({ a: null }, { a: 0 })).toBe(false);
      expect(jsonEqual([], {})).toBe(false);
    });
  });

  describe('putApplied', () => {
    it('says yes only when the stored item equals the written one', () => {
      const item = { pk: 'p', sk: 's', token: 't', meta: { n: 1 } };
      expect(putApplied({ sk: 's', pk: 'p', meta: { n: 1 }, token: 't' }, item)).toBe(true);
      expect(putApplied({ ...item, extra: 1 }, item)).toBe(false);
      expect(putApplied(undefined, item)).toBe(false);
    });
  });

  describe('updateApplied', () => {
    it('checks every set attribute and every removed one, ignoring the rest', () => {
      const current = { pk: 'p', sk: 's', seq: 2, hash: 'h2', other: true };
      expect(updateApplied(current, { set: { seq: 2, hash: 'h2' }, remove: ['lease'] })).toBe(true);
      expect(updateApplied(current, { set: { seq: 3 } })).toBe(false);
      expect(updateApplied(current, { remove: ['other'] })).toBe(false);
      expect(updateApplied(undefined, { set: { seq: 2 } })).toBe(false);
    });
  });

  describe('deleteApplied', () => {
    it('says yes when nothing is stored', () => {
      expect(deleteApplied(undefined)).toBe(true);
      expect(deleteApplied({ pk: 'p', sk: 's' })).toBe(false);
    });
  });
});
