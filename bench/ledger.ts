import { canonicalJson } from '../shared/domain/canonical.js';
import { genesisHash, sealBatch, sealEvent } from '../shared/domain/event.js';
import { sha256 } from '../shared/domain/hashing.js';
import { encodeSegment } from '../shared/domain/segment.js';
import { verifySegments } from '../shared/domain/verify.js';
import { fmt, measure, printTable } from './harness.js';

/**
 * Ledger core costs, CPU only (no I/O):
 * - encode + hash per appended event (canonical JSON, preimage, SHA-256) for 200 B and 4 KB
 *   payloads, against the DESIGN.md budget of 10 µs per 200 B event;
 * - verification throughput (decode + re-hash + linkage of whole segments) as a ratio of raw
 *   SHA-256 over the same event preimages, one digest per event, in the same run
 *   (target > 50%).
 */

/** A JSON payload whose canonical form is about `bytes` long. */
export const payloadOfSize = (bytes: number) => {
  const base = { role: 'assistant', turn: 7, tool: 'search', ok: true, text: '' };
  const overhead = canonicalJson(base).length;
  return { ...base, text: 'x'.repeat(Math.max(0, bytes - overhead)) };
};

export const runLedgerBench = () => {
  const genesis = genesisHash('bench', 'stream');
  const rows: Array<Record<string, string | number>> = [];
  for (const size of [200, 4096]) {
    const payload = payloadOfSize(size);
    let seq = 0;
    const perEvent = measure(`seal ${size} B`, () => {
      seq++;
      sealEvent(seq, 1_700_000_000_000, genesis, { type: 'observation', payload });
    });
    const preimage = sealEvent(1, 1_700_000_000_000, genesis, {
      type: 'observation',
      payload,
    }).preimage;
    const rawHash = measure(`sha256 ${preimage.length} B`, () => sha256(preimage));

    // Verification: 100 segments of 100 events each, decoded and verified from genesis.
    const bodies: Uint8Array[] = [];
    let head = { seq: 0, hash: genesis };
    const preimages: Uint8Array[] = [];
    for (let s = 0; s < 100; s++) {
      const events = sealBatch(
        head.seq,
        head.hash,
        1_700_000_000_000,
        Array(100).fill({ type: 'observation', payload }),
      );
      for (const e of events) preimages.push(e.preimage);
      bodies.push(
        encodeSegment(
          {
            tenant: 'bench',
            stream: 'stream',
            epoch: 0,
            idempotencyKey: null,
            requestDigest: null,
            createdAt: 0,
          },
          events,
        ),
      );
      const last = events.at(-1);
      if (last) head = { seq: last.seq, hash: last.hash };
    }
    const verify = measure(
      'verify 10k events',
      () => {
        const result = verifySegments('bench', 'stream', { seq: 0, hash: genesis }, bodies);
        if (!result.ok) throw new Error('bench chain failed verification');
      },
      { batches: 11, perBatch: 1, warmup: 2 },
    );
    const raw = measure(
      'raw sha256 10k preimages',
      () => {
        for (const p of preimages) sha256(p);
      },
      { batches: 11, perBatch: 1, warmup: 2 },
    );
    const bytes = preimages.reduce((n, p) => n + p.length, 0);
    rows.push({
      payload: `${size} B`,
      'encode+hash per event (median)': fmt(perEvent.medianUs),
      'raw SHA-256 of one preimage': fmt(rawHash.medianUs),
      'verify MB/s': (((bytes / verify.medianUs) * 1e6) / 2 ** 20).toFixed(0),
      'raw SHA-256 MB/s': (((bytes / raw.medianUs) * 1e6) / 2 ** 20).toFixed(0),
      'verify / raw': `${((raw.medianUs / verify.medianUs) * 100).toFixed(0)}%`,
      'verify per event': fmt(verify.medianUs / preimages.length),
    });
  }
  printTable(
    'Ledger core (CPU only; budget: < 10 µs per 200 B event, verify > 50% of raw SHA-256)',
    rows,
  );
  return rows;
};
