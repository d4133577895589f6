import { h } from './dom.js';

/**
 * A JSON value as a collapsible tree: every object and array is a <details> element, so the
 * tree opens and closes from the keyboard (Tab to a node, Enter or Space) with no script.
 * Long containers show their first MAX_CHILDREN entries.
 */

const MAX_CHILDREN = 200;

const scalar = (value: unknown): HTMLElement => {
  const kind = value === null ? 'null' : typeof value;
  return h('span', { class: `json-${kind}` }, JSON.stringify(value) ?? String(value));
};

const sizeOf = (value: object): string =>
  Array.isArray(value) ? `[${value.length}]` : `{${Object.keys(value).length}}`;

const node = (
  label: string | undefined,
  value: unknown,
  depth: number,
  open: number,
): HTMLElement => {
  const key = label === undefined ? null : h('span', { class: 'json-key' }, label);
  if (value === null || typeof value !== 'object') {
    return h('li', {}, key, key ? ': ' : '', scalar(value));
  }
  const entries = Array.isArray(value)
    ? value.map((v, i) => [String(i), v] as const)
    : Object.entries(value as Record<string, unknown>);
  const list = h('ul', { class: 'json-children' });
  for (const [k, v] of entries.slice(0, MAX_CHILDREN)) list.append(node(k, v, depth + 1, open));
  if (entries.length > MAX_CHILDREN) {
    list.append(h('li', { class: 'muted' }, `… ${entries.length - MAX_CHILDREN} more`));
  }
  return h(
    'li',
    {},
    h(
      'details',
      { open: depth < open },
      h('summary', {}, key, key ? ': ' : '', h('span', { class: 'json-size' }, sizeOf(value))),
      list,
    ),
  );
};

/** The tree of `value`, opened `open` levels deep. */
export const jsonTree = (value: unknown, open = 2): HTMLElement =>
  h('ul', { class: 'json-tree', role: 'tree' }, node(undefined, value, 0, open));
