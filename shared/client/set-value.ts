import { applyOps, type JsonObject } from '../domain/state.js';
import {
  type DigestVersion,
  digestOfState,
  NEW_STREAM_DIGEST_VERSION,
} from '../domain/state-digest.js';
import type { CheckpointDelta } from './checkpoint-types.js';
import { HefestoApiError } from './errors.js';
import { asInput } from './input.js';
import type { SetRefOp, ValueRef, ValueTransferOptions } from './large-values.js';
import type { CheckpointResult, DeltaOp, Json, WriteOptions } from './types.js';

/**
 * The checkpoint part of {@link HefestoClient.setValue}: a {@link CheckpointDelta} whose ops
 * (optional) follow the large value's, plus the base state to compute the state digest from.
 *
 * @example
 * ```ts
 * const delta: LargeValueCheckpoint = {
 *   baseDigest: state.stateDigest,
 *   baseState: state.state,
 *   ops: [{ op: 'set', path: '/docVersion', value: 2 }],
 *   label: 'doc-v2',
 * };
 * ```
 */
export type LargeValueCheckpoint = Omit<CheckpointDelta, 'ops'> & {
  /** Ops applied after the value is set, in the same checkpoint. */
  ops?: Array<DeltaOp | SetRefOp>;
  /**
   * The state at `baseDigest` (as `getState` answers it). Given, and `stateDigest` not, the
   * digest the ops yield is computed from it and the value (the divergence trap).
   */
  baseState?: { [key: string]: Json };
  /** The stream's digest version, for that computation (`getStream().digestVersion`). Default 2. */
  digestVersion?: DigestVersion;
};

/**
 * The state digest after `ops` from `state`, by the same domain code the server runs, for
 * ops whose values are all at hand (a `ref` op must be given its value instead).
 *
 * @example
 * ```ts
 * const stateDigest = stateDigestAfter(state.state, [{ op: 'set', path: '/doc', value: doc }]);
 * ```
 */
export const stateDigestAfter = (
  state: { [key: string]: Json },
  ops: DeltaOp[],
  version: DigestVersion = NEW_STREAM_DIGEST_VERSION,
): string => digestOfState(applyOps(structuredClone(state) as JsonObject, ops as never), version);

/**
 * What {@link setLargeValue} needs of a client: HefestoClient's `putValue` and `checkpoint`
 * (named here, not imported: client.ts imports this file).
 *
 * @example
 * ```ts
 * const writer: ValueWriter = new HefestoClient({ baseUrl, apiKey });
 * ```
 */
export interface ValueWriter {
  putValue(value: Json, options?: ValueTransferOptions): Promise<ValueRef>;
  checkpoint(
    streamId: string,
    delta: { ops: Array<DeltaOp | SetRefOp>; baseDigest: string; stateDigest?: string },
    options?: WriteOptions,
  ): Promise<CheckpointResult & { replayed: boolean }>;
}

/**
 * {@link HefestoClient.setValue}: upload, then one checkpoint setting the ref.
 *
 * @example
 * ```ts
 * const { ref } = await setLargeValue(client, 'run-1', '/doc', doc, { baseDigest }, {});
 * ```
 */
export const setLargeValue = async (
  client: ValueWriter,
  streamId: string,
  path: string,
  value: Json,
  delta: LargeValueCheckpoint,
  options: WriteOptions & ValueTransferOptions,
): Promise<CheckpointResult & { replayed: boolean; ref: ValueRef }> => {
  const { baseState, digestVersion, ops: extra = [], ...rest } = delta;
  let stateDigest = rest.stateDigest;
  if (stateDigest === undefined && baseState !== undefined) {
    const plain = extra.filter((op): op is DeltaOp => !('ref' in op));
    if (plain.length !== extra.length) {
      throw new HefestoApiError(
        'ErrInvalidInput',
        0,
        'setValue computes the state digest from values: pass other large values by value, or pass stateDigest',
      );
    }
    // Before any upload: a base state the ops do not apply to fails here, not after 64 MiB.
    stateDigest = asInput(() =>
      stateDigestAfter(baseState, [{ op: 'set', path, value }, ...plain], digestVersion),
    );
  }
  const ref = await client.putValue(value, options);
  const ops: Array<DeltaOp | SetRefOp> = [{ op: 'set', path, ref }, ...extra];
  const result = await client.checkpoint(
    streamId,
    { ...rest, ops, ...(stateDigest === undefined ? {} : { stateDigest }) },
    { idempotencyKey: options.idempotencyKey },
  );
  return { ...result, ref };
};
