import fc from 'fast-check';
import { Big, Deep } from './markers.js';
import { Live } from './schema-arbitrary.js';
import { FUZZ_LIMITS, POOLS } from './world.js';

/**
 * Hints for body members, by property name: the values that matter in the seeded world
 * (mostly filled in from the stores when sent, `Live`), and poison ones (deep, oversized).
 */
export const bodyHints = (): Record<string, fc.Arbitrary<unknown>> => {
  const poison = fc.oneof(
    { weight: 12, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
    { weight: 1, arbitrary: fc.constantFrom(new Deep(200), new Deep(6000)) },
    { weight: 1, arbitrary: fc.constant(new Big(FUZZ_LIMITS.maxPayloadBytes + 1)) },
  );
  const hex64 = fc.stringMatching(/^[0-9a-f]{64}$/);
  return {
    payload: poison,
    value: poison,
    intent: poison,
    result: poison,
    error: poison,
    compensation: poison,
    baseDigest: fc.oneof({ weight: 4, arbitrary: fc.constant(new Live('stateDigest')) }, hex64),
    // Mostly left out (undefined is not sent): the digest the ops yield is not known here.
    stateDigest: fc.oneof(
      { weight: 3, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: hex64 },
    ),
    expectedSeq: fc.oneof(
      { weight: 4, arbitrary: fc.constant(new Live('headSeq')) },
      { weight: 1, arbitrary: fc.constantFrom(0, 1, 50) },
    ),
    at: fc.constantFrom(1, 2, 3, new Live('headSeq')),
    holder: fc.oneof(
      { weight: 4, arbitrary: fc.constant(new Live('holder')) },
      { weight: 1, arbitrary: fc.constant('holder-none') },
    ),
    owner: fc.oneof(
      { weight: 3, arbitrary: fc.constant(new Live('leaseOwner')) },
      { weight: 1, arbitrary: fc.constantFrom(...POOLS.owners) },
    ),
    epoch: fc.oneof(
      { weight: 3, arbitrary: fc.constant(new Live('leaseEpoch')) },
      { weight: 1, arbitrary: fc.constantFrom(1, 2) },
    ),
    newStreamId: fc.constantFrom(...POOLS.streams, 'fork-new'),
    kind: fc.constantFrom('payment', 'email'),
    sagaId: fc.constantFrom(...POOLS.sagas),
    tenant: fc.constantFrom('acme', 'globex', 'default', 'initech'),
    type: fc.oneof(
      { weight: 8, arbitrary: fc.constantFrom('observation', 'tool.call') },
      { weight: 1, arbitrary: fc.constant('hefesto.delta') },
    ),
    // Checkpoints: mostly ops that apply to the seeded states (objects at the root).
    ops: fc.array(
      fc.record({
        op: fc.constant('set'),
        path: fc.constantFrom('/turn', '/notes', '/a~1b'),
        value: fc.jsonValue({ maxDepth: 2 }),
      }),
      { minLength: 1, maxLength: 3 },
    ),
    path: fc.constantFrom('/turn', '/notes', '/messages', '/messages/-', '/notes/a', '/a~1b'),
    graceMs: fc.constantFrom(0, 10),
  };
};
