import type { Json, LedgerEvent } from '../shared/client/types.js';
import { genesisHash } from '../shared/domain/event.js';
import { isHexHash } from '../shared/domain/hashing.js';
import { type ChainPoint, verifyEvents } from '../shared/domain/verify.js';

/**
 * The export file format `hefesto.export.v1`: NDJSON, UTF-8, one JSON object a line.
 *
 *   line 1     {"format":"hefesto.export.v1","tenant":T,"streamId":S,
 *               "head":{"seq":N,"hash":H},"exportedAt":ISO-8601,"digestVersion":1|2
 *               [,"treeHead":{signed head}]}
 *
 * `treeHead` (optional, docs/records-v2.md "Export"): the server's signed tree head at seq N,
 * so `verify-file` can check the file against the server's signed word, not only its chain.
 *   line 1+i   {"seq":i,"ts":...,"type":...,"payload":...,"prevHash":...,"hash":...}
 *
 * Events carry every field their hash covers, so a file checks offline: each hash recomputed
 * from its fields, seq 1 linked to genesis(T, S), each prevHash to the hash before it, no seq
 * missing, and the last event equal to the header's head. Nothing here does I/O.
 * `digestVersion` (records-v2) says how the state digests the delta events record are
 * computed; a file without it was written before state v2, by a v1 stream.
 */

export const EXPORT_FORMAT = 'hefesto.export.v1';

export interface ExportHeader {
  format: typeof EXPORT_FORMAT;
  tenant: string;
  streamId: string;
  head: ChainPoint;
  exportedAt: string;
  /** The signed tree head at `head.seq`, when the server has a tree (not trusted: verified). */
  treeHead?: unknown;
  /** The stream's state digest version; absent in files written before state v2 (1). */
  digestVersion?: 1 | 2;
}

export type FileCheck =
  | { ok: true; header: ExportHeader; events: number }
  | { ok: false; line: number; firstBadSeq: number | null; reason: string };

export const headerLine = (h: ExportHeader): string =>
  JSON.stringify({
    format: h.format,
    tenant: h.tenant,
    streamId: h.streamId,
    head: { seq: h.head.seq, hash: h.head.hash },
    exportedAt: h.exportedAt,
    ...(h.treeHead === undefined ? {} : { treeHead: h.treeHead }),
    ...(h.digestVersion === undefined ? {} : { digestVersion: h.digestVersion }),
  });

export const eventLine = (e: LedgerEvent): string =>
  JSON.stringify({
    seq: e.seq,
    ts: e.ts,
    type: e.type,
    payload: e.payload,
    prevHash: e.prevHash,
    hash: e.hash,
  });

const EVENT_FIELDS = ['seq', 'ts', 'type', 'payload', 'prevHash', 'hash'];

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/** Why a parsed header is not one, or undefined when it is. */
const headerProblem = (v: unknown): string | undefined => {
  if (!isObject(v) || v.format !== EXPORT_FORMAT) return `not a ${EXPORT_FORMAT} file`;
  if (typeof v.tenant !== 'string' || v.tenant === '') return 'header has no tenant';
  if (typeof v.streamId !== 'string' || v.streamId === '') return 'header has no streamId';
  const head = v.head;
  if (!isObject(head) || !isCount(head.seq) || !isHexHash(head.hash)) {
    return 'header head must be {seq, hash}';
  }
  if (typeof v.exportedAt !== 'string') return 'header has no exportedAt';
  if (v.digestVersion !== undefined && v.digestVersion !== 1 && v.digestVersion !== 2) {
    return 'header digestVersion must be 1 or 2';
  }
  return undefined;
};

