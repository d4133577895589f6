import { canonicalJson } from './canonical.js';

/**
 * The ledger's hashing behind a port, for runtimes without node:crypto (the console checks
 * chains in the browser with WebCrypto). The server and the SDK keep the synchronous
 * node:crypto path in event.ts and hashing.ts (1.6 µs per event; an async digest per event
 * would cost the append path a promise each); test/unit/hash-port.test.ts holds the two to
 * the same bytes and hashes. Nothing here uses Buffer or node:*, so a browser bundle can
 * import this file alone.
 *
 * Encodings are those of docs/ledger-format.md (format v1): see event.ts for the layout.
 */

export interface HashPort {
  /** SHA-256 of `data` (32 bytes). */
  sha256(data: Uint8Array): Promise<Uint8Array>;
}

/** WebCrypto (browsers, Node >= 20, Deno, workers): `crypto.subtle.digest`. */
export const webCryptoHash: HashPort = {
  sha256: async (data) =>
    new Uint8Array(
      await globalThis.crypto.subtle.digest('SHA-256', data as Uint8Array<ArrayBuffer>),
    ),
};

const encoder = new TextEncoder();

export const toHex = (bytes: Uint8Array): string => {
  let out = '';
  for (const b of bytes) out += b.toString(16).padStart(2, '0');
  return out;
};

const fromHex = (hex: string): Uint8Array => {
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error('a hash is 64 lowercase hex characters');
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
};

const concat = (parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

const u32 = (n: number): Uint8Array => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n);
  return b;
};

const u64 = (n: number): Uint8Array => {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error('seq and ts are non-negative integers');
  const b = new Uint8Array(8);
  const view = new DataView(b.buffer);
  view.setUint32(0, Math.floor(n / 2 ** 32));
  view.setUint32(4, n >>> 0);
  return b;
};

/** lp(x) = u32 len(x) ‖ x */
const lp = (bytes: Uint8Array): Uint8Array => concat([u32(bytes.length), bytes]);

/** The event preimage: u8 1 ‖ u64 seq ‖ u64 ts ‖ prevHash ‖ lp(type) ‖ lp(JCS(payload)). */
export const eventPreimage = (event: {
  seq: number;
  ts: number;
  type: string;
  prevHash: string;
  payload: unknown;
}): Uint8Array =>
  concat([
    Uint8Array.of(1),
    u64(event.seq),
    u64(event.ts),
    fromHex(event.prevHash),
    lp(encoder.encode(event.type)),
    lp(encoder.encode(canonicalJson(event.payload))),
  ]);

/** SHA-256("hefesto/genesis/v1" ‖ lp(tenant) ‖ lp(stream)): event 1's prevHash. */
export const genesisHashWith = async (
  port: HashPort,
  tenant: string,
  stream: string,
): Promise<string> =>
  toHex(
    await port.sha256(
      concat([
        encoder.encode('hefesto/genesis/v1'),
        lp(encoder.encode(tenant)),
        lp(encoder.encode(stream)),
      ]),
    ),
  );

export interface ChainEvent {
  seq: number;
  ts: number;
  type: string;
  payload: unknown;
  prevHash: string;
  hash: string;
}

export type ChainCheck =
  | { ok: true; checked: number }
  | { ok: false; checked: number; firstBadSeq: number; reason: string };

/**
 * Checks a run of consecutive events as a reader would: each hash recomputed from the event's
 * fields, each prevHash the hash before it, seq 1's prevHash the stream's genesis (when
 * `genesis` is given). A run that does not start at 1 is checked from its first event on:
 * its link to earlier events is the server's word until those are checked too.
 */
export const checkChain = async (
  port: HashPort,
  events: ChainEvent[],
  genesis?: string,
): Promise<ChainCheck> => {
  let prev: ChainEvent | undefined;
  let checked = 0;
  for (const event of events) {
    const bad = (reason: string): ChainCheck => ({
      ok: false,
      checked,
      firstBadSeq: event.seq,
      reason,
    });
    if (prev && event.seq !== prev.seq + 1) return bad(`seq ${event.seq} follows ${prev.seq}`);
    if (prev && event.prevHash !== prev.hash) return bad('prevHash is not the previous hash');
    if (!prev && event.seq === 1 && genesis !== undefined && event.prevHash !== genesis) {
      return bad('seq 1 does not chain from the stream genesis');
    }
    let hash: string;
    try {
      hash = toHex(await port.sha256(eventPreimage(event)));
    } catch (err) {
      return bad(`cannot encode: ${(err as Error).message}`);
    }
    if (hash !== event.hash) return bad('hash does not match the event');
    prev = event;
    checked++;
  }
  return { ok: true, checked };
};
