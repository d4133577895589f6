import { describe, expect, it } from 'vitest';
import { historyOperationKey, idempotencyRecordKey } from '../../shared/chain/storage-keys.js';
import {
  changeDigest,
  ITEM_REF_KEY,
  itemRefOf,
  operationIdHash,
} from '../../shared/history/history-model.js';

/**
 * The test vectors of docs/openai-agents.md, "Formats": the digest an operation id is kept
 * with, the record's key, and the reference form of an item. The digests were computed apart
 * with `printf '%s' '<canonical JSON>' | sha256sum`.
 */

describe('session history formats', () => {
  it('digests a change as SHA-256 of the RFC 8785 JSON of {kind, change}', () => {
    const change = {
      type: 'append_items' as const,
      items: [{ type: 'message', role: 'user', content: 'hi' }],
    };
    // {"change":{"items":[{"content":"hi","role":"user","type":"message"}],"type":"append_items"},"kind":"hefesto.history.change"}
    expect(changeDigest(change)).toBe(
      '457ccc82fa7bf0050d46a70471b3aa66dbe3bcbeab73a3fa45e975c358a5183d',
    );
    // key order and spacing do not matter: the same change, the same digest
    const reordered = JSON.parse(
      '{ "items": [{ "role": "user", "content": "hi", "type": "message" }], "type": "append_items" }',
    );
    expect(changeDigest(reordered)).toBe(changeDigest(change));
  });

  it("keeps an operation id's record at idem#hist#{life}#{SHA-256(id)} in the stream's partition", () => {
    expect(operationIdHash('turn-1')).toBe(
      '974cad2dd603827b06e9e6affa3de03db5af2c12c045db679a7b1bef42b41a1c',
    );
    const key = historyOperationKey(2, operationIdHash('turn-1'));
    expect(idempotencyRecordKey('acme', 'sess-1', '', key)).toEqual({
      pk: 't#acme#s#sess-1',
      sk: 'idem#hist#2#974cad2dd603827b06e9e6affa3de03db5af2c12c045db679a7b1bef42b41a1c',
    });
  });

  it('reads an item as a reference only in its exact form', () => {
    const ref = { hash: 'ab'.repeat(32), size: 300_000 };
    expect(itemRefOf({ [ITEM_REF_KEY]: ref })).toEqual(ref);
    expect(itemRefOf({ [ITEM_REF_KEY]: ref, type: 'message' })).toBeUndefined();
    expect(itemRefOf({ [ITEM_REF_KEY]: { hash: 'ab' } })).toBeUndefined();
    expect(itemRefOf({ type: 'message', role: 'user', content: 'hi' })).toBeUndefined();
  });
});
