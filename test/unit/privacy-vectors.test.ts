import { createDecipheriv, createHash, createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { canonicalJson, type JsonValue } from '../../shared/domain/canonical.js';
import { TamperedLedgerError } from '../../shared/domain/errors.js';
import { genesisHash, payloadJsonOf, sealBatch } from '../../shared/domain/event.js';
import {
  deriveStreamKeys,
  keyedDigest,
  openContent,
  type SealPlace,
  sealAad,
  sealContent,
} from '../../shared/domain/privacy/index.js';
import { decodeSegment, encodeSegment, type SegmentMeta } from '../../shared/domain/segment.js';

/**
 * test/vectors/privacy-v1.json (docs/privacy.md, docs/ledger-format.md: event format 2,
 * segment format 2, sealed bodies). Checked against the domain code and against a naive
 * implementation written here from the pages alone (HKDF by hand from RFC 5869, HMAC, SHA-256,
 * AES-GCM); the client SDK's tests read the same file.
 */

interface Vectors {
  scope: { tenant: string; stream: string; keyId: string };
  secret: string;
  keys: { commit: string; digest: string; content: string };
  keyedDigests: Array<{ digest: string; keyed: string }>;
  genesis: string;
  events: Array<{
    seq: number;
    ts: number;
    type: string;
    payload: JsonValue;
    prevHash: string;
    header: string;
    hash: string;
  }>;
  seals: Array<{
    at: SealPlace;
    keyVersion: number;
    compress: boolean;
    nonce: string;
    body: string;
    aad: string;
    sealed: string;
  }>;
  segment: { meta: SegmentMeta; nonce: string; bytes: string };
}

const vectors = JSON.parse(
  readFileSync(join(import.meta.dirname, '../vectors/privacy-v1.json'), 'utf8'),
) as Vectors;
const hex = (s: string) => Buffer.from(s, 'hex');

// The naive implementation.
const lp = (b: Buffer) => Buffer.concat([u32(b.length), b]);
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const u64 = (n: number) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
};
const hmac = (k: Buffer, ...parts: Buffer[]) =>
  createHmac('sha256', k).update(Buffer.concat(parts)).digest();
const hkdf = (ikm: Buffer, info: Buffer) =>
  hmac(hmac(Buffer.alloc(32), ikm), info, Buffer.from([1])); // L = 32: one block
const utf8 = (s: string) => Buffer.from(s, 'utf8');
const { scope } = vectors;
const info = (label: string) =>
  Buffer.concat([
    utf8(label),
    lp(utf8(scope.tenant)),
    lp(utf8(scope.stream)),
    lp(utf8(scope.keyId)),
  ]);
const secret = hex(vectors.secret);
const segKeys = () => {
  const keys = deriveStreamKeys(secret, scope);
  return { keyId: scope.keyId, commit: keys.commit, content: () => keys.content, writeVersion: 0 };
};

