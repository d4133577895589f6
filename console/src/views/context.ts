import type { Api, Principal, StreamHead } from '../api.js';
import { showBidiControls } from '../bidi.js';
import type { PublicJwk } from '../proofs.js';

/** What every view of one stream shares. */
export interface StreamContext {
  api: Api;
  principal: Principal;
  streamId: string;
  /** undefined until read, or when the head itself does not verify. */
  head: StreamHead | undefined;
  /** The first bad seq, once a read or the verify action found one. */
  badSeq: number | undefined;
  /** Told of a first bad seq found by any view. */
  onBadSeq(seq: number): void;
  /**
   * The server's published signing keys (GET /v1/signing-keys, read once per stream view);
   * empty when it signs no tree heads (no such route, or no key).
   */
  signingKeys(): Promise<PublicJwk[]>;
}

/** An error as one line; its detail may echo what was sent, so bidi controls are shown. */
export const describeError = (err: unknown): string => {
  const e = err as { code?: string; detail?: string; message?: string };
  return showBidiControls(e.code ? `${e.code}: ${e.detail ?? ''}` : (e.message ?? String(err)));
};
