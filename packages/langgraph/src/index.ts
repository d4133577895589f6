/**
 * `@hefesto/langgraph`: the LangGraph checkpointer on Hefesto (`HefestoSaver`, a
 * BaseCheckpointSaver) and its long-term memory store (`HefestoStore`, a BaseStore). Import
 * the SDK from `@hefesto/client`: the build resolves it to the client package's own types
 * (tsconfig.build.json `paths`).
 */

export type { ChannelSchema } from './channel-schema.js';
export { COPY_EVENT, type CopyThreadOptions, copyThread } from './copy-thread.js';
export { type EffectToolOptions, effectKeyOf, effectTool } from './effect-tool.js';
export {
  type DrawableGraph,
  type GraphShape,
  graphShapeOf,
  MAX_GRAPH_EDGES,
  MAX_GRAPH_NODES,
} from './graph-shape.js';
export { HefestoSaver, type HefestoSaverOptions, StaleThreadError } from './hefesto-saver.js';
export {
  pendingResume,
  RESUME_EVENT,
  type ResumeRequest,
  requestResume,
} from './resume-requests.js';
export {
  type HefestoPutOperation,
  HefestoStore,
  type HefestoStoreOptions,
} from './store/hefesto-store.js';
export {
  type StoreEmbeddings,
  type StoreIndexConfig,
  StoreIndexMissingError,
} from './store/vectors.js';
export { checkpointIdOf, labelOf, streamIdOf, threadPrefix } from './stream-ids.js';
export { ThreadFencedError, type ThreadLeaseOptions } from './thread-leases.js';
