import { randomBytes as nodeRandomBytes, timingSafeEqual } from 'node:crypto';
import { apiKeyRecordKey, BOOTSTRAP_KEY } from '../chain/storage-keys.js';
import {
  ConflictError,
  ForbiddenError,
  InvalidInputError,
  NotFoundError,
  UnauthorizedError,
} from '../domain/errors.js';
import { isHexHash, sha256 } from '../domain/hashing.js';
import type { Clock } from '../ports/clock.js';
import type { Item, RecordStore } from '../ports/record-store.js';

/**
 * API keys: `hk_<keyId>_<secret>`, where keyId is 16 hex chars (public, names the record)
 * and secret is 32 random bytes in base64url. Only SHA-256 of the whole key is stored: the
 * secret is high-entropy, so a slow password hash would add latency and no safety. Hashes
 * are compared in constant time.
 *
 * Records (see storage-keys.ts): the key at pk `key#<keyId>`, sk `key`; a bootstrap marker at
 * pk `bootstrap`, sk `bootstrap`, written with the first key so that it is created once
 * per store. Revoking keeps the record with `revokedAt` set (audit trail); a revoked key
 * is refused like an unknown one.
 *
 * The operator capability: a key that may manage keys of any tenant (and run operator-wide
 * work such as a compaction pass). Two keys have it:
 * - the key `ensureBootstrapKey` creates, the one the embedded server prints at its first
 *   start: stored hashed like every key, with `operator: true` on its record (tenant
 *   `default`, every scope). Only that path sets the flag; no route can mint another. Keys
 *   printed by a server before the flag existed stay admins of `default` only.
 * - a root key (HEFESTO_API_KEY), never stored: tenant `default`, every scope.
 * Either one reads and writes only tenant `default`'s streams, like any key of that tenant.
 *
 * Process keys (`mintProcessKey`): the in-process engine's (`@hefesto/embedded`) principal. A
 * key of the usual form, minted at open for the tenant and scopes the caller names, never an
 * operator; only its SHA-256 is kept, in this object's memory, never in the record store: it
 * is valid while this process runs and this service lives, then gone (nothing to revoke,
 * nothing at rest to leak). The engine hands it to its own client and to nobody else; a
 * loopback listener of the same app accepts it like any key, so it never left the process.
 */

