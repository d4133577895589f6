import type { HefestoClient } from './client.js';
import { HefestoApiError } from './errors.js';
import type { Json } from './types.js';

/**
 * How a side effect runs exactly once on a stream (the harness's `effect` and the LangGraph
 * package's `effectTool` both run it):
 *
 *   1. begin the effect: `completed` answers the stored result, `failed` the stored error,
 *      without running anything; `in_progress` (a live holder elsewhere) waits and begins again;
 *   2. `unknown_outcome` (a holder died after beginning): `reconcile` asks the external system
 *      whether it happened and, if it did, completes the effect with that result; without
 *      `reconcile` it refuses (ErrEffectUnknownOutcome) instead of guessing;
 *   3. otherwise run `fn` with the effect key (pass it on as the external idempotency key),
 *      then complete the effect with its result, or fail it with its error and rethrow.
 *
 * @example
 * ```ts
 * const options: EffectRun<{ id: string }> = {
 *   kind: 'push',
 *   intent: { to: 'user-7' },
 *   reconcile: async (key) => ((await push.find(key)) ? { done: true, result: { id: key } } : { done: false }),
 * };
 * ```
 */
export interface EffectRun<T extends Json> {
  /** Effect kind recorded in the ledger. */
  kind: string;
  intent?: Json;
  compensation?: Json;
  sagaId?: string;
  /** How long a holder may take before its effect counts as unknown (ms). */
  leaseMs?: number;
  reconcile?: (effectKey: string) => Promise<{ done: true; result: T } | { done: false }>;
  /** How errors name the effect (default: `effect <key>`), e.g. `tool send_email`. */
  label?: string;
}

/**
 * Runs `fn` at most once for `effectKey` on `stream`, however often it is called (retries,
 * restarts, a second worker): the steps above.
 *
 * @example
 * ```ts
 * const receipt = await runEffect(client, 'run-1', 'pay-17', (key) => payments.charge(500, { idempotencyKey: key }), {
 *   kind: 'payment',
 *   intent: { cents: 500 },
 * });
 * ```
 */
export const runEffect = async <T extends Json>(
  client: HefestoClient,
  stream: string,
  effectKey: string,
  fn: (effectKey: string) => T | Promise<T>,
  options: EffectRun<T>,
): Promise<T> => {
  const label = options.label ?? `effect ${effectKey}`;
  for (let attempt = 0; attempt < 50; attempt++) {
    const begun = await client.beginEffect(stream, effectKey, {
      kind: options.kind,
      intent: options.intent ?? null,
      compensation: options.compensation,
      sagaId: options.sagaId,
      leaseMs: options.leaseMs,
    });
    if (begun.status === 'completed') return begun.result as T;
    if (begun.status === 'failed') {
      throw new HefestoApiError('ErrEffectFailed', 0, `${label} failed earlier`, {
        status: 0,
        code: 'ErrEffectFailed',
        error: begun.error,
      });
    }
    if (begun.status === 'in_progress') {
      await new Promise((r) => setTimeout(r, Math.min(begun.retryAfterMs, 1000)));
      continue;
    }
    if (begun.status === 'unknown_outcome') {
      if (!options.reconcile) {
        throw new HefestoApiError(
          'ErrEffectUnknownOutcome',
          0,
          `${label} may have happened: pass reconcile`,
        );
      }
      const known = await options.reconcile(effectKey);
      if (known.done) {
        await client.completeEffect(stream, effectKey, {
          holder: begun.holder,
          result: known.result,
        });
        return known.result;
      }
    }
    let result: T;
    try {
      result = await fn(effectKey);
    } catch (err) {
      const error = { message: err instanceof Error ? err.message : String(err) };
      await client.failEffect(stream, effectKey, { holder: begun.holder, error });
      throw err;
    }
    await client.completeEffect(stream, effectKey, { holder: begun.holder, result });
    return result;
  }
  throw new HefestoApiError('ErrIdempotencyInProgress', 409, `${label} stayed in progress`);
};
