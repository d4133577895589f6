import { statSync } from 'node:fs';
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  type BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointMetadata,
  emptyCheckpoint,
  uuid6,
} from '@langchain/langgraph-checkpoint';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';

/**
 * The comparison side of the storage benchmark: LangGraph's SQLite checkpointer storing the
 * same agent states, one checkpoint per turn, the way LangGraph's Pregel loop does it:
 * `createCheckpoint` copies every channel's full value into `channel_values` with a new
 * uuid6 id and the bumped `channel_versions`, and the loop calls
 * `put(config, checkpoint, metadata, newVersions)` with the config returned by the previous
 * put (so the parent id chains). A real graph writes more than this (one checkpoint per
 * superstep, plus `putWrites` for each task's writes), so these figures favour LangGraph.
 */

export interface LangGraphTurn {
  /** The full state after the turn: one channel per top-level key. */
  state: Record<string, unknown>;
  /** Top-level keys the turn changed. */
  changed: string[];
}

export interface LangGraphStorage {
  checkpoints: number;
  /** Database file plus any -wal/-shm left after a WAL checkpoint. */
  bytes: number;
  elapsedMs: number;
  /** The saver's durability setting as it ran (PRAGMA synchronous). */
  synchronous: string;
}

const SYNCHRONOUS = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];

const fileSize = (path: string): number => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

/** Writes one checkpoint per turn into a file-backed SqliteSaver at `path`. */
export const storeWithLangGraph = async (
  path: string,
  turns: Iterable<LangGraphTurn>,
): Promise<LangGraphStorage> => {
  const saver = SqliteSaver.fromConnString(path);
  // Called through the base class, as the Pregel loop does (the subclass omits newVersions).
  const base: BaseCheckpointSaver = saver;
  let config: RunnableConfig = { configurable: { thread_id: 'agent-1', checkpoint_ns: '' } };
  let previous: Checkpoint = emptyCheckpoint();
  let step = 0;
  const start = process.hrtime.bigint();
  for (const turn of turns) {
    const newVersions: ChannelVersions = {};
    for (const channel of turn.changed) {
      newVersions[channel] = base.getNextVersion(previous.channel_versions[channel] as number);
    }
    const channelVersions = { ...previous.channel_versions, ...newVersions };
    const checkpoint: Checkpoint = {
      v: 4,
      id: uuid6(step),
      ts: new Date().toISOString(),
      channel_values: { ...turn.state },
      channel_versions: channelVersions,
      versions_seen: { agent: { ...channelVersions } },
    };
    const metadata: CheckpointMetadata = { source: 'loop', step, parents: {} };
    config = await base.put(config, checkpoint, metadata, newVersions);
    previous = checkpoint;
    step++;
  }
  const elapsedMs = Number(process.hrtime.bigint() - start) / 1e6;
  const level = saver.db.pragma('synchronous', { simple: true }) as number;
  saver.db.pragma('wal_checkpoint(TRUNCATE)');
  saver.db.close();
  const bytes = ['', '-wal', '-shm'].reduce((n, suffix) => n + fileSize(path + suffix), 0);
  return { checkpoints: step, bytes, elapsedMs, synchronous: SYNCHRONOUS[level] ?? String(level) };
};
