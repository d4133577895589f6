import { InvalidFormatError, TamperedLedgerError } from '../domain/errors.js';
import { openContent, sealContent } from '../domain/privacy/content-seal.js';

/** The storage kind named in a sealed snapshot's AAD (docs/privacy.md, Decision 4). */
export const SNAPSHOT_KIND = 'snap';

/** Both snapshot formats start with this magic (shared/domain/snapshot.ts). */
const CLEAR_MAGIC = Buffer.from('HEFSNAP', 'latin1');

/** Bodies from this size are compressed before they are sealed (as pending writes). */
const COMPRESS_FROM = 2048;

const isClear = (body: Uint8Array): boolean =>
  body.length >= CLEAR_MAGIC.length &&
  Buffer.from(body.buffer, body.byteOffset, CLEAR_MAGIC.length).equals(CLEAR_MAGIC);

/**
 * A base snapshot object as stored: on a stream sealed at rest (`contentKey`: the stream's
 * k_e) the whole object, header and state, sealed under an AAD binding tenant, stream, kind
 * `snap` and the object's own key (which names its seq), so a sealed snapshot moved to another
 * seq, stream or tenant does not open; in the clear otherwise.
 */
export const sealSnapshot = (
  body: Uint8Array,
  at: { tenant: string; stream: string; key: string },
  contentKey: Uint8Array | undefined,
): Uint8Array =>
  contentKey
    ? sealContent(
        contentKey,
        { tenant: at.tenant, stream: at.stream, kind: SNAPSHOT_KIND, place: at.key },
        body,
        { compress: body.length >= COMPRESS_FROM },
      )
    : body;

/**
 * A stored snapshot object's clear bytes, to be decoded and checked against the digest the
 * chain binds as before. A clear object passes through (a stream in the clear, a fork's
 * origin, a base written before bases were sealed: its header and digest are checked all the
 * same); a sealed one opens with the stream's content key or is ErrTamperedLedger naming it.
 * `contentKey` comes from Reader.sealedKeys, which refuses (ErrUnavailable) a sealed stream it
 * cannot open; without one, sealed bytes are not a snapshot (the decoder refuses them).
 */
export const openSnapshot = (
  body: Uint8Array,
  at: { tenant: string; stream: string; key: string; seq: number },
  contentKey: Uint8Array | undefined,
): Uint8Array => {
  if (isClear(body) || !contentKey) return body;
  const place = { tenant: at.tenant, stream: at.stream, kind: SNAPSHOT_KIND, place: at.key };
  try {
    return openContent(contentKey, place, body);
  } catch (err) {
    if (!(err instanceof InvalidFormatError)) throw err;
    throw new TamperedLedgerError(
      Math.max(1, at.seq),
      `snapshot ${at.key} does not open under the stream's key`,
      { cause: err },
    );
  }
};