/** Why a parsed event line is not an event, or undefined when it is. */
const eventProblem = (v: unknown): string | undefined => {
  if (!isObject(v)) return 'not a JSON object';
  const extra = Object.keys(v).find((k) => !EVENT_FIELDS.includes(k));
  if (extra !== undefined) return `unexpected field "${extra}"`;
  if (!isCount(v.seq) || !isCount(v.ts)) return 'seq and ts must be non-negative integers';
  if (typeof v.type !== 'string') return 'type must be a string';
  if (!('payload' in v)) return 'payload is missing';
  if (!isHexHash(v.prevHash) || !isHexHash(v.hash)) return 'prevHash and hash must be hex hashes';
  return undefined;
};

/**
 * Reads and checks an export line by line (so files of any length stream through): feed
 * every line to `push`, then call `end` for the verdict. The first problem sticks.
 *
 * @example
 * ```ts
 * const reader = new ExportReader({ tenant: 'acme' });
 * for (const line of text.split('\n')) reader.push(line);
 * const check = reader.end(); // { ok: false, firstBadSeq: 7, ... } when seq 7 was edited
 * ```
 */
export class ExportReader {
  readonly #tenant: string | undefined;
  #header: ExportHeader | undefined;
  #point: ChainPoint = { seq: 0, hash: '' };
  #line = 0;
  #failure: Extract<FileCheck, { ok: false }> | undefined;

  /** `tenant`: the tenant the file must belong to (default: whatever its header names). */
  constructor(options: { tenant?: string } = {}) {
    this.#tenant = options.tenant;
  }

  get header(): ExportHeader | undefined {
    return this.#header;
  }

  get failure(): Extract<FileCheck, { ok: false }> | undefined {
    return this.#failure;
  }

  /** Feeds the next line. Returns the event it holds while the file is good, else undefined. */
  push(text: string): LedgerEvent | undefined {
    this.#line++;
    if (this.#failure !== undefined || text.trim() === '') return undefined;
    const next = this.#point.seq + 1;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return this.#reject(this.#header ? next : null, 'not JSON');
    }
    if (this.#header === undefined) {
      this.#readHeader(value);
      return undefined;
    }
    const problem = eventProblem(value);
    if (problem !== undefined) return this.#reject(next, problem);
    const event = value as LedgerEvent & { payload: Json };
    if (event.seq > this.#header.head.seq) {
      return this.#reject(
        next,
        `seq ${event.seq} is past the header's head ${this.#header.head.seq}`,
      );
    }
    const result = verifyEvents([event as never], this.#point);
    if (!result.ok) return this.#reject(result.firstBadSeq, result.reason);
    this.#point = { seq: result.seq, hash: result.hash };
    return event;
  }

  /** The verdict once every line was pushed. */
  end(): FileCheck {
    if (this.#failure !== undefined) return this.#failure;
    const header = this.#header;
    if (header === undefined) return this.#fail(null, 'the file is empty');
    if (this.#point.seq !== header.head.seq || this.#point.hash !== header.head.hash) {
      return this.#fail(
        this.#point.seq + 1,
        `the file ends at seq ${this.#point.seq}, its header's head is seq ${header.head.seq}`,
      );
    }
    return { ok: true, header, events: this.#point.seq };
  }

  #readHeader(value: unknown): void {
    const problem = headerProblem(value);
    if (problem !== undefined) {
      this.#fail(null, problem);
      return;
    }
    const header = value as ExportHeader;
    if (this.#tenant !== undefined && header.tenant !== this.#tenant) {
      this.#fail(null, `the file belongs to tenant "${header.tenant}", not "${this.#tenant}"`);
      return;
    }
    this.#header = header;
    this.#point = { seq: 0, hash: genesisHash(header.tenant, header.streamId) };
  }

  #fail(firstBadSeq: number | null, reason: string): Extract<FileCheck, { ok: false }> {
    this.#failure ??= { ok: false, line: this.#line, firstBadSeq, reason };
    return this.#failure;
  }

  #reject(firstBadSeq: number | null, reason: string): undefined {
    this.#fail(firstBadSeq, reason);
    return undefined;
  }
}
