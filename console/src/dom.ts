import { showBidiControls } from './bidi.js';

/**
 * A few DOM helpers. Every text goes in through `textContent` (never innerHTML): the page
 * runs under Trusted Types with no policy, so parsing HTML from a string would throw, and no
 * event payload can ever become markup. Bidi control characters in any text or title are
 * shown as markers (bidi.ts), so no stored string can reorder what is shown around it.
 */

type Child = Node | string | number | false | null | undefined;
type Attrs = Record<string, string | number | boolean | undefined | EventListener>;

/** Attributes a reader sees (tooltips, screen readers): their text is shown like text nodes. */
const SHOWN_ATTRIBUTES = new Set(['title', 'aria-label', 'alt', 'placeholder']);

export const h = <K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] => {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') node.addEventListener(name.replace(/^on/, ''), value);
    else if (value === true) node.setAttribute(name, '');
    else
      node.setAttribute(
        name,
        SHOWN_ATTRIBUTES.has(name) ? showBidiControls(String(value)) : String(value),
      );
  }
  append(node, ...children);
  return node;
};

export const append = (node: Node, ...children: Child[]): void => {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(
      typeof child === 'object' ? child : document.createTextNode(showBidiControls(String(child))),
    );
  }
};

/** Replaces a node's children. */
export const fill = (node: Node, ...children: Child[]): void => {
  while (node.firstChild) node.removeChild(node.firstChild);
  append(node, ...children);
};

let ids = 0;
/** A unique id for label/aria wiring. */
export const uid = (prefix: string): string => `${prefix}-${++ids}`;

/** A labelled input: the label and the control, tied by id. */
export const field = (
  label: string,
  input: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement,
  hint?: string,
): HTMLElement => {
  input.id ||= uid('f');
  const hintId = hint ? uid('hint') : undefined;
  if (hintId) input.setAttribute('aria-describedby', hintId);
  return h(
    'div',
    { class: 'field' },
    h('label', { for: input.id }, label),
    input,
    hint ? h('small', { id: hintId, class: 'hint' }, hint) : null,
  );
};

export const time = (ms: number): HTMLTimeElement => {
  const d = new Date(ms);
  return h('time', { datetime: d.toISOString(), title: d.toISOString() }, d.toLocaleString());
};

/** One line of JSON, cut to `max` characters. */
export const summary = (value: unknown, max = 120): string => {
  const text = JSON.stringify(value) ?? 'undefined';
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
};

export const shortHash = (hash: string): string => `${hash.slice(0, 10)}…${hash.slice(-6)}`;
