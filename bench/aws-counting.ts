import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { pino } from 'pino';
import { DynamoRecordStore } from '../shared/adapters/aws/dynamo-record-store.js';
import { S3ObjectStore } from '../shared/adapters/aws/s3-object-store.js';
import { createApp } from '../shared/http/app.js';
import { KeyService } from '../shared/keys/keys.js';
import { Ledger } from '../shared/ledger/ledger.js';
import { systemClock } from '../shared/ports/clock.js';
import { createTestBucket, createTestTable, hasAwsEmulators } from '../test/support/aws.js';

/** Requests counted by SDK command name ("S3 PutObjectCommand", "DynamoDB GetItemCommand"). */
export type Counts = Record<string, number>;

type Next = (args: unknown) => Promise<unknown>;
interface HandlerContext {
  clientName?: string;
  commandName?: string;
}

/** Adds a middleware that counts every command the client sends into `counts`. */
export const counted = <C extends S3Client | DynamoDBClient>(client: C, counts: Counts): C => {
  const middleware = (next: Next, context: HandlerContext) => (args: unknown) => {
    const name = `${context.clientName?.replace('Client', '') ?? '?'} ${context.commandName ?? '?'}`;
    counts[name] = (counts[name] ?? 0) + 1;
    return next(args);
  };
  (client.middlewareStack as S3Client['middlewareStack']).add(middleware as never, {
    step: 'initialize',
    name: 'hefestoBenchCounter',
  });
  return client;
};

/**
 * The HTTP app on S3 + DynamoDB (a fresh bucket and table on the emulators) with every SDK
 * command counted into `counts`. Undefined when no emulator endpoints are configured.
 */
export const countingAwsApp = async (rootKey: string) => {
  if (!hasAwsEmulators()) return undefined;
  const bucket = await createTestBucket();
  const table = await createTestTable();
  const counts: Counts = {};
  const s3 = counted(new S3Client({ forcePathStyle: true, maxAttempts: 1 }), counts);
  const dynamo = counted(new DynamoDBClient({ maxAttempts: 1 }), counts);
  const objects = new S3ObjectStore({ client: s3, bucket: bucket.name });
  const records = new DynamoRecordStore({ client: dynamo, table: table.name });
  const ledger = new Ledger({ objects, records, clock: systemClock });
  const keys = new KeyService({ records, clock: systemClock, rootKey });
  const app = createApp({ ledger, keys, logger: pino({ level: 'silent' }), clock: systemClock });
  return {
    app,
    counts,
    cleanup: () => Promise.all([bucket.cleanup(), table.cleanup()]),
  };
};
