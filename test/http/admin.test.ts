import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sha256 } from '../../shared/domain/hashing.js';
import { createApp } from '../../shared/http/app.js';
import { KeyService, type Scope } from '../../shared/keys/keys.js';
import { batch, compactionWorld, manualClock } from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * The operator key (the one the embedded server prints at its first start), `GET /v1/whoami`
 * and `POST /v1/admin/compact`, on every store adapter: the key records and the compactor's
 * work live in storage.
 */

const ROOT_KEY = 'root-key-for-admin-tests-0123456789';

describe.each(allStores.filter((f) => f.enabled))(
  'operator key and admin routes on $name',
  (factory) => {
    let stores: StorePair;
    let world: ReturnType<typeof compactionWorld>;
    let keys: KeyService;
    let app: ReturnType<typeof createApp>;
    let operator: string;

    const request = (path: string, key: string | undefined, body?: unknown, method?: string) =>
      Promise.resolve(
        app.request(path, {
          method: method ?? (body === undefined ? 'GET' : 'POST'),
          headers: {
            ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      );
    const createKey = async (by: string, tenant: string | undefined, scopes: Scope[]) =>
      request('/v1/keys', by, tenant === undefined ? { scopes } : { tenant, scopes });
    const keyOf = async (res: Response) => (await res.json()) as { id: string; key: string };
    const whoami = async (key: string) => (await request('/v1/whoami', key)).json();

    beforeEach(async () => {
      stores = await factory.make();
      const clock = manualClock();
      world = compactionWorld(stores, {}, clock);
      keys = new KeyService({ records: stores.records, clock, rootKey: ROOT_KEY });
      app = createApp({
        ledger: world.ledger,
        keys,
        logger: pino({ level: 'silent' }),
        clock,
        compactor: world.compactor(),
      });
      const bootstrap = await keys.ensureBootstrapKey();
      if (bootstrap === undefined) throw new Error('no bootstrap key');
      operator = bootstrap.key;
    });
    afterEach(async () => {
      await stores.cleanup();
    });

    describe('the operator key printed at the first start', () => {
      it('creates keys for another tenant, which then act on that tenant only', async () => {
        const res = await createKey(operator, 'acme', ['read', 'write']);

        expect(res.status).toBe(201);
        const acme = await keyOf(res);
        expect(await whoami(acme.key)).toEqual({
          keyId: acme.id,
          tenant: 'acme',
          scopes: ['read', 'write'],
          operator: false,
        });
        const appended = await request('/v1/streams/run-1/events', acme.key, {
          events: batch('a'),
        });
        expect(appended.status).toBe(201);
        expect((await request('/v1/streams/run-1', operator)).status).toBe(404);
      });

      it('is stored hashed like every key, with the operator flag on its record only', async () => {
        const bootstrapId = (await whoami(operator)) as { keyId: string };
        const record = await stores.records.get({ pk: `key#${bootstrapId.keyId}`, sk: 'key' });

        expect(record).toMatchObject({
          tenant: 'default',
          operator: true,
          hash: sha256(operator).toString('hex'),
        });
        expect(JSON.stringify(record)).not.toContain(operator.slice(-43));
        expect(await whoami(operator)).toMatchObject({ tenant: 'default', operator: true });
      });

      it('never hands the capability on: a key it creates, even an admin of default, is not one', async () => {
        const admin = await keyOf(await createKey(operator, undefined, ['admin']));

        expect(await whoami(admin.key)).toMatchObject({ tenant: 'default', operator: false });
        const res = await createKey(admin.key, 'acme', ['read']);
        expect(res.status).toBe(403);
        expect(await res.json()).toMatchObject({ code: 'ErrForbidden' });
        expect(
          ((await (await createKey(admin.key, 'default', ['read'])).json()) as { tenant: string })
            .tenant,
        ).toBe('default');
      });

      it('revokes a key of another tenant, which a tenant admin cannot even see', async () => {
        const acmeAdmin = await keyOf(await createKey(operator, 'acme', ['admin']));
        const globex = await keyOf(await createKey(operator, 'globex', ['read']));

        expect(
          (await request(`/v1/keys/${globex.id}`, acmeAdmin.key, undefined, 'DELETE')).status,
        ).toBe(404);
        expect((await request('/v1/whoami', globex.key)).status).toBe(200);
        expect((await request(`/v1/keys/${globex.id}`, operator, undefined, 'DELETE')).status).toBe(
          204,
        );
        expect((await request('/v1/whoami', globex.key)).status).toBe(401);
      });

      it('is created once per store: a second start prints no key', async () => {
        expect(await keys.ensureBootstrapKey()).toBeUndefined();
      });
    });

    describe('GET /v1/whoami', () => {
      it('answers any valid key, whatever its scopes, and 401 without one', async () => {
        const writer = await keyOf(await createKey(operator, 'acme', ['write']));

        expect(await whoami(writer.key)).toMatchObject({ tenant: 'acme', scopes: ['write'] });
        expect(await whoami(ROOT_KEY)).toEqual({
          keyId: 'root',
          tenant: 'default',
          scopes: ['read', 'write', 'admin'],
          operator: true,
        });
        expect((await request('/v1/whoami', undefined)).status).toBe(401);
      });
    });

    describe('POST /v1/admin/compact', () => {
      it('runs a pass over the work of every tenant for the operator key', async () => {
        const acme = (await keyOf(await createKey(operator, 'acme', ['write']))).key;
        for (let i = 0; i < 4; i++) {
          expect(
            (await request('/v1/streams/a/events', acme, { events: batch(`a${i}`) })).status,
          ).toBe(201);
          expect(
            (await request('/v1/streams/d/events', operator, { events: batch(`d${i}`) })).status,
          ).toBe(201);
        }

        const res = await request('/v1/admin/compact', operator, undefined, 'POST');

        expect(res.status).toBe(200);
        expect(await res.json()).toMatchObject({
          examined: 2,
          compacted: 2,
          errors: 0,
          more: false,
        });
        const again = await request('/v1/admin/compact', ROOT_KEY, undefined, 'POST');
        expect(await again.json()).toMatchObject({ examined: 0 });
      });

      it('answers what the OpenAPI document says, as whoami does', async () => {
        const doc = (await (await request('/v1/openapi.json', undefined)).json()) as {
          components: { schemas: Record<string, { properties: Record<string, unknown> }> };
        };
        const documented = (name: string) =>
          Object.keys(doc.components.schemas[name]?.properties ?? {}).sort();

        const res = await request('/v1/admin/compact', operator, undefined, 'POST');
        const report = (await res.json()) as object;

        expect(Object.keys(report).sort()).toEqual(documented('CompactionReport'));
        expect(Object.keys((await whoami(operator)) as object).sort()).toEqual(
          documented('WhoAmI'),
        );
      });

      it('refuses a tenant admin (403) and a missing key (401), compacting nothing', async () => {
        const acmeAdmin = (await keyOf(await createKey(operator, 'acme', ['admin', 'write']))).key;
        for (let i = 0; i < 4; i++) {
          await request('/v1/streams/a/events', acmeAdmin, { events: batch(`a${i}`) });
        }

        const forbidden = await request('/v1/admin/compact', acmeAdmin, undefined, 'POST');
        const anonymous = await request('/v1/admin/compact', undefined, undefined, 'POST');

        expect(forbidden.status).toBe(403);
        expect(await forbidden.json()).toMatchObject({ code: 'ErrForbidden' });
        expect(anonymous.status).toBe(401);
        const res = await request('/v1/admin/compact', operator, undefined, 'POST');
        expect(await res.json()).toMatchObject({ examined: 1, compacted: 1 });
      });
    });
  },
);
