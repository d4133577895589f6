import { z } from '@hono/zod-openapi';
import { queryInt } from './query-int.js';

/**
 * Schemas of the verifiable ledger's routes (docs/proofs.md): signed tree heads, JWK sets and
 * proofs. Self-contained (schemas.ts imports the tree head for the append's receipt).
 */

const Hex = z.string().regex(/^[0-9a-f]{64}$/);
const Size = z.number().int().min(0);
const QuerySize = (description: string) => queryInt({ min: 0, description });

export const SignedTreeHeadSchema = z
  .object({
    tenant: z.string(),
    streamId: z.string(),
    treeBase: Size.openapi({
      description: 'Seq before the first leaf: leaf i is seq treeBase + i + 1',
    }),
    treeSize: Size.openapi({ description: 'Leaves; the head seq is treeBase + treeSize' }),
    rootHash: Hex.openapi({ description: 'RFC 9162 root (MTH) of the tree, hex' }),
    timestamp: z.number().int().openapi({ description: 'Server clock, ms since the epoch' }),
    keyId: z.string().openapi({ description: 'kid of the key in GET /v1/signing-keys' }),
    alg: z.literal('EdDSA'),
    signature: z
      .string()
      .openapi({ description: 'Ed25519 over the preimage of docs/proofs.md, base64url' }),
  })
  .openapi('SignedTreeHead', {
    description:
      'The server’s signed statement of the stream’s tree (docs/proofs.md). In an append ' +
      'answer it is the receipt: the tree just after the batch.',
  });

export const JwkSetSchema = z
  .object({
    keys: z.array(
      z.object({
        kty: z.literal('OKP'),
        crv: z.literal('Ed25519'),
        x: z.string(),
        kid: z.string(),
        alg: z.literal('EdDSA'),
        use: z.literal('sig'),
      }),
    ),
  })
  .openapi('JwkSet', {
    description: 'Ed25519 public keys (RFC 8037), the current one first',
    example: {
      keys: [
        {
          kty: 'OKP',
          crv: 'Ed25519',
          x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo',
          kid: 'k-2026-12-01',
          alg: 'EdDSA',
          use: 'sig',
        },
      ],
    },
  });

export const InclusionQuery = z.object({
  seq: queryInt({ min: 1, description: 'The event' }),
  treeSize: QuerySize('Tree size the proof is for (default: the current tree)').optional(),
});

export const ConsistencyQuery = z.object({
  from: QuerySize('The older tree size (0: the empty proof)'),
  to: QuerySize('The newer tree size (default: the current tree)').optional(),
});

export const InclusionProofSchema = z
  .object({
    leafIndex: Size.openapi({ description: 'seq − treeBase − 1' }),
    treeSize: Size,
    path: z.array(Hex).openapi({ description: 'RFC 9162 §2.1.3 audit path, leaf end first' }),
  })
  .openapi('InclusionProof', {
    example: {
      leafIndex: 2,
      treeSize: 5,
      path: [
        '9a3c5e7f1b2d4f6a8c0e2b4d6f8a1c3e5b7d9f2a4c6e8b0d1f3a5c7e9b2d4f6a',
        'e0b1c2d3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1',
      ],
    },
  });

export const ConsistencyProofSchema = z
  .object({
    from: Size,
    to: Size,
    path: z.array(Hex).openapi({
      description: 'RFC 9162 §2.1.4 proof; empty when from = 0 or from = to',
    }),
  })
  .openapi('ConsistencyProof', {
    example: {
      from: 3,
      to: 5,
      path: [
        '9a3c5e7f1b2d4f6a8c0e2b4d6f8a1c3e5b7d9f2a4c6e8b0d1f3a5c7e9b2d4f6a',
        'e0b1c2d3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1',
      ],
    },
  });

export const CommitmentKeySchema = z
  .object({
    streamId: z.string(),
    keyId: z.string(),
    commitKey: z.string(),
  })
  .openapi('CommitmentKey', {
    description:
      "A sealed stream's commitment key k_c (base64url, 32 bytes): with it a verifying client " +
      'recomputes each format 2 payload commitment c = HMAC(k_c, seq ‖ type ‖ JCS(payload)). ' +
      'It decrypts nothing (docs/privacy.md, Decision 1).',
    example: {
      streamId: 'run-1',
      keyId: '3f0c9a5e2b7d41c88e6a1f0d2c4b5a69',
      commitKey: 'q83vEjRWeJq8_u3-3q2-7wAREiIzRFVmd4iZqrvM3e4',
    },
  });
