import type { ParsedChunk } from './chunk-parse.js';
import { STRING_PAGE, TAG, toHex } from './format.js';
import { bad, type Context, fetchChunk, inBatches } from './source.js';
import { Kind, type VNode } from './types.js';

/**
 * Reading a long string (above STRING_PAGE) from its pages: each page fetched and verified as
 * a step, then the string's canonical JSON decoded and parsed a page at a time, so a 64 MiB
 * string is not one long turn of the event loop (read.ts reads everything else).
 */

export const decodeString = async (
  ctx: Context,
  hash: Buffer,
  parsed: Extract<ParsedChunk, { tag: typeof TAG.stringRoot }>,
): Promise<VNode> => {
  if (parsed.size <= STRING_PAGE || parsed.pages.length !== Math.ceil(parsed.size / STRING_PAGE)) {
    bad('a long string has the wrong pages');
  }
  const last = parsed.pages.length - 1;
  const pages = await inBatches(
    ctx,
    parsed.pages.map((page, i) => ({ page, i })),
    async ({ page, i }) => {
      const { parsed: p } = await fetchChunk(ctx, toHex(page));
      const expected = i < last ? STRING_PAGE : parsed.size - i * STRING_PAGE;
      if (p.tag !== TAG.stringPage || p.bytes.length !== expected)
        bad('a string page is out of place');
      return (p as { bytes: Buffer }).bytes;
    },
  );
  // The string's canonical JSON, decoded and parsed a page at a time (a 64 MiB string is
  // one long turn otherwise): each piece is cut where no escape and no surrogate pair is
  // split, so each parses and checks alone exactly as the whole would.
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let pending = '';
  let value = '';
  for (const [i, bytes] of pages.entries()) {
    if (ctx.pause) for (let turn = ctx.pause(); turn; turn = ctx.pause()) await turn;
    try {
      pending += decoder.decode(bytes, { stream: i < last });
    } catch {
      bad('a long string is not UTF-8');
    }
    if (i === 0) {
      if (pending[0] !== '"') bad('a long string is not canonical');
      pending = pending.slice(1);
    }
    if (i === last) {
      if (pending.at(-1) !== '"') bad('a long string is not canonical');
      pending = pending.slice(0, -1);
    }
    const cut = i === last ? pending.length : safeCut(pending);
    value += stringPiece(pending.slice(0, cut));
    pending = pending.slice(cut);
  }
  return {
    kind: Kind.String,
    hash: Buffer.from(hash),
    size: parsed.size,
    value,
    pages: parsed.pages,
  };
};

/**
 * The longest prefix of `text` (the inside of a JSON string) that ends between two tokens (a
 * character or a whole escape) and neither inside a surrogate pair nor right after a `\u`
 * escape (two escapes may be the halves of one pair), so the prefix parses alone.
 */
const safeCut = (text: string): number => {
  let safe = 0;
  for (let i = 0; i < text.length; ) {
    const c = text.charCodeAt(i);
    const escaped = c === 0x5c ? (text.charCodeAt(i + 1) === 0x75 ? 6 : 2) : 0;
    const length = escaped || 1;
    if (i + length > text.length) break;
    i += length;
    if (escaped !== 6 && !(escaped === 0 && c >= 0xd800 && c <= 0xdbff)) safe = i;
  }
  return safe;
};

/** A piece of a long string's JSON (its inside), parsed and checked canonical. */
const stringPiece = (inside: string): string => {
  const text = `"${inside}"`;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    bad('a long string is not JSON');
  }
  if (typeof value !== 'string' || JSON.stringify(value) !== text) {
    bad('a long string is not canonical');
  }
  return value as string;
};
