import { existsSync, statSync } from 'node:fs';
import { type AuditResult, auditStream, type WitnessedInput } from '../../shared/client/audit.js';
import { HefestoApiError } from '../../shared/client/errors.js';
import { defaultTrustStorePath, FileTrustStore } from '../../shared/client/trust-store-file.js';
import {
  LocalWitnessStore,
  publishedHeads,
  type WitnessStore,
} from '../../shared/operator/witness.js';
import { type Command, stringOption } from '../command.js';
import { CliError, type Context } from '../context.js';
import { Progress } from '../progress.js';

/**
 * `--witness DIR` (embedded: the data dir's witness/) or `--witness s3://BUCKET`. The AWS SDK
 * is loaded only for a bucket: every other command starts without it.
 */
const witnessStore = async (ctx: Context, where: string): Promise<WitnessStore> => {
  if (!where.startsWith('s3://')) {
    // A typo must not turn the witness check off: a directory that is not there is an error.
    if (!existsSync(where) || !statSync(where).isDirectory()) {
      throw new CliError(
        'ErrNotFound',
        `--witness ${where}: no such directory (the embedded server's witness is ` +
          '<data dir>/witness, e.g. .hefesto/witness; on AWS pass s3://WITNESS_BUCKET)',
      );
    }
    return new LocalWitnessStore(where);
  }
  const bucket = where.slice('s3://'.length).split('/')[0] ?? '';
  const [{ S3Client }, { S3WitnessStore }] = await Promise.all([
    import('@aws-sdk/client-s3'),
    import('../../shared/operator/s3-witness.js'),
  ]);
  const client = new S3Client({
    forcePathStyle: ctx.env.HEFESTO_S3_FORCE_PATH_STYLE === 'true',
    ...(ctx.env.AWS_ENDPOINT_URL_S3 ? { endpoint: ctx.env.AWS_ENDPOINT_URL_S3 } : {}),
  });
  return new S3WitnessStore({ client, bucket });
};

const ago = (ms: number): string => {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172_800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86_400)}d`;
};

const describe = (stream: string, r: AuditResult): string[] => {
  const lines = [
    `ok ${stream}: tree size ${r.head.treeSize} root ${r.head.rootHash} (key ${r.head.keyId})`,
    r.fromGenesis
      ? `  ${r.events} events: chain from genesis and tree rebuilt, equal to the signed root`
      : `  ${r.events} events after the pruning point: chain checked, each page proved in the tree`,
    r.trustedBefore === undefined
      ? '  trust store: first signed head of the stream, trusted from now on'
      : `  trust store: consistent with the head trusted before (tree size ${r.trustedBefore})`,
  ];
  if (r.witness) {
    const n = r.witness.newest;
    lines.push(
      n
        ? `  witness: ${r.witness.heads} published heads consistent; newest tree size ${n.treeSize}, published ${ago(n.ageMs)} ago (${new Date(n.publishedAt).toISOString()})`
        : '  witness: no published head of this stream yet',
    );
    for (const bad of r.witness.invalid) lines.push(`  witness: ignored ${bad}`);
  }
  return lines;
};

/**
 * The witness's heads of the stream. A witness that does not exist (S3 NoSuchBucket) or holds
 * nothing of the tenant is an error, not "no published head yet": it is the wrong place (or
 * the compactor never published there), and an audit against it would prove nothing.
 */
const readPublished = async (
  store: WitnessStore,
  where: string,
  tenant: string,
  stream: string,
): Promise<Awaited<ReturnType<typeof publishedHeads>>> => {
  let published: Awaited<ReturnType<typeof publishedHeads>>;
  try {
    published = await publishedHeads(store, tenant, stream);
  } catch (err) {
    if ((err as { name?: unknown }).name === 'NoSuchBucket') {
      throw new CliError('ErrNotFound', `--witness ${where}: no such bucket`, { cause: err });
    }
    throw err;
  }
  if (published.versions === 0) {
    throw new CliError(
      'ErrNotFound',
      `--witness ${where} holds no published head of tenant ${tenant}: not a witness, or ` +
        "the compactor has not published there yet (it publishes on each pass; run 'hefesto " +
        "compact' first)",
    );
  }
  return published;
};

export const audit: Command = {
  name: 'audit',
  usage: 'STREAM [--witness DIR|s3://BUCKET]',
  summary:
    "audit a stream's whole history: every event's hash from genesis, the Merkle tree " +
    'rebuilt and equal to the signed tree head, and the head consistent with the one this ' +
    'machine trusted before (trust file, $HEFESTO_TRUST_FILE); with --witness, also with every ' +
    'head the compactor published (and how fresh the newest is)',
  args: ['STREAM'],
  options: { witness: { type: 'string' } },
  run: async (ctx, [stream = ''], values) => {
    const { tenant } = await ctx.tenant();
    const http = ctx.transport();
    const get = async (path: string, query?: Record<string, string | number | undefined>) =>
      (await http.call('GET', path, { query })).body;
    let witnessed: WitnessedInput[] | undefined;
    const invalidVersions: string[] = [];
    const where = stringOption(values, 'witness');
    if (where !== undefined) {
      const published = await readPublished(await witnessStore(ctx, where), where, tenant, stream);
      witnessed = published.heads;
      invalidVersions.push(...published.invalid);
    }
    let progress: Progress | undefined;
    try {
      const result = await auditStream({
        baseUrl: ctx.settings.url,
        tenant,
        streamId: stream,
        get,
        trustStore: new FileTrustStore(defaultTrustStorePath(ctx.env)),
        ...(witnessed ? { witnessed } : {}),
        onProgress: (seq, of) => {
          progress ??= new Progress({ label: `audit ${stream}`, total: of, stream: ctx.stderr });
          progress.update(seq, of);
        },
      });
      progress?.finish('ok');
      if (result.witness) result.witness.invalid.unshift(...invalidVersions);
      if (ctx.settings.json) await ctx.print(JSON.stringify({ ok: true, ...result }));
      else for (const line of describe(stream, result)) await ctx.print(line);
      return 0;
    } catch (err) {
      progress?.finish('bad');
      if (!(err instanceof HefestoApiError) || err.code !== 'ErrTamperedLedger') throw err;
      const firstBadSeq = (err as { firstBadSeq?: number }).firstBadSeq;
      if (ctx.settings.json) {
        await ctx.print(
          JSON.stringify({ ok: false, code: err.code, firstBadSeq, reason: err.message }),
        );
      } else await ctx.print(`bad ${stream}: ${err.message}`);
      return 1;
    }
  },
};