describe('privacy vectors', () => {
  it('derive the stream keys (HKDF-SHA256 under their labels)', () => {
    const keys = deriveStreamKeys(secret, scope);
    for (const [name, label] of [
      ['commit', 'hefesto/v1/commit'],
      ['digest', 'hefesto/v1/digest'],
      ['content', 'hefesto/v1/content'],
    ] as const) {
      expect(keys[name].toString('hex')).toBe(vectors.keys[name]);
      expect(hkdf(secret, info(label)).toString('hex')).toBe(vectors.keys[name]);
    }
  });

  it('key digests at rest with HMAC under k_d', () => {
    for (const v of vectors.keyedDigests) {
      expect(keyedDigest(hex(vectors.keys.digest), v.digest)).toBe(v.keyed);
      expect(hmac(hex(vectors.keys.digest), hex(v.digest)).toString('hex')).toBe(v.keyed);
    }
  });

  it('seal format 2 event headers that commit to the payload', () => {
    const inputs = vectors.events.map((e) => ({ type: e.type, payload: e.payload }));
    const first = vectors.events[0];
    if (!first) throw new Error('no events');
    expect(genesisHash(scope.tenant, scope.stream)).toBe(vectors.genesis);
    const sealed = sealBatch(0, vectors.genesis, first.ts, inputs, hex(vectors.keys.commit));
    for (const [i, v] of vectors.events.entries()) {
      const e = sealed[i];
      expect(Buffer.from(e?.preimage ?? []).toString('hex')).toBe(v.header);
      expect(e?.hash).toBe(v.hash);
      // naive
      const payload = utf8(canonicalJson(v.payload));
      const c = hmac(hex(vectors.keys.commit), u64(v.seq), lp(utf8(v.type)), payload);
      const header = Buffer.concat([
        Buffer.from([2]),
        u64(v.seq),
        u64(v.ts),
        hex(v.prevHash),
        lp(utf8(v.type)),
        u32(payload.length),
        c,
      ]);
      expect(header.toString('hex')).toBe(v.header);
      expect(createHash('sha256').update(header).digest('hex')).toBe(v.hash);
      expect(header.includes(payload)).toBe(false);
    }
    // equal payloads at two seqs commit differently: headers leak no equality
    expect(vectors.events[0]?.payload).toEqual(vectors.events[2]?.payload);
    expect(vectors.events[0]?.header.slice(-64)).not.toBe(vectors.events[2]?.header.slice(-64));
  });

  it('seal bodies with AES-256-GCM bound to where they sit', () => {
    const k = hex(vectors.keys.content);
    for (const v of vectors.seals) {
      expect(sealAad(v.at, v.keyVersion).toString('hex')).toBe(v.aad);
      const sealed = sealContent(k, v.at, hex(v.body), {
        compress: v.compress,
        nonce: hex(v.nonce),
      });
      expect(sealed.toString('hex')).toBe(v.sealed);
      expect(openContent(k, v.at, sealed).toString('hex')).toBe(v.body);
      // naive open
      const d = createDecipheriv('aes-256-gcm', k, sealed.subarray(6, 18));
      d.setAAD(hex(v.aad));
      d.setAuthTag(sealed.subarray(sealed.length - 16));
      const plain = Buffer.concat([d.update(sealed.subarray(18, sealed.length - 16)), d.final()]);
      expect((v.compress ? inflateRawSync(plain) : plain).toString('hex')).toBe(v.body);
      // moved to another place, tenant or kind, or one flipped byte: does not open
      for (const at of [
        { ...v.at, place: `${v.at.place}x` },
        { ...v.at, tenant: 'other' },
        { ...v.at, kind: 'seg' },
      ]) {
        expect(() => openContent(k, at, sealed)).toThrow(/does not authenticate/);
      }
      const flipped = Buffer.from(sealed);
      flipped[20] = (flipped[20] ?? 0) ^ 1;
      expect(() => openContent(k, v.at, flipped)).toThrow(/does not authenticate/);
    }
  });

  it('encode segment format 2 byte for byte, verify it without keys and read it with them', () => {
    const { meta, nonce, bytes } = vectors.segment;
    const first = vectors.events[0];
    if (!first) throw new Error('no events');
    const inputs = vectors.events.map((e) => ({ type: e.type, payload: e.payload }));
    const sealed = sealBatch(0, vectors.genesis, first.ts, inputs, hex(vectors.keys.commit));
    const encoded = Buffer.from(encodeSegment(meta, sealed, segKeys(), hex(nonce)));
    expect(encoded.toString('hex')).toBe(bytes);
    const marker = utf8('approve the refund?');
    expect(encoded.includes(marker)).toBe(false);

    const expect1 = {
      tenant: scope.tenant,
      stream: scope.stream,
      firstSeq: 1,
      prevHash: vectors.genesis,
    };
    // no keys: the chain verifies, the payloads are not there
    const headers = decodeSegment(encoded, expect1);
    expect(headers.header.lastHash).toBe(vectors.events.at(-1)?.hash);
    expect(() => payloadJsonOf(headers.events[0] as never)).toThrow(/no content key/);
    // keys: every payload, bound to its commitment
    const full = decodeSegment(encoded, expect1, { keys: segKeys() });
    expect(full.events.map((e) => JSON.parse(payloadJsonOf(e)))).toEqual(
      inputs.map((i) => i.payload),
    );
    const page = decodeSegment(encoded, expect1, { keys: segKeys(), only: { from: 2, to: 2 } });
    expect(page.events.map((e) => e.seq)).toEqual([2]);
  });

  it('refuses a format 2 segment whose body was swapped, cut or sealed under another key', () => {
    const { bytes } = vectors.segment;
    const encoded = hex(bytes);
    const expect1 = {
      tenant: scope.tenant,
      stream: scope.stream,
      firstSeq: 1,
      prevHash: vectors.genesis,
    };
    const flipped = Buffer.from(encoded);
    flipped[flipped.length - 3] = (flipped[flipped.length - 3] ?? 0) ^ 1;
    // headers only: a body byte is not covered without the key (the chain still is)
    expect(() => decodeSegment(flipped, expect1)).not.toThrow();
    expect(() => decodeSegment(flipped, expect1, { keys: segKeys() })).toThrow(TamperedLedgerError);
    expect(() => decodeSegment(encoded.subarray(0, encoded.length - 1), expect1)).toThrow(
      TamperedLedgerError,
    );
    const other = deriveStreamKeys(Buffer.alloc(32, 7), scope);
    expect(() =>
      decodeSegment(encoded, expect1, {
        keys: {
          keyId: scope.keyId,
          commit: other.commit,
          content: () => other.content,
          writeVersion: 0,
        },
      }),
    ).toThrow(/does not authenticate/);
    // a payload resealed with the right content key but not the committed one: commitment fails
    const keys = deriveStreamKeys(secret, scope);
    const first = vectors.events[0];
    if (!first) throw new Error('no events');
    const forged = sealBatch(
      0,
      vectors.genesis,
      first.ts,
      vectors.events.map((e) => ({ type: e.type, payload: e.payload })),
      keys.commit,
    );
    const swapped = forged.map((e) => ({ ...e, payloadText: '{"approved":false}' }));
    const lying = encodeSegment(vectors.segment.meta, swapped, segKeys());
    expect(() => decodeSegment(lying, expect1, { keys: segKeys() })).toThrow(
      /does not match its commitment/,
    );
    expect(() => decodeSegment(lying, expect1, { verifyOnly: true })).not.toThrow();
  });
});
