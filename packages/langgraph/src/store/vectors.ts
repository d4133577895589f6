/**
 * The store's index hook: the user's embeddings turn the text at each indexed field of a put
 * value into a vector, kept in the item (`e`, by field path); a search with `query` scores
 * every candidate by cosine similarity, best first, as InMemoryStore scores. Limits: vectors
 * live in the namespace's state beside the values (a 1536-dimension vector is ~30 KiB of
 * JSON, inside the 192 KiB a put sends inline), and a query reads every candidate of the
 * prefix and scores it here: O(items × dims) per search, no approximate index.
 */

/** `embedDocuments`/`embedQuery` (any LangChain `Embeddings`), or one function for both. */
export type StoreEmbeddings =
  | {
      embedDocuments(texts: string[]): Promise<number[][]>;
      embedQuery(text: string): Promise<number[]>;
    }
  | ((texts: string[]) => Promise<number[][]>);

export interface StoreIndexConfig {
  embeddings: StoreEmbeddings;
  /** Paths of the text to embed (`"$"`: the whole value; `a.b`, `a[*].b`, `a[0]`). Default `["$"]`. */
  fields?: string[];
  /** Dimensions of each vector, checked when given. */
  dims?: number;
}

/** A search with `query` on a store without an index. */
export class StoreIndexMissingError extends Error {
  readonly code = 'ErrStoreIndexMissing';
  constructor() {
    super('search({ query }) needs an index: new HefestoStore({ index: { embeddings, fields } })');
    this.name = 'StoreIndexMissingError';
  }
}

export const embedDocuments = (e: StoreEmbeddings, texts: string[]): Promise<number[][]> =>
  typeof e === 'function' ? e(texts) : e.embedDocuments(texts);

export const embedQuery = async (e: StoreEmbeddings, text: string): Promise<number[]> =>
  typeof e === 'function' ? ((await e([text]))[0] ?? []) : e.embedQuery(text);

const tokens = (path: string): string[] =>
  path
    .replace(/\[/g, '.[')
    .split('.')
    .filter((t) => t !== '');

const leaf = (v: unknown): string[] => {
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return [String(v)];
  if (v === null || v === undefined) return [];
  return [JSON.stringify(v, null, 2)];
};

const extract = (v: unknown, toks: string[], at: number): string[] => {
  if (at >= toks.length) return leaf(v);
  const t = toks[at] as string;
  if (t.startsWith('[') && t.endsWith(']')) {
    if (!Array.isArray(v)) return [];
    const index = t.slice(1, -1);
    if (index === '*') return v.flatMap((x) => extract(x, toks, at + 1));
    let i = Number.parseInt(index, 10);
    if (i < 0) i += v.length;
    return i >= 0 && i < v.length ? extract(v[i], toks, at + 1) : [];
  }
  if (t === '*') {
    const xs = Array.isArray(v) ? v : typeof v === 'object' && v !== null ? Object.values(v) : [];
    return xs.flatMap((x) => extract(x, toks, at + 1));
  }
  if (typeof v === 'object' && v !== null && t in v) {
    return extract((v as Record<string, unknown>)[t], toks, at + 1);
  }
  return [];
};

/** The texts to embed of one value: `[vectorKey, text]`, a field of several texts as `path.i`. */
export const textsOf = (value: unknown, fields: string[]): Array<[string, string]> => {
  const out: Array<[string, string]> = [];
  for (const path of fields) {
    const texts = path === '$' ? [JSON.stringify(value, null, 2)] : extract(value, tokens(path), 0);
    if (texts.length === 1) out.push([path, texts[0] as string]);
    else for (const [i, text] of texts.entries()) out.push([`${path}.${i}`, text]);
  }
  return out;
};

export const cosine = (a: number[], b: number[]): number => {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (const [i, x] of a.entries()) {
    const y = b[i] ?? 0;
    dot += x * y;
    na += x * x;
  }
  for (const y of b) nb += y * y;
  return na && nb ? dot / (Math.sqrt(na) * Math.sqrt(nb)) : 0;
};

/**
 * InMemoryStore's ranking: each item scores its best field vector, best first (a stable
 * sort: equal scores keep the candidates' order), the page cut by offset and limit; items
 * without vectors follow the scored ones, unscored, to fill the page.
 */
export const rank = <T>(
  candidates: Array<{ item: T; vectors: number[][] }>,
  query: number[],
  offset: number,
  limit: number,
): Array<{ item: T; score: number | undefined }> => {
  const scored: Array<{ item: T; score: number }> = [];
  const scoreless: T[] = [];
  for (const c of candidates) {
    if (c.vectors.length === 0) scoreless.push(c.item);
    for (const v of c.vectors) scored.push({ item: c.item, score: cosine(query, v) });
  }
  scored.sort((x, y) => y.score - x.score);
  const seen = new Set<T>();
  const kept: Array<{ item: T; score: number | undefined }> = [];
  for (const s of scored) {
    if (seen.has(s.item)) continue;
    if (seen.size >= offset + limit) break;
    const skip = seen.size < offset;
    seen.add(s.item);
    if (!skip) kept.push(s);
  }
  for (const item of scoreless.slice(0, Math.max(0, limit - kept.length))) {
    kept.push({ item, score: undefined });
  }
  return kept;
};
