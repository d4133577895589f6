import { type DurableRun, HefestoClient } from '../../packages/client/src/index.js';
import { HefestoSaver } from '../../packages/langgraph/src/index.js';

/**
 * Type tests, checked by `tsc --noEmit` (the test command's typecheck) and run by nothing: the
 * client's options and the harness's `observe` as a strict TypeScript user writes them. Each
 * `@ts-expect-error` must be an error, and everything else must compile.
 */

interface Reply {
  text: string;
  tokens: number;
  tags: string[];
  meta?: { model: string };
}

export const typeChecks = async (run: DurableRun): Promise<Reply> => {
  // The key straight from the environment (string | undefined): a missing one throws at
  // construction (InvalidOptionsError), not a type error.
  const client = new HefestoClient({
    baseUrl: 'http://localhost:8787',
    apiKey: process.env.HEFESTO_KEY,
  });
  const saver = new HefestoSaver({
    baseUrl: process.env.HEFESTO_URL,
    apiKey: process.env.HEFESTO_KEY,
  });
  void client;
  void saver;

  // An interface (no index signature) is JSON enough to observe; what comes back is typed.
  const reply = await run.observe('model', (): Reply => ({ text: 'hi', tokens: 2, tags: [] }));
  const again: Reply = await run.observe('model', async () => reply);
  const list: string[] = await run.observe('search', () => ['a', 'b']);
  void list;

  // @ts-expect-error -- a Date is not JSON (it would come back from a replay as a string)
  await run.observe('clock', () => ({ at: new Date() }));
  // @ts-expect-error -- a function is not JSON
  await run.observe('callback', () => ({ f: () => 1 }));
  // @ts-expect-error -- an undefined member is not JSON
  await run.observe('hole', () => ({ a: undefined }));
  // @ts-expect-error -- a bigint is not JSON
  await run.observe('big', () => ({ n: 1n }));
  return again;
};
