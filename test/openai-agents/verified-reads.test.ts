import type { AgentInputItem } from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientVerificationError, HefestoApiError } from '../../packages/client/src/index.js';
import { segmentPrefix } from '../../shared/chain/storage-keys.js';
import { MemoryTrustStore } from '../../shared/client/trust-store.js';
import { hashLedgerEvent, type LedgerEvent } from '../../shared/domain/event.js';
import { allStores } from '../support/stores.js';
import { type SessionWorld, startWorld } from './world.js';

/**
 * HefestoSession returns only items checked against the chain: the server refuses a history
 * whose stored bytes were planted (fail-closed hydration), and the session itself checks the
 * answer (the event that set the state, the Merkle path of the items), so a server that
 * forges or drops the proof is refused too (ClientVerificationError), nothing returned.
 */

const user = (content: string): AgentInputItem => ({ type: 'message', role: 'user', content });

let n = 0;
const fresh = () => `verified-${Date.now().toString(36)}-${n++}`;

type Body = Record<string, unknown> & {
  items?: unknown[];
  proof?: { event: Record<string, unknown>; state: { value: unknown } };
};

/** Rewrites a history answer (and only that: other answers pass as they are). */
const onHistory =
  (edit: (body: Body) => void) =>
  (body: Record<string, unknown>): Record<string, unknown> => {
    const copy = structuredClone(body) as Body;
    if (Array.isArray(copy.items)) edit(copy);
    return copy;
  };

