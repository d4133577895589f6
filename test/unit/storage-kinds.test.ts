import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as keys from '../../shared/chain/storage-keys.js';
import {
  classifyObjectKey,
  classifyRecordKey,
  STORAGE_KINDS,
} from '../../shared/chain/storage-kinds.js';
import { MUTATIONS } from '../../shared/chain/storage-kinds-model.js';
import type { ItemKey } from '../../shared/ports/record-store.js';
import {
  CHAIN_BOUND_HEADER,
  chainBoundRows,
  limitLines,
  noteLines,
  SIDE_HEADER,
  sideRows,
  tableRows,
} from '../support/storage-kinds-doc.js';
import { unclassified } from '../support/tamper-control.js';
import { LIMITED_READS } from '../support/tamper-probes.js';

/**
 * The storage-kinds module (shared/chain/storage-kinds.ts) against the keys the builders
 * of storage-keys.ts make, and against docs/ledger-format.md, "Storage kinds and the tamper
 * matrix". The tamper matrix itself is test/support/tamper-matrix-suite.ts.
 */

const DIGEST = 'ab'.repeat(32);

/** A key of every kind, built as the code builds it, with its exact bytes (as before). */
const SAMPLES: Record<string, { key: ItemKey | string; is: string | object }> = {
  head: { key: keys.headKey('acme', 'run-1'), is: { pk: 't#acme#s#run-1', sk: 'head' } },
  'segment-index': {
    key: keys.segmentIndexKey('acme', 'run-1', 42),
    is: { pk: 't#acme#s#run-1', sk: 'seg#0000000000000042' },
  },
  'snapshot-index': {
    key: keys.snapshotIndexKey('acme', 'run-1', 42),
    is: { pk: 't#acme#s#run-1', sk: `snap#${Number.MAX_SAFE_INTEGER - 42}` },
  },
  label: {
    key: keys.labelKey('acme', 'run-1', 'cp-1'),
    is: { pk: 't#acme#s#run-1', sk: 'label#cp-1' },
  },
  'checkpoint-entry': {
    key: { pk: keys.streamPk('acme', 'run-1'), sk: keys.ckptSk(7) },
    is: { pk: 't#acme#s#run-1', sk: `ckpt#${Number.MAX_SAFE_INTEGER - 7}` },
  },
  'pending-write': {
    key: { pk: keys.streamPk('acme', 'run-1'), sk: keys.pendingWriteSk('cp-1', 'a b', 'x', -1) },
    is: { pk: 't#acme#s#run-1', sk: 'pw#cp-1#d2MvZLfU5eKWoCV-#2147483647' },
  },
  effect: {
    key: keys.effectRecordKey('acme', 'run-1', 'pay-1'),
    is: { pk: 't#acme#s#run-1', sk: 'effect#pay-1' },
  },
  idempotency: {
    key: keys.idempotencyRecordKey('acme', 'run-1', 'inc-1', 'k-1'),
    is: { pk: 't#acme#s#run-1', sk: 'ikey#inc-1#k-1' },
  },
  'idempotency-legacy': {
    key: keys.legacyIdempotencyKey('acme', 'k#1'),
    is: { pk: 't#acme#idem#k#1', sk: 'idem' },
  },
  'idempotency-service': {
    key: keys.idempotencyRecordKey('acme', 'run-1', '', keys.serviceIdempotencyKey('e#1')),
    is: { pk: 't#acme#s#run-1', sk: 'idem#e#1' },
  },
  'writer-lease': {
    key: keys.writerLeaseKey('acme', 'run-1'),
    is: { pk: 't#acme#s#run-1', sk: 'writer-lease' },
  },
  refused: {
    key: keys.refusedKey('acme', 'run-1', 9),
    is: { pk: 't#acme#s#run-1', sk: 'refused#0000000000000009' },
  },
  tiles: { key: keys.tilesKey('acme', 'run-1'), is: { pk: 't#acme#s#run-1', sk: 'tiles' } },
  'compactor-lease': {
    key: keys.compactorLeaseKey('acme', 'run-1'),
    is: { pk: 't#acme#s#run-1', sk: 'compactor-lease' },
  },
  'base-due': {
    key: keys.baseDueKey('acme', 'run-1', 25),
    is: { pk: 't#acme#s#run-1', sk: 'basedue#0000000000000025' },
  },
  garbage: {
    key: keys.garbageKey('acme', 'run-1', 1000, 'm1'),
    is: { pk: 't#acme#s#run-1', sk: 'gc#0000000000001000#m1' },
  },
  orphan: {
    key: keys.orphanKey('acme', 'run-1', 't/acme/s/run-1/seg/0000000000000001'),
    is: { pk: 't#acme#s#run-1', sk: 'orphan#t/acme/s/run-1/seg/0000000000000001' },
  },
  sweep: { key: keys.sweepKey('acme', 'run-1'), is: { pk: 't#acme#s#run-1', sk: 'sweep' } },
  'stream-key': {
    key: keys.streamKeyKey('acme', 'run-1'),
    is: { pk: 't#acme#s#run-1', sk: 'key' },
  },
  'stream-index': {
    key: keys.streamIndexKey('acme', 'run-1'),
    is: { pk: 't#acme#streams', sk: 'run-1' },
  },
  'chunk-ref': {
    key: { pk: keys.chunkRefsPk('acme'), sk: keys.refSk('run-1', 'base', 5) },
    is: { pk: 't#acme#chunkrefs', sk: 'run-1#base#0000000000000005' },
  },
  'chunk-gc-marker': { key: keys.chunkGcKey('acme'), is: { pk: 't#acme#chunkgc', sk: 'marker' } },
  'chunk-gc-due': { key: keys.chunkGcDueKey('acme'), is: { pk: 'chunkgc-due', sk: 'acme' } },
  'work-marker': {
    key: keys.markerKey('acme', 'run-1'),
    is: { pk: `compact#${keys.shardOf('acme', 'run-1')}`, sk: 'acme#run-1' },
  },
  visit: {
    key: keys.dueKey('acme', 'run-1', 77),
    is: { pk: `due#${keys.shardOf('acme', 'run-1')}`, sk: '0000000000000077#acme#run-1' },
  },
  'witness-marker': {
    key: keys.witnessKey('acme', 'run-1'),
    is: { pk: `wit#${keys.shardOf('acme', 'run-1')}`, sk: 'acme#run-1' },
  },
  'signing-keys': { key: keys.SIGNING_KEYS_KEY, is: { pk: 'signing-keys', sk: 'signing-keys' } },
  'api-key': {
    key: keys.apiKeyRecordKey('0123456789abcdef'),
    is: { pk: 'key#0123456789abcdef', sk: 'key' },
  },
  bootstrap: { key: keys.BOOTSTRAP_KEY, is: { pk: 'bootstrap', sk: 'bootstrap' } },
  segment: {
    key: keys.segmentKey('acme', 'run-1', 3),
    is: 't/acme/s/run-1/seg/0000000000000003',
  },
  snapshot: {
    key: keys.snapshotKey('acme', 'run-1', 25, DIGEST),
    is: `t/acme/s/run-1/snap/0000000000000025-${DIGEST}`,
  },
  'fork-origin': {
    key: keys.snapshotKey('acme', 'run-1', 0, DIGEST),
    is: `t/acme/s/run-1/snap/0000000000000000-${DIGEST}`,
  },
  tile: {
    key: keys.tileKey('acme', 'run-1', { level: 1, index: 1234, width: 12 }),
    is: 't/acme/s/run-1/tile/1/x001/234.p/12',
  },
  chunk: { key: keys.chunkKey('acme', DIGEST), is: `t/acme/chunks/${DIGEST}` },
  'chunk-gc-list': {
    key: keys.chunkGcListKey('acme', 3, 99),
    is: 't/acme/chunkgc/0000000000000003-0000000000000099',
  },
  'witness-object': {
    key: keys.witnessObjectKey('acme', 5, 'run-a'),
    is: 'w/acme/0000000000000005-run-a.json',
  },
};

