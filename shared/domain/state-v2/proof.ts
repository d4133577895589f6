import { canonicalJson, type JsonValue } from '../canonical.js';
import { InvalidInputError, NotFoundError } from '../errors.js';
import { sha256 } from '../hashing.js';
import { type ParsedChunk, parseChunk, type Slot } from './chunk-parse.js';
import { ARRAY_FANOUT, TAG, writer } from './format.js';
import type { MerkleState } from './merkle-state.js';
import { hashValue } from './node.js';
import { existingIndex, splitPointer, valueAt } from './pointer.js';
import { readValue } from './read.js';
import { pageOf, pagePreimage, rootPreimage } from './seq-tree.js';
import type { ChunkSource, ReadOptions } from './source.js';
import { type ContainerKind, Kind, type Level, type ObjectEntry, type VNode } from './types.js';
import { walk } from './walk.js';

/**
 * Merkle path proofs (docs/state-v2.md, "Proofs"): the value at a path of a state and the
 * hash inputs of the nodes from the state's root down to it, so that a client holding only
 * the state digest (from the verified hash chain) checks the value without the rest of the
 * state. Each node's SHA-256 must be the hash its parent names for the next step; the last
 * step's hash must be the value's v2 hash, or the last node is a leaf holding the value.
 */

export interface StateProof {
  v: 2;
  digest: string;
  path: string;
  value: JsonValue;
  /** Base64 hash inputs, root first. */
  nodes: string[];
}

const notFound = (path: string): never => {
  throw new NotFoundError(`the state holds no value at ${path}`);
};

/** `value`, unless it is missing (a JSON null is a value). */
const present = (value: JsonValue | undefined, path: string): JsonValue =>
  value === undefined ? notFound(path) : value;

const segmentsOf = (path: string): string[] => {
  const segments = splitPointer(path);
  if (segments === undefined) throw new InvalidInputError('path must be a JSON Pointer, like /a/0');
  return segments;
};

const leafPreimage = (node: VNode): Buffer => {
  const w = writer(TAG.leaf);
  w.utf8(canonicalJson(node.value), node.size);
  return w.copy();
};

const findKey = (entries: ObjectEntry[], key: string): number | undefined => {
  let lo = 0;
  let hi = entries.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const k = (entries[mid] as ObjectEntry).key;
    if (k === key) return mid;
    if (k < key) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
};

/** The proof of `path` from a state in memory. */
export const proveState = (state: MerkleState, path: string): StateProof => {
  const segments = segmentsOf(path);
  const root = state.root();
  const nodes: Buffer[] = [];
  let node = root;
  let value: JsonValue | undefined;
  for (let i = 0; value === undefined; i++) {
    if (i === segments.length) {
      value = node.value;
      break;
    }
    if (node.kind === Kind.Leaf) {
      nodes.push(leafPreimage(node));
      value = present(valueAt(node.value, segments.slice(i)), path);
      break;
    }
    if (node.kind === Kind.String) return notFound(path);
    const kind = node.kind as ContainerKind;
    const tree = node.tree as { levels: Level[] };
    const entries = (tree.levels[0] as Level).entries;
    const segment = segments[i] as string;
    const pos =
      kind === Kind.Array
        ? existingIndex(segment, entries.length)
        : findKey(entries as ObjectEntry[], segment);
    if (pos === undefined) return notFound(path);
    const top = tree.levels.length - 1;
    const pages: number[] = [];
    for (let level = 0, at = pos; level < top; level++) {
      at = pageOf((tree.levels[level] as Level).ends, at);
      pages.push(at);
    }
    nodes.push(rootPreimage(kind, tree).copy());
    for (let level = top - 1; level >= 0; level--) {
      nodes.push(pagePreimage(kind, tree, level, pages[level] as number).copy());
    }
    const entry = entries[pos];
    node = kind === Kind.Array ? (entry as VNode) : (entry as ObjectEntry).child;
  }
  return {
    v: 2,
    digest: state.digest(),
    path,
    value,
    nodes: nodes.map((n) => n.toString('base64')),
  };
};

