import { webCryptoHash } from '../../../shared/domain/hash-port.js';
import { type EventsPage, stream, type VerifyResult } from '../api.js';
import { field, fill, h, time } from '../dom.js';
import {
  type InclusionProof,
  type PublicJwk,
  type SignedTreeHead,
  verifyInclusion,
} from '../proofs.js';
import { describeError, type StreamContext } from './context.js';
import { receiptPanel, signedBy } from './receipt.js';

/**
 * Trust: the server's verification of every object the stream depends on, and, where the
 * server publishes signing keys (GET /v1/signing-keys answers a key), the stream's signed
 * tree head checked in the browser, any event's inclusion in it and a receipt's check
 * (receipt.ts). On a server without signing keys none of that is shown.
 */

const verifyPanel = (ctx: StreamContext): HTMLElement => {
  const out = h('div', { class: 'verify-out', 'aria-live': 'polite' });
  const run = async () => {
    fill(out, h('p', {}, 'Verifying every segment, the head and the snapshots…'));
    try {
      const result = await ctx.api.get<VerifyResult>(stream(ctx.streamId, '/verify'));
      if (result.ok) {
        fill(
          out,
          h(
            'p',
            { class: 'ok verify-result' },
            `Verified: the chain holds up to seq ${result.seq} (head ${result.hash.slice(0, 16)}…).`,
          ),
        );
        return;
      }
      ctx.onBadSeq(result.firstBadSeq);
      fill(
        out,
        h(
          'div',
          { class: 'bad verify-result', role: 'alert' },
          h(
            'p',
            {},
            h('strong', {}, `Tampered (${result.code})`),
            `: the ${result.object} standing for seq ${result.seq} does not verify.`,
          ),
          h('p', {}, 'First bad seq: ', h('strong', { class: 'first-bad' }, result.firstBadSeq)),
          h(
            'a',
            { href: `#/s/${encodeURIComponent(ctx.streamId)}?seq=${result.firstBadSeq}` },
            `Show seq ${result.firstBadSeq} in the timeline`,
          ),
        ),
      );
    } catch (err) {
      fill(
        out,
        h('p', { class: 'error', role: 'alert' }, `Could not verify: ${describeError(err)}`),
      );
    }
  };
  return h(
    'section',
    { 'aria-label': 'Verification' },
    h('h3', {}, 'Verification'),
    h('button', { type: 'button', class: 'primary', onclick: () => void run() }, 'Verify stream'),
    out,
  );
};

const treeHeadPanel = (
  ctx: StreamContext,
  head: SignedTreeHead,
  keys: PublicJwk[],
  seq?: number,
): HTMLElement => {
  const sig = h('p', { role: 'status' }, 'Checking the signature in your browser…');
  void signedBy(keys, head).then((ok) => {
    sig.className = ok ? 'ok signature' : 'bad signature';
    sig.textContent = ok
      ? `Signature checked in your browser (Ed25519, key ${head.keyId.slice(0, 12)}…).`
      : 'The signature does not verify against the published keys.';
  });
  const seqInput = h('input', {
    type: 'number',
    name: 'seq',
    min: head.treeBase + 1,
    max: head.treeBase + head.treeSize,
    value: seq ?? head.treeBase + head.treeSize,
    inputmode: 'numeric',
  });
  const out = h('div', { 'aria-live': 'polite' });
  const check = async () => {
    const seq = Number(seqInput.value);
    try {
      const [page, proof] = await Promise.all([
        ctx.api.get<EventsPage>(stream(ctx.streamId, '/events'), { from: seq, limit: 1 }),
        ctx.api.get<InclusionProof>(stream(ctx.streamId, '/proofs/inclusion'), {
          seq,
          treeSize: head.treeSize,
        }),
      ]);
      const event = page.events[0];
      const ok =
        event !== undefined &&
        proof.leafIndex === seq - head.treeBase - 1 &&
        (await verifyInclusion(webCryptoHash, event.hash, proof, head.rootHash));
      fill(
        out,
        h(
          'p',
          { class: ok ? 'ok inclusion' : 'bad inclusion' },
          ok
            ? `Seq ${seq} is in the signed tree of ${head.treeSize} leaves (${proof.path.length} proof hashes checked in your browser).`
            : `Seq ${seq}: the inclusion proof does not check out.`,
        ),
      );
    } catch (err) {
      fill(
        out,
        h(
          'p',
          { class: 'error', role: 'alert' },
          `No inclusion proof for seq ${seq}: ${describeError(err)}`,
        ),
      );
    }
  };
  if (seq !== undefined) void check();
  return h(
    'section',
    { 'aria-label': 'Signed tree head' },
    h('h3', {}, 'Signed tree head'),
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'tree size'),
      h('dd', {}, head.treeSize),
      h('dt', {}, 'root'),
      h('dd', {}, h('code', {}, head.rootHash)),
      h('dt', {}, 'signed at'),
      h('dd', {}, time(head.timestamp)),
    ),
    sig,
    h(
      'form',
      {
        class: 'toolbar',
        onsubmit: (e: Event) => {
          e.preventDefault();
          void check();
        },
      },
      field('Event seq', seqInput),
      h('button', { type: 'submit' }, 'Check inclusion'),
    ),
    out,
  );
};

/** The signed-heads panels, when the server publishes keys; nothing otherwise. */
const signedPanels = async (ctx: StreamContext, into: HTMLElement, seq?: number) => {
  const keys = await ctx.signingKeys();
  if (keys.length === 0) return;
  try {
    const head = await ctx.api.get<SignedTreeHead>(stream(ctx.streamId, '/tree-head'));
    fill(into, treeHeadPanel(ctx, head, keys, seq), receiptPanel(ctx, keys, head));
  } catch (err) {
    fill(
      into,
      h('h3', {}, 'Signed tree head'),
      h('p', { class: 'muted' }, `No signed tree head for this stream: ${describeError(err)}`),
    );
  }
};

/** `seq`: an event whose inclusion to check at once (a timeline event's link). */
export const trustView = (ctx: StreamContext, seq?: number): HTMLElement => {
  const proofs = h('div', { class: 'signed' });
  void signedPanels(ctx, proofs, seq);
  return h('section', { class: 'trust', 'aria-label': 'Trust' }, verifyPanel(ctx), proofs);
};
