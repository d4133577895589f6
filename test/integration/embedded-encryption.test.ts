import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEmbedded } from '../../functions/wiring/embedded.js';
import { runCompaction } from '../../functions/wiring/run-compaction.js';
import { LocalKeyStore } from '../../shared/adapters/local/local-key-store.js';
import { openLocalStores } from '../../shared/adapters/local/local-stores.js';
import { snapshotIndexKey } from '../../shared/chain/storage-keys.js';
import { StreamKeyring } from '../../shared/chain/stream-keyring.js';
import { parseSettings } from '../../shared/config/settings.js';
import { DELTA_EVENT } from '../../shared/domain/state.js';
import { digestV2, EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { systemClock } from '../../shared/ports/clock.js';

/**
 * The embedded server with HEFESTO_KEY_STORE (docs/privacy.md): an event's marker payload,
 * appended and read back over HTTP, is in no byte of the data directory (objects.sqlite,
 * records.sqlite and their WAL files, read as raw files); the key store is its own file,
 * mode 0600, outside the data directory; the same data directory served without the key
 * store verifies (/verify ok) and refuses the payload (503 ErrUnavailable).
 */

const MARKER = 'marker-embedded-5d21e0';
const ROOT = 'root-key-for-the-encryption-test';
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)],
  );

/**
 * A file's bytes; none for one the closing writer threads removed after it was listed (an
 * `-shm` or `-wal` file: SQLite moves the WAL's pages into the database file, read too).
 */
const bytesOf = (file: string): Buffer => {
  try {
    return readFileSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0);
    throw err;
  }
};

describe('embedded server with a key store', () => {
  it('stores no byte of the payload in the data directory, and reads it back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hefesto-enc-'));
    dirs.push(dir);
    const dataDir = join(dir, 'data');
    const keyStore = join(dir, 'keys', 'kek.sqlite');
    const env = {
      HEFESTO_DATA_DIR: dataDir,
      HEFESTO_LOG_LEVEL: 'silent',
      HEFESTO_COMPACT_INTERVAL_MS: '0',
      HEFESTO_API_KEY: ROOT,
    };
    const keyed = createEmbedded(parseSettings({ ...env, HEFESTO_KEY_STORE: keyStore }));
    await keyed.ready;
    const call = (e: typeof keyed, path: string, key: string, body?: unknown) =>
      e.fetch(
        new Request(`http://x${path}`, {
          method: body === undefined ? 'GET' : 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        }),
      );
    const issued = await call(keyed, '/v1/keys', ROOT, {
      tenant: 'acme',
      scopes: ['read', 'write', 'admin'],
    });
    expect(issued.status).toBe(201);
    const { key } = (await issued.json()) as { key: string };
    const append = await call(keyed, '/v1/streams/run-1/events', key, {
      events: [{ type: 'user.message', payload: { text: MARKER } }],
    });
    expect(append.status).toBe(201);
    const read = await call(keyed, '/v1/streams/run-1/events', key);
    const page = (await read.json()) as { events: Array<{ payload: unknown; format?: number }> };
    expect(page.events[0]).toMatchObject({ payload: { text: MARKER }, format: 2 });
    // a checkpoint's pending write holding the marker: its value sealed in its record
    const label = '1ef4f797-8335-6428-8001-8a1503f9b875';
    const ckpt = await call(keyed, '/v1/streams/run-2/checkpoints', key, {
      ops: [{ op: 'set', path: '/step', value: 1 }],
      baseDigest: EMPTY_STATE_DIGEST_V2,
      label,
    });
    expect(ckpt.status).toBe(201);
    const writesPath = `/v1/streams/run-2/checkpoints/${label}/writes`;
    const write = { idx: 0, channel: 'messages', value: { text: MARKER } };
    const put = await call(keyed, writesPath, key, { taskId: 't-1', writes: [write] });
    expect(put.status).toBeLessThan(300);
    const writes = await call(keyed, writesPath, key);
    expect(await writes.json()).toMatchObject({ writes: [write] });
    keyed.close();

    const files = filesUnder(dataDir);
    expect(files.some((f) => f.endsWith('objects.sqlite'))).toBe(true);
    for (const f of files) expect(bytesOf(f).includes(Buffer.from(MARKER)), f).toBe(false);
    expect(statSync(keyStore).mode & 0o777).toBe(0o600);

    // the same data directory, served without the key store
    const blind = createEmbedded(parseSettings(env));
    await blind.ready;
    try {
      const verify = await call(blind, '/v1/streams/run-1/verify', key);
      expect(verify.status).toBe(200);
      expect(await verify.json()).toMatchObject({ ok: true, seq: 1 });
      const refused = await call(blind, '/v1/streams/run-1/events', key);
      expect(refused.status).toBe(503);
      expect(await refused.json()).toMatchObject({ code: 'ErrUnavailable' });
      const writes = await call(blind, `/v1/streams/run-2/checkpoints/${label}/writes`, key);
      expect(writes.status).toBe(503);
      expect((await call(blind, '/v1/streams/run-2/verify', key)).status).toBe(200);
    } finally {
      blind.close();
    }
  });

  it('hefesto compact opens the key store: it writes the base snapshot of a sealed stream', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hefesto-enc-'));
    dirs.push(dir);
    const dataDir = join(dir, 'data');
    const keyStorePath = join(dir, 'keys', 'kek.sqlite');
    const stores = openLocalStores(dataDir);
    const keyStore = new LocalKeyStore(keyStorePath);
    try {
      const keyring = new StreamKeyring(stores.records, keyStore);
      const ledger = new Ledger({ ...stores, clock: systemClock, keyring }, { snapshotEvery: 3 });
      // Deltas appended without the checkpointer: the base at seq 3 is left to the compactor.
      let digest = EMPTY_STATE_DIGEST_V2;
      for (let n = 1; n <= 3; n++) {
        const stateDigest = digestV2({ n });
        const ops = [{ op: 'set', path: '/n', value: n }];
        const events = [{ type: DELTA_EVENT, payload: { ops, baseDigest: digest, stateDigest } }];
        await ledger.appender.append({ tenant: 'acme', stream: 'run-1', events });
        digest = stateDigest;
      }
    } finally {
      keyStore.close();
      stores.records.close();
      stores.objects.close();
    }
    const report = await runCompaction(
      parseSettings({
        HEFESTO_DATA_DIR: dataDir,
        HEFESTO_KEY_STORE: keyStorePath,
        HEFESTO_SNAPSHOT_EVERY: '3',
        HEFESTO_LOG_LEVEL: 'silent',
      }),
    );
    expect(report).toMatchObject({ errors: 0, snapshotsWritten: 1 });
    const reopened = openLocalStores(dataDir);
    try {
      expect(await reopened.records.get(snapshotIndexKey('acme', 'run-1', 3))).toBeDefined();
    } finally {
      reopened.records.close();
      reopened.objects.close();
    }
  });
});
