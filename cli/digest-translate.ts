import type { DeltaOp, LedgerEvent } from '../shared/client/types.js';
import { applyOps, type DeltaPayload, type JsonObject } from '../shared/domain/state.js';
import { type DigestVersion, digestOfState } from '../shared/domain/state-digest.js';
import { CliError } from './context.js';

/**
 * Imports of an export whose state digest version (its header's, absent: 1) is not the
 * target's: a v1 file into a stream created now (v2). The file's deltas record digests of
 * its own version, which the target's divergence trap would refuse, so this keeps the state
 * here, checks every delta against the file's recorded digests (as the source server did),
 * and sends the same ops with the digests of the target's version, which the server checks
 * again. Branching deltas (`baseSeq`) are refused: they would need every past state kept.
 */
export class DigestTranslator {
  #state: JsonObject = {};

  constructor(
    readonly from: DigestVersion,
    readonly to: DigestVersion,
  ) {}

  /** The checkpoint body for the file's delta `event`, with the target version's digests. */
  translate(event: LedgerEvent): { ops: DeltaOp[]; baseDigest: string; stateDigest: string } {
    const payload = event.payload as unknown as DeltaPayload;
    const refuse = (why: string): never => {
      throw new CliError('ErrDivergenceDetected', `seq ${event.seq}: ${why}`);
    };
    if (payload.baseSeq !== undefined) refuse('a branching delta (baseSeq) cannot be translated');
    if (payload.baseDigest !== digestOfState(this.#state, this.from)) {
      refuse('the delta does not start from the state before it');
    }
    let next: JsonObject;
    try {
      next = applyOps(structuredClone(this.#state), payload.ops);
    } catch (err) {
      return refuse(`the ops do not apply: ${(err as Error).message}`);
    }
    if (digestOfState(next, this.from) !== payload.stateDigest) {
      refuse('the state after the delta does not match its recorded digest');
    }
    const body = {
      ...(payload.label === undefined ? {} : { label: payload.label }),
      ...(payload.meta === undefined ? {} : { meta: payload.meta }),
      ...(payload.parentLabel === undefined ? {} : { parentLabel: payload.parentLabel }),
      ops: payload.ops as DeltaOp[],
      baseDigest: digestOfState(this.#state, this.to),
      stateDigest: digestOfState(next, this.to),
    };
    this.#state = next;
    return body;
  }
}
