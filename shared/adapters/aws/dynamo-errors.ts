import {
  type AttributeValue,
  type CancellationReason,
  DynamoDBServiceException,
  ProvisionedThroughputExceededException,
  TransactionCanceledException,
  TransactionConflictException,
} from '@aws-sdk/client-dynamodb';
import type { FaultKind, StoreOp } from '../../ports/faults.js';
import { errorName, httpStatus, isNetworkError } from './transport.js';

/**
 * DynamoDB's error shapes, in one place: which are worth another attempt, what a failed
 * condition carries, and the SDK-shaped errors the fault injector raises.
 */

const RETRYABLE_NAMES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'TransactionConflictException',
  'TransactionInProgressException',
]);
const RETRYABLE_REASONS = new Set([
  'TransactionConflict',
  'ThrottlingError',
  'ProvisionedThroughputExceeded',
]);

/** The per-operation reasons of a TransactionCanceledException (none for other errors). */
export const cancellationReasons = (err: unknown): CancellationReason[] =>
  errorName(err) === 'TransactionCanceledException'
    ? ((err as { CancellationReasons?: CancellationReason[] }).CancellationReasons ?? [])
    : [];

export const isRetryable = (err: unknown): boolean => {
  if (errorName(err) === 'TransactionCanceledException') {
    // Cancelled only for conflicts with other transactions or throttling: try again.
    const codes = cancellationReasons(err).map((r) => r.Code ?? 'None');
    return (
      codes.some((c) => RETRYABLE_REASONS.has(c)) &&
      codes.every((c) => c === 'None' || RETRYABLE_REASONS.has(c))
    );
  }
  return (
    RETRYABLE_NAMES.has(errorName(err) ?? '') ||
    (httpStatus(err) ?? 0) >= 500 ||
    isNetworkError(err)
  );
};

/**
 * The stored item a failed single-item condition saw (ReturnValuesOnConditionCheckFailure:
 * ALL_OLD), or undefined when `err` is not a failed condition.
 */
export const failedConditionItem = (
  err: unknown,
): { item: Record<string, AttributeValue> | undefined } | undefined =>
  errorName(err) === 'ConditionalCheckFailedException'
    ? { item: (err as { Item?: Record<string, AttributeValue> }).Item }
    : undefined;

/** The error a real DynamoDB answer would carry for an injected fault. */
export const faultError =
  (op: StoreOp) =>
  (fault: Exclude<FaultKind, 'reply-lost'>): Error => {
    if (fault === 'throttle') {
      return new ProvisionedThroughputExceededException({
        $metadata: { httpStatusCode: 400 },
        message: 'The level of configured provisioned throughput for the table was exceeded.',
      });
    }
    if (fault === 'unavailable') {
      return new DynamoDBServiceException({
        name: 'ServiceUnavailable',
        $fault: 'server',
        $metadata: { httpStatusCode: 503 },
        message: 'Service unavailable',
      });
    }
    if (op === 'transact') {
      return new TransactionCanceledException({
        $metadata: { httpStatusCode: 400 },
        message: 'Transaction cancelled, please refer cancellation reasons for specific reasons',
        CancellationReasons: [{ Code: 'TransactionConflict', Message: 'Transaction is ongoing' }],
      });
    }
    return new TransactionConflictException({
      $metadata: { httpStatusCode: 400 },
      message: 'Operation was rejected because there is an ongoing transaction for the item.',
    });
  };
