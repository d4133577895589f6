import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { digestOfState, type Json, type LedgerEvent } from '../../packages/client/src/index.js';
import { harnessRun, sessionRun, vectorServer } from '../support/migration-runs.js';

/**
 * test/vectors/schema-migration.json through the client SDK as packed (`@hefesto/client`'s
 * harness and `@hefesto/openai-agents`' session, each with its schema option): the runs the
 * file records, written again on a server with the same clock, give the very same events
 * (the migration's ops computed by the client's upcasters, every hash), which a verifying
 * client reads and checks; `digestOfState` gives each state's digest.
 * (test/unit/schema-migration-vectors.test.ts checks the same file against the domain code.)
 */

interface Run {
  name: string;
  stream: string;
  events: LedgerEvent[];
  states: Array<Record<string, Json>>;
}

const { runs } = JSON.parse(
  readFileSync(join(import.meta.dirname, '../vectors/schema-migration.json'), 'utf8'),
) as { runs: Run[] };

const writers = { 'vec-harness-rename': harnessRun, 'vec-session-items': sessionRun } as const;

describe.each(runs.map((r) => [r.name, r] as const))(
  'schema-migration vector in the client SDK: %s',
  (_, run) => {
    it('is what the client writes, a verifying client reads it back, and the chain verifies', async () => {
      const { client } = vectorServer();
      await writers[run.stream as keyof typeof writers](client, run.stream);

      const { events } = await client.readEvents(run.stream);

      expect(events).toEqual(run.events);
      expect((await client.verify(run.stream)).ok).toBe(true);
    });

    it('gives every state the digest its event records', () => {
      for (const [i, state] of run.states.entries()) {
        const { stateDigest } = (run.events[i] as LedgerEvent).payload as { stateDigest: string };
        expect(digestOfState(state, 2)).toBe(stateDigest);
      }
    });
  },
);
