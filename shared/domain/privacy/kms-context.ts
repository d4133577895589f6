import type { WrapContext } from './key-wrap.js';

/**
 * The KMS encryption context of a stream's data key (docs/privacy.md, Decision 3): what the
 * KMS wrapper sends with each GenerateDataKey and Decrypt, and what the stack's grant
 * requires (infra/content-key.ts: `purpose` equal to this, no other context keys).
 *
 *   { purpose: "hefesto/v1/stream-key", tenant, stream, keyId }
 */
export const KMS_PURPOSE = 'hefesto/v1/stream-key';
export const KMS_CONTEXT_KEYS = ['purpose', 'tenant', 'stream', 'keyId'] as const;

export const kmsContext = (ctx: WrapContext): Record<string, string> => ({
  purpose: KMS_PURPOSE,
  tenant: ctx.tenant,
  stream: ctx.stream,
  keyId: ctx.keyId,
});
