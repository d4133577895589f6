import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { type ServerType, serve } from '@hono/node-server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../cli/main.js';
import { headKey, pad16, SEGMENT_INDEX_PREFIX, streamPk } from '../../shared/chain/storage-keys.js';
import { Compactor } from '../../shared/compaction/compactor.js';
import { signTreeHead } from '../../shared/domain/signed-head.js';
import type { Item } from '../../shared/ports/record-store.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import type { WitnessStore } from '../../shared/ports/witness-store.js';
import { WITNESS_FORMAT } from '../../shared/proofs/witness.js';
import { createHarness, events, type Harness, ROOT_KEY, STORE_FACTORIES } from '../http/harness.js';
import { hasAwsEmulators } from '../support/aws.js';
import { counterIds } from '../support/compaction.js';
import { makeWitness } from '../support/witness.js';

/**
 * `hefesto audit STREAM [--witness]` against a server whose records and objects the test
 * edits directly: a truncation (an old head restored, the later segments deleted) and a
 * rewrite (then new appends) are caught through the trust file, and with --witness through
 * the heads the compactor published, even by a machine that never trusted a head before.
 * Stores: memory (witness: an Object Lock bucket on the emulator when there is one, else a
 * directory) and local (witness: a directory).
 */

const sink = () => {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  return { stream, text: () => text };
};

const cases = STORE_FACTORIES.map((f) => ({
  factory: f,
  witnessKind: f.name === 'memory' && hasAwsEmulators() ? 'aws' : 'local',
}));