for (const factory of allStores) {
  describe.skipIf(!factory.enabled)(`verified getItems on ${factory.name}`, () => {
    let world: SessionWorld;
    beforeAll(async () => {
      world = await startWorld(factory);
    });
    afterAll(() => world.close());

    const written = async () => {
      const id = fresh();
      await world.session(id).addItems([user('kept one'), user('kept two')]);
      return id;
    };

    it('refuses a history whose stored bytes were planted: ErrTamperedLedger, no items', async () => {
      const id = await written();
      const keys = await world.stores.objects.list(segmentPrefix('default', id));
      const last = keys.items.at(-1)?.key as string;
      await world.stores.tamper(last, (body) =>
        Buffer.from(Buffer.from(body).toString('latin1').replace('kept two', 'PLANTED!'), 'latin1'),
      );
      world.restart(); // nothing of the session warm in the server's memory

      const err = await world
        .session(id)
        .getItems()
        .catch((e: unknown) => e);

      expect(err).toBeInstanceOf(HefestoApiError);
      expect((err as HefestoApiError).code).toBe('ErrTamperedLedger');
    });

    it('answers the proven items, not the ones a server says beside them', async () => {
      const id = await written();
      const s = world.session(id, {
        forge: onHistory((b) => {
          b.items = [user('forged')];
        }),
      });

      expect(await s.getItems()).toEqual([user('kept one'), user('kept two')]);
      expect(await s.getItems(1)).toEqual([user('kept two')]);
    });

    const forgeries: Array<[string, (b: Body) => void]> = [
      [
        'the proven value changed',
        (b) => {
          (b.proof as NonNullable<Body['proof']>).state.value = [user('forged')];
        },
      ],
      [
        'no proof',
        (b) => {
          delete b.proof;
        },
      ],
      [
        'the event changed (its digest)',
        (b) => {
          const event = (b.proof as NonNullable<Body['proof']>).event;
          (event.payload as Record<string, unknown>).stateDigest = '0'.repeat(64);
        },
      ],
      [
        // The items written at version 1 said to be at 3: a session would refuse them (or
        // skip its upcasters) on the server's word.
        'a schema version the event that set the state does not yield',
        (b) => {
          b.schema = 3;
        },
      ],
    ];
    for (const [what, edit] of forgeries) {
      it(`refuses an answer with ${what}: ClientVerificationError`, async () => {
        const id = await written();
        const s = world.session(id, { forge: onHistory(edit) });

        await expect(s.getItems()).rejects.toBeInstanceOf(ClientVerificationError);
      });
    }

    it('with a verifying client, proves the event in the signed tree head (the history GET, then the tree head and an inclusion proof)', async () => {
      const id = await written();
      const sent: string[] = [];
      const s = world.session(id, {
        sent,
        client: { verify: true, trustStore: new MemoryTrustStore() },
      });

      expect(await s.getItems(1)).toEqual([user('kept two')]);
      expect(sent).toEqual([
        `GET /v1/streams/${id}/history`,
        `GET /v1/streams/${id}/tree-head`,
        'GET /v1/signing-keys',
        `GET /v1/streams/${id}/proofs/inclusion`,
      ]);
      sent.length = 0;
      expect(await s.getItems()).toEqual([user('kept one'), user('kept two')]);
      expect(sent).toEqual([
        `GET /v1/streams/${id}/history`,
        `GET /v1/streams/${id}/tree-head`,
        `GET /v1/streams/${id}/proofs/inclusion`,
      ]);
    });

    const proven = (id: string) =>
      world.get(`/v1/streams/${id}/history`, { proof: 'true' }) as Promise<Body & { seq: number }>;
    const verifying = () => ({ verify: true, trustStore: new MemoryTrustStore() });

    it('refuses an event said to set the state past the head the answer names', async () => {
      const id = await written();
      const s = world.session(id, {
        forge: onHistory((b) => {
          b.seq = 0;
        }),
      });

      await expect(s.getItems()).rejects.toBeInstanceOf(ClientVerificationError);
    });

    it('with a verifying client, refuses a forged answer whose event, path and items agree (an event outside the chain)', async () => {
      const id = await written();
      const other = fresh();
      await world.session(other).addItems([user('forged')]);
      // Another stream's proven answer, its event moved to seq 0 (before any tree's first
      // leaf) and its hash recomputed: event, Merkle path and items all agree.
      const forged = await proven(other);
      const event = { ...(forged.proof?.event as unknown as LedgerEvent), seq: 0 };
      event.hash = hashLedgerEvent(event);
      const forge = onHistory((b) => {
        b.items = forged.items;
        b.proof = { ...(forged.proof as NonNullable<Body['proof']>), event: { ...event } };
      });

      // Without verify this is the server's word (docs/openai-agents.md, "Verified reads").
      expect(await world.session(id, { forge }).getItems()).toEqual([user('forged')]);
      const s = world.session(id, { forge, client: verifying() });
      await expect(s.getItems()).rejects.toBeInstanceOf(ClientVerificationError);
    });

    it('with a verifying client, refuses a stale state-setting event (an older delta, at the head seq or at its own)', async () => {
      const id = await written();
      const stale = await proven(id);
      const s0 = world.session(id, { client: verifying() });
      await s0.addItems([user('kept three')]);
      const head = (await proven(id)).seq;

      const atHead = world.session(id, {
        client: verifying(),
        forge: onHistory((b) => {
          b.items = stale.items;
          b.proof = stale.proof;
        }),
      });
      await expect(atHead.getItems()).rejects.toBeInstanceOf(ClientVerificationError);
      expect(head).toBeGreaterThan(stale.seq);

      // The whole older answer, to a client that trusts the newer head (its receipt).
      const trustStore = new MemoryTrustStore();
      const writer = world.session(id, { client: { verify: true, trustStore } });
      await writer.addItems([user('kept four')]);
      const older = world.session(id, {
        client: { verify: true, trustStore },
        forge: onHistory((b) => {
          Object.assign(b, structuredClone(stale));
        }),
      });
      await expect(older.getItems()).rejects.toBeInstanceOf(ClientVerificationError);
      expect(await world.session(id, { client: verifying() }).getItems(1)).toEqual([
        user('kept four'),
      ]);
    });

    it('an empty or never-written session needs no proof', async () => {
      expect(await world.session(fresh()).getItems()).toEqual([]);
      const id = await written();
      await world.session(id).clearSession();
      expect(await world.session(id).getItems()).toEqual([]);
    });
  });
}
