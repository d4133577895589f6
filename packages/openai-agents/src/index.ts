/**
 * `@hefesto/openai-agents`: an OpenAI Agents SDK `Session` on Hefesto (docs/openai-agents.md
 * in the Hefesto repository).
 *
 * @example
 * ```ts
 * import { Agent, run } from '@openai/agents';
 * import { HefestoSession } from '@hefesto/openai-agents';
 *
 * const session = new HefestoSession({ sessionId: 'ticket-4711', baseUrl, apiKey });
 * await run(new Agent({ name: 'Support' }), 'hello', { session });
 * ```
 */
export { HefestoSession, type HefestoSessionOptions } from './hefesto-session.js';
export type { ItemSchema, ItemUpcaster } from './item-schema.js';
