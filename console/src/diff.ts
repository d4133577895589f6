import { create } from 'jsondiffpatch';
import { format, patch } from 'jsondiffpatch/formatters/jsonpatch';

/**
 * The diff between two states, computed by jsondiffpatch (array moves detected by content)
 * and listed as JSON Patch operations with the value before and after each change.
 */

export interface Change {
  op: 'add' | 'remove' | 'replace' | 'move';
  path: string;
  from?: string;
  before?: unknown;
  after?: unknown;
}

const differ = create({
  objectHash: (item: object) => JSON.stringify(item),
  arrays: { detectMove: true },
});

const unescapeToken = (token: string) => token.replace(/~1/g, '/').replace(/~0/g, '~');

/** The value at an RFC 6901 pointer, or undefined. */
export const at = (doc: unknown, pointer: string): unknown => {
  if (pointer === '') return doc;
  let cur: unknown = doc;
  for (const token of pointer.slice(1).split('/').map(unescapeToken)) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[token];
  }
  return cur;
};

/**
 * The changes from `left` to `right`. JSON Patch operations apply in order (an array index
 * names the element after the operations before it), so each `before` is read from the
 * document as patched so far.
 */
export const diffStates = (left: unknown, right: unknown): Change[] => {
  const delta = differ.diff(left, right);
  if (delta === undefined) return [];
  const working = { doc: structuredClone(left) };
  return format(delta).map((op) => {
    const change: Change = { op: op.op, path: op.path };
    if (op.op === 'move') {
      change.from = op.from;
      change.before = at(working.doc, op.from);
      change.after = change.before;
    } else {
      if (op.op !== 'add') change.before = at(working.doc, op.path);
      if (op.op !== 'remove') change.after = op.value;
    }
    // Applied to a wrapper so that a change of the root itself lands too.
    const wrapped = { root: working.doc };
    patch(wrapped, [
      { ...op, path: `/root${op.path}`, ...(op.op === 'move' ? { from: `/root${op.from}` } : {}) },
    ]);
    working.doc = wrapped.root;
    return change;
  });
};
