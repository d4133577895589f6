import { createHash } from 'node:crypto';
import { type EffectRun, type Json, runEffect } from '@hefesto/client';
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
    return runEffect(client, stream, effectKey, (key) => body(args, { effectKey: key }, config), {
      kind: options.kind ?? name,
      intent: { tool: name, args: JSON.parse(JSON.stringify(args ?? null)) as Json },
      ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
      ...(options.reconcile === undefined
        ? {}
        : { reconcile: options.reconcile as EffectRun<R>['reconcile'] }),
      label: `tool ${name} (effect ${effectKey})`,
    });
  };
