import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deltaChannelHistoryTests, validate } from '@langchain/langgraph-checkpoint-validation';
import { HefestoSaver } from '../../packages/langgraph/src/index.js';
import { type ServerProcess, startServer } from '../../scripts/lib/server-process.js';

/**
 * LangGraph's conformance suite (@langchain/langgraph-checkpoint-validation 1.1.1) against
 * the embedded server, under a checkpointer name of its own (so the changed-channels test,
 * skipped for MemorySaver and SqliteSaver, runs), plus the opt-in DeltaChannel history tests.
 * Each checkpointer gets a stream prefix of its own: `list` without a thread id lists every
 * thread of the saver, and the suite counts them exactly.
 */

const ROOT = 'root-key-for-validation-0123456789abcdef';
let server: ServerProcess | undefined;
const dataDir = mkdtempSync(join(tmpdir(), 'hefesto-lg-validation-'));
let n = 0;

const initializer = {
  checkpointerName: 'HefestoSaver (embedded)',
  beforeAllTimeout: 60_000,
  async beforeAll() {
    server = await startServer({ HEFESTO_DATA_DIR: dataDir, HEFESTO_API_KEY: ROOT });
  },
  async afterAll() {
    server?.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  },
  createCheckpointer: () =>
    new HefestoSaver({
      baseUrl: server?.url ?? '',
      apiKey: ROOT,
      prefix: `v${process.pid}-${++n}`,
    }),
};

validate(initializer);
deltaChannelHistoryTests(initializer);
