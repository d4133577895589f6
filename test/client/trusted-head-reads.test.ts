import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HefestoClient } from '../../shared/client/client.js';
import { resume } from '../../shared/client/harness.js';
import { TamperedHistoryError } from '../../shared/client/proofs.js';
import { FileTrustStore } from '../../shared/client/trust-store-file.js';
import { backupStream, proofsApp, restoreStream } from '../support/proofs-app.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Issue 20 item 4: with `verify: true` and a trust file holding a signed head of size 60, the
 * verified reads other than readEvents (getState, getVerifiedValue, verifyLocally) and the
 * harness's resume() check the server against that head, from a new process that shares only
 * the trust file: a history truncated to 40, or rewritten after 40 (every hash linking, a
 * valid tree), is refused with TamperedHistoryError.
 */

/** Writes whose receipts are checked and whose trust file is fsynced: slow on the emulators. */
const SLOW = 120_000;
const notes = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({ type: 'note', payload: { tag, i } }));

describe.each(allStores.filter((f) => f.enabled))('verified reads on $name', (factory) => {
  let stores: StorePair;
  let dir: string;
  let world: ReturnType<typeof proofsApp>;
  beforeEach(async () => {
    stores = await factory.make();
    dir = mkdtempSync(join(tmpdir(), 'hefesto-trust-reads-'));
    world = proofsApp(stores);
  });
  afterEach(async () => {
    await stores.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  const trustFile = () => new FileTrustStore(join(dir, 'trusted-heads.json'));
  const verifying = () => world.client({ verify: true, trustStore: trustFile() });

  const turns = async (client: HefestoClient, until: number) => {
    const run = await resume(client, 'run-1');
    while (run.turn <= until) {
      const reply = await run.observe('model', () => ({ text: `turn ${run.turn}` }));
      await run.checkpoint([{ op: 'set', path: `/turn${run.turn}`, value: reply }]);
    }
  };

  /**
   * 60 events written and read by a verifying client (turns of an observation and a
   * checkpoint, and batches of notes); the table backed up at seq 40.
   */
  const history = async () => {
    const c = verifying();
    await turns(c, 5); // seq 1..10
    await c.append('run-1', notes(30, 'a')); // 11..40
    const backup = await backupStream(stores, 'default', 'run-1');
    await turns(c, 10); // 41..50
    await c.append('run-1', notes(10, 'b')); // 51..60
    await c.readEvents('run-1', { limit: 1000 });
    const key = { baseUrl: 'http://hefesto.test', tenant: 'default', stream: 'run-1' };
    expect(await trustFile().get(key)).toMatchObject({ treeSize: 60 });
    return backup;
  };

  const truncateTo40 = async (backup: Awaited<ReturnType<typeof history>>) => {
    const later = Array.from({ length: 11 }, (_, i) => 41 + i); // one segment per write
    await restoreStream(stores, 'default', 'run-1', backup, later);
    expect((await world.client().getStream('run-1')).seq).toBe(40);
  };

  /** Every verified read a new process makes, each expected to refuse. */
  const reads = (c: HefestoClient) => ({
    getState: () => c.getState('run-1'),
    'getState at 30': () => c.getState('run-1', { at: 30 }),
    getVerifiedValue: () => c.getVerifiedValue('run-1', '/turn1'),
    verifyLocally: () => c.verifyLocally('run-1'),
    resume: () => resume(c, 'run-1'),
  });

  it(
    'passes every verified read of the honest history, from a new process',
    async () => {
      await history();
      const c = verifying();
      expect((await c.getState('run-1')).seq).toBe(60);
      expect(await c.getVerifiedValue('run-1', '/turn1')).toEqual({ text: 'turn 1' });
      expect(await c.verifyLocally('run-1')).toMatchObject({ ok: true, seq: 60 });
      expect((await resume(c, 'run-1')).turn).toBe(11);
    },
    SLOW,
  );

  it(
    'refuses a history truncated to 40 below a signed head of 60',
    async () => {
      await truncateTo40(await history());
      for (const [name, read] of Object.entries(reads(verifying()))) {
        const err = await read().then(
          () => new Error(`${name} accepted the truncated history`),
          (e: unknown) => e,
        );
        expect(err, name).toBeInstanceOf(TamperedHistoryError);
        expect(err, name).toMatchObject({ reason: 'truncated', trustedSize: 60, currentSize: 40 });
      }
    },
    SLOW,
  );

  it(
    'refuses a history rewritten after 40, although its chain and tree are valid',
    async () => {
      await truncateTo40(await history());
      const attacker = world.client(); // writes through the API: a valid chain and tree
      await attacker.append('run-1', notes(25, 'evil'));
      for (const [name, read] of Object.entries(reads(verifying()))) {
        const err = await read().then(
          () => new Error(`${name} accepted the rewritten history`),
          (e: unknown) => e,
        );
        expect(err, name).toBeInstanceOf(TamperedHistoryError);
        expect(err, name).toMatchObject({ reason: 'rewritten', trustedSize: 60, currentSize: 65 });
      }
      const key = { baseUrl: 'http://hefesto.test', tenant: 'default', stream: 'run-1' };
      expect(await trustFile().get(key)).toMatchObject({ treeSize: 60 });
    },
    SLOW,
  );
});
