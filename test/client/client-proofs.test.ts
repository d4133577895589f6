import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { headKey } from '../../shared/chain/storage-keys.js';
import { ClientVerificationError } from '../../shared/client/errors.js';
import { TamperedHistoryError } from '../../shared/client/proofs.js';
import { MemoryTrustStore } from '../../shared/client/trust-store.js';
import { FileTrustStore } from '../../shared/client/trust-store-file.js';
import { backupStream, proofsApp, restoreStream } from '../support/proofs-app.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * A client with `verify: true` against a server whose table and bucket an attacker rewrote
 * (records and objects edited directly): it must refuse the truncated and the rewritten
 * history, also from a new process that shares only the trust file.
 */

const ev = (label: string, n = 1) =>
  Array.from({ length: n }, (_, i) => ({ type: 'observation', payload: { label, i } }));

describe.each(allStores.filter((f) => f.enabled))('verified client on $name', (factory) => {
  let stores: StorePair;
  let dir: string;
  let world: ReturnType<typeof proofsApp>;
  beforeEach(async () => {
    stores = await factory.make();
    dir = mkdtempSync(join(tmpdir(), 'hefesto-trust-'));
    world = proofsApp(stores);
  });
  afterEach(async () => {
    await stores.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  const trustFile = () => new FileTrustStore(join(dir, 'trusted-heads.json'));

  /** seq 1..3 then 4..5 appended; the records backed up at seq 3. */
  const history = async () => {
    const c = world.client({ verify: true, trustStore: trustFile() });
    await c.append('run-1', ev('a', 3));
    const backup = await backupStream(stores, 'default', 'run-1');
    await c.append('run-1', ev('b', 2));
    expect((await c.readEvents('run-1')).events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    return backup;
  };

  it('verifies receipts and reads, keeping the trusted head in its trust file', async () => {
    await history();
    const trusted = await trustFile().get({
      baseUrl: 'http://hefesto.test',
      tenant: 'default',
      stream: 'run-1',
    });
    expect(trusted).toMatchObject({ treeSize: 5 });
  });

  it('refuses a stream truncated below a signed head (head moved back, segments deleted)', async () => {
    const backup = await history();
    await restoreStream(stores, 'default', 'run-1', backup, [4]);
    // A new process: nothing in memory, only the trust file.
    const c = world.client({ verify: true, trustStore: trustFile() });
    const err = await c.readEvents('run-1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TamperedHistoryError);
    expect(err).toMatchObject({ code: 'ErrTamperedLedger', reason: 'truncated' });
    expect((err as Error).message).toContain('truncated below a signed head');
  });

  it('refuses a history rewritten after the truncation, although every hash links', async () => {
    const backup = await history();
    await restoreStream(stores, 'default', 'run-1', backup, [4]);
    const attacker = world.client(); // writes through the API: a valid chain and tree
    await attacker.append('run-1', ev('evil', 3));
    const c = world.client({ verify: true, trustStore: trustFile() });
    const err = await c.readEvents('run-1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TamperedHistoryError);
    expect(err).toMatchObject({ reason: 'rewritten', trustedSize: 5, currentSize: 6 });
    expect((err as Error).message).toContain('history rewritten since tree size 5');
    // Nor does an append's receipt pass, and the trusted head stays where it was.
    await expect(c.append('run-1', ev('more'))).rejects.toBeInstanceOf(TamperedHistoryError);
    const kept = await trustFile().get({
      baseUrl: 'http://hefesto.test',
      tenant: 'default',
      stream: 'run-1',
    });
    expect(kept?.treeSize).toBe(5);
  });

  it('refuses a receipt that is not what the server signed, or is for another stream', async () => {
    const forge = (mutate: (head: Record<string, unknown>) => void) =>
      (async (input: string | URL | Request, init?: RequestInit) => {
        const res = await world.fetch(input, init);
        if (init?.method !== 'POST') return res;
        const body = (await res.json()) as { treeHead: Record<string, unknown> };
        mutate(body.treeHead);
        return new Response(JSON.stringify(body), { status: res.status, headers: res.headers });
      }) as typeof fetch;
    const rooted = world.client({
      verify: true,
      trustStore: new MemoryTrustStore(),
      fetch: forge((h) => {
        h.rootHash = 'a'.repeat(64);
      }),
    });
    await expect(rooted.append('run-1', ev('x'))).rejects.toThrow(/bad tree head signature/);
    const elsewhere = world.client({
      verify: true,
      trustStore: new MemoryTrustStore(),
      fetch: forge((h) => {
        h.streamId = 'run-2';
      }),
    });
    await expect(elsewhere.append('run-1', ev('y'))).rejects.toBeInstanceOf(
      ClientVerificationError,
    );
  });

  it('refuses a stream whose tree vanished after it was trusted, and reads one never trusted', async () => {
    await history();
    await world.client().append('old', ev('o', 2));
    for (const stream of ['run-1', 'old']) {
      await stores.records.update(headKey('default', stream), {
        remove: ['treeBase', 'treeSize', 'frontier', 'treeHead', 'witPending'],
      });
    }
    const c = world.client({ verify: true, trustStore: trustFile() });
    expect((await c.readEvents('old')).events).toHaveLength(2);
    await expect(c.readEvents('run-1')).rejects.toThrow(/no tree for the stream/);
  });
});
