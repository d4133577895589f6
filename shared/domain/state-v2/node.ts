import type { JsonValue } from '../canonical.js';
import { InvalidInputError } from '../errors.js';
import {
  INLINE_MAX,
  keyRank,
  leafHash,
  MAX_DEPTH,
  MAX_KEY_BYTES,
  STRING_PAGE,
  TAG,
  writer,
} from './format.js';
import { buildTree, buildTreePaced, rootHash } from './seq-tree.js';
import { type ContainerKind, Kind, type ObjectEntry, type VNode } from './types.js';

const objectProto = Object.prototype;

/** String.prototype.isWellFormed (Node 20+; the ES2024 lib is not in our tsconfig). */
const wellFormed = (text: string): boolean =>
  (text as unknown as { isWellFormed(): boolean }).isWellFormed();

export const notJson = (why: string): never => {
  throw new InvalidInputError(`value is not JSON: ${why}`);
};

/** Canonical JSON of a scalar (RFC 8785: JSON.stringify of a number or a well-formed string). */
export const scalarJcs = (value: JsonValue): string => {
  switch (typeof value) {
    case 'string':
      if (!wellFormed(value)) notJson('a string holds a lone surrogate');
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) notJson(`${value} is not a JSON number`);
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    default:
      if (value === null) return 'null';
      return notJson(`${typeof value} has no JSON form`);
  }
};

export const keyJcs = (key: string): string => {
  if (!wellFormed(key)) notJson('a key holds a lone surrogate');
  return JSON.stringify(key);
};

const isPlainObject = (value: object): boolean => {
  const proto = Object.getPrototypeOf(value);
  return proto === objectProto || proto === null;
};

const stringNode = (value: string, jcs: string, size: number): VNode => {
  const bytes = Buffer.from(jcs, 'utf8');
  const pages: Buffer[] = [];
  for (let at = 0; at < size; at += STRING_PAGE) {
    const w = writer(TAG.stringPage);
    w.bytes(bytes.subarray(at, Math.min(size, at + STRING_PAGE)));
    pages.push(w.digest());
  }
  const w = writer(TAG.stringRoot);
  w.u64(size);
  for (const page of pages) w.bytes(page);
  return { kind: Kind.String, hash: w.digest(), size, value, pages };
};

/** Node of a container above INLINE_MAX from its children's nodes (level-0 entries). */
export const containerNode = (
  value: JsonValue[] | { [key: string]: JsonValue },
  kind: ContainerKind,
  entries: VNode[] | ObjectEntry[],
  size: number,
  childSum: number,
): VNode => {
  const tree = buildTree(kind, entries);
  return { kind, hash: rootHash(kind, tree), size, value, tree, childSum };
};

/** `containerNode`, its tree built awaiting `pause` every few pages (seq-tree.ts). */
export const containerNodePaced = async (
  value: JsonValue[] | { [key: string]: JsonValue },
  kind: ContainerKind,
  entries: VNode[] | ObjectEntry[],
  size: number,
  childSum: number,
  pause: () => Promise<void> | undefined,
): Promise<VNode> => {
  const tree = await buildTreePaced(kind, entries, pause);
  return { kind, hash: rootHash(kind, tree), size, value, tree, childSum };
};

/** A member entry; `ranked: false` leaves the rank to be computed when pages are cut. */
export const objectEntry = (
  key: string,
  keySize: number,
  child: VNode,
  ranked = true,
): ObjectEntry => {
  const keyBytes = Buffer.from(key, 'utf8');
  if (keyBytes.length > MAX_KEY_BYTES) {
    throw new InvalidInputError(`an object key is longer than ${MAX_KEY_BYTES} bytes`);
  }
  return { key, keyBytes, keySize, rank: ranked ? keyRank(keyBytes) : -1, child };
};

/*
 * Building from scratch. A value of at most INLINE_MAX bytes gets no node of its own unless
 * its parent needs one (a parent that is a node hashes its small children; a parent that is
 * small composes its own canonical JSON from theirs and hashes nothing), so each byte is
 * serialized once and each leaf hashed once. `grow` answers undefined for a small value and
 * leaves its canonical JSON and size in `smallJcs` / `smallSize`, read at once by the caller
 * (no allocation per small value on this, the hottest path of a full build).
 */
let smallJcs = '';
let smallSize = 0;

const smallLeaf = (value: JsonValue, jcs: string, size: number): VNode => ({
  kind: Kind.Leaf,
  hash: leafHash(jcs, size),
  size,
  value,
});

