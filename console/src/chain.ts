import {
  type ChainCheck,
  checkChain,
  genesisHashWith,
  webCryptoHash,
} from '../../shared/domain/hash-port.js';
import type { LedgerEvent } from './api.js';

/**
 * "Verified in your browser": the events on screen, re-hashed here with WebCrypto from their
 * fields (docs/ledger-format.md), linked by prevHash, and seq 1 checked against the genesis
 * of this tenant and stream. The server verified them before answering; this checks that
 * what reached the page is what the ledger holds, without trusting the server's word.
 */

const genesisCache = new Map<string, Promise<string>>();

const genesisOf = (tenant: string, stream: string): Promise<string> => {
  const key = `${tenant}\u0000${stream}`;
  let g = genesisCache.get(key);
  if (!g) {
    g = genesisHashWith(webCryptoHash, tenant, stream);
    genesisCache.set(key, g);
  }
  return g;
};

/**
 * Checks what is displayed. `consecutive`: the events are a run of the chain (no type
 * filter), so their links are checked too; otherwise each event's hash alone.
 */
export const checkDisplayed = async (
  tenant: string,
  stream: string,
  events: LedgerEvent[],
  consecutive: boolean,
): Promise<ChainCheck> => {
  const genesis = await genesisOf(tenant, stream);
  if (consecutive) return checkChain(webCryptoHash, events, genesis);
  let checked = 0;
  for (const event of events) {
    const one = await checkChain(webCryptoHash, [event], genesis);
    if (!one.ok) return { ...one, checked };
    checked++;
  }
  return { ok: true, checked };
};
