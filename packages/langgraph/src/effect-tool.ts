import { createHash } from 'node:crypto';
import { HefestoApiError, type Json } from '@hefesto/client';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { HefestoSaver } from './hefesto-saver.js';

/**
 * A tool whose side effect runs exactly once per tool call, however often LangGraph runs the
 * step that calls it: a node retried by its RetryPolicy, a graph resumed after a crash from
 * the checkpoint before the step, a second worker resuming the same thread. The call is a
 * Hefesto effect on the thread's root stream (deleted with the thread):
 *
 *   1. begin the effect under a key derived from the call (below): `completed` answers the
 *      stored result (or `failed` the stored error) without running anything;
 *   2. `acquired`: run the tool body with the effect key (pass it on to the external system
 *      as its idempotency key), then complete (or fail) the effect with what it returned;
 *   3. a holder that died between 1 and 2 leaves the effect `unknown_outcome` after its lease:
 *      the next run asks `reconcile` whether the external system did it (without one it
 *      refuses, ErrEffectUnknownOutcome, instead of guessing); `in_progress` (a live holder
 *      elsewhere) waits.
 *
 * Key: the tool call's id when LangGraph's ToolNode runs the tool (it is in the checkpointed
 * AIMessage, so a resumed step sees the same one), else the LangGraph task id (deterministic:
 * the same checkpoint, step and node give the same id), hashed with the tool's name into the
 * effect key alphabet. Pass `keyOf` to choose your own.
 *
 * @example
 * ```ts
 * const sendEmail = tool(
 *   effectTool(saver, 'send_email', async ({ to }, { effectKey }) => mail.send(to, { idempotencyKey: effectKey })),
 *   { name: 'send_email', schema: z.object({ to: z.string() }) },
 * );
 * ```
 */

export interface EffectToolOptions<A> {
  /** Effect kind recorded in the ledger (default: the tool's name). */
  kind?: string;
  /** Your own key for a call (any string: it is hashed into the effect key alphabet). */
  keyOf?: (args: A, config: RunnableConfig) => string;
  /** Asked after a holder died mid-call: did the external system do it? */
  reconcile?: (effectKey: string) => Promise<{ done: true; result: Json } | { done: false }>;
  /** How long a holder may take before its call counts as unknown (ms). */
  leaseMs?: number;
}

type ToolConfig = RunnableConfig & { toolCall?: { id?: string } };

const callIdOf = (config: ToolConfig): string => {
  const id = config.toolCall?.id ?? (config.configurable?.__pregel_task_id as string | undefined);
  if (!id) {
    throw new Error(
      'effectTool: no tool call id or LangGraph task id in the config: call the tool from a graph node with its config, or pass keyOf',
    );
  }
  return id;
};

export const effectKeyOf = (name: string, callId: string): string =>
  `lg-${createHash('sha256').update(`${name}\u0000${callId}`).digest('hex').slice(0, 40)}`;

export const effectTool =
  <A, R extends Json>(
    saver: HefestoSaver,
    name: string,
    body: (args: A, effect: { effectKey: string }, config: RunnableConfig) => R | Promise<R>,
    options: EffectToolOptions<A> = {},
  ) =>
  async (args: A, config: RunnableConfig = {}): Promise<R> => {
    const threadId = config.configurable?.thread_id as string | undefined;
    if (!threadId) throw new Error('effectTool: the config names no thread_id');
    const stream = saver.streamIdOf(threadId, '');
    const effectKey = effectKeyOf(name, options.keyOf?.(args, config) ?? callIdOf(config));
    const { client } = saver;
    await saver.leases?.ensure(stream, threadId, false);
    for (let attempt = 0; attempt < 50; attempt++) {
      const begun = await client.beginEffect(stream, effectKey, {
        kind: options.kind ?? name,
        intent: { tool: name, args: JSON.parse(JSON.stringify(args ?? null)) as Json },
        ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
      });
      if (begun.status === 'completed') return begun.result as R;
      if (begun.status === 'failed') {
        throw new HefestoApiError('ErrEffectFailed', 0, `tool ${name} failed earlier`, {
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
            `tool ${name} (effect ${effectKey}) may have run: pass reconcile`,
          );
        }
        const known = await options.reconcile(effectKey);
        if (known.done) {
          await client.completeEffect(stream, effectKey, {
            holder: begun.holder,
            result: known.result,
          });
          return known.result as R;
        }
      }
      let result: R;
      try {
        result = await body(args, { effectKey }, config);
      } catch (err) {
        const error = { message: err instanceof Error ? err.message : String(err) };
        await client.failEffect(stream, effectKey, { holder: begun.holder, error });
        throw err;
      }
      await client.completeEffect(stream, effectKey, { holder: begun.holder, result });
      return result;
    }
    throw new HefestoApiError('ErrIdempotencyInProgress', 409, `tool ${name} stayed in progress`);
  };
