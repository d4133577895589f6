import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAdaptorServer } from '@hono/node-server';
import { pino } from 'pino';
import { createAwsApp } from '../../functions/wiring/aws.js';
import { startServer } from '../../scripts/lib/server-process.js';
import { MemoryObjectStore } from '../../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../../shared/adapters/memory/memory-record-store.js';
import { parseAwsSettings } from '../../shared/config/settings.js';
import { createApp } from '../../shared/http/app.js';
import { KeyService } from '../../shared/keys/keys.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { createTestBucket, createTestTable, hasAwsEmulators } from '../support/aws.js';

/**
 * The servers the LangGraph tests run the saver against: the embedded server (files +
 * SQLite, its own process) and the API on the AWS adapters (S3 on radosgw, DynamoDB Local,
 * endpoints from scripts/with-aws.sh's environment), served in this process on port 0; and,
 * for the suites that cover every adapter, the API on the memory adapters.
 * Each answers a base URL and a stop that removes what it made.
 */

export const ROOT = 'root-key-for-langgraph-tests-0123456789abcdef';

export interface Backend {
  url: string;
  stop(): Promise<void>;
}

export interface BackendKind {
  /** Part of the validation suite's checkpointer name: keeps the two runs apart. */
  name: 'embedded' | 'AWS emulators' | 'memory';
  available: boolean;
  start(): Promise<Backend>;
}

export const embedded: BackendKind = {
  name: 'embedded',
  available: true,
  async start() {
    const dataDir = mkdtempSync(join(tmpdir(), 'hefesto-lg-'));
    const server = await startServer({ HEFESTO_DATA_DIR: dataDir, HEFESTO_API_KEY: ROOT });
    return {
      url: server.url,
      async stop() {
        server.child.kill('SIGKILL');
        await server.exited;
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  },
};

export const aws: BackendKind = {
  name: 'AWS emulators',
  available: hasAwsEmulators(),
  async start() {
    const [bucket, table] = await Promise.all([createTestBucket(), createTestTable()]);
    const settings = parseAwsSettings({
      ...process.env,
      HEFESTO_BUCKET: bucket.name,
      HEFESTO_TABLE: table.name,
      HEFESTO_API_KEY: ROOT,
      HEFESTO_LOG_LEVEL: process.env.HEFESTO_LG_LOG_LEVEL ?? 'silent',
    });
    const app = createAwsApp(settings);
    const server = createAdaptorServer({ fetch: app.fetch }) as Server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    return {
      url: `http://127.0.0.1:${port}`,
      async stop() {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
        await Promise.all([bucket.cleanup(), table.cleanup()]);
      },
    };
  },
};

/** The API on the memory adapters, in this process on port 0 (suites that cover all three). */
export const memory: BackendKind = {
  name: 'memory',
  available: true,
  async start() {
    const clock = { now: () => Date.now() };
    const records = new MemoryRecordStore({ clock });
    const ledger = new Ledger({ objects: new MemoryObjectStore(), records, clock });
    const keys = new KeyService({ records, clock, rootKey: ROOT });
    const app = createApp({ ledger, keys, logger: pino({ level: 'silent' }), clock });
    const server = createAdaptorServer({ fetch: app.fetch }) as Server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    return {
      url: `http://127.0.0.1:${port}`,
      async stop() {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      },
    };
  },
};

export const backends: BackendKind[] = [embedded, aws];
