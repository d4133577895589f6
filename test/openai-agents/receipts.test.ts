import type { AgentInputItem } from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryTrustStore } from '../../shared/client/trust-store.js';
import { memoryStores } from '../support/stores.js';
import { type SessionWorld, startWorld } from './world.js';

/**
 * Each history change answers its receipt (the signed tree head after it; a retry the
 * original one), which a verifying client checks and keeps as the stream's trusted head.
 */

const message = (content: string) => ({ type: 'message', role: 'user', content });
const user = (content: string): AgentInputItem => message(content) as AgentInputItem;

describe('history receipts', () => {
  let world: SessionWorld;
  beforeAll(async () => {
    world = await startWorld(memoryStores);
  });
  afterAll(() => world.close());

  it('answers a signed tree head per change, the same one to a retry', async () => {
    const client = world.client();
    const first = await client.changeHistory(
      'receipt-1',
      { type: 'append_items', items: [message('a')] },
      { operationId: 'op-1' },
    );
    const retry = await client.changeHistory(
      'receipt-1',
      { type: 'append_items', items: [message('a')] },
      { operationId: 'op-1' },
    );

    expect(first.treeHead).toMatchObject({ treeSize: 1 });
    expect(retry.applied).toBe(false);
    expect(retry.treeHead).toEqual(first.treeHead);
    expect(retry.incarnation).toBe(first.incarnation);
  });

  it('a verifying client checks each receipt and trusts the head it names', async () => {
    const trustStore = new MemoryTrustStore();
    const session = world.session('receipt-2', { client: { verify: true, trustStore } });

    await session.addItems([user('a')]);
    await session.addItems([user('b')]);

    expect(await session.getItems()).toEqual([user('a'), user('b')]);
    const key = { baseUrl: 'http://hefesto.test', tenant: 'default', stream: 'receipt-2' };
    expect(await trustStore.get(key)).toMatchObject({ streamId: 'receipt-2', treeSize: 2 });
  });

  it('a verifying client refuses a forged receipt', async () => {
    const forge = (body: Record<string, unknown>) => {
      const head = body.treeHead as Record<string, unknown> | undefined;
      return head ? { ...body, treeHead: { ...head, rootHash: '0'.repeat(64) } } : body;
    };
    const session = world.session('receipt-3', {
      forge,
      client: { verify: true, trustStore: new MemoryTrustStore() },
    });

    await expect(session.addItems([user('a')])).rejects.toMatchObject({
      name: 'ClientVerificationError',
    });
  });
});