/** The proof of `path` from stored chunks, reading only the chunks on the path. */
export const proveFromChunks = async (
  digest: string,
  path: string,
  source: ChunkSource,
  options: ReadOptions = {},
): Promise<StateProof> => {
  const { nodes, end } = await walk(digest, path, source, options);
  const value =
    'value' in end ? end.value : (await readValue(end.hash, source, options)).node.value;
  return { v: 2, digest, path, value, nodes: nodes.map((n) => n.toString('base64')) };
};

export type ProofCheck = { ok: true; value: JsonValue } | { ok: false; reason: string };

class ProofFailure extends Error {}

const reject = (reason: string): never => {
  throw new ProofFailure(reason);
};

/** Picks the slot of `segment` in one page of a container and what the next page must cover. */
const pick = (page: Extract<ParsedChunk, { slots: Slot[] }>, segment: string, rel: number) => {
  if (page.tag === TAG.arrayRoot || page.tag === TAG.arrayPage) {
    const span = ARRAY_FANOUT ** page.level;
    return { slot: page.slots[Math.floor(rel / span)], rel: rel % span };
  }
  const text = (s: Slot) => new TextDecoder('utf-8', { fatal: true }).decode(s.key);
  const slot =
    page.level === 0
      ? page.slots.find((s) => text(s) === segment)
      : page.slots.findLast((s) => text(s) <= segment);
  return { slot, rel };
};

/**
 * Checks a proof against the state digest the caller trusts (from its verified chain).
 * Answers the proven value, or why the proof fails; never throws for a bad proof.
 */
export const verifyProof = (proof: StateProof, digest: string): ProofCheck => {
  try {
    if (proof?.v !== 2 || proof.digest !== digest) reject('the proof is for another state');
    const segments = splitPointer(proof.path) ?? reject('the path is not a JSON Pointer');
    const nodes = proof.nodes.map((n) => Buffer.from(n, 'base64'));
    let hash: Buffer = Buffer.from(digest, 'hex');
    let k = 0;
    const next = (): ParsedChunk => {
      const node = nodes[k++] ?? reject('the proof is missing a node');
      if (!sha256(node).equals(hash)) reject(`node ${k - 1} does not match its parent`);
      return parseChunk(node, true);
    };
    for (let i = 0; ; ) {
      if (i === segments.length) {
        if (k !== nodes.length) reject('the proof has nodes past the value');
        if (!hashValue(proof.value).equals(hash)) reject('the value does not match the state');
        return { ok: true, value: proof.value };
      }
      const root = next();
      if (root.tag === TAG.leaf) {
        const inside = valueAt(JSON.parse(root.jcs.toString('utf8')), segments.slice(i));
        if (inside === undefined || canonicalJson(inside) !== canonicalJson(proof.value)) {
          reject('the value does not match the state');
        }
        if (k !== nodes.length) reject('the proof has nodes past the value');
        return { ok: true, value: proof.value };
      }
      if (root.tag !== TAG.arrayRoot && root.tag !== TAG.objectRoot) {
        return reject('the path leaves the state');
      }
      const segment = segments[i] as string;
      const array = root.tag === TAG.arrayRoot;
      let rel = array ? (existingIndex(segment, root.count ?? 0) ?? reject('no such item')) : 0;
      let page: ParsedChunk = root;
      for (;;) {
        const p = page as Extract<ParsedChunk, { slots: Slot[] }>;
        const picked = pick(p, segment, rel);
        const slot = picked.slot ?? reject('no such member');
        rel = picked.rel;
        hash = Buffer.from(slot.hash);
        if (p.level === 0) break;
        page = next();
        const pageTag = array ? TAG.arrayPage : TAG.objectPage;
        if (page.tag !== pageTag || !('slots' in page) || page.level !== p.level - 1) {
          reject('a page is out of place');
        }
      }
      i++;
    }
  } catch (err) {
    return {
      ok: false,
      reason: err instanceof ProofFailure ? err.message : `bad proof: ${(err as Error).message}`,
    };
  }
};
