/**
 * `@hefesto/langgraph`: the LangGraph checkpointer on Hefesto (`HefestoSaver`, a
 * BaseCheckpointSaver). Import the SDK from `@hefesto/client`: the build resolves it to the
 * client package's own types (tsconfig.build.json `paths`).
 */

export { HefestoSaver, type HefestoSaverOptions, StaleThreadError } from './hefesto-saver.js';
export { checkpointIdOf, labelOf, streamIdOf, threadPrefix } from './stream-ids.js';
