import { createHash } from 'node:crypto';
import { InvalidNamespaceError } from '@langchain/langgraph-checkpoint';

/**
 * A store namespace (a list of labels) as a stream id: `{prefix}.` then each label escaped on
 * its own and followed by `.`, so the streams of every namespace under `["a", "b"]` share the
 * id prefix `{prefix}.a.b.` (what search and listNamespaces list) and no label's prefix is
 * another's (`["a"]` is `lgs.a.`, `["ab"]` is `lgs.ab.`). Letters, digits and `-` stay; any
 * other character is each of its UTF-8 bytes as `:` + two hex digits (`é` is `:c3:a9`). A label escaped to more than
 * {@link PART_MAX} characters becomes `_` + 24 hex digits of its SHA-256 (`_` never appears
 * otherwise: it is escaped); such a namespace is named by the `ns` its stream's state holds.
 */

const PART_MAX = 28;
const ID_MAX = 128;

const escapeLabel = (label: string): string => {
  let out = '';
  for (const ch of label) {
    if (/^[A-Za-z0-9-]$/.test(ch)) out += ch;
    else
      for (const byte of Buffer.from(ch, 'utf8')) out += `:${byte.toString(16).padStart(2, '0')}`;
  }
  if (out.length <= PART_MAX) return out;
  return `_${createHash('sha256').update(label, 'utf8').digest('hex').slice(0, 24)}`;
};

/** The id prefix every namespace at or under `labels` starts with. */
export const namespacePrefix = (prefix: string, labels: readonly string[]): string =>
  `${prefix}.${labels.map((l) => `${escapeLabel(l)}.`).join('')}`;

/** The stream of one namespace; a namespace too deep for a stream id is refused. */
export const namespaceStream = (prefix: string, namespace: readonly string[]): string => {
  const id = namespacePrefix(prefix, namespace);
  if (id.length > ID_MAX) {
    throw new InvalidNamespaceError(
      `Namespace ${JSON.stringify(namespace)} is too deep for HefestoStore: its stream id would be ${id.length} characters (at most ${ID_MAX}).`,
    );
  }
  return id;
};

/**
 * The namespace a stream id names, or null when a label was hashed (then the stream's state
 * names it) or the id is not a namespace of this prefix.
 */
export const namespaceOf = (prefix: string, streamId: string): string[] | null => {
  if (!streamId.startsWith(`${prefix}.`) || !streamId.endsWith('.')) return null;
  const parts = streamId.slice(prefix.length + 1, -1).split('.');
  const labels: string[] = [];
  for (const part of parts) {
    if (part === '' || part.startsWith('_')) return null;
    const bytes: number[] = [];
    for (let i = 0; i < part.length; ) {
      if (part[i] === ':') {
        bytes.push(Number.parseInt(part.slice(i + 1, i + 3), 16));
        i += 3;
      } else {
        bytes.push(part.charCodeAt(i));
        i += 1;
      }
    }
    labels.push(Buffer.from(bytes).toString('utf8'));
  }
  return labels;
};
