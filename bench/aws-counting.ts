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

/**
 * DynamoDB capacity as the emulator reports it (the counter asks for `ReturnConsumedCapacity:
 * TOTAL` on every command), and the actions inside transactions, which pricing counts apart:
 * DynamoDB Local reports no units for a transaction's ConditionCheck.
 */
export interface Capacity {
  readUnits: number;
  writeUnits: number;
  /** Put, Update and Delete actions inside TransactWriteItems. */
  transactWrites: number;
  /** ConditionCheck actions inside TransactWriteItems. */
  conditionChecks: number;
  /**
   * Every item a write command named (table and key) and how (transactional or not), for the
   * write units, which DynamoDB Local does not report right for a transaction's updates:
   * `writeUnitsOf` reads the items afterwards and prices them by size.
   */
  written: Array<{ table: string; key: Record<string, unknown>; transactional: boolean }>;
  /** Bytes of the objects PutObject sent (what inlining them into a record would add). */
  putBytes: number;
}

export const noCapacity = (): Capacity => ({
  readUnits: 0,
  writeUnits: 0,
  transactWrites: 0,
  conditionChecks: 0,
  written: [],
  putBytes: 0,
});

type Next = (args: { input: Record<string, unknown> }) => Promise<{ output: unknown }>;
interface HandlerContext {
  clientName?: string;
  commandName?: string;
}

const READS = new Set([
  'GetItemCommand',
  'QueryCommand',
  'ScanCommand',
  'BatchGetItemCommand',
  'TransactGetItemsCommand',
]);

const unitsOf = (consumed: unknown): number => {
  const list = Array.isArray(consumed) ? consumed : consumed === undefined ? [] : [consumed];
  return list.reduce(
    (sum, c) => sum + Number((c as { CapacityUnits?: number }).CapacityUnits ?? 0),
    0,
  );
};

const noteCapacity = (
  capacity: Capacity,
  command: string,
  input: Record<string, unknown>,
  output: unknown,
) => {
  const units = unitsOf((output as { ConsumedCapacity?: unknown }).ConsumedCapacity);
  if (READS.has(command)) capacity.readUnits += units;
  else capacity.writeUnits += units;
  const keyOf = (action: Record<string, unknown>) => {
    const item = action.Item as Record<string, unknown> | undefined;
    return item ? { pk: item.pk, sk: item.sk } : (action.Key as Record<string, unknown>);
  };
  if (['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand'].includes(command)) {
    capacity.written.push({
      table: input.TableName as string,
      key: keyOf(input),
      transactional: false,
    });
  }
  if (command !== 'TransactWriteItemsCommand') return;
  for (const item of (input.TransactItems ?? []) as Array<
    Record<string, Record<string, unknown>>
  >) {
    if ('ConditionCheck' in item) {
      capacity.conditionChecks++;
      continue;
    }
    capacity.transactWrites++;
    const action = (item.Put ?? item.Update ?? item.Delete) as Record<string, unknown>;
    capacity.written.push({
      table: action.TableName as string,
      key: keyOf(action),
      transactional: true,
    });
  }
};

/** DynamoDB's item size: attribute names plus values (numbers taken at their digits' length). */
export const itemBytes = (item: Record<string, unknown>): number => {
  const value = (v: Record<string, unknown>): number => {
    if (typeof v.S === 'string') return Buffer.byteLength(v.S);
    if (typeof v.N === 'string') return Math.ceil(v.N.length / 2) + 1;
    if (v.B instanceof Uint8Array) return v.B.length;
    if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
    if (Array.isArray(v.L)) return 3 + v.L.reduce((n: number, e) => n + 1 + value(e), 0);
    if (v.M && typeof v.M === 'object') return 3 + itemBytes(v.M as Record<string, unknown>);
    if (Array.isArray(v.SS))
      return v.SS.reduce((n: number, e: string) => n + Buffer.byteLength(e), 0);
    return 0;
  };
  return Object.entries(item).reduce(
    (n, [name, v]) => n + Buffer.byteLength(name) + value(v as Record<string, unknown>),
    0,
  );
};

/**
 * Adds a middleware that counts every command the client sends into `counts` and, for
 * DynamoDB, the capacity it consumed into `capacity`. The client stays the real SDK client,
 * sending every request to the real endpoint (the emulators).
 */
export const counted = <C extends S3Client | DynamoDBClient>(
  client: C,
  counts: Counts,
  capacity?: Capacity,
): C => {
  const middleware =
    (next: Next, context: HandlerContext) => async (args: { input: Record<string, unknown> }) => {
      const command = context.commandName ?? '?';
      const name = `${context.clientName?.replace('Client', '') ?? '?'} ${command}`;
      counts[name] = (counts[name] ?? 0) + 1;
      const dynamo = capacity !== undefined && context.clientName === 'DynamoDBClient';
      const body = args.input.Body;
      if (capacity && command === 'PutObjectCommand' && body instanceof Uint8Array) {
        capacity.putBytes += body.length;
      } else if (capacity && command === 'PutObjectCommand' && typeof body === 'string') {
        capacity.putBytes += Buffer.byteLength(body);
      }
      if (dynamo && args.input.ReturnConsumedCapacity === undefined) {
        args.input.ReturnConsumedCapacity = 'TOTAL';
      }
      const result = await next(args);
      if (dynamo) noteCapacity(capacity, command, args.input, result.output);
      return result;
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
