import { type Dirent, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { OBJECT_KEY_PATTERN } from '../../ports/object-store.js';

/**
 * Object layout 2: where an object key lives on disk, relative to the objects directory.
 *
 * Two keys never share a file or a directory, on any file system the embedded server runs on:
 * case-insensitive ones (macOS, Windows) and Windows' name rules included. Every name made
 * here is lowercase ASCII, holds no character Windows forbids, does not end in '.', has no DOS
 * device name as its stem, and is at most 201 chars long; such a name only ever equals another
 * name if the two are the same string. (Layout 1, object-paths-v1.ts, used the key text as it
 * is: `TENA` and `tenA`, `a.` and `a`, were one name there.)
 *
 * Structure, as in layout 1: each '/'-separated part of a key is a directory, except the last,
 * which is a file whose name ends in '#'; a part too long for one name is split into
 * directories ending in '^' ("this part goes on in the name below"). Keys never contain '#',
 * '^' or '%' (OBJECT_KEY_PATTERN), so these marks never clash with key text. Each name is the
 * text it stands for, with '%' as escape:
 *
 *   an uppercase letter               ->  '%' and the letter in lowercase ('TENA' -> '%t%e%n%a')
 *   '*', ':' (Windows forbids them)   ->  '%2a', '%3a': the code in two lowercase hex digits
 *   a '.' ending the name             ->  '%2e' (Windows drops trailing dots)
 *   a stem (the text before the first '.') that is CON, PRN, AUX, NUL, COM0-9 or LPT0-9, in
 *   any case, after the above         ->  its first char in hex ('nul.x' -> '%6eul.x')
 *   the empty part                    ->  '%'
 *
 *   'ledger/s1/000001.seg'    ->  ledger/s1/000001.seg#
 *   't/TenA./s/run:1/seg/01'  ->  t/%ten%a%2e/s/run%3a1/seg/01#
 *   'a//b/'                   ->  a/%/b/%#
 *
 * After '%' comes either a letter (an uppercase letter) or a digit (a hex code, 0x21..0x7e), so
 * names decode one way. Listing decodes what it finds and keeps a file only if the key it
 * decodes to maps back to exactly that path, so anything else in the tree (`.DS_Store`, an
 * editor's backup) is not an object.
 */

const FILE = '#';
const MORE = '^';
const ESCAPE = '%';
/** Encoded chars per name before the trailing-dot and device escapes (at most +2 each). */
const NAME_BUDGET = 196;
/** Characters a key may hold: a prefix with any other character matches no key. */
const KEY_CHARS = /^[A-Za-z0-9!_.*'()\-/=:@+]*$/;
const DEVICE_STEM = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])$/;

const hexOf = (ch: string) => ESCAPE + ch.charCodeAt(0).toString(16);

const encodeChar = (ch: string): string => {
  if (ch >= 'A' && ch <= 'Z') return ESCAPE + ch.toLowerCase();
  if (ch === '*' || ch === ':') return hexOf(ch);
  return ch;
};

const SPECIAL = /[A-Z*:]/g;

/** The file-system name of `text`: a whole key part, or one piece of a long one. */
export const encodeName = (text: string): string => {
  if (text === '') return ESCAPE;
  let name = text.replace(SPECIAL, encodeChar);
  if (name.endsWith('.')) name = name.slice(0, -1) + hexOf('.');
  const dot = name.indexOf('.');
  const stem = dot < 0 ? name : name.slice(0, dot);
  // A device stem is plain lowercase text, so its first char is the text's own.
  if (stem.length <= 4 && DEVICE_STEM.test(stem)) name = hexOf(name[0] ?? '') + name.slice(1);
  return name;
};

/** The text a name stands for, or undefined if `name` is not what encodeName makes. */
export const decodeName = (name: string): string | undefined => {
  if (name === ESCAPE) return '';
  let text = '';
  for (let i = 0; i < name.length; ) {
    const ch = name[i] as string;
    const next = name[i + 1] ?? '';
    if (ch !== ESCAPE) {
      text += ch;
      i += 1;
    } else if (next >= 'a' && next <= 'z') {
      text += next.toUpperCase();
      i += 2;
    } else if (/^[0-9][0-9a-f]$/.test(name.slice(i + 1, i + 3))) {
      text += String.fromCharCode(Number.parseInt(name.slice(i + 1, i + 3), 16));
      i += 3;
    } else {
      return undefined;
    }
  }
  return encodeName(text) === name ? text : undefined;
};

/** A part cut into pieces whose names fit NAME_BUDGET (always one piece, maybe ''). */
const piecesOf = (part: string): string[] => {
  // No char costs more than 3, so a part this short is one piece.
  if (part.length * 3 <= NAME_BUDGET) return [part];
  const pieces: string[] = [];
  let start = 0;
  let used = 0;
  for (let i = 0; i < part.length; i++) {
    const cost = encodeChar(part[i] as string).length;
    if (used + cost > NAME_BUDGET) {
      pieces.push(part.slice(start, i));
      start = i;
      used = 0;
    }
    used += cost;
  }
  pieces.push(part.slice(start));
  return pieces;
};

const partNames = (part: string, isFile: boolean): string[] => {
  const pieces = piecesOf(part);
  return pieces.map((piece, i) => {
    const mark = i < pieces.length - 1 ? MORE : isFile ? FILE : '';
    return encodeName(piece) + mark;
  });
};

/** Path segments of the file holding `key` (a key that passed checkObjectKey). */
export const keyToPath = (key: string): string[] => {
  const parts = key.split('/');
  return parts.flatMap((part, i) => partNames(part, i === parts.length - 1));
};

/** The key stored at path `segments`, or undefined when no key maps to exactly that path. */
export const pathToKey = (segments: readonly string[]): string | undefined => {
  let key = '';
  for (const [i, segment] of segments.entries()) {
    const last = i === segments.length - 1;
    const mark = segment.at(-1);
    const body = mark === MORE || (last && mark === FILE) ? segment.slice(0, -1) : segment;
    const text = decodeName(body);
    if (text === undefined || (last && mark !== FILE)) return undefined;
    key += text + (mark === MORE || last ? '' : '/');
  }
  if (!OBJECT_KEY_PATTERN.test(key)) return undefined;
  return keyToPath(key).join('/') === segments.join('/') ? key : undefined;
};

/**
 * Every key starting with `prefix` stored under `objectsDir`, in no order. Only the deepest
 * directory that holds all of them is read.
 */
export const keysWithPrefix = (objectsDir: string, prefix: string): string[] => {
  if (!KEY_CHARS.test(prefix)) return [];
  const parts = prefix.split('/').slice(0, -1);
  const start = parts.flatMap((part) => partNames(part, false));
  const out: string[] = [];
  const walk = (path: string[]) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(join(objectsDir, ...path), { withFileTypes: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return;
      throw err;
    }
    for (const entry of entries) {
      if (entry.isDirectory()) walk([...path, entry.name]);
      else if (entry.isFile() && entry.name.endsWith(FILE)) {
        const key = pathToKey([...path, entry.name]);
        if (key?.startsWith(prefix)) out.push(key);
      }
    }
  };
  walk(start);
  return out;
};
