import type { AppendResponse, IdempotencyRecord } from '../chain/layout.js';
import type { JsonValue } from '../domain/canonical.js';
import { type HeadSigner, type SignedTreeHead, signTreeHead } from '../domain/signed-head.js';

/**
 * The receipt an idempotency record keeps (docs/records-v2.md, "Idempotency records"): the
 * signed tree head's fields without what the record or the signer already tells (tenant,
 * stream, key id, algorithm) and without its signature. A retry signs them again: Ed25519 is
 * deterministic, so the same key gives the very receipt the first answer carried, and after a
 * rotation the current key signs the same tree head (same size, root and timestamp). That
 * keeps ~40% of an idempotency record off the disk: its signature, key id and the rest are
 * about 250 of its 600 bytes, and a record is written for every append that has a key.
 *
 * Records written before keep the whole signed head in `body.treeHead`, answered as it is.
 */

export interface StoredReceipt {
  treeBase: number;
  treeSize: number;
  rootHash: string;
  timestamp: number;
}

/** What the idempotency record stores of the receipt. */
export const storedReceipt = (receipt: SignedTreeHead): JsonValue => ({
  treeBase: receipt.treeBase,
  treeSize: receipt.treeSize,
  rootHash: receipt.rootHash,
  timestamp: receipt.timestamp,
});

const isStoredReceipt = (v: unknown): v is StoredReceipt => {
  const r = v as Partial<StoredReceipt> | null;
  return (
    typeof r === 'object' &&
    r !== null &&
    typeof r.treeBase === 'number' &&
    typeof r.treeSize === 'number' &&
    typeof r.rootHash === 'string' &&
    typeof r.timestamp === 'number'
  );
};

/** The response a retry answers: the stored one, its receipt signed again if kept slim. */
export const replayedResponse = (
  record: IdempotencyRecord,
  tenant: string,
  signer: HeadSigner | undefined,
): AppendResponse => {
  if (record.body.treeHead || !isStoredReceipt(record.receipt) || !signer) return record.body;
  const { treeBase, treeSize, rootHash, timestamp } = record.receipt;
  const treeHead = signTreeHead(
    { tenant, streamId: record.stream, treeBase, treeSize, rootHash, timestamp },
    signer,
  );
  return { ...record.body, treeHead };
};
