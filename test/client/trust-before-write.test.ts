import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HefestoClient } from '../../shared/client/client.js';
import { ClientVerificationError, HefestoApiError } from '../../shared/client/errors.js';
import { resume } from '../../shared/client/harness.js';
import { TamperedHistoryError } from '../../shared/client/proofs.js';
import { FileTrustStore } from '../../shared/client/trust-store-file.js';
import { runCliHere } from '../cli/in-process.js';
import { proofsApp } from '../support/proofs-app.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Issue 22 item 4: a server's data is reset (same URL) while a client's trust file still
 * holds signed heads of its streams. The README's agent.mjs must fail before its first write
 * lands, with an error naming the trust file and the command that forgets the server; after
 * `hefesto trust forget URL` it runs again.
 */

const BASE_URL = 'http://hefesto.test';
const STREAM = 'ticket-4711';

/** The README's agent.mjs, with the client given. */
const agent = async (client: HefestoClient) => {
  const run = await resume(client, STREAM);
  const reply = await run.observe('model', () => ({ text: `hello from turn ${run.turn}` }));
  await run.checkpoint([{ op: 'set', path: `/turn${run.turn}`, value: reply }]);
  await client.getState(STREAM);
  return client.verifyLocally(STREAM);
};

describe.each(allStores.filter((f) => f.enabled))('a reset server on $name', (factory) => {
  let before: StorePair;
  let after: StorePair;
  let dir: string;
  let trustPath: string;
  beforeEach(async () => {
    before = await factory.make();
    after = await factory.make();
    dir = mkdtempSync(join(tmpdir(), 'hefesto-trust-reset-'));
    trustPath = join(dir, 'trusted-heads.json');
  });
  afterEach(async () => {
    await before.cleanup();
    await after.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  const verifying = (world: ReturnType<typeof proofsApp>) =>
    world.client({ verify: true, trustStore: new FileTrustStore(trustPath) });

  /** Three runs of the agent on the server before its reset: 6 events, trusted. */
  const trustedRuns = async () => {
    const old = proofsApp(before);
    for (let i = 0; i < 3; i++) expect(await agent(verifying(old))).toMatchObject({ ok: true });
    expect((await old.client().getStream(STREAM)).seq).toBe(6);
  };

  it('refuses the first write to a stream the reset server no longer has, before it lands', async () => {
    await trustedRuns();
    const reset = proofsApp(after);
    const err = await agent(verifying(reset)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ClientVerificationError);
    const message = (err as Error).message;
    expect(message).toContain('the server has no such stream');
    expect(message).toContain(`the trust file ${trustPath}`);
    expect(message).toContain(`hefesto trust forget ${BASE_URL}`);
    const gone = await reset
      .client()
      .getStream(STREAM)
      .catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(HefestoApiError);
    expect(gone).toMatchObject({ code: 'ErrStreamNotFound' }); // nothing landed

    const forgot = await runCliHere(['trust', 'forget', BASE_URL], {
      HEFESTO_TRUST_FILE: trustPath,
    });
    expect(forgot).toMatchObject({ code: 0, stderr: '' });
    expect(forgot.stdout).toBe(`forgot 1 trusted head of ${BASE_URL} (${trustPath})\n`);
    expect(await agent(verifying(reset))).toMatchObject({ ok: true, seq: 2 });
  });

  it('refuses the first write to a stream the reset server holds with another history', async () => {
    await trustedRuns();
    const reset = proofsApp(after);
    await reset.client().append(STREAM, [{ type: 'note', payload: { other: 1 } }]);
    await reset.client().append(STREAM, [{ type: 'note', payload: { other: 2 } }]);
    const client = verifying(reset);
    const err = await client
      .append(STREAM, [{ type: 'note', payload: { mine: 1 } }])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TamperedHistoryError);
    expect(err).toMatchObject({ reason: 'truncated', trustedSize: 6, currentSize: 2 });
    expect((err as Error).message).toContain(`hefesto trust forget ${BASE_URL}`);
    const { stateDigest } = await reset.client().getStream(STREAM);
    await expect(
      client.checkpoint(STREAM, {
        ops: [{ op: 'set', path: '/x', value: 1 }],
        baseDigest: stateDigest,
      }),
    ).rejects.toBeInstanceOf(TamperedHistoryError);
    expect((await reset.client().getStream(STREAM)).seq).toBe(2); // nothing landed
  });

  it('checks a stream it never trusted at no cost, and a trusted one once per client', async () => {
    await trustedRuns();
    const old = proofsApp(before);
    const paths: string[] = [];
    const client = old.client({
      verify: true,
      trustStore: new FileTrustStore(trustPath),
      fetch: (async (input: string | URL | Request, init?: RequestInit) => {
        paths.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname}`);
        return old.fetch(input, init);
      }) as typeof fetch,
    });
    await client.append('fresh', [{ type: 'note', payload: 1 }]);
    expect(paths.filter((p) => p.endsWith('/tree-head'))).toEqual([]);
    await client.append(STREAM, [{ type: 'note', payload: 1 }]);
    await client.append(STREAM, [{ type: 'note', payload: 2 }]);
    expect(paths.filter((p) => p.endsWith('/tree-head'))).toEqual([
      `GET /v1/streams/${STREAM}/tree-head`,
    ]);
  });
});
