import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import type { KeyService } from '../../keys/keys.js';
import type { Ledger } from '../../ledger/ledger.js';
import { requireKey } from '../auth.js';
import { type AppEnv, principalOf } from '../context.js';
import {
  CommitmentKeySchema,
  ConsistencyProofSchema,
  ConsistencyQuery,
  InclusionProofSchema,
  InclusionQuery,
  JwkSetSchema,
  SignedTreeHeadSchema,
} from '../proof-schemas.js';
import { BEARER_SECURITY, json, problemResponses, StreamParams } from '../schemas.js';
import { validationHook } from '../validation.js';

/**
 * The stream id before the query: zod-openapi validates the query first, and a bad stream id
 * must be reported as the path's issue whatever the query holds (as on every other route).
 */
const streamIdFirst: MiddlewareHandler<AppEnv> = async (c, next) => {
  const result = StreamParams.safeParse({ streamId: c.req.param('streamId') });
  if (!result.success) {
    await validationHook(
      { success: false, target: 'param', error: result.error } as never,
      c as never,
    );
  }
  await next();
};

export interface ProofRoutesDeps {
  ledger: Ledger;
  keys: KeyService;
}

/**
 * The verifiable ledger (docs/proofs.md): the signing keys, a stream's signed tree head and
 * its inclusion and consistency proofs. Read scope; the tenant is always the key's, so a
 * proof never reveals another tenant's stream.
 */
export const proofRoutes = ({ ledger, keys }: ProofRoutesDeps) => {
  const app = new OpenAPIHono<AppEnv>();
  const read = requireKey({ keys, scope: 'read' });
  const noTree =
    ' A stream written before trees existed has none until the compactor builds it (404 ' +
    'ErrNotFound).';
  const lag =
    ' Bounded work whatever the lag of the tiles: where neither tiles nor the index records ' +
    'hold the hashes and over 1,024 leaves would be read, 503 ErrUnavailable with ' +
    'Retry-After (docs/proofs.md, "The untiled tail").';

  const signingKeys = createRoute({
    method: 'get',
    path: '/signing-keys',
    summary: 'Public keys of signed tree heads (JWK set)',
    description:
      'The Ed25519 keys (RFC 8037) that sign tree heads and receipts, the current one first; ' +
      'retired keys stay listed so that the heads they signed keep verifying.',
    security: BEARER_SECURITY,
    middleware: [read] as const,
    responses: {
      200: json(JwkSetSchema, 'The JWK set'),
      // 404: a server configured without a signing key signs no tree heads.
      ...problemResponses(401, 403, 404, 503),
    },
  });
  app.openapi(signingKeys, (c) => c.json(ledger.proofs.jwks() as never, 200));

  const treeHead = createRoute({
    method: 'get',
    path: '/streams/{streamId}/tree-head',
    summary: 'Signed tree head',
    description: `The signed head of the stream's RFC 9162 tree at its current size.${noTree}`,
    security: BEARER_SECURITY,
    middleware: [read] as const,
    request: { params: StreamParams },
    responses: {
      200: json(SignedTreeHeadSchema, 'The signed tree head'),
      ...problemResponses(400, 401, 403, 404, 500, 503),
    },
  });
  app.openapi(treeHead, async (c) => {
    const { streamId } = c.req.valid('param');
    return c.json(await ledger.proofs.treeHead(principalOf(c).tenant, streamId), 200);
  });

  const inclusion = createRoute({
    method: 'get',
    path: '/streams/{streamId}/proofs/inclusion',
    summary: 'Inclusion proof of an event',
    description:
      'RFC 9162 §2.1.3: proves that event `seq` (leaf seq − treeBase − 1) is in the tree of ' +
      '`treeSize` leaves (default: the current tree). A pruned seq is 410 ErrPruned; a ' +
      `seq or treeSize past the tree is 400.${noTree}${lag}`,
    security: BEARER_SECURITY,
    middleware: [read, streamIdFirst] as const,
    request: { params: StreamParams, query: InclusionQuery },
    responses: {
      200: json(InclusionProofSchema, 'The inclusion proof'),
      ...problemResponses(400, 401, 403, 404, 410, 500, 503),
    },
  });
  app.openapi(inclusion, async (c) => {
    const { streamId } = c.req.valid('param');
    const { seq, treeSize } = c.req.valid('query');
    const proof = await ledger.proofs.inclusion(principalOf(c).tenant, streamId, seq, treeSize);
    return c.json(proof, 200);
  });

  const consistency = createRoute({
    method: 'get',
    path: '/streams/{streamId}/proofs/consistency',
    summary: 'Consistency proof between two tree sizes',
    description:
      'RFC 9162 §2.1.4: proves that the tree of `from` leaves is a prefix of the tree of `to` ' +
      'leaves (default: the current tree). `from = 0` and `from = to` answer the empty path ' +
      '(valid when the `from` root is the empty tree’s, resp. equals the `to` root); ' +
      `from > to is 400.${noTree}${lag}`,
    security: BEARER_SECURITY,
    middleware: [read, streamIdFirst] as const,
    request: { params: StreamParams, query: ConsistencyQuery },
    responses: {
      200: json(ConsistencyProofSchema, 'The consistency proof'),
      ...problemResponses(400, 401, 403, 404, 410, 500, 503),
    },
  });
  app.openapi(consistency, async (c) => {
    const { streamId } = c.req.valid('param');
    const { from, to } = c.req.valid('query');
    const proof = await ledger.proofs.consistency(principalOf(c).tenant, streamId, from, to);
    return c.json(proof, 200);
  });

  const commitmentKey = createRoute({
    method: 'get',
    path: '/streams/{streamId}/keys/commitment',
    summary: "A sealed stream's commitment key",
    description:
      'The key k_c a verifying client binds the payloads of a stream sealed at rest with ' +
      '(docs/privacy.md, Decision 1): each format 2 event commits to ' +
      'c = HMAC(k_c, seq ‖ type ‖ JCS(payload)). Read scope, the key’s tenant only. It ' +
      'decrypts nothing. A stream stored in the clear has none (404 ErrNotFound); a server ' +
      'that cannot open the stream key answers 503 ErrUnavailable.',
    security: BEARER_SECURITY,
    middleware: [read] as const,
    request: { params: StreamParams },
    responses: {
      200: json(CommitmentKeySchema, 'The commitment key'),
      ...problemResponses(400, 401, 403, 404, 500, 503),
    },
  });
  app.openapi(commitmentKey, async (c) => {
    const { streamId } = c.req.valid('param');
    return c.json(await ledger.reader.commitmentKey(principalOf(c).tenant, streamId), 200);
  });

  return app;
};
