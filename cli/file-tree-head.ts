import { readFile } from 'node:fs/promises';
import { verifyReceipt } from '../shared/client/proofs.js';
import type { LedgerEvent } from '../shared/client/types.js';
import {
  eventLeafHash,
  extendFrontier,
  frontierRoot,
  hashToHex,
} from '../shared/domain/merkle/index.js';
import { HeadKeys, type SignedTreeHead } from '../shared/domain/signed-head.js';
import { CliError } from './context.js';

/**
 * `verify-file` against a signed tree head (docs/proofs.md): the file's events, from seq 1,
 * rebuild the RFC 9162 tree; its root at the head's size must be the head's signed root. The
 * head is `--head FILE` (a receipt, `GET .../tree-head`, a witnessed head) or else the one in
 * the export's header; it must verify under the keys of `--keys FILE` (a JWK set) or the
 * server's `GET /v1/signing-keys`, and name the file's tenant and stream.
 */

export const readJsonFile = async (path: string, what: string): Promise<unknown> => {
  try {
    return JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new CliError('ErrInvalidInput', `${what} ${path} is not a readable JSON file`, {
      cause: err,
    });
  }
};

/** Builds the tree of a file's events and answers its root at `size` leaves once it has them. */
export class FileTree {
  #frontier: Uint8Array[] = [];
  #size = 0;
  #roots = new Map<number, string>();

  constructor(readonly wanted: readonly number[]) {
    if (wanted.includes(0)) this.#roots.set(0, hashToHex(frontierRoot([], 0)));
  }

  push(event: LedgerEvent): void {
    this.#frontier = extendFrontier(this.#frontier, this.#size, [eventLeafHash(event.hash)]);
    this.#size++;
    if (this.wanted.includes(this.#size)) {
      this.#roots.set(this.#size, hashToHex(frontierRoot(this.#frontier, this.#size)));
    }
  }

  root(size: number): string | undefined {
    return this.#roots.get(size);
  }
}

export type HeadCheck =
  | { ok: true; head: SignedTreeHead }
  | { ok: false; reason: string; firstBadSeq: number | null };

/** Judges `raw` (a signed head) against the file's tree, once the whole file was read. */
export const checkFileHead = (
  raw: unknown,
  keys: HeadKeys,
  file: { tenant: string; streamId: string; events: number },
  tree: FileTree,
): HeadCheck => {
  let head: SignedTreeHead;
  try {
    head = verifyReceipt(raw, keys, { tenant: file.tenant, streamId: file.streamId });
  } catch (err) {
    return {
      ok: false,
      reason: `signed tree head refused: ${(err as Error).message}`,
      firstBadSeq: null,
    };
  }
  if (head.treeBase !== 0) {
    return {
      ok: false,
      reason: `the head's tree starts after seq ${head.treeBase}; an export starts at 1`,
      firstBadSeq: null,
    };
  }
  if (head.treeSize > file.events) {
    return {
      ok: false,
      reason: `truncated: the file ends at seq ${file.events}, the signed tree has ${head.treeSize} leaves`,
      firstBadSeq: file.events + 1,
    };
  }
  if (tree.root(head.treeSize) !== head.rootHash) {
    return {
      ok: false,
      reason: `the file's events are not the signed tree of ${head.treeSize} leaves (history rewritten)`,
      firstBadSeq: 1,
    };
  }
  return { ok: true, head };
};

/** The keys heads are checked with: `--keys FILE`, else the server's published set. */
export const loadKeys = async (
  keysFile: string | undefined,
  fetchKeys: () => Promise<unknown>,
): Promise<HeadKeys> =>
  new HeadKeys(keysFile ? await readJsonFile(keysFile, 'key set') : await fetchKeys());

export const headSizeOf = (raw: unknown): number | undefined => {
  const size = (raw as { treeSize?: unknown } | null)?.treeSize;
  return typeof size === 'number' && Number.isSafeInteger(size) && size >= 0 ? size : undefined;
};
