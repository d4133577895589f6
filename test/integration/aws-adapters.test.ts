import { S3ServiceException } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoRecordStore } from '../../shared/adapters/aws/dynamo-record-store.js';
import { S3ObjectStore } from '../../shared/adapters/aws/s3-object-store.js';
import { ConflictError } from '../../shared/domain/errors.js';
import { scriptedFaults } from '../../shared/ports/faults.js';
import type { TransactOp } from '../../shared/ports/record-store.js';
import {
  createTestBucket,
  createTestTable,
  hasAwsEmulators,
  makeDynamoClient,
  makeS3Client,
  type TestResource,
} from '../support/aws.js';

/**
 * What the contract suites cannot see from outside: request counts, AWS answers the emulators
 * do not give, and the SDK's own retries. Runs on the emulators; skipped without them.
 */

type Handler = (args: {
  request: { method: string; headers: Record<string, string> };
}) => Promise<unknown>;
type Stack = { add(mw: (next: Handler) => Handler, options: object): void };

/**
 * Records every attempt the client makes (also those an injected fault stops before the
 * wire), and lets a test answer a request itself.
 */
const watch = (client: { middlewareStack: object }, intercept?: Handler) => {
  const requests: string[] = [];
  (client.middlewareStack as Stack).add(
    (next) => async (args) => {
      const { method, headers } = args.request;
      requests.push(headers['x-amz-target']?.replace('DynamoDB_20120810.', '') ?? method);
      return (intercept && (await intercept(args))) ?? next(args);
    },
    { step: 'finalizeRequest', priority: 'low', name: 'watchRequests' },
  );
  return requests;
};

describe.skipIf(!hasAwsEmulators())('S3ObjectStore on an S3 emulator', () => {
  let bucket: TestResource;
  let tests = 0;
  beforeAll(async () => {
    bucket = await createTestBucket();
  });
  afterAll(async () => {
    await bucket?.cleanup();
  });
  const open = (intercept?: Handler) => {
    const client = makeS3Client();
    const requests = watch(client, intercept);
    const store = new S3ObjectStore({ client, bucket: bucket.name, prefix: `x-${++tests}/` });
    return { store, requests };
  };
  const bytes = (s: string) => new TextEncoder().encode(s);

  it('creates an object with a single PUT', async () => {
    const { store, requests } = open();
    await store.putIfAbsent('seg/1', bytes('one'));
    expect(requests).toEqual(['PUT']);
  });

  it('accepts an etag in quotes, as S3 sends it in headers', async () => {
    const { store } = open();
    const first = await store.putIfAbsent('q', bytes('v1'));
    expect(first.etag).not.toMatch(/"/);
    const second = await store.putIfMatch('q', bytes('v2'), `"${first.etag}"`);
    expect(second.created).toBe(true);
  });

  it("reads AWS's 404 to If-Match on a missing key as a conflict with nothing stored", async () => {
    const { store } = open(async ({ request }) => {
      if (request.method !== 'PUT' || request.headers['if-match'] === undefined) return undefined;
      throw new S3ServiceException({
        name: 'NoSuchKey',
        $fault: 'client',
        $metadata: { httpStatusCode: 404 },
        message: 'The specified key does not exist.',
      });
    });
    const err = await store.putIfMatch('absent', bytes('v'), 'abc').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).current).toBeUndefined();
  });
});

describe.skipIf(!hasAwsEmulators())('DynamoRecordStore on DynamoDB Local', () => {
  let table: TestResource;
  beforeAll(async () => {
    table = await createTestTable();
  });
  afterAll(async () => {
    await table?.cleanup();
  });
  const append = (pk: string, seq: number, token: string): TransactOp[] => [
    {
      kind: 'update',
      key: { pk, sk: 'head' },
      update: { set: { seq: seq + 1 } },
      conditions: [{ op: 'eq', attr: 'seq', value: seq }],
    },
    { kind: 'put', item: { pk, sk: `idem#${seq + 1}`, token }, conditions: [{ op: 'notExists' }] },
  ];

  it('writes a transaction with a single TransactWriteItems request', async () => {
    const client = makeDynamoClient();
    const requests = watch(client);
    const store = new DynamoRecordStore({ client, table: table.name });
    await store.put({ pk: 'one', sk: 'head', seq: 0 });
    requests.length = 0;
    await store.transact(append('one', 0, 't'));
    expect(requests).toEqual(['TransactWriteItems']);
  });

  it("sees its own write when the SDK's retry follows a lost reply", async () => {
    const client = makeDynamoClient({ maxAttempts: 2 });
    const requests = watch(client);
    const faults = scriptedFaults([{ op: 'put', fault: 'reply-lost' }]);
    const store = new DynamoRecordStore({
      client,
      table: table.name,
      faults,
      retry: { maxAttempts: 1 },
    });
    await store.put({ pk: 'sdk', sk: 'idem', v: 1 }, { conditions: [{ op: 'notExists' }] });
    expect(requests).toEqual(['PutItem', 'PutItem']);
  });

  describe('a transaction retried after an unknown outcome (503)', () => {
    /**
     * The injected 503 stops the first attempt; during the backoff another call writes
     * `meanwhile`, standing in for a 503'd write that had in fact landed.
     */
    const retriedAfter503 = (meanwhile: TransactOp[]) => {
      const client = makeDynamoClient();
      const requests = watch(client);
      const other = new DynamoRecordStore({ client: makeDynamoClient(), table: table.name });
      const store = new DynamoRecordStore({
        client,
        table: table.name,
        faults: scriptedFaults([{ op: 'transact', fault: 'unavailable' }]),
        retry: { sleep: () => other.transact(meanwhile) },
      });
      return { store, requests };
    };

    it('succeeds when it finds every write in place', async () => {
      const { store, requests } = retriedAfter503(append('found', 0, 'mine'));
      await store.put({ pk: 'found', sk: 'head', seq: 0 });
      await store.transact(append('found', 0, 'mine'));
      expect(requests.slice(1)).toEqual([
        'TransactWriteItems',
        'TransactWriteItems',
        'TransactGetItems',
      ]);
    });

    it('reports the conflict when another writer got there first', async () => {
      const { store } = retriedAfter503(append('lost', 0, 'theirs'));
      await store.put({ pk: 'lost', sk: 'head', seq: 0 });
      const err = await store.transact(append('lost', 0, 'mine')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConflictError);
      expect((err as ConflictError).index).toBe(0);
      expect((err as ConflictError).current).toEqual({ pk: 'lost', sk: 'head', seq: 1 });
    });
  });
});
