import { webCryptoHash } from '../../../shared/domain/hash-port.js';
import { type EventsPage, stream } from '../api.js';
import { field, fill, h } from '../dom.js';
import {
  type ConsistencyProof,
  type InclusionProof,
  type PublicJwk,
  parseTreeHead,
  type SignedTreeHead,
  verifyConsistency,
  verifyInclusion,
  verifyTreeHead,
} from '../proofs.js';
import { describeError, type StreamContext } from './context.js';

/**
 * A receipt (the signed tree head an append answered, docs/proofs.md) checked in the
 * browser: that it is this stream's, signed by a published key, a prefix of the current
 * signed tree (consistency proof) and holds the batch's last event (inclusion proof). A
 * receipt that passes is the server's signed word that the write is still in the history.
 */

/** The one key the head names (two keys with one kid: none). */
export const keyOf = (keys: PublicJwk[], head: SignedTreeHead): PublicJwk | undefined => {
  const named = keys.filter((k) => k.kid === head.keyId);
  return named.length === 1 ? named[0] : undefined;
};

export const signedBy = async (keys: PublicJwk[], head: SignedTreeHead): Promise<boolean> => {
  const key = keyOf(keys, head);
  return key ? verifyTreeHead(head, key).catch(() => false) : false;
};

type Step = [ok: boolean, text: string];

const checkReceipt = async (
  ctx: StreamContext,
  keys: PublicJwk[],
  current: SignedTreeHead,
  text: string,
): Promise<Step[]> => {
  const steps: Step[] = [];
  const step = (ok: boolean, what: string) => {
    steps.push([ok, what]);
    return ok;
  };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    step(false, 'Not JSON: paste the receipt (the treeHead of an append answer).');
    return steps;
  }
  // A whole append answer is accepted too: its receipt is its treeHead.
  const inner = (json as { treeHead?: unknown } | null)?.treeHead;
  const parsed = parseTreeHead(inner ?? json);
  if (typeof parsed === 'string') {
    step(false, `Not a signed tree head: ${parsed}.`);
    return steps;
  }
  const r = parsed;
  const mine = r.tenant === ctx.principal.tenant && r.streamId === ctx.streamId;
  if (!step(mine, `For tenant ${r.tenant}, stream ${r.streamId}${mine ? '' : ': not this one'}.`))
    return steps;
  const signed = await signedBy(keys, r);
  if (!step(signed, signed ? 'Signed by a published key.' : 'Not signed by any published key.'))
    return steps;
  const sameBase = r.treeBase === current.treeBase && r.treeSize <= current.treeSize;
  if (
    !step(
      sameBase,
      sameBase
        ? `Tree of ${r.treeSize} leaves, within the current signed tree of ${current.treeSize}.`
        : `Tree base ${r.treeBase}, size ${r.treeSize}: not within the current signed tree (base ${current.treeBase}, size ${current.treeSize}); the history was rewritten or cut.`,
    )
  )
    return steps;
  const consistency = await ctx.api.get<ConsistencyProof>(
    stream(ctx.streamId, '/proofs/consistency'),
    { from: r.treeSize, to: current.treeSize },
  );
  const prefix =
    consistency.from === r.treeSize &&
    consistency.to === current.treeSize &&
    (await verifyConsistency(webCryptoHash, consistency, r.rootHash, current.rootHash));
  if (
    !step(
      prefix,
      prefix
        ? `A prefix of the current tree (${consistency.path.length} proof hashes checked).`
        : 'The consistency proof does not check out: the history changed since this receipt.',
    )
  )
    return steps;
  if (r.treeSize === 0) return steps;
  const seq = r.treeBase + r.treeSize;
  const [page, proof] = await Promise.all([
    ctx.api.get<EventsPage>(stream(ctx.streamId, '/events'), { from: seq, limit: 1 }),
    ctx.api.get<InclusionProof>(stream(ctx.streamId, '/proofs/inclusion'), {
      seq,
      treeSize: r.treeSize,
    }),
  ]);
  const event = page.events[0];
  const included =
    event?.seq === seq &&
    proof.leafIndex === seq - r.treeBase - 1 &&
    proof.treeSize === r.treeSize &&
    (await verifyInclusion(webCryptoHash, event.hash, proof, r.rootHash));
  step(
    included,
    included
      ? `Its last event, seq ${seq}, is in it (${proof.path.length} proof hashes checked).`
      : `Seq ${seq} is not in the receipt's tree as the server reads it now.`,
  );
  return steps;
};

export const receiptPanel = (
  ctx: StreamContext,
  keys: PublicJwk[],
  current: SignedTreeHead,
): HTMLElement => {
  const input = h('textarea', {
    name: 'receipt',
    rows: 5,
    spellcheck: 'false',
    placeholder: '{"tenant": "…", "streamId": "…", "treeSize": 5, "rootHash": "…", …}',
  });
  const out = h('div', { class: 'receipt-out', 'aria-live': 'polite' });
  const run = async () => {
    fill(out, h('p', {}, 'Checking in your browser…'));
    try {
      const steps = await checkReceipt(ctx, keys, current, input.value);
      const ok = steps.every(([good]) => good);
      fill(
        out,
        h(
          'p',
          { class: ok ? 'ok receipt-result' : 'bad receipt-result', role: ok ? 'status' : 'alert' },
          ok ? 'Receipt verified.' : 'Receipt refused.',
        ),
        h(
          'ul',
          { class: 'checks' },
          ...steps.map(([good, text]) => h('li', { class: good ? 'ok' : 'bad' }, text)),
        ),
      );
    } catch (err) {
      fill(out, h('p', { class: 'error', role: 'alert' }, `Not checked: ${describeError(err)}`));
    }
  };
  return h(
    'section',
    { 'aria-label': 'Receipt' },
    h('h3', {}, 'Check a receipt'),
    h(
      'form',
      {
        class: 'receipt-form',
        onsubmit: (e: Event) => {
          e.preventDefault();
          void run();
        },
      },
      field('Receipt (JSON)', input, 'The treeHead of an append answer, or the whole answer'),
      h('button', { type: 'submit' }, 'Check receipt'),
    ),
    out,
  );
};
