import type { Json } from '../../shared/client/types.js';

/** 10 MiB and a bit: 10,600 distinct strings of 1,000 characters (64 to a page chunk). */
export const TEN_MIB: Json = Array.from({ length: 10_600 }, (_, i) => `${i}:`.padEnd(1000, 'x'));
