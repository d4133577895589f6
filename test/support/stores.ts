import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import Database from 'better-sqlite3';
import { DynamoRecordStore } from '../../shared/adapters/aws/dynamo-record-store.js';
import { S3ObjectStore } from '../../shared/adapters/aws/s3-object-store.js';
import { openLocalStores } from '../../shared/adapters/local/local-stores.js';
import { MemoryObjectStore } from '../../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../../shared/adapters/memory/memory-record-store.js';
import type { Clock } from '../../shared/ports/clock.js';
import type { ObjectStore } from '../../shared/ports/object-store.js';
import type { ItemKey, RecordStore } from '../../shared/ports/record-store.js';
import { hasAwsEmulators, lendTestStorage, makeDynamoClient, makeS3Client } from './aws.js';

/** A pair of stores for service-level suites, with a way to reach the raw bytes. */
export interface StorePair {
  objects: ObjectStore;
  records: RecordStore;
  /** Where a test can flip bytes behind the adapter's back. */
  tamper(key: string, mutate: (body: Uint8Array) => Uint8Array): Promise<void>;
  /**
   * The key of every record stored, read from the table itself (SQLite, a DynamoDB scan),
   * not through the port; absent on memory, whose map only the port reaches.
   */
  scanKeys?(): Promise<ItemKey[]>;
  cleanup(): Promise<void>;
}

export interface StoreFactory {
  name: string;
  enabled: boolean;
  /** `clock` decides when records expire (default: the system clock). */
  make(clock?: Clock): Promise<StorePair>;
}

/** Rewrites an object through the port itself (putIfMatch on its current etag). */
const tamperVia =
  (objects: ObjectStore) => async (key: string, mutate: (b: Uint8Array) => Uint8Array) => {
    const current = await objects.get(key);
    if (!current) throw new Error(`nothing to tamper at ${key}`);
    await objects.putIfMatch(key, mutate(Uint8Array.from(current.body)), current.etag);
  };

export const memoryStores: StoreFactory = {
  name: 'memory',
  enabled: true,
  make: async (clock) => {
    const objects = new MemoryObjectStore();
    return {
      objects,
      records: new MemoryRecordStore({ clock }),
      tamper: tamperVia(objects),
      cleanup: async () => {},
    };
  },
};

/**
 * `npm run test:quick` (HEFESTO_TEST_TIER=quick): the memory adapter only, for the edit loop;
 * `npm test` runs every adapter.
 */
export const quickTier = (env: NodeJS.ProcessEnv = process.env): boolean =>
  env.HEFESTO_TEST_TIER === 'quick';

export const localStores: StoreFactory = {
  name: 'local',
  enabled: !quickTier(),
  make: async (clock) => {
    const dir = mkdtempSync(join(tmpdir(), 'hefesto-svc-'));
    // As the embedded server opens them: one file (local-stores.ts).
    const { objects, records } = openLocalStores(join(dir, 'objects'), { clock });
    return {
      objects,
      records,
      tamper: tamperVia(objects),
      scanKeys: async () => {
        const db = new Database(objects.path, { readonly: true });
        try {
          return db.prepare<[], ItemKey>('SELECT pk, sk FROM items').all();
        } finally {
          db.close();
        }
      },
      cleanup: async () => {
        objects.close();
        records.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

export const awsStores: StoreFactory = {
  name: 'aws',
  enabled: hasAwsEmulators() && !quickTier(),
  make: async (clock) => {
    const s3 = makeS3Client({ maxAttempts: 3 });
    const dynamo = makeDynamoClient({ maxAttempts: 3 });
    // The file's bucket and table, empty (test/support/aws.ts): made once per file, not per test.
    const storage = await lendTestStorage();
    const objects = new S3ObjectStore({ client: s3, bucket: storage.bucket });
    return {
      objects,
      records: new DynamoRecordStore({ client: dynamo, table: storage.table, clock }),
      tamper: tamperVia(objects),
      scanKeys: async () => {
        const keys: ItemKey[] = [];
        let start: Record<string, unknown> | undefined;
        do {
          const page = await dynamo.send(
            new ScanCommand({
              TableName: storage.table,
              ProjectionExpression: 'pk, sk',
              ExclusiveStartKey: start as never,
            }),
          );
          for (const item of page.Items ?? []) {
            keys.push({ pk: String(item.pk?.S), sk: String(item.sk?.S) });
          }
          start = page.LastEvaluatedKey;
        } while (start !== undefined);
        return keys;
      },
      cleanup: async () => {
        await storage.giveBack();
        s3.destroy();
        dynamo.destroy();
      },
    };
  },
};

export const allStores: StoreFactory[] = [memoryStores, localStores, awsStores];
