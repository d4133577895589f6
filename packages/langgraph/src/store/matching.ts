import type { MatchCondition } from '@langchain/langgraph-checkpoint';

/**
 * The filters and namespace conditions of LangGraph's InMemoryStore, to the letter, so a
 * search and a listNamespaces here answer what it answers: a filter compares the value's
 * top-level field (`===`, objects by identity, so only scalars ever match; `$gt`… compare
 * as numbers); `*` in a prefix or suffix condition matches any one label.
 */

type Operators = Partial<
  Record<'$eq' | '$ne' | '$gt' | '$gte' | '$lt' | '$lte' | '$in' | '$nin', unknown>
>;

const OPERATORS = new Set(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin']);

const isOperators = (v: unknown): v is Operators =>
  typeof v === 'object' && v !== null && Object.keys(v).every((k) => OPERATORS.has(k));

const compare = (item: unknown, filter: unknown): boolean => {
  if (!isOperators(filter)) return item === filter;
  return Object.entries(filter).every(([op, value]) => {
    switch (op) {
      case '$eq':
        return item === value;
      case '$ne':
        return item !== value;
      case '$gt':
        return Number(item) > Number(value);
      case '$gte':
        return Number(item) >= Number(value);
      case '$lt':
        return Number(item) < Number(value);
      case '$lte':
        return Number(item) <= Number(value);
      case '$in':
        return Array.isArray(value) ? value.includes(item) : false;
      default: // $nin
        return Array.isArray(value) ? !value.includes(item) : true;
    }
  });
};

/** Whether a stored value passes a search's filter (every field's condition). */
export const passes = (value: Record<string, unknown>, filter?: Record<string, unknown>): boolean =>
  filter === undefined || Object.entries(filter).every(([k, f]) => compare(value[k], f));

const matches = ({ matchType, path }: MatchCondition, ns: readonly string[]): boolean => {
  if (path.length > ns.length) return false;
  const at = matchType === 'prefix' ? 0 : ns.length - path.length;
  return path.every((label, i) => label === '*' || ns[at + i] === label);
};

/**
 * listNamespaces over every namespace there is: the conditions, then `maxDepth` (truncated,
 * duplicates dropped), sorted by the labels joined with `:` (`localeCompare`), then the page.
 */
export const namespacePage = (
  all: string[][],
  op: { matchConditions?: MatchCondition[]; maxDepth?: number; limit?: number; offset?: number },
): string[][] => {
  let out = all;
  const conditions = op.matchConditions ?? [];
  if (conditions.length > 0) out = out.filter((ns) => conditions.every((c) => matches(c, ns)));
  if (op.maxDepth !== undefined) {
    const depth = op.maxDepth;
    out = [...new Set(out.map((ns) => ns.slice(0, depth).join(':')))].map((s) => s.split(':'));
  }
  out.sort((a, b) => a.join(':').localeCompare(b.join(':')));
  const offset = op.offset ?? 0;
  return out.slice(offset, offset + (op.limit ?? out.length));
};

/** The id-prefix part of a prefix condition: its labels before the first wildcard. */
export const literalPrefix = (conditions: MatchCondition[] | undefined): string[] => {
  const prefix = conditions?.find((c) => c.matchType === 'prefix')?.path ?? [];
  const wild = prefix.indexOf('*');
  return wild < 0 ? [...prefix] : prefix.slice(0, wild);
};
