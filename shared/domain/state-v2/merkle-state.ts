import type { JsonValue } from '../canonical.js';
import { InvalidDeltaError, InvalidInputError } from '../errors.js';
import type { JsonObject } from '../state.js';
import {
  added,
  childAt,
  dirtyOf,
  entriesOf,
  expand,
  findKey,
  removed,
  settleNode,
  touched,
} from './dirty.js';
import { toHex } from './format.js';
import { build, keyJcs, objectEntry } from './node.js';
import type { ChunkRef, ResolveRef, StateOp } from './ops.js';
import { existingIndex, isBanned, isContainer, splitPointer } from './pointer.js';
import { widen } from './seq-tree.js';
import { Kind, type ObjectEntry, type VNode } from './types.js';

/**
 * A JSON state with its Merkle tree kept beside it, so that applying a delta re-hashes only
 * the paths its ops touch. Ops apply at once to the JSON and to the tree's level-0 entries
 * (hashing only the values they set); `digest()` then settles every dirty node bottom-up:
 * a dirty container re-cuts its pages from the first edit until they match the old ones
 * (seq-tree.ts).
 *
 * Ops have exactly v1's applyOps semantics (shared/domain/state.ts), checked by property
 * tests, plus `{op:"set", path, ref}` for a value uploaded as chunks (ops.ts). As in v1,
 * apply changes the state in place and a throw leaves the ops before the failing one
 * applied (the instance stays consistent; callers discard it, as with v1).
 */

export class MerkleState {
  #root: VNode;

  private constructor(root: VNode) {
    this.#root = root;
  }

  /** The v2 tree of a copy of `state`. */
  static of(state: JsonObject): MerkleState {
    if (!isContainer(state) || Array.isArray(state)) {
      throw new InvalidInputError('a state is a JSON object');
    }
    return new MerkleState(build(structuredClone(state), 0)[0]);
  }

  static empty(): MerkleState {
    return MerkleState.of({});
  }

  /** A state whose tree was rebuilt from verified chunks (read.ts); takes the node. */
  static fromNode(root: VNode): MerkleState {
    if (!isContainer(root.value) || Array.isArray(root.value)) {
      throw new InvalidInputError('a state is a JSON object');
    }
    return new MerkleState(root);
  }

  /** The live JSON state: read it, never change it (apply ops instead). */
  get state(): JsonObject {
    return this.#root.value as JsonObject;
  }