describe.each(cases)(
  'hefesto audit on $factory.name stores ($witnessKind witness)',
  ({ factory, witnessKind }) => {
    let h: Harness;
    let server: ServerType;
    let url: string;
    let dir: string;
    let witness: WitnessStore;
    let witnessArg: string;
    let cleanupWitness: () => Promise<void>;
    // The server signs with 'audit'; 'retired' is an older key it still publishes.
    const ring = new KeyRing(new FakeSigner('audit'), [new FakeSigner('retired').publicJwk]);

    const cli = async (args: string[], trustFile = join(dir, 'trust.json')) => {
      const out = sink();
      const err = sink();
      const code = await runCli(
        args,
        {
          HEFESTO_URL: url,
          HEFESTO_KEY: ROOT_KEY,
          HEFESTO_TRUST_FILE: trustFile,
          ...(process.env.AWS_ENDPOINT_URL_S3
            ? { AWS_ENDPOINT_URL_S3: process.env.AWS_ENDPOINT_URL_S3 }
            : {}),
          HEFESTO_S3_FORCE_PATH_STYLE: 'true',
        },
        { stdout: out.stream, stderr: err.stream },
      );
      return { code, stdout: out.text(), stderr: err.text() };
    };
    const append = async (stream: string, n: number) => {
      const res = await h.append(ROOT_KEY, stream, events(n));
      expect(res.status).toBe(201);
      h.advance(1000);
    };
    const publish = () =>
      new Compactor({
        objects: h.objects,
        records: h.records,
        clock: { now: () => h.now() },
        ids: counterIds('audit'),
        states: h.ledger.states,
        witness,
      }).run();
    /** An old table backup restored: the head as it was, the later segments gone. */
    const restore = async (stream: string, backup: Item) => {
      await h.records.put(backup);
      const page = await h.records.query(streamPk('default', stream), {
        skPrefix: SEGMENT_INDEX_PREFIX,
      });
      for (const item of page.items) {
        if (Number(item.firstSeq) > Number(backup.seq)) {
          await h.records.delete({ pk: item.pk, sk: item.sk });
          await h.objects.delete(String(item.objectKey));
        }
      }
    };

    beforeEach(async () => {
      dir = mkdtempSync(join(tmpdir(), 'hefesto-audit-'));
      h = createHarness(factory, { ledger: { signing: ring } });
      server = serve({ fetch: h.app.fetch, port: 0, hostname: '127.0.0.1' });
      await new Promise<void>((resolve) => server.once('listening', () => resolve()));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const w = await makeWitness(witnessKind);
      witness = w.witness;
      cleanupWitness = w.cleanup;
      witnessArg =
        witnessKind === 'aws'
          ? `s3://${(witness as unknown as { bucket?: string }).bucket ?? ''}`
          : (witness as unknown as { dir: string }).dir;
    });
    afterEach(async () => {
      await new Promise((resolve) => server.close(resolve));
      h.close();
      await cleanupWitness();
      rmSync(dir, { recursive: true, force: true });
    });

    it('audits a whole stream from genesis and keeps its head in the trust file', async () => {
      await append('run-1', 3);
      await append('run-1', 2);
      await append('other', 4);
      const first = await cli(['audit', 'run-1']);
      expect(first.stdout).toContain('ok run-1: tree size 5');
      expect(first.stdout).toContain('5 events: chain from genesis and tree rebuilt');
      expect(first.stdout).toContain('first signed head of the stream');
      expect(first.code).toBe(0);
      await append('run-1', 1);
      const second = await cli(['audit', 'run-1', '--json']);
      expect(second.code).toBe(0);
      expect(JSON.parse(second.stdout)).toMatchObject({ ok: true, events: 6, trustedBefore: 5 });
    });

    it('catches a truncated history, then a rewritten one, through the trust file', async () => {
      await append('run-1', 3);
      const backup = (await h.records.get(headKey('default', 'run-1'))) as Item;
      await append('run-1', 3);
      expect((await cli(['audit', 'run-1'])).code).toBe(0);
      await restore('run-1', backup);
      const truncated = await cli(['audit', 'run-1']);
      expect(truncated.stdout).toContain(
        'truncated below a signed head (signed tree size 6, now 3)',
      );
      expect(truncated.code).toBe(1);
      await append('run-1', 4);
      const rewritten = await cli(['audit', 'run-1']);
      expect(rewritten.stdout).toContain('history rewritten since tree size 6');
      expect(rewritten.code).toBe(1);
    });

    it('catches an event object rewritten in storage', async () => {
      await append('run-1', 3);
      const page = await h.records.query(streamPk('default', 'run-1'), {
        skPrefix: SEGMENT_INDEX_PREFIX,
      });
      const key = String(page.items[0]?.objectKey);
      const stored = await h.objects.get(key);
      if (!stored) throw new Error('no segment');
      const body = Uint8Array.from(stored.body);
      const at = body.length - 80; // inside the last event's record
      body[at] = (body[at] as number) ^ 0x01;
      await h.objects.putIfMatch(key, body, stored.etag);
      const bad = await cli(['audit', 'run-1']);
      expect(bad.code).toBe(1);
      expect(bad.stdout).toMatch(/^bad run-1: /);
    });

    it('--witness catches a rewrite after a restore of an old table backup, on a machine that trusted nothing', async () => {
      await append('run-1', 3);
      const backup = (await h.records.get(headKey('default', 'run-1'))) as Item;
      await append('run-1', 3);
      expect(await publish()).toMatchObject({ headsWitnessed: 1, witnessObjects: 1 });
      const fresh = await cli(['audit', 'run-1', '--witness', witnessArg], join(dir, 'a.json'));
      expect(fresh.code).toBe(0);
      expect(fresh.stdout).toMatch(
        /witness: 1 published heads consistent; newest tree size 6, published \d+\w ago/,
      );

      await restore('run-1', backup);
      await append('run-1', 5);
      // A new machine: no trust file, so only the witness knows the old history.
      const caught = await cli(['audit', 'run-1', '--witness', witnessArg], join(dir, 'b.json'));
      expect(caught.stdout).toContain('history rewritten since tree size 6');
      expect(caught.stdout).toContain('a head the witness published');
      expect(caught.code).toBe(1);
      // Without the witness the same machine would have trusted it (nothing to compare with).
      expect((await cli(['audit', 'run-1'], join(dir, 'c.json'))).code).toBe(0);
    });

    it('audits a pruned stream from its pruning point: chain from the first kept event, pages by inclusion', async () => {
      for (let i = 0; i < 6; i++) await append('run-1', 2);
      h.advance(86_400_000 * 2);
      await append('run-1', 3);
      await h.ledger.retention.set('default', 'run-1', { pruneAfterMs: 86_400_000 });
      for (let i = 0; i < 4; i++) {
        h.advance(3_600_000);
        await new Compactor({
          objects: h.objects,
          records: h.records,
          clock: { now: () => h.now() },
          ids: counterIds(`p${i}`),
          states: h.ledger.states,
        }).compactStream('default', 'run-1');
      }
      const pruned = await h.ledger.retention.get('default', 'run-1');
      expect(pruned.prunedSeq).toBeGreaterThan(0);
      const run = await cli(['audit', 'run-1', '--json']);
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({
        ok: true,
        fromGenesis: false,
        events: 15 - (pruned.prunedSeq ?? 0),
      });
    });

    it('--witness catches a truncation below a published head', async () => {
      await append('run-1', 2);
      const backup = (await h.records.get(headKey('default', 'run-1'))) as Item;
      await append('run-1', 2);
      await publish();
      await restore('run-1', backup);
      const caught = await cli(['audit', 'run-1', '--witness', witnessArg], join(dir, 'd.json'));
      expect(caught.stdout).toContain('truncated below a signed head (signed tree size 4, now 2)');
      expect(caught.code).toBe(1);
    });

    it('--witness that does not exist, or holds nothing, is an error, not "no published head yet"', async () => {
      await append('run-1', 3);
      const missing = await cli(['audit', 'run-1', '--witness', join(dir, 'no-such-witness')]);
      expect(missing.code).toBe(1);
      expect(missing.stdout).toBe('');
      expect(missing.stderr).toContain(
        `--witness ${join(dir, 'no-such-witness')}: no such directory`,
      );
      if (witnessKind === 'aws') {
        const bucket = `s3://hefesto-no-such-witness-${Date.now().toString(36)}`;
        const noBucket = await cli(['audit', 'run-1', '--witness', bucket]);
        expect(noBucket.code).toBe(1);
        expect(noBucket.stderr).toContain(`--witness ${bucket}: no such bucket`);
      }
      // The right place, before the compactor published anything there.
      const empty = await cli(['audit', 'run-1', '--witness', witnessArg]);
      expect(empty.code).toBe(1);
      expect(empty.stderr).toContain(
        `--witness ${witnessArg} holds no published head of tenant default`,
      );
      await publish();
      const published = await cli(['audit', 'run-1', '--witness', witnessArg]);
      expect(published.stdout).toContain('witness: 1 published heads consistent');
      expect(published.code).toBe(0);
    });

    it('--witness fails on a head signed by a key the server neither signs with nor retired', async () => {
      await append('run-1', 3);
      await publish(); // a head signed by the current key
      const res = await fetch(`${url}/v1/streams/run-1/tree-head`, {
        headers: { authorization: `Bearer ${ROOT_KEY}` },
      });
      const served = (await res.json()) as Parameters<typeof signTreeHead>[0];
      /** A witness object holding the served head signed by `signer`, as the compactor writes. */
      const publishSignedBy = async (signer: FakeSigner, runId: string) => {
        const head = signTreeHead(served, signer);
        const body = { format: WITNESS_FORMAT, tenant: 'default', publishedAt: h.now(), runId };
        const key = `w/default/${pad16(h.now())}-${runId}.json`;
        await witness.publish(key, Buffer.from(JSON.stringify({ ...body, heads: [head] })));
        h.advance(1000);
      };
      // Signed by a retired key (still published): checked like any other.
      await publishSignedBy(new FakeSigner('retired'), 'old-key');
      const retired = await cli(['audit', 'run-1', '--witness', witnessArg]);
      expect(retired.stdout).toContain('witness: 2 published heads consistent');
      expect(retired.code).toBe(0);
      // Signed by a key the server lost (or never had): the audit cannot check it, so fails.
      await publishSignedBy(new FakeSigner('lost'), 'lost-key');
      const lost = await cli(['audit', 'run-1', '--witness', witnessArg]);
      expect(lost.stdout).toMatch(/^bad run-1: .*a head the witness published \(w\/default\//);
      expect(lost.stdout).toContain(
        'is signed by key fake-lost, which the server neither signs with nor lists as retired',
      );
      expect(lost.stdout).not.toContain('witness: ignored');
      expect(lost.code).toBe(1);
    });
  },
);
