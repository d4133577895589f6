import { describe, expect, it } from 'vitest';
import {
  EXPORT_FORMAT,
  type ExportHeader,
  ExportReader,
  eventLine,
  headerLine,
} from '../../cli/export-format.js';
import type { LedgerEvent } from '../../shared/client/types.js';
import { genesisHash, hashLedgerEvent } from '../../shared/domain/event.js';

/** A valid chain of `n` events of `tenant`/`stream`. */
const chain = (tenant: string, stream: string, n: number): LedgerEvent[] => {
  const events: LedgerEvent[] = [];
  let prevHash = genesisHash(tenant, stream);
  for (let seq = 1; seq <= n; seq++) {
    const event = { seq, ts: 1_700_000_000_000 + seq, type: 'note', payload: { seq }, prevHash };
    prevHash = hashLedgerEvent(event);
    events.push({ ...event, hash: prevHash });
  }
  return events;
};

const fileLines = (tenant: string, stream: string, events: LedgerEvent[]): string[] => {
  const last = events.at(-1);
  const header: ExportHeader = {
    format: EXPORT_FORMAT,
    tenant,
    streamId: stream,
    head: last ? { seq: last.seq, hash: last.hash } : { seq: 0, hash: genesisHash(tenant, stream) },
    exportedAt: '2025-01-01T00:00:00.000Z',
  };
  return [headerLine(header), ...events.map(eventLine)];
};

const check = (lines: string[], tenant?: string) => {
  const reader = new ExportReader(tenant === undefined ? {} : { tenant });
  const events = lines.map((l) => reader.push(l)).filter((e) => e !== undefined);
  return { events, result: reader.end() };
};

describe('ExportReader', () => {
  const good = fileLines('acme', 'run-1', chain('acme', 'run-1', 5));

  describe('push and end', () => {
    it('accepts an exported file and hands back every event in order', () => {
      const { events, result } = check([...good, '']);

      expect(result).toMatchObject({ ok: true, events: 5, header: { tenant: 'acme' } });
      expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    });

    it('records the digest version in the header, and reads files written before it as v1', () => {
      const [head, ...rest] = good;
      const v2 = headerLine({ ...JSON.parse(head ?? ''), digestVersion: 2 });
      expect(JSON.parse(v2)).toMatchObject({ digestVersion: 2 });
      expect(check([v2, ...rest]).result).toMatchObject({ ok: true, header: { digestVersion: 2 } });
      expect(JSON.parse(head ?? '')).not.toHaveProperty('digestVersion');
      expect(check(good).result).toMatchObject({ ok: true });
      const bad = headerLine({ ...JSON.parse(head ?? ''), digestVersion: 3 });
      expect(check([bad, ...rest]).result).toMatchObject({
        ok: false,
        reason: 'header digestVersion must be 1 or 2',
      });
    });

    it('accepts the export of an empty stream', () => {
      expect(check(fileLines('acme', 'empty', [])).result).toMatchObject({ ok: true, events: 0 });
    });

    it('names the seq whose payload was edited', () => {
      const lines = [...good];
      lines[3] = (lines[3] ?? '').replace('{"seq":3}', '{"seq":4}');

      expect(check(lines).result).toMatchObject({ ok: false, firstBadSeq: 3, line: 4 });
    });

    it('names the seq of a removed line, and of a missing end', () => {
      expect(check(good.filter((_, i) => i !== 2)).result).toMatchObject({ firstBadSeq: 2 });
      expect(check(good.slice(0, -1)).result).toMatchObject({ ok: false, firstBadSeq: 5 });
    });

    it('refuses events past the head the header names', () => {
      expect(check([...good, good[5] ?? '']).result).toMatchObject({ ok: false, line: 7 });
    });

    it('refuses a chain moved to another stream or tenant, at seq 1', () => {
      const moved = [
        headerLine({ ...JSON.parse(good[0] ?? ''), streamId: 'run-2' }),
        ...good.slice(1),
      ];

      expect(check(moved).result).toMatchObject({ ok: false, firstBadSeq: 1 });
      expect(check(good, 'other').result).toMatchObject({ ok: false, firstBadSeq: null, line: 1 });
    });

    it('refuses a file that is not an export, lines that are not JSON, and unknown fields', () => {
      const extra = JSON.stringify({ ...JSON.parse(good[1] ?? ''), note: 'x' });

      expect(check(['{"format":"other"}']).result).toMatchObject({ ok: false, line: 1 });
      expect(check([good[0] ?? '', '{nope']).result).toMatchObject({ firstBadSeq: 1, line: 2 });
      expect(check([good[0] ?? '', extra]).result).toMatchObject({
        firstBadSeq: 1,
        reason: 'unexpected field "note"',
      });
      expect(check([]).result).toMatchObject({ ok: false, reason: 'the file is empty' });
    });
  });
});
