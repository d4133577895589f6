/**
 * `@hefesto/embedded`: the Hefesto engine in the caller's process. `openEmbedded` opens the
 * data directory `npm start` uses and answers a `HefestoClient` (from `@hefesto/client`: the
 * same methods, errors and receipts) whose requests the same app, services and storage answer
 * in this process, with no socket; `serve` also serves it on loopback. The package also runs
 * the server: `npx hefesto-server`.
 *
 * @example
 * ```ts
 * import { openEmbedded } from '@hefesto/embedded';
 * import { HefestoSaver } from '@hefesto/langgraph';
 *
 * const { client, close } = await openEmbedded({ dataDir: '.hefesto' });
 * const checkpointer = new HefestoSaver({ client });
 * // ... graph.compile({ checkpointer }) ...
 * await close();
 * ```
 */

export { DATA_DIR_IN_USE, openEmbedded } from './open-embedded.js';
export type { EmbeddedEngine, EmbeddedOptions, ServedEngine } from './types.js';
