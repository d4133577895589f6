import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deltaChannelHistoryTests, validate } from '@langchain/langgraph-checkpoint-validation';
import { openEmbedded } from '../../packages/embedded/src/index.js';
import type { EmbeddedEngine } from '../../packages/embedded/src/types.js';
import { HefestoSaver } from '../../packages/langgraph/src/index.js';

/**
 * LangGraph's conformance suite (as validation-suite.ts runs it over HTTP) with the saver on
 * the in-process engine: `new HefestoSaver({ client })`, the client `openEmbedded` answers.
 * Each checkpointer gets a stream prefix of its own (the suite counts `list`'s threads).
 */
let engine: EmbeddedEngine | undefined;
const dir = mkdtempSync(join(tmpdir(), 'hefesto-lg-engine-'));
let n = 0;
const initializer = {
  checkpointerName: 'HefestoSaver (in-process engine)',
  beforeAllTimeout: 60_000,
  async beforeAll() {
    engine = await openEmbedded({ dataDir: dir, env: {} });
  },
  async afterAll() {
    await engine?.close();
    rmSync(dir, { recursive: true, force: true });
  },
  createCheckpointer: () => {
    if (!engine) throw new Error('the engine is not open');
    return new HefestoSaver({ client: engine.client, prefix: `e${process.pid}-${++n}` });
  },
};
validate(initializer);
deltaChannelHistoryTests(initializer);
