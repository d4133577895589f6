// The storage requests each API operation makes on S3 + DynamoDB, counted at the SDK (the
// real clients, sending to the emulators) on the Lambda function's own wiring
// (bench/aws-operations.ts). They are what an operation costs on AWS (docs/operations.md,
// "What an operation costs on AWS"): a change that adds a request fails here and has to say
// so by changing the pinned figure. Skipped without emulator endpoints.
import { beforeAll, describe, expect, it } from 'vitest';
import { measureOperations, type OperationUsage } from '../../bench/aws-operations.js';
import { hasAwsEmulators } from '../support/aws.js';

const GET = 'DynamoDB GetItemCommand';
const QUERY = 'DynamoDB QueryCommand';
const TX = 'DynamoDB TransactWriteItemsCommand';
const DELETE = 'DynamoDB DeleteItemCommand';
const S3_PUT = 'S3 PutObjectCommand';
const S3_GET = 'S3 GetObjectCommand';

/** Per operation: requests by command, then [transactional writes, condition checks]. */
const PINNED: Record<string, [Record<string, number>, [number, number]]> = {
  'append, first of a stream': [{ [GET]: 2, [QUERY]: 1, [TX]: 1, [S3_PUT]: 1 }, [5, 1]],
  'append (1 event)': [{ [GET]: 3, [TX]: 1, [S3_PUT]: 1 }, [3, 2]],
  'append (10 events)': [{ [GET]: 3, [TX]: 1, [S3_PUT]: 1 }, [3, 2]],
  'checkpoint (2 ops)': [{ [GET]: 3, [TX]: 1, [S3_PUT]: 1 }, [3, 2]],
  'checkpoint writing a base (every 25th)': [
    { [DELETE]: 1, [GET]: 3, [TX]: 3, [S3_PUT]: 3 },
    [7, 4],
  ],
  'state at the head (warm instance)': [{ [GET]: 6, [QUERY]: 2, [S3_GET]: 7 }, [0, 0]],
  'hydration at a base (cold instance, state at seq 25)': [
    { [GET]: 6, [QUERY]: 2, [S3_GET]: 3 },
    [0, 0],
  ],
  'hydration at base + 5 deltas (cold instance, seq 30)': [
    { [GET]: 6, [QUERY]: 2, [S3_GET]: 7 },
    [0, 0],
  ],
  'fork at a base (seq 25)': [{ [GET]: 9, [QUERY]: 5, [TX]: 2, [S3_GET]: 3, [S3_PUT]: 1 }, [6, 2]],
  'inclusion proof (seq 5 of 30)': [{ [GET]: 4, [QUERY]: 1 }, [0, 0]],
  'consistency proof (10 to 30)': [{ [GET]: 4, [QUERY]: 1 }, [0, 0]],
  'LangGraph putWrites (one task, one write)': [{ [GET]: 3, [TX]: 1 }, [1, 2]],
  'LangGraph put (one message appended)': [{ [GET]: 5, [QUERY]: 1, [TX]: 1, [S3_PUT]: 1 }, [6, 2]],
  'LangGraph getTuple (the tip this saver holds)': [{ [GET]: 6, [QUERY]: 2, [S3_GET]: 1 }, [0, 0]],
};

describe.skipIf(!hasAwsEmulators())('storage requests per operation on S3 + DynamoDB', () => {
  let usage: Map<string, OperationUsage>;
  beforeAll(async () => {
    const measured = await measureOperations();
    usage = new Map((measured?.operations ?? []).map((u) => [u.operation, u]));
  }, 120_000);

  it('measures every operation the cost table prices, each in one HTTP request', () => {
    expect([...usage.keys()].sort()).toEqual(Object.keys(PINNED).sort());
    for (const u of usage.values()) expect(u.httpRequests, u.operation).toBe(1);
  });

  for (const [operation, [requests, [transactWrites, conditionChecks]]] of Object.entries(PINNED)) {
    it(`${operation}: makes the pinned requests and no more`, () => {
      const u = usage.get(operation);
      expect(u?.requests).toEqual(requests);
      expect({ transactWrites: u?.transactWrites, conditionChecks: u?.conditionChecks }).toEqual({
        transactWrites,
        conditionChecks,
      });
    });
  }

  it('writes one appended batch as one S3 PUT and one DynamoDB transaction', () => {
    for (const op of ['append (1 event)', 'append (10 events)', 'checkpoint (2 ops)']) {
      expect(usage.get(op)?.requests[S3_PUT], op).toBe(1);
      expect(usage.get(op)?.requests[TX], op).toBe(1);
    }
  });

  it('logs one line per request, with no payload in it', () => {
    for (const u of usage.values()) {
      expect(u.logLines, u.operation).toBe(1);
      // The appended payloads hold 140 x's; a line that carried one would be longer.
      expect(u.logBytes, u.operation).toBeLessThan(300);
    }
  });
});
