import { pino } from 'pino';
import { Compactor } from '../../../shared/compaction/compactor.js';
import { DEFAULT_LIMITS, type HttpLimits } from '../../../shared/domain/limits.js';
import { createApp } from '../../../shared/http/app.js';
import { KeyService, type Scope } from '../../../shared/keys/keys.js';
import { Ledger } from '../../../shared/ledger/ledger.js';
import type { IdSource } from '../../../shared/ports/clock.js';
import { Drainer } from '../../../shared/state/drain.js';
import { readContent, type StoredContent, storesFrom } from './stores.js';

/**
 * The world every fuzz run starts from: two tenants with streams in every interesting state
 * (events, checkpoints and a base snapshot, effects pending, completed and failed in a saga,
 * a held lease, a drained lease, a fork, a pruned stream), keys of every scope, a revoked
 * key. It is built once through the API and copied for each run, so that a run's requests
 * meet the same stored state every time and a seed replays exactly.
 *
 * Everything random is seeded (key secrets, effect holder ids) and the clock is set by hand.
 */

export const ROOT_KEY = 'root-key-for-fuzz-0123456789abcdef';
const T0 = 1_717_234_200_000;

/**
 * Small limits, so 413 is cheap to reach; large enough for a payload nested 6,000 levels
 * deep (12 KB), which is past what JSON serialization survives.
 */
export const FUZZ_LIMITS: HttpLimits = {
  maxEvents: 8,
  maxPayloadBytes: 16 * 1024,
  maxBodyBytes: 32 * 1024,
  maxJsonDepth: DEFAULT_LIMITS.maxJsonDepth,
};

export const TENANT = 'acme';
export const OTHER_TENANT = 'globex';

/** Keys the fuzz test can send, by name; `tenant` is where their requests land. */
export const KEY_SPECS: Record<string, { tenant: string; scopes: Scope[] }> = {
  'acme-read': { tenant: TENANT, scopes: ['read'] },
  'acme-write': { tenant: TENANT, scopes: ['write'] },
  'acme-admin': { tenant: TENANT, scopes: ['admin'] },
  'acme-rw': { tenant: TENANT, scopes: ['read', 'write'] },
  'acme-all': { tenant: TENANT, scopes: ['read', 'write', 'admin'] },
  'globex-all': { tenant: OTHER_TENANT, scopes: ['read', 'write', 'admin'] },
  revoked: { tenant: TENANT, scopes: ['read', 'write', 'admin'] },
};

/** Placeholder for the run's own stream id, filled in when a request is sent. */
export const RUN_STREAM = '{run-stream}';

/** Values worth drawing often: what the seeded world holds. */
export const POOLS = {
  /** RUN_STREAM: the stream id of the run (new in the world, maybe not an id at all). */
  streams: [
    'run-1',
    'run-1',
    'run-2',
    'run-3',
    'run-4',
    'run-5',
    'run-new',
    RUN_STREAM,
    RUN_STREAM,
  ],
  effectKeys: ['pay-1', 'pay-2', 'pay-3', 'compensate:pay-1', 'pay-new'],
  sagas: ['order-1', 'order-2'],
  owners: ['worker-1', 'worker-2', 'worker-9'],
};

const seededRandom = (seed: number) => {
  let state = seed >>> 0;
  return (size: number): Uint8Array => {
    const out = new Uint8Array(size);
    for (let i = 0; i < size; i++) {
      // xorshift32: enough for distinct key ids and secrets in a test.
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      out[i] = state & 0xff;
    }
    return out;
  };
};

const counterIds = (prefix: string): IdSource => {
  let n = 0;
  return { newId: () => `${prefix}-${++n}` };
};

/** What one run works on: fresh stores holding a copy of the world, and services over them. */
const servicesOver = async (content: StoredContent, clock: { now(): number }, keySeed: number) => {
  const { objects, records } = await storesFrom(content, clock);
  const ledger = new Ledger(
    { objects, records, clock, ids: counterIds('holder') },
    {
      snapshotEvery: 3,
    },
  );
  // Drains poll for quiet with real sleeps; the clock stands still here, so do not sleep.
  (ledger as { drainer: Drainer }).drainer = new Drainer({
    leases: ledger.leases,
    reader: ledger.reader,
    states: ledger.states,
    clock,
    sleep: async () => {},
  });
  const keys = new KeyService({
    records,
    clock,
    rootKey: ROOT_KEY,
    randomBytes: seededRandom(keySeed),
  });
  return { objects, records, ledger, keys };
};

type Services = Awaited<ReturnType<typeof servicesOver>>;

/** Calls on `target()` as it is when called (methods bound to it: classes with #fields). */
const delegate = <T extends object>(target: () => T): T =>
  new Proxy({} as T, {
    get: (_t, prop) => {
      const value = Reflect.get(target(), prop);
      return typeof value === 'function' ? value.bind(target()) : value;
    },
  });

export type FuzzApp = Awaited<ReturnType<typeof openWorld>>;

/**
 * The app, built once (building it is the costly part), over services that `reset` replaces
 * with fresh ones on a copy of `content`: every run starts from the same stored state, with
 * its clock, holder ids and key secrets starting over.
 */
