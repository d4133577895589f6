import { headerCommitment, payloadJsonOf, type SealedEvent } from '../domain/event.js';

/**
 * The JSON text of a page of events, built from the stored bytes: each payload is the
 * canonical JSON that was hashed, copied as it is. Nothing is parsed and serialized again,
 * which saves both the work and the recursion: a payload stored thousands of levels deep (by
 * a version without the depth limit) reads like any other instead of overflowing the stack.
 * Field order and spelling are those of LedgerEvent; the text is valid JSON because the
 * payload bytes are the canonical JSON the chain's hash covers.
 */
export const eventJson = (event: SealedEvent): string =>
  `{"seq":${event.seq},"ts":${event.ts},"type":${JSON.stringify(event.type)},` +
  `"payload":${payloadJsonOf(event)},"prevHash":"${event.prevHash}","hash":"${event.hash}"${v2Json(event)}}`;

/** A format 2 event also shows the header fields its hash covers (format 1: nothing). */
const v2Json = (event: SealedEvent): string => {
  if (event.preimage[0] !== 2) return '';
  const { size, commitment } = headerCommitment(event.preimage);
  return `,"format":2,"size":${size},"commitment":"${commitment.toString('hex')}"`;
};

export const eventsPageJson = (events: SealedEvent[], next: number | undefined): string =>
  `{"events":[${events.map(eventJson).join(',')}],"next":${next ?? 'null'}}`;
