import { randomUUID } from 'node:crypto';
import {
  type AttributeValue,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactGetItemsCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { ConflictError } from '../../domain/errors.js';
import { type Clock, systemClock } from '../../ports/clock.js';
import { isExpired } from '../../ports/conditions.js';
import type { FaultInjector, StoreOp } from '../../ports/faults.js';
import {
  DEFAULT_QUERY_LIMIT,
  type Item,
  type ItemKey,
  type QueryOptions,
  type QueryPage,
  type RecordStore,
  type TransactOp,
  type UpdateSpec,
  type WriteOptions,
} from '../../ports/record-store.js';
import {
  checkConditions,
  checkItem,
  checkItemKey,
  checkTransaction,
  checkUpdate,
} from '../../ports/validate.js';
import { deleteApplied, putApplied, updateApplied } from '../already-applied.js';
import { type RetryOptions, withRetries } from '../retry.js';
import {
  cancellationReasons,
  failedConditionItem,
  faultError,
  isRetryable,
} from './dynamo-errors.js';
import {
  conditionExpression,
  ExpressionScope,
  keyAttrs,
  toAttrs,
  transactWriteItem,
  updateExpression,
} from './dynamo-expressions.js';
import {
  outcomeUnknown,
  type SdkCommand,
  SEND_OPTIONS,
  sdkAttempts,
  withFaults,
} from './transport.js';

export interface DynamoRecordStoreOptions {
  /**
   * The adapter retries on its own; a client built with `maxAttempts: 1` avoids multiplying
   * the SDK's retries by the adapter's.
   */
  client: DynamoDBClient;
  /** A table made by `createRecordTable` (or the CDK stack): pk/sk strings, TTL on `ttl`. */
  table: string;
  faults?: FaultInjector;
  retry?: RetryOptions;
  /** Decides which items have expired. Default: the system clock. */
  clock?: Clock;
}

const toItem = (attrs: Record<string, AttributeValue> | undefined): Item | undefined =>
  attrs === undefined ? undefined : (unmarshall(attrs) as Item);

/** The stored item a failed single-item condition saw, or undefined if `err` is another error. */
const conditionFailure = (err: unknown): { current: Item | undefined } | undefined => {
  const failed = failedConditionItem(err);
  return failed && { current: toItem(failed.item) };
};

const conflict = (message: string, current: Item | undefined, cause: unknown, index?: number) =>
  new ConflictError<Item>(message, current, index, { cause });

const byteOrder = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * RecordStore on DynamoDB. Conditions compile to ConditionExpressions; a failed one becomes a
 * `ConflictError` carrying the stored item.
 *
 * A retried write whose condition fails may be failing on its own earlier attempt (applied,
 * reply lost). Only when an earlier attempt's outcome is unknown (network error, timeout,
 * 5xx — ours or the SDK's) does the adapter check whether the write is in place; if so the
 * call succeeds. Transactions also carry one ClientRequestToken across attempts, so
 * DynamoDB itself answers a repeat of an applied transaction with success.
 *
 * @example
 * const records = new DynamoRecordStore({ client: new DynamoDBClient({}), table: 'hefesto' });
 * await records.put({ pk: 'run#1', sk: 'head', seq: 0 }, { conditions: [{ op: 'notExists' }] });
 */
export class DynamoRecordStore implements RecordStore {
  private readonly client: DynamoDBClient;
  private readonly table: string;
  private readonly faults: FaultInjector | undefined;
  private readonly retry: RetryOptions | undefined;
  private readonly clock: Clock;

  constructor(options: DynamoRecordStoreOptions) {
    this.client = options.client;
    this.table = options.table;
    this.faults = options.faults;
    this.retry = options.retry;
    this.clock = options.clock ?? systemClock;
  }

  async get(key: ItemKey): Promise<Item | undefined> {
    checkItemKey(key);
    return this.run('get', async () => {
      const out = await this.client.send(
        this.faulty(
          'get',
          new GetItemCommand({ TableName: this.table, Key: keyAttrs(key), ConsistentRead: true }),
        ),
        SEND_OPTIONS,
      );
      return this.visible(toItem(out.Item));
    });
  }

  async put(item: Item, options: WriteOptions = {}): Promise<void> {
    checkItem(item);
    checkConditions(options.conditions);
    const scope = new ExpressionScope();
    const input = {
      TableName: this.table,
      Item: toAttrs(item),
      ConditionExpression: conditionExpression(scope, options.conditions),
      ...scope.params(),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    };
    await this.run('put', async (mayBeApplied) => {
      try {
        await this.client.send(this.faulty('put', new PutItemCommand(input)), SEND_OPTIONS);
      } catch (err) {
        const failed = conditionFailure(err);
        if (!failed) throw err;
        if (mayBeApplied(err) && putApplied(failed.current, item)) return;
        throw conflict(`condition failed for put ${item.pk}/${item.sk}`, failed.current, err);
      }
    });
  }

  async update(key: ItemKey, update: UpdateSpec, options: WriteOptions = {}): Promise<Item> {
    checkItemKey(key);
    checkUpdate(update);
    checkConditions(options.conditions);
    const scope = new ExpressionScope();
    const input = {
      TableName: this.table,
      Key: keyAttrs(key),
      UpdateExpression: updateExpression(scope, update),
      ConditionExpression: conditionExpression(scope, options.conditions),
      ...scope.params(),
      ReturnValues: 'ALL_NEW' as const,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    };
    return this.run('update', async (mayBeApplied) => {
      try {
        const out = await this.client.send(
          this.faulty('update', new UpdateItemCommand(input)),
          SEND_OPTIONS,
        );
        return toItem(out.Attributes) ?? { pk: key.pk, sk: key.sk };
      } catch (err) {
        const failed = conditionFailure(err);
        if (!failed) throw err;
        if (failed.current && mayBeApplied(err) && updateApplied(failed.current, update)) {
          return failed.current;
        }
        throw conflict(`condition failed for update ${key.pk}/${key.sk}`, failed.current, err);
      }
    });
  }

  async delete(key: ItemKey, options: WriteOptions = {}): Promise<void> {
    checkItemKey(key);
    checkConditions(options.conditions);
    const scope = new ExpressionScope();
    const input = {
      TableName: this.table,
      Key: keyAttrs(key),
      ConditionExpression: conditionExpression(scope, options.conditions),
      ...scope.params(),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    };
    await this.run('delete', async (mayBeApplied) => {
      try {
        await this.client.send(this.faulty('delete', new DeleteItemCommand(input)), SEND_OPTIONS);
      } catch (err) {
        const failed = conditionFailure(err);
        if (!failed) throw err;
        if (mayBeApplied(err) && deleteApplied(failed.current)) return;
        throw conflict(`condition failed for delete ${key.pk}/${key.sk}`, failed.current, err);
      }
    });
  }

  async transact(ops: TransactOp[]): Promise<void> {
    checkTransaction(ops);
    const input = {
      TransactItems: ops.map((op) => transactWriteItem(this.table, op)),
      // One token for every attempt: DynamoDB answers a repeat of an applied call with success.
      ClientRequestToken: randomUUID(),
    };
    await this.run('transact', async (mayBeApplied) => {
      try {
        await this.client.send(
          this.faulty('transact', new TransactWriteItemsCommand(input)),
          SEND_OPTIONS,
        );
      } catch (err) {
        const reasons = cancellationReasons(err);
        const index = reasons.findIndex((r) => r.Code === 'ConditionalCheckFailed');
        if (index < 0) throw err;
        if (mayBeApplied(err) && (await this.transactionApplied(ops))) return;
        throw conflict(
          `transaction condition ${index} failed`,
          toItem(reasons[index]?.Item),
          err,
          index,
        );
      }
    });
  }

  async query(pk: string, options: QueryOptions = {}): Promise<QueryPage> {
    checkItemKey({ pk, sk: pk });
    const limit = options.limit ?? DEFAULT_QUERY_LIMIT;
    const prefix = options.skPrefix ?? '';
    let after = options.after;
    // DynamoDB refuses a start key outside the key condition. Keys with the prefix form one
    // interval: a start before it is no start at all, a start beyond it leaves nothing.
    if (after !== undefined && prefix !== '' && !after.startsWith(prefix)) {
      if (byteOrder(after, prefix) > 0) return { items: [] };
      after = undefined;
    }
    const scope = new ExpressionScope();
    const keyCondition = [
      `${scope.name('pk')} = ${scope.value(pk)}`,
      ...(prefix === '' ? [] : [`begins_with(${scope.name('sk')}, ${scope.value(prefix)})`]),
    ].join(' AND ');
    const input = {
      TableName: this.table,
      KeyConditionExpression: keyCondition,
      ...scope.params(),
      ExclusiveStartKey: after === undefined ? undefined : keyAttrs({ pk, sk: after }),
      // One more than asked: tells whether another page exists without an empty last page.
      Limit: limit + 1,
      ConsistentRead: true,
    };
    const out = await this.run('query', () =>
      this.client.send(this.faulty('query', new QueryCommand(input)), SEND_OPTIONS),
    );
    const read = (out.Items ?? []).map((attrs) => unmarshall(attrs) as Item);
    const page = read.slice(0, limit);
    const last = page.at(-1);
    const more = read.length > limit || out.LastEvaluatedKey !== undefined;
    const items = page.filter((item) => !isExpired(item, this.clock.now()));
    return more && last ? { items, next: last.sk } : { items };
  }

  /** Reads every touched key in one consistent snapshot: is each write of `ops` in place? */
  private async transactionApplied(ops: TransactOp[]): Promise<boolean> {
    const keys = ops.map((op) => (op.kind === 'put' ? op.item : op.key));
    const out = await this.client.send(
      new TransactGetItemsCommand({
        TransactItems: keys.map((key) => ({ Get: { TableName: this.table, Key: keyAttrs(key) } })),
      }),
      SEND_OPTIONS,
    );
    return ops.every((op, i) => {
      const current = toItem(out.Responses?.[i]?.Item);
      if (op.kind === 'put') return putApplied(current, op.item);
      if (op.kind === 'update') return updateApplied(current, op.update);
      if (op.kind === 'delete') return deleteApplied(current);
      return true;
    });
  }

  private visible(item: Item | undefined): Item | undefined {
    return item && !isExpired(item, this.clock.now()) ? item : undefined;
  }

  /**
   * Runs attempts with retries. Each attempt gets `mayBeApplied(err)`: whether an earlier
   * attempt of this call (the adapter's, or the SDK's own retries behind `err`) ended with
   * an unknown outcome, so that a failed condition may be this call's own write.
   */
  private run<T>(
    op: StoreOp,
    attempt: (mayBeApplied: (err: unknown) => boolean) => Promise<T>,
  ): Promise<T> {
    let unknown = false;
    const mayBeApplied = (err: unknown) => unknown || sdkAttempts(err) > 1;
    return withRetries(
      `DynamoDB ${op}`,
      () => attempt(mayBeApplied),
      (err) => {
        const retryable = isRetryable(err);
        if (retryable && outcomeUnknown(err)) unknown = true;
        return retryable;
      },
      this.retry,
    );
  }

  /** The command with this adapter's fault injection (per attempt) for `op`, if any. */
  private faulty<C extends SdkCommand>(op: StoreOp, command: C): C {
    return withFaults(command, op, this.faults, faultError(op));
  }
}

export { createRecordTable } from './dynamo-table.js';
