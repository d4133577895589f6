import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Item } from '../../ports/record-store.js';

/**
 * How the local record store keeps an item in `items.body` (docs/operations.md, "Embedded
 * storage"). Two encodings, told apart by SQLite's storage class of the value:
 *
 * - TEXT: the item's JSON. Rows written before this codec hold the whole item, `pk` and `sk`
 *   included; rows written since hold it without them (they are the row's key columns).
 * - BLOB: byte 0 is the encoding, the rest its bytes. Encoding 1: the JSON without `pk`/`sk`,
 *   raw DEFLATE with the preset dictionary `DICTIONARY_1` below. A body is stored as a BLOB
 *   only when that is smaller than its JSON.
 *
 * The dictionary is part of the format: changing it needs a new encoding byte (readers keep
 * the old one). It holds the fragments most records repeat (field names of the records this
 * service writes, and the LangGraph saver's pending-write and metadata envelopes, which are
 * most of an agent's records); SQLite compresses nothing itself, and JSON records of a few
 * hundred bytes gain little from DEFLATE without one.
 */

const ENCODING_DEFLATE_1 = 1;

/** Bodies shorter than this stay JSON text: compressing them saves too little. */
const MIN_COMPRESS = 160;

// Most frequent fragments last (DEFLATE reaches the end of the dictionary with the shortest
// distances). Never edit: see above.
const DICTIONARY_1 = Buffer.from(
  [
    '"response_metadata":{},"usage_metadata":{"input_tokens":,"output_tokens":,"total_tokens":',
    '"tool_call_id":"","name":"","artifact":null,"status":"success"}}',
    '{"j":[{"lc":1,"type":"constructor","id":["langchain_core","messages","ToolMessage"],"kwargs":{"content":"',
    '{"j":[{"lc":1,"type":"constructor","id":["langchain_core","messages","HumanMessage"],"kwargs":{"content":"',
    '"tool_calls":[],"invalid_tool_calls":[],"additional_kwargs":{},"response_metadata":{}}}]}',
    '{"j":[{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessage"],"kwargs":{"content":"',
    ',"additional_kwargs":{},"response_metadata":{}}}]}',
    '{"taskId":"","taskPath":"~__pregel_pull, __start__","idx":0,"channel":"branch:to:","valueJson":"{\\"j\\":null}"}',
    '{"taskId":"","taskPath":"~__pregel_pull, ","idx":0,"channel":"messages","valueJson":"{\\"j\\":[{\\"lc\\":1,\\"type\\":\\"constructor\\",\\"id\\":[\\"langchain_core\\",\\"messages\\",\\"',
    'HumanMessage\\"],\\"kwargs\\":{\\"content\\":\\"',
    '\\",\\"tool_calls\\":[],\\"invalid_tool_calls\\":[],\\"additional_kwargs\\":{},\\"response_metadata\\":{}}}]}"}',
    '{"tenant":"","stream":"","createdAt":,"seq":,"objects":[],"deleteAfter":',
    '{"firstSeq":1,"lastSeq":,"prevHash":"","lastHash":"","objectKey":"t/default/s/","size":,"createdAt":',
    '{"seq":,"hash":"","stateDigest":"","objectKey":"t/default/s/","encoding":"chunks","deltas":,"digestVersion":2}',
    '{"stream":"","digest":"","status":201,"body":{"firstSeq":,"lastSeq":,"head":{"seq":,"hash":"',
    '"},"stateDigest":"","treeHead":{"tenant":"default","streamId":"","treeBase":0,"treeSize":',
    ',"rootHash":"","timestamp":,"keyId":"","alg":"EdDSA","signature":""}},"createdAt":',
    '{"label":"","seq":,"metaJson":"{\\"source\\":\\"input\\",\\"step\\":-1,\\"parents\\":{}}","parentLabel":"',
    '{"label":"","seq":,"stateDigest":"","metaJson":"{\\"source\\":\\"loop\\",\\"step\\":',
    ',\\"parents\\":{}}","parentLabel":"","createdAt":',
  ].join(''),
  'utf8',
);

export type StoredBody = string | Buffer;

/** The body to store for `item` (its key is the row's columns), and the item as stored. */
export const encodeBody = (item: Item): { body: StoredBody; stored: Item } => {
  const { pk, sk, ...rest } = item;
  const json = JSON.stringify(rest);
  const stored = { pk, sk, ...(JSON.parse(json) as Record<string, unknown>) } as Item;
  const text = Buffer.from(json, 'utf8');
  if (text.length < MIN_COMPRESS) return { body: json, stored };
  const packed = deflateRawSync(text, { dictionary: DICTIONARY_1 });
  if (packed.length + 1 >= text.length) return { body: json, stored };
  const body = Buffer.allocUnsafe(packed.length + 1);
  body[0] = ENCODING_DEFLATE_1;
  packed.copy(body, 1);
  return { body, stored };
};

/** The item a row holds (either encoding; TEXT with or without `pk`/`sk`). */
export const decodeBody = (pk: string, sk: string, body: StoredBody): Item => {
  let json: string;
  if (typeof body === 'string') json = body;
  else if (body[0] === ENCODING_DEFLATE_1) {
    json = inflateRawSync(body.subarray(1), { dictionary: DICTIONARY_1 }).toString('utf8');
  } else throw new Error(`record ${pk}/${sk}: unknown body encoding ${body[0]}`);
  return { pk, sk, ...(JSON.parse(json) as Record<string, unknown>) } as Item;
};