export const SCOPES = ['read', 'write', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

export const TENANT_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const DEFAULT_TENANT = 'default';
export const ROOT_KEY_ID = 'root';

/** Who is calling: always derived from the presented key, never from the request. */
export interface Principal {
  keyId: string;
  tenant: string;
  scopes: readonly Scope[];
  /** The operator capability (see the module comment): the root key or the operator key. */
  root: boolean;
}

/** A newly created key; `key` is shown once and cannot be recovered later. */
export interface IssuedKey {
  id: string;
  key: string;
  tenant: string;
  scopes: Scope[];
  createdAt: number;
  /** Set on the operator key only. */
  operator?: true;
}

export interface KeyServiceOptions {
  records: RecordStore;
  clock: Clock;
  /** Accepted as a root key. */
  rootKey?: string | undefined;
  /** Source of key ids and secrets. Default: node:crypto randomBytes. */
  randomBytes?: (size: number) => Uint8Array;
  /**
   * Keep the key records this service read in memory, so a key's requests after its first
   * read no record. Only for a service that is the one writer of its key records (the
   * embedded server and engine, which hold their data dir alone: docs/operations.md, "One
   * holder"): a revocation goes through `revoke`, which drops the entry before it returns,
   * so it is as immediate as without the cache. Never on AWS, where other instances revoke.
   * Default false.
   */
  cacheLookups?: boolean;
}

/** Cached key records at most (the oldest read goes first). */
const MAX_CACHED_KEYS = 10_000;

const KEY_PATTERN = /^hk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;
const KEY_ID_PATTERN = /^[0-9a-f]{16}$/;

const sameHash = (a: Buffer, b: Buffer): boolean => a.length === b.length && timingSafeEqual(a, b);

const isScope = (value: unknown): value is Scope => SCOPES.includes(value as Scope);

interface KeyRecord {
  tenant: string;
  scopes: Scope[];
  hash: string;
  revokedAt?: number;
  operator: boolean;
}

const toKeyRecord = (item: Item): KeyRecord | undefined => {
  const { tenant, scopes, hash, revokedAt } = item;
  if (typeof tenant !== 'string' || typeof hash !== 'string' || !Array.isArray(scopes)) {
    return undefined;
  }
  if (!scopes.every(isScope)) return undefined;
  // Only the literal `true` grants it: a record with anything else there is a plain key.
  const operator = item.operator === true;
  return typeof revokedAt === 'number'
    ? { tenant, scopes, hash, revokedAt, operator }
    : { tenant, scopes, hash, operator };
};

export class KeyService {
  readonly #records: RecordStore;
  readonly #clock: Clock;
  readonly #rootHash: Buffer | undefined;
  readonly #random: (size: number) => Uint8Array;
  /** Process keys by the hex SHA-256 of the key (see the module comment). */
  readonly #processKeys = new Map<string, Principal>();
  /** With `cacheLookups`: valid (unrevoked) key records by key id. */
  readonly #cache: Map<string, { hash: Buffer; principal: Principal }> | undefined;
  /**
   * Moves on with every revocation: a lookup that read its record before one finished
   * does not cache it (it may be the record from before the revocation).
   */
  #revocations = 0;

  constructor(options: KeyServiceOptions) {
    this.#records = options.records;
    this.#clock = options.clock;
    this.#rootHash = options.rootKey ? sha256(options.rootKey) : undefined;
    this.#random = options.randomBytes ?? nodeRandomBytes;
    this.#cache = options.cacheLookups ? new Map() : undefined;
  }

  /** The principal of a presented key; any failure is the same ErrUnauthorized. */
  async authenticate(token: string): Promise<Principal> {
    const presented = sha256(token);
    if (this.#rootHash && sameHash(presented, this.#rootHash)) {
      return { keyId: ROOT_KEY_ID, tenant: DEFAULT_TENANT, scopes: [...SCOPES], root: true };
    }
    const match = KEY_PATTERN.exec(token);
    const keyId = match?.[1];
    if (keyId === undefined) throw new UnauthorizedError();
    const held = this.#processKeys.get(presented.toString('hex'));
    if (held) return held;
    const cached = this.#cache?.get(keyId);
    if (cached) {
      if (!sameHash(presented, cached.hash)) throw new UnauthorizedError();
      return cached.principal;
    }
    const revocations = this.#revocations;
    const item = await this.#records.get(apiKeyRecordKey(keyId));
    const record = item && toKeyRecord(item);
    if (!record || record.revokedAt !== undefined || !isHexHash(record.hash)) {
      throw new UnauthorizedError();
    }
    const hash = Buffer.from(record.hash, 'hex');
    if (!sameHash(presented, hash)) throw new UnauthorizedError();
    const principal = {
      keyId,
      tenant: record.tenant,
      scopes: record.scopes,
      root: record.operator,
    };
    if (this.#cache && revocations === this.#revocations) {
      if (this.#cache.size >= MAX_CACHED_KEYS) {
        const oldest = this.#cache.keys().next().value;
        if (oldest !== undefined) this.#cache.delete(oldest);
      }
      this.#cache.set(keyId, { hash, principal });
    }
    return principal;
  }

  /**
   * Creates a key for `tenant`: an admin may do so for its own tenant, an operator (the root
   * or the operator key) for any. The new key is never an operator.
   */
  async create(by: Principal, input: { tenant: string; scopes: Scope[] }): Promise<IssuedKey> {
    this.#checkAdmin(by);
    if (!TENANT_PATTERN.test(input.tenant)) throw new InvalidInputError('invalid tenant id');
    if (!by.root && input.tenant !== by.tenant) {
      throw new ForbiddenError(
        'an admin key may only create keys for its own tenant; keys for other tenants need ' +
          'the operator key (printed at the first start) or the root key (HEFESTO_API_KEY)',
      );
    }
    const scopes = SCOPES.filter((s) => input.scopes.includes(s));
    if (scopes.length === 0 || input.scopes.some((s) => !isScope(s))) {
      throw new InvalidInputError(`scopes must be a non-empty subset of ${SCOPES.join(', ')}`);
    }
    const issued = this.#newKey(input.tenant, scopes);
    await this.#records.put(this.#recordOf(issued), { conditions: [{ op: 'notExists' }] });
    return issued;
  }

  /**
   * A process key for `tenant` with `scopes` (see the module comment): valid in this service
   * until it is dropped, stored nowhere. Returns the key; its id names it in logs.
   */
  mintProcessKey(input: { tenant: string; scopes: readonly Scope[] }): IssuedKey {
    if (!TENANT_PATTERN.test(input.tenant)) throw new InvalidInputError('invalid tenant id');
    const scopes = SCOPES.filter((s) => input.scopes.includes(s));
    if (scopes.length === 0 || input.scopes.some((s) => !isScope(s))) {
      throw new InvalidInputError(`scopes must be a non-empty subset of ${SCOPES.join(', ')}`);
    }
    const issued = this.#newKey(input.tenant, scopes);
    this.#processKeys.set(sha256(issued.key).toString('hex'), {
      keyId: issued.id,
      tenant: issued.tenant,
      scopes: issued.scopes,
      root: false,
    });
    return issued;
  }

  /** Drops every process key: none of them authenticates any more. */
  dropProcessKeys(): void {
    this.#processKeys.clear();
  }

  /**
   * Revokes a key; revoking it again is a no-op. A key of another tenant is reported as not
   * found, so that an admin cannot probe which key ids exist elsewhere.
   */
  async revoke(by: Principal, keyId: string): Promise<void> {
    this.#checkAdmin(by);
    const notFound = new NotFoundError(`key ${keyId} not found`);
    if (!KEY_ID_PATTERN.test(keyId)) throw notFound;
    const key = apiKeyRecordKey(keyId);
    const item = await this.#records.get(key);
    const record = item && toKeyRecord(item);
    if (!record || (!by.root && record.tenant !== by.tenant)) throw notFound;
    if (record.revokedAt !== undefined) return;
    // Dropped before the write (a lookup meanwhile reads the record) and after it.
    this.#revocations++;
    this.#cache?.delete(keyId);
    try {
      await this.#records.update(
        key,
        { set: { revokedAt: this.#clock.now() } },
        { conditions: [{ op: 'exists' }] },
      );
    } finally {
      // Also when the write failed: it may have happened (a lost reply).
      this.#revocations++;
      this.#cache?.delete(keyId);
    }
  }

  /**
   * Creates the operator key (tenant `default`, every scope, the operator capability) unless
   * this store has had one created this way before. Returns it, or undefined when it already
   * happened (also when another process won the race).
   */
  async ensureBootstrapKey(): Promise<IssuedKey | undefined> {
    if (await this.#records.get(BOOTSTRAP_KEY)) return undefined;
    const issued: IssuedKey = { ...this.#newKey(DEFAULT_TENANT, [...SCOPES]), operator: true };
    try {
      await this.#records.transact([
        { kind: 'put', item: this.#recordOf(issued), conditions: [{ op: 'notExists' }] },
        {
          kind: 'put',
          item: { ...BOOTSTRAP_KEY, keyId: issued.id, createdAt: issued.createdAt },
          conditions: [{ op: 'notExists' }],
        },
      ]);
    } catch (err) {
      if (err instanceof ConflictError) return undefined;
      throw err;
    }
    return issued;
  }

  #checkAdmin(by: Principal): void {
    if (!by.scopes.includes('admin')) throw new ForbiddenError('this key lacks the admin scope');
  }

  #newKey(tenant: string, scopes: Scope[]): IssuedKey {
    const id = Buffer.from(this.#random(8)).toString('hex');
    const secret = Buffer.from(this.#random(32)).toString('base64url');
    return { id, key: `hk_${id}_${secret}`, tenant, scopes, createdAt: this.#clock.now() };
  }

  #recordOf(issued: IssuedKey): Item {
    return {
      ...apiKeyRecordKey(issued.id),
      tenant: issued.tenant,
      scopes: issued.scopes,
      hash: sha256(issued.key).toString('hex'),
      createdAt: issued.createdAt,
      ...(issued.operator ? { operator: true } : {}),
    };
  }
}
