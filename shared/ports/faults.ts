/**
 * Fault injection at the transport boundary of an adapter, for the contract suite.
 *
 * Each adapter consults the injector once per attempt of a storage call, at the place where
 * the real backend would be called:
 * - 'throttle' | 'unavailable' | 'conflict-409': the attempt fails *before* touching storage
 *   with a retryable error (AWS adapters raise the SDK's own exception shapes: S3 503
 *   SlowDown, S3 409 ConditionalRequestConflict, DynamoDB ProvisionedThroughputExceeded...).
 * - 'reply-lost': the attempt is *performed*, then fails as if the reply never arrived.
 * The adapter's retry loop must recover from all of them; a retried write that finds its
 * own earlier attempt already applied succeeds rather than reporting a conflict.
 */

export type FaultKind = 'throttle' | 'unavailable' | 'conflict-409' | 'reply-lost';

/** Operation names passed to the injector. */
export type StoreOp =
  | 'get'
  | 'head'
  | 'list'
  | 'putIfAbsent'
  | 'putIfMatch'
  | 'delete'
  | 'put'
  | 'update'
  | 'transact'
  | 'query';

export interface FaultInjector {
  /** The fault to inject into this attempt of `op`, if any. */
  take(op: StoreOp): FaultKind | undefined;
}

/** The retryable error memory and local adapters raise for an injected fault. */
export class TransientFaultError extends Error {
  readonly fault: FaultKind;

  constructor(fault: FaultKind, op: StoreOp) {
    super(`injected ${fault} on ${op}`);
    this.name = 'TransientFaultError';
    this.fault = fault;
  }
}

/** A scripted injector: faults are taken in order for matching ops, then none. */
export const scriptedFaults = (
  script: Array<{ op: StoreOp; fault: FaultKind; times?: number }>,
): FaultInjector & { remaining(): number } => {
  const queue = script.flatMap((s) => Array.from({ length: s.times ?? 1 }, () => s));
  return {
    take(op) {
      const i = queue.findIndex((s) => s.op === op);
      if (i < 0) return undefined;
      const [entry] = queue.splice(i, 1);
      return entry?.fault;
    },
    remaining: () => queue.length,
  };
};