  /** The settled root node (for chunks and proofs). */
  root(): VNode {
    settleNode(this.#root);
    return this.#root;
  }

  /** State digest v2 (hex). */
  digest(): string {
    return toHex(this.root().hash);
  }

  /** Canonical JSON size of the state, in bytes. */
  get size(): number {
    return this.root().size;
  }

  /**
   * Applies ops in place; throws InvalidDeltaError naming the first op that cannot apply.
   * `before(op)` is called before each op, on the state the op applies to.
   */
  apply(ops: readonly StateOp[], resolve?: ResolveRef, before?: (op: StateOp) => void): this {
    for (let i = 0; i < ops.length; i++) {
      before?.(ops[i] as StateOp);
      this.#applyOne(i, ops[i] as StateOp, resolve);
    }
    return this;
  }

  #applyOne(i: number, op: StateOp, resolve: ResolveRef | undefined): void {
    const fail: (why: string) => never = (why) => {
      throw new InvalidDeltaError(i, why);
    };
    const path = op.path;
    const segments = typeof path === 'string' && path !== '' ? splitPointer(path) : undefined;
    if (segments === undefined) fail('path must be a JSON Pointer below the root, like /a/b');
    const last = segments.length - 1;
    // Walk to the parent, expanding leaves on the way so every container on the path is a
    // node whose entries can be edited. Every container passed is marked dirty at its
    // position on the path, even when the op fails (an unchanged node settles to the hash
    // it had), so no expanded node is left out of the next settle.
    if (this.#root.kind === Kind.Leaf) expand(this.#root);
    let parent = this.#root;
    const chain: Array<[VNode, number]> = [];
    try {
      for (let t = 0; t < last; t++) {
        const segment = segments[t] as string;
        const json = parent.value as JsonValue[] | JsonObject;
        let pos: number | undefined;
        if (isBanned(segments, t)) pos = undefined;
        else if (Array.isArray(json)) pos = existingIndex(segment, json.length);
        else if (Object.hasOwn(json, segment)) {
          pos = findKey(entriesOf(parent) as ObjectEntry[], segment)[0];
        }
        if (pos === undefined) fail(`parent of ${path} does not exist`);
        const child = childAt(parent, pos);
        if (!isContainer(child.value)) fail(`parent of ${path} is not an object or array`);
        if (child.kind === Kind.Leaf) expand(child);
        chain.push([parent, pos]);
        parent = child;
      }
      const key = segments[last] as string;
      if (isBanned(segments, last)) fail(`${path} is not allowed`);
      const node = (): [VNode, JsonValue] => {
        if (op.op !== 'set') return fail('op must be set or delete');
        if ('ref' in op) return this.#resolved(op.ref, resolve, last + 1, fail);
        try {
          const value = structuredClone(op.value);
          return [build(value, last + 1)[0], value];
        } catch (err) {
          return fail((err as Error).message);
        }
      };
      this.#edit(parent, key, op, node, fail, path);
    } finally {
      let child = parent;
      for (let k = chain.length - 1; k >= 0; k--) {
        const [above, at] = chain[k] as [VNode, number];
        touched(above, at, child);
        child = above;
      }
    }
  }

  #edit(
    parent: VNode,
    key: string,
    op: StateOp,
    node: () => [VNode, JsonValue],
    fail: (why: string) => never,
    path: string,
  ): void {
    const dirty = dirtyOf(parent);
    if (parent.kind === Kind.Array) {
      const json = parent.value as JsonValue[];
      const entries = entriesOf(parent) as VNode[];
      const at = existingIndex(key, json.length);
      if (op.op === 'delete') {
        if (at === undefined) fail(`${path} does not exist`);
        removed(parent, entries[at] as VNode);
        entries.splice(at, 1);
        json.splice(at, 1);
        dirty.window = widen(dirty.window, at, 1, 0);
        return;
      }
      if (at === undefined && key !== '-' && key !== String(json.length)) {
        fail(`${path} is past the end of the array`);
      }
      const [child, value] = node();
      if (at === undefined) {
        dirty.window = widen(dirty.window, json.length, 0, 1);
        entries.push(child);
        json.push(value);
      } else {
        removed(parent, entries[at] as VNode);
        entries[at] = child;
        json[at] = value;
        dirty.window = widen(dirty.window, at, 1, 1);
      }
      added(parent, child);
      return;
    }
    const json = parent.value as JsonObject;
    const entries = entriesOf(parent) as ObjectEntry[];
    const exists = Object.hasOwn(json, key);
    const [at] = findKey(entries, key);
    if (op.op === 'delete') {
      if (!exists) fail(`${path} does not exist`);
      const entry = entries[at] as ObjectEntry;
      removed(parent, entry.child, entry.keySize);
      entries.splice(at, 1);
      delete json[key];
      dirty.window = widen(dirty.window, at, 1, 0);
      return;
    }
    const [child, value] = node();
    if (exists) {
      const entry = entries[at] as ObjectEntry;
      removed(parent, entry.child);
      entry.child = child;
      added(parent, child);
      dirty.window = widen(dirty.window, at, 1, 1);
    } else {
      let entry: ObjectEntry;
      try {
        entry = objectEntry(key, Buffer.byteLength(keyJcs(key), 'utf8'), child, false);
      } catch (err) {
        fail((err as Error).message);
      }
      entries.splice(at, 0, entry);
      added(parent, child, entry.keySize);
      dirty.window = widen(dirty.window, at, 0, 1);
    }
    json[key] = value;
  }

  #resolved(
    ref: ChunkRef,
    resolve: ResolveRef | undefined,
    depth: number,
    fail: (why: string) => never,
  ): [VNode, JsonValue] {
    const resolved = resolve?.(ref);
    if (resolved === undefined) return fail(`ref ${ref.hash} is not resolved`);
    if (resolved.node.size !== ref.size || toHex(resolved.node.hash) !== ref.hash) {
      return fail(`ref ${ref.hash} resolves to another value`);
    }
    if (!resolved.taken) {
      // The node was built from verified chunks for this op: adopt it, no re-hashing.
      resolved.taken = true;
      return [resolved.node, resolved.node.value];
    }
    const value = structuredClone(resolved.node.value);
    return [build(value, depth)[0], value];
  }
}

/** State digest v2 of a JSON state, from scratch. */
export const digestV2 = (state: JsonObject): string => toHex(build(state, 0)[0].hash);

/** The digest v2 of `{}`, the state of a new stream. */
export const EMPTY_STATE_DIGEST_V2 = digestV2({});
