import { deltaChannelHistoryTests, validate } from '@langchain/langgraph-checkpoint-validation';
import { it } from 'vitest';
import { HefestoSaver } from '../../packages/langgraph/src/index.js';
import { type Backend, type BackendKind, ROOT } from './backends.js';

/**
 * LangGraph's conformance suite (@langchain/langgraph-checkpoint-validation 1.1.1) against one
 * backend, under a checkpointer name of its own per backend (so the changed-channels test,
 * skipped for MemorySaver and SqliteSaver, runs, and the two runs' names stay distinct), plus
 * the opt-in DeltaChannel history tests. Each checkpointer gets a stream prefix of its own:
 * `list` without a thread id lists every thread of the saver, and the suite counts them
 * exactly. With `exclusive`, every checkpointer also leases the threads it touches (one
 * owner per checkpointer): the suite then shows the leased saver is a conformant one too.
 */
export const validateOn = (kind: BackendKind, options: { exclusive?: boolean } = {}): void => {
  const name = `HefestoSaver (${kind.name}${options.exclusive ? ', exclusive' : ''})`;
  if (!kind.available) {
    it.skip(`${name}: no endpoints (run inside scripts/with-aws.sh)`);
    return;
  }
  let backend: Backend | undefined;
  let n = 0;
  const initializer = {
    checkpointerName: name,
    beforeAllTimeout: 60_000,
    async beforeAll() {
      backend = await kind.start();
    },
    async afterAll() {
      await backend?.stop();
    },
    createCheckpointer: () =>
      new HefestoSaver({
        baseUrl: backend?.url ?? '',
        apiKey: ROOT,
        prefix: `v${process.pid}-${++n}`,
        exclusive: options.exclusive ?? false,
      }),
  };
  validate(initializer);
  deltaChannelHistoryTests(initializer);
};