const kindOf = (name: string) => STORAGE_KINDS.find((k) => k.name === name);

describe('storage kinds', () => {
  it('builds every kind’s keys byte for byte as before, and classifies them as that kind', () => {
    expect(Object.keys(SAMPLES).sort()).toEqual(STORAGE_KINDS.map((k) => k.name).sort());
    for (const [name, { key, is }] of Object.entries(SAMPLES)) {
      expect(key, name).toEqual(is);
      const kind = kindOf(name);
      const claimed =
        typeof key === 'string'
          ? STORAGE_KINDS.filter((k) => k.store !== 'records' && k.matches(key as never))
          : STORAGE_KINDS.filter((k) => k.store === 'records' && k.matches(key as never));
      expect(
        claimed.map((k) => k.name),
        `${name}: claimed by exactly its kind`,
      ).toEqual([name]);
      const found =
        typeof key === 'string'
          ? classifyObjectKey(key, kind?.store === 'witness' ? 'witness' : 'objects')
          : classifyRecordKey(key);
      expect(found?.name, name).toBe(name);
    }
    // The other segment key forms.
    expect(classifyObjectKey(keys.mergedSegmentKey('acme', 'run-1', 3, 9))?.name).toBe('segment');
    expect(keys.parseSegmentKey(keys.mergedSegmentKey('acme', 'r', 3, 9))).toEqual({
      firstSeq: 3,
      lastSeq: 9,
    });
    expect(keys.firstSeqOfKey(keys.segmentKey('acme', 'r', 3))).toBe(3);
  });

  it('claims no key of a kind nobody registered', () => {
    expect(
      classifyRecordKey({ pk: keys.streamPk('acme', 'run-1'), sk: 'newkind#1' }),
    ).toBeUndefined();
    expect(classifyRecordKey({ pk: 't#acme#newthing', sk: 'x' })).toBeUndefined();
    expect(classifyObjectKey('t/acme/s/run-1/newthing/1')).toBeUndefined();
    expect(classifyObjectKey('w/acme/0000000000000005-run-a.json')).toBeUndefined(); // not a data object
  });

  it('says, for each kind, what detects its tampering or what it does', () => {
    expect(new Set(STORAGE_KINDS.map((k) => k.name)).size).toBe(STORAGE_KINDS.length);
    for (const kind of STORAGE_KINDS) {
      if (kind.class === 'chain-bound') {
        expect(kind.tamper ?? kind.limit, `${kind.name}: detectors or a limit`).toBeDefined();
        if (kind.tamper) expect(Object.keys(kind.tamper).sort()).toEqual([...MUTATIONS].sort());
        expect(kind.outcome, kind.name).toBeUndefined();
      } else {
        expect(kind.outcome, `${kind.name}: its outcome`).toBeTruthy();
        expect(kind.tamper, kind.name).toBeUndefined();
      }
    }
    // A read the matrix exempts is the subject of a documented limit.
    for (const owner of Object.values(LIMITED_READS)) expect(kindOf(owner)?.limit).toBeTruthy();
  });

  describe('docs/ledger-format.md, "Storage kinds and the tamper matrix"', () => {
    const doc = readFileSync(new URL('../../docs/ledger-format.md', import.meta.url), 'utf8');
    const start = doc.indexOf('\n## Storage kinds and the tamper matrix\n');
    const section = doc.slice(start, doc.indexOf('\n## ', start + 1));
    const bullets = (after: string) => {
      const from = section.indexOf(after);
      expect(from, after).toBeGreaterThan(0);
      const lines = section.slice(from + after.length).split('\n');
      const first = lines.findIndex((l) => l.startsWith('- '));
      const out: string[] = [];
      for (const l of lines.slice(first)) {
        if (!l.startsWith('- ')) break;
        out.push(l.slice(2));
      }
      return out;
    };

    it('tabulates every kind as the module says', () => {
      const rows = tableRows(section).filter((r) => !r.every((c) => /^-+$/.test(c)));
      expect(rows).toEqual([CHAIN_BOUND_HEADER, ...chainBoundRows(), SIDE_HEADER, ...sideRows()]);
      expect(bullets('\nNotes:\n')).toEqual(noteLines());
    });

    it('lists exactly the documented limits of the module', () => {
      expect(bullets('Documented limits')).toEqual(limitLines());
    });

    it('states that API keys are authority: whoever can write the table can mint keys', () => {
      expect(section.replace(/\s+/g, ' ')).toContain('whoever can write the table can mint keys');
      expect(STORAGE_KINDS.filter((k) => k.class === 'authority').map((k) => k.name)).toEqual([
        'api-key',
        'bootstrap',
      ]);
    });
  });

  it('reports a stored record and object of a kind nobody registered', () => {
    const planted = {
      records: new Map([
        ['a', { pk: keys.streamPk('acme', 'run-1'), sk: 'newkind#1' }],
        ['b', { ...keys.headKey('acme', 'run-1') }],
      ]),
      objects: new Map([
        ['t/acme/s/run-1/newthing/1', new Uint8Array()],
        [keys.segmentKey('acme', 'run-1', 1), new Uint8Array()],
      ]),
      etags: new Map(),
      witness: [],
    };
    expect(unclassified(planted)).toEqual([
      `${keys.streamPk('acme', 'run-1')}\u0000newkind#1`,
      't/acme/s/run-1/newthing/1',
    ]);
  });
});
