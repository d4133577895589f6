import type { AgentInputItem } from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { headKey } from '../../shared/chain/storage-keys.js';
import { allStores } from '../support/stores.js';
import { type SessionWorld, startWorld } from './world.js';

/**
 * A session on a stream whose state digest is v1 (written before v2): no proof by path, so a
 * proven history read sends the whole state, and the client checks its v1 digest against
 * the state-setting event's.
 */
const user = (content: string): AgentInputItem => ({ type: 'message', role: 'user', content });
let n = 0;
const fresh = () => `v1-${Date.now().toString(36)}-${n++}`;

for (const factory of allStores) {
  describe.skipIf(!factory.enabled)(`a v1 session stream on ${factory.name}`, () => {
    let world: SessionWorld;
    beforeAll(async () => {
      world = await startWorld(factory, { newStreamDigestVersion: 1 });
    });
    afterAll(() => world.close());

    it('getItems reads a v1 stream, proven by the whole state', async () => {
      const id = fresh();
      const s = world.session(id);
      await s.addItems([user('one'), user('two')]);
      const head = await world.stores.records.get(headKey('default', id));
      expect(head?.digestVersion).toBeUndefined();
      expect(await s.getItems()).toEqual([user('one'), user('two')]);
      expect(await s.getItems(1)).toEqual([user('two')]);
      await s.popItem();
      expect(await s.getItems()).toEqual([user('one')]);
    });
  });
}
