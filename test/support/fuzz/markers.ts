import { Live } from './schema-arbitrary.js';

/**
 * Placeholders inside a generated request body, turned into JSON text only when the request
 * is sent: `Deep` nests arrays `depth` levels (poison input), `Big` is a string of `bytes`
 * characters (size limits), `Live` is a value read from the stores at send time.
 */
export class Deep {
  constructor(readonly depth: number) {}
}

export class Big {
  constructor(readonly bytes: number) {}
}

const deepText = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

/** `value` as JSON text, with Deep and Big written out and Live values filled in. */
export const toJsonText = (value: unknown, live: (m: Live) => unknown): string => {
  const deep: number[] = [];
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (v instanceof Live) return live(v);
    if (v instanceof Big) return 'x'.repeat(v.bytes);
    if (v instanceof Deep) {
      deep.push(v.depth);
      return `\u0000deep${deep.length - 1}\u0000`;
    }
    return v;
  });
  if (text === undefined) return '';
  return text.replace(/"\\u0000deep(\d+)\\u0000"/g, (_m, i: string) =>
    deepText(deep[Number(i)] ?? 1),
  );
};

/** The value the server sees once it parses the text (for validation against the doc). */
export const toParsedValue = (value: unknown, live: (m: Live) => unknown): unknown => {
  const walk = (v: unknown): unknown => {
    if (v instanceof Live) return live(v);
    if (v instanceof Big) return 'x'.repeat(v.bytes);
    // Only the top of a deep value: JSON Schema cannot limit depth, and `{}` does not descend.
    if (v instanceof Deep) return [[]];
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === 'object' && v !== null) {
      // As JSON.stringify sends it: members that are undefined are left out.
      return Object.fromEntries(
        Object.entries(v)
          .filter(([, x]) => x !== undefined)
          .map(([k, x]) => [k, walk(x)]),
      );
    }
    return v;
  };
  return walk(value);
};

/** The deepest Deep marker in a value (0 without one). */
export const maxDeep = (value: unknown): number => {
  if (value instanceof Deep) return value.depth;
  if (Array.isArray(value)) return Math.max(0, ...value.map(maxDeep));
  if (typeof value === 'object' && value !== null && !(value instanceof Live)) {
    return Math.max(0, ...Object.values(value).map(maxDeep));
  }
  return 0;
};