export const openWorld = async (content: StoredContent, start: number) => {
  let now = start;
  const clock = { now: () => now };
  // Seeding and runs draw key secrets from different seeds: a run's new key is always new.
  let current: Services = await servicesOver(content, clock, 7);
  const app = createApp({
    ledger: delegate(() => current.ledger),
    keys: delegate(() => current.keys),
    logger: pino({ level: 'silent' }),
    clock,
    limits: FUZZ_LIMITS,
  });
  return {
    app,
    clock,
    get ledger() {
      return current.ledger;
    },
    get objects() {
      return current.objects;
    },
    get records() {
      return current.records;
    },
    advance: (ms: number) => {
      now += ms;
    },
    reset: async (from: StoredContent, at: number) => {
      now = at;
      current = await servicesOver(from, clock, 8);
    },
  };
};

export interface SeededWorld {
  content: StoredContent;
  /** The clock when seeding ended: every run starts there. */
  start: number;
  /** Tokens by key name (KEY_SPECS, plus `root`). */
  tokens: Record<string, string>;
  /** Ids of the seeded keys. */
  keyIds: string[];
}

type Call = (
  path: string,
  init?: { key?: string; method?: string; body?: unknown; headers?: Record<string, string> },
) => Promise<unknown>;

const caller =
  (world: FuzzApp): Call =>
  async (path, init = {}) => {
    const headers: Record<string, string> = { ...init.headers };
    if (init.key !== undefined) headers.authorization = `Bearer ${init.key}`;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const res = await world.app.request(path, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`seeding ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };

const events = (n: number, label: string) =>
  Array.from({ length: n }, (_, i) => ({ type: 'observation', payload: { label, i } }));

/** Builds the seeded world through the API (and one compactor run, for the pruned stream). */
export const seedWorld = async (): Promise<SeededWorld> => {
  const world = await openWorld({ objects: [], items: [] }, T0);
  const call = caller(world);
  const tokens: Record<string, string> = { root: ROOT_KEY };
  const keyIds: string[] = [];
  for (const [name, spec] of Object.entries(KEY_SPECS)) {
    const created = (await call('/v1/keys', { key: ROOT_KEY, body: spec })) as {
      id: string;
      key: string;
    };
    tokens[name] = created.key;
    keyIds.push(created.id);
  }
  await call(`/v1/keys/${keyIds.at(-1)}`, { key: ROOT_KEY, method: 'DELETE' });
  const key = tokens['acme-all'] as string;

  // run-4: pruned by retention: its first 3 events are gone, the last 2 are served.
  await call('/v1/streams/run-4/events', { key, body: { events: events(3, 'run-4') } });
  await call('/v1/streams/run-4/retention', {
    key,
    method: 'PUT',
    body: { pruneAfterSeconds: 600 },
  });
  world.advance(20 * 60_000);
  await call('/v1/streams/run-4/events', { key, body: { events: events(2, 'run-4b') } });
  const compactor = new Compactor({
    objects: world.objects,
    records: world.records,
    clock: world.clock,
    ids: counterIds('compactor'),
    states: world.ledger.states,
  });
  await compactor.run();
  world.advance(60_000);
  await compactor.run();

  // run-1: events, checkpoints (a base snapshot at the third), a saga's effects.
  await call('/v1/streams/run-1/events', { key, body: { events: events(3, 'run-1') } });
  for (const turn of [1, 2, 3]) {
    const head = (await call('/v1/streams/run-1', { key })) as { stateDigest: string };
    await call('/v1/streams/run-1/checkpoints', {
      key,
      body: { baseDigest: head.stateDigest, ops: [{ op: 'set', path: '/turn', value: turn }] },
    });
  }
  const begin = (effectKey: string, sagaId: string) =>
    call(`/v1/streams/run-1/effects/${effectKey}/begin`, {
      key,
      body: { kind: 'payment', intent: { effectKey }, compensation: { refund: effectKey }, sagaId },
    }) as Promise<{ holder: string }>;
  const paid = await begin('pay-1', 'order-1');
  await call('/v1/streams/run-1/effects/pay-1/complete', {
    key,
    body: { holder: paid.holder, result: { id: 'p-1' } },
  });
  await begin('pay-2', 'order-1');
  const failed = await begin('pay-3', 'order-2');
  await call('/v1/streams/run-1/effects/pay-3/fail', {
    key,
    body: { holder: failed.holder, error: { reason: 'declined' } },
  });

  // run-2: a lease held by worker-1 (epoch 1), written under it.
  await call('/v1/streams/run-2/lease', { key, body: { owner: 'worker-1', ttlMs: 300_000 } });
  await call('/v1/streams/run-2/events', {
    key,
    body: { events: events(2, 'run-2') },
    headers: { 'hefesto-fencing-token': '1' },
  });

  // run-3: a fork of run-1; run-5: drained (its epoch 1 is fenced from now on).
  await call('/v1/streams/run-1/fork', { key, body: { newStreamId: 'run-3', at: 4 } });
  await call('/v1/streams/run-5/events', { key, body: { events: events(1, 'run-5') } });
  await call('/v1/streams/run-5/lease', { key, body: { owner: 'worker-2', ttlMs: 60_000 } });
  await call('/v1/streams/run-5/lease/drain', {
    key,
    body: { owner: 'worker-2', epoch: 1, graceMs: 0 },
  });

  // The other tenant: the same stream id, its own events and lease.
  const other = tokens['globex-all'] as string;
  await call('/v1/streams/run-1/events', { key: other, body: { events: events(2, 'globex') } });
  await call('/v1/streams/run-1/lease', {
    key: other,
    body: { owner: 'worker-1', ttlMs: 300_000 },
  });

  return {
    content: await readContent(world.objects, world.records),
    start: world.clock.now(),
    tokens,
    keyIds,
  };
};
