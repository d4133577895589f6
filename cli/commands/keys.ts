import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { OpenStores } from '../../functions/wiring/run-compaction.js';
import type { Scope } from '../../shared/client/types.js';
import { parseSettings } from '../../shared/config/settings.js';
import { DataDirInUseError, DataDirNotFoundError } from '../../shared/domain/errors.js';
import {
  checkSigningKeys,
  loadKeyRing,
  recordedSigningKeys,
  retireLostKeys,
  rotateSigningKeyFile,
  SIGNING_KEY_FILE,
} from '../../shared/operator/signing-keys.js';
import { type Command, flagOption, stringOption } from '../command.js';
import { CliError, fieldLines, UsageError } from '../context.js';

const SCOPES: readonly Scope[] = ['read', 'write', 'admin'];

const parseScopes = (text: string | undefined): Scope[] => {
  if (text === undefined) throw new UsageError('--scopes is required, e.g. --scopes read,write');
  const scopes = text.split(',').map((s) => s.trim());
  const bad = scopes.find((s) => !SCOPES.includes(s as Scope));
  if (bad !== undefined) {
    throw new UsageError(`unknown scope "${bad}" (scopes: ${SCOPES.join(', ')})`);
  }
  return [...new Set(scopes)] as Scope[];
};

export const keysCreate: Command = {
  name: 'keys create',
  usage: '--scopes read,write[,admin] [--tenant T]',
  summary:
    "create an API key (admin scope); --tenant defaults to the caller's tenant, another " +
    'tenant needs the operator key (printed at the first start) or the root key',
  args: [],
  options: { scopes: { type: 'string' } },
  run: async (ctx, _args, values) => {
    const scopes = parseScopes(stringOption(values, 'scopes'));
    // Only an explicit --tenant names the new key's tenant; otherwise the server uses the
    // caller's, which is what an admin of one tenant means.
    const tenant = stringOption(values, 'tenant');
    const created = await ctx
      .client()
      .createKey(tenant === undefined ? { scopes } : { tenant, scopes });
    if (ctx.settings.json) {
      await ctx.print(JSON.stringify(created));
    } else {
      const lines = fieldLines([
        ['id', created.id],
        ['key', created.key],
        ['tenant', created.tenant],
        ['scopes', created.scopes.join(',')],
      ]);
      for (const line of lines) await ctx.print(line);
      ctx.stderr.write('the key is shown only once: store it now\n');
    }
    return 0;
  },
};

export const keysRevoke: Command = {
  name: 'keys revoke',
  usage: 'ID',
  summary: 'revoke an API key by its id (admin scope)',
  args: ['ID'],
  options: {},
  run: async (ctx, [id = ''], _values) => {
    await ctx.client().revokeKey(id);
    await ctx.print(ctx.settings.json ? JSON.stringify({ revoked: id }) : `revoked ${id}`);
    return 0;
  },
};

/**
 * `hefesto keys rotate-signing [--lost]`, with the embedded server stopped: a new tree-head
 * signing key in HEFESTO_DATA_DIR; the old public key stays published (retired), so every
 * receipt and witnessed head it signed keeps verifying. `--lost`: the old key's private half
 * is gone (signing-key.pem deleted, so the server refuses to start): the public halves of the
 * keys recorded as having signed heads are kept published instead, taken from the record
 * store. On AWS the key is a secret (docs/operations.md, "Signing keys").
 */
export const keysRotateSigning: Command = {
  name: 'keys rotate-signing',
  usage: '[--lost]',
  summary:
    'with the embedded server stopped: start a new tree-head signing key in HEFESTO_DATA_DIR; ' +
    'the old public key stays published (GET /v1/signing-keys) so old receipts keep verifying; ' +
    '--lost when signing-key.pem is gone: the lost public keys are kept published from the ' +
    'record of keys that signed heads',
  args: [],
  options: { lost: { type: 'boolean' } },
  run: async (ctx, _args, values) => {
    const settings = parseSettings(ctx.env);
    if (settings.bucket !== undefined && settings.table !== undefined) {
      throw new CliError(
        'ErrInvalidInput',
        'on AWS the signing key is a Secrets Manager secret: rotate it as docs/operations.md ' +
          '("Signing keys") says, then add the new key id to the stack\'s signingKeyIds',
      );
    }
    const dir = settings.dataDir;
    const lost = flagOption(values, 'lost');
    let stores: OpenStores;
    try {
      // Loaded on demand: the store wiring (better-sqlite3, the AWS SDK) is most of the
      // CLI's start-up, and `--help` or a remote command needs none of it.
      const { openCompactionStores } = await import('../../functions/wiring/run-compaction.js');
      stores = await openCompactionStores(settings);
    } catch (err) {
      if (err instanceof DataDirNotFoundError || err instanceof DataDirInUseError) {
        throw new CliError(err.code, `${err.message}: rotate with the server stopped`);
      }
      throw err;
    }
    try {
      const hasKey = existsSync(join(dir, SIGNING_KEY_FILE));
      if (!hasKey && !lost) {
        throw new CliError(
          'ErrNotFound',
          `no ${SIGNING_KEY_FILE} in ${dir}: restore it from a backup, or pass --lost to ` +
            'start a new key and keep the lost public keys published',
        );
      }
      const before = loadKeyRingIfAny(dir, hasKey);
      let ring = hasKey ? rotateSigningKeyFile(dir) : loadKeyRing(dir);
      if (lost) {
        const inRing = new Set(ring.jwks().keys.map((k) => k.kid));
        const recorded = await recordedSigningKeys(stores.records);
        ring = retireLostKeys(
          dir,
          recorded.filter((k) => !inRing.has(k.kid)),
        );
      }
      await checkSigningKeys(stores.records, ring);
      const retired = ring.retired.map((k) => k.kid);
      if (ctx.settings.json) {
        await ctx.print(JSON.stringify({ current: ring.current.keyId, retired }));
      } else {
        await ctx.print(`signing key ${ring.current.keyId} is current`);
        if (before) await ctx.print(`retired ${before} (still published)`);
        await ctx.print(`published keys: ${[ring.current.keyId, ...retired].join(', ')}`);
      }
      return 0;
    } finally {
      stores.close();
    }
  },
};

const loadKeyRingIfAny = (dir: string, hasKey: boolean): string | undefined =>
  hasKey ? loadKeyRing(dir).current.keyId : undefined;