const grow = (value: JsonValue, depth: number): VNode | undefined => {
  if (typeof value !== 'object' || value === null) {
    const jcs = scalarJcs(value);
    const size = typeof value === 'string' ? Buffer.byteLength(jcs, 'utf8') : jcs.length;
    if (size > STRING_PAGE) return stringNode(value as string, jcs, size);
    if (size > INLINE_MAX) return smallLeaf(value, jcs, size);
    smallJcs = jcs;
    smallSize = size;
    return undefined;
  }
  if (depth > MAX_DEPTH) throw new InvalidInputError(`state nests deeper than ${MAX_DEPTH}`);
  if (Array.isArray(value)) return growArray(value, depth);
  if (!isPlainObject(value) || typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    notJson('only plain objects, arrays and scalars');
  }
  return growObject(value as { [key: string]: JsonValue }, depth);
};

const growArray = (value: JsonValue[], depth: number): VNode | undefined => {
  const n = value.length;
  const nodes: Array<VNode | undefined> = new Array(n);
  const parts: string[] = new Array(n);
  const sizes: number[] = new Array(n);
  let sum = 0;
  for (let i = 0; i < n; i++) {
    if (!(i in value)) notJson('a sparse array');
    const node = grow(value[i] as JsonValue, depth + 1);
    if (node === undefined) {
      parts[i] = smallJcs;
      sizes[i] = smallSize;
    } else {
      nodes[i] = node;
      sizes[i] = node.size;
    }
    sum += sizes[i] as number;
  }
  const size = 2 + sum + Math.max(0, n - 1);
  if (size <= INLINE_MAX) {
    smallJcs = `[${parts.join(',')}]`;
    smallSize = size;
    return undefined;
  }
  const children = nodes;
  for (let i = 0; i < n; i++) {
    children[i] ??= smallLeaf(value[i] as JsonValue, parts[i] as string, sizes[i] as number);
  }
  return containerNode(value, Kind.Array, children as VNode[], size, sum);
};

const growObject = (value: { [key: string]: JsonValue }, depth: number): VNode | undefined => {
  const keys = Object.keys(value).sort();
  const m = keys.length;
  const keyParts: string[] = new Array(m);
  const keySizes: number[] = new Array(m);
  const nodes: Array<VNode | undefined> = new Array(m);
  const parts: string[] = new Array(m);
  const sizes: number[] = new Array(m);
  let sum = 0;
  for (let i = 0; i < m; i++) {
    const key = keys[i] as string;
    const kj = keyJcs(key);
    keyParts[i] = kj;
    keySizes[i] = Buffer.byteLength(kj, 'utf8');
    const node = grow(value[key] as JsonValue, depth + 1);
    if (node === undefined) {
      parts[i] = smallJcs;
      sizes[i] = smallSize;
    } else {
      nodes[i] = node;
      sizes[i] = node.size;
    }
    sum += (keySizes[i] as number) + 1 + (sizes[i] as number);
  }
  const size = 2 + sum + Math.max(0, m - 1);
  if (size <= INLINE_MAX) {
    let jcs = '{';
    for (let i = 0; i < m; i++) jcs += `${i ? ',' : ''}${keyParts[i]}:${parts[i]}`;
    smallJcs = `${jcs}}`;
    smallSize = size;
    return undefined;
  }
  const entries = keys.map((key, i) => {
    const child =
      nodes[i] ?? smallLeaf(value[key] as JsonValue, parts[i] as string, sizes[i] as number);
    return objectEntry(key, keySizes[i] as number, child);
  });
  return containerNode(value, Kind.Object, entries, size, sum);
};

/**
 * Builds the node of `value` from scratch. Returns the node and, when the value is at most
 * INLINE_MAX bytes, its canonical JSON (RFC 8785: members sorted by UTF-16 code units, no
 * whitespace; scalars as JSON.stringify writes them, which is what RFC 8785 specifies).
 */
export const build = (value: JsonValue, depth: number): [VNode, string | undefined] => {
  const node = grow(value, depth);
  if (node !== undefined) return [node, undefined];
  const jcs = smallJcs;
  return [smallLeaf(value, jcs, smallSize), jcs];
};

/** The v2 hash of any JSON value (the state digest when the value is a state). */
export const hashValue = (value: JsonValue, depth = 0): Buffer => build(value, depth)[0].hash;

/** Whether a node's value travels inside its parent's chunk rather than as its own. */
export const isInline = (node: VNode): boolean =>
  node.kind === Kind.Leaf && node.size <= INLINE_MAX;
