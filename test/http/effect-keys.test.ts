import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness, readJson as read, STORE_FACTORIES } from './harness.js';

/** The effect keys the service derives, over HTTP: per stream, out of a client's reach. */

interface Begun {
  status: string;
  holder: string;
  result?: unknown;
}
interface EventsBody {
  events: Array<{ seq: number; type: string; payload: { effectKey?: string } }>;
}

describe.each(STORE_FACTORIES)('effect keys over HTTP on $name stores', (factory) => {
  let h: Harness;
  let key: string;

  beforeEach(async () => {
    h = createHarness(factory);
    key = await h.newKey('acme');
  });
  afterEach(() => h.close());

  const post = (stream: string, path: string, body: unknown) =>
    h.request(`/v1/streams/${stream}${path}`, { key, body });
  const pay = async (stream: string, effectKey: string) => {
    const begun = await read<Begun>(
      post(stream, `/effects/${effectKey}/begin`, { kind: 'payment', intent: 1 }),
    );
    expect(begun.status).toBe('acquired');
    return post(stream, `/effects/${effectKey}/complete`, {
      holder: begun.holder,
      result: { on: stream },
    });
  };
  const effectEvents = async (stream: string) =>
    (
      await read<EventsBody>(
        h.request(`/v1/streams/${stream}/events?type=hefesto.effect.completed`, { key }),
      )
    ).events.map((e) => e.payload.effectKey);

  it('completes the same effect key on two streams of one tenant, one event each', async () => {
    expect((await pay('s-one', 'pay-1')).status).toBe(200);
    expect((await pay('s-two', 'pay-1')).status).toBe(200);
    expect(await effectEvents('s-one')).toEqual(['pay-1']);
    expect(await effectEvents('s-two')).toEqual(['pay-1']);
    const again = await read<Begun>(
      post('s-two', '/effects/pay-1/begin', { kind: 'payment', intent: 1 }),
    );
    expect(again).toMatchObject({ status: 'completed', result: { on: 's-two' } });
  });

  it('is not poisoned by a client appending with Idempotency-Key effect:pay-9:completed', async () => {
    const poison = await h.append(key, 's-one', [{ type: 'observation', payload: 1 }], {
      idempotencyKey: 'effect:pay-9:completed',
    });
    expect(poison.status).toBe(201);
    expect((await pay('s-one', 'pay-9')).status).toBe(200);
    expect(await effectEvents('s-one')).toEqual(['pay-9']);
  });
});
