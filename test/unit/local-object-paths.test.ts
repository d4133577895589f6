import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../shared/adapters/local/local-object-store.js';
import {
  decodeName,
  encodeName,
  keyToPath,
  pathToKey,
} from '../../shared/adapters/local/object-paths.js';
import { keyToPathV1 } from '../../shared/adapters/local/object-paths-v1.js';
import { OBJECT_KEY_PATTERN } from '../../shared/ports/object-store.js';

/**
 * The mapping key -> path (object layout 2) must stay injective where names are compared
 * case-insensitively and Windows rewrites them. `fold` is what such a file system does to a
 * name before comparing it: case folding (macOS, Windows), dropping trailing dots and spaces,
 * and the DOS device names, which stand for one device whatever follows their stem.
 */

const DEVICES = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])$/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: Windows forbids control characters
const WINDOWS_FORBIDDEN = /[<>:"/\\|?*\x00-\x1f]/;

const fold = (name: string): string => {
  const lower = name.toLowerCase().replace(/[. ]+$/, '');
  const stem = lower.split('.')[0] ?? '';
  return DEVICES.test(stem.trimEnd()) ? `device:${stem.trimEnd()}` : lower;
};

const foldPath = (segments: string[]) => segments.map(fold);

/** Whether one folded path equals the other or names a directory on the way to it. */
const clash = (a: string[], b: string[]) => {
  const [short, long] = a.length <= b.length ? [a, b] : [b, a];
  return short.every((name, i) => name === long[i]);
};

const CHARS = "aAbBzZ09.:*!_'()-=@+".split('');
const partArb = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: fc.constantFrom(...CHARS), maxLength: 12 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom('con', 'CON', 'Nul', 'nul.x', 'aux.', 'com1.seg', 'LPT9', 'prn'),
  },
  {
    weight: 1,
    arbitrary: fc.string({ unit: fc.constantFrom(...CHARS), minLength: 180, maxLength: 420 }),
  },
);
const keyArb = fc
  .array(partArb, { minLength: 1, maxLength: 5 })
  .map((parts) => parts.join('/'))
  .filter((key) => OBJECT_KEY_PATTERN.test(key));

/** A key that differs from `key` only where a case-insensitive or Windows name would not. */
const lookAlike = (key: string) =>
  fc
    .array(fc.constantFrom('flip', 'dot', 'undot', 'keep'), {
      minLength: key.length,
      maxLength: key.length,
    })
    .map((edits) =>
      [...key]
        .map((ch, i) => {
          const edit = edits[i];
          if (edit === 'flip') return ch === ch.toLowerCase() ? ch.toUpperCase() : ch.toLowerCase();
          if (edit === 'dot' && (key[i + 1] === '/' || i === key.length - 1)) return `${ch}.`;
          if (edit === 'undot' && ch === '.' && (key[i + 1] === '/' || i === key.length - 1))
            return '';
          return ch;
        })
        .join(''),
    );
const pairArb = fc.oneof(
  fc.tuple(keyArb, keyArb),
  keyArb.chain((key) => fc.tuple(fc.constant(key), lookAlike(key))),
);

const noClash = (toPath: (key: string) => string[]) =>
  fc.property(pairArb, ([a, b]) => {
    fc.pre(a !== b && OBJECT_KEY_PATTERN.test(b));
    return !clash(foldPath(toPath(a)), foldPath(toPath(b)));
  });

describe('object layout 2: key -> path', () => {
  it('maps distinct keys to paths no case-insensitive or Windows file system merges', () => {
    fc.assert(noClash(keyToPath), { numRuns: 3000, seed: 11 });
  });

  it('makes only names that such a file system keeps as they are', () => {
    fc.assert(
      fc.property(keyArb, (key) =>
        keyToPath(key).every(
          (name) => fold(name) === name && !WINDOWS_FORBIDDEN.test(name) && name.length <= 255,
        ),
      ),
      { numRuns: 3000, seed: 12 },
    );
  });

  it('decodes every path back to its key', () => {
    fc.assert(
      fc.property(keyArb, (key) => pathToKey(keyToPath(key)) === key),
      { numRuns: 3000, seed: 13 },
    );
  });

  it('decodes a name only if it is the encoding of what it decodes to', () => {
    const nameArb = fc.string({ unit: fc.constantFrom(...'aA%2e3c.:#^'.split('')), maxLength: 8 });
    fc.assert(
      fc.property(nameArb, (name) => {
        const text = decodeName(name);
        return text === undefined || encodeName(text) === name;
      }),
      { numRuns: 3000, seed: 14 },
    );
  });

  it('escapes case, trailing dots, device names and the characters Windows forbids', () => {
    expect(keyToPath('t/TENA/s/x')).toEqual(['t', '%t%e%n%a', 's', 'x#']);
    expect(keyToPath('t/tenA./s/run:1/seg/01*')).toEqual([
      't',
      'ten%a%2e',
      's',
      'run%3a1',
      'seg',
      '01%2a#',
    ]);
    expect(keyToPath('t/con/s/nul.seg')).toEqual(['t', '%63on', 's', '%6eul.seg#']);
    expect(keyToPath('a//b/')).toEqual(['a', '%', 'b', '%#']);
    expect(keyToPath('ledger/s1/000001.seg')).toEqual(['ledger', 's1', '000001.seg#']);
  });

  it('splits a part too long for one name, into names that fit', () => {
    const path = keyToPath(`x/${'A'.repeat(300)}`);
    expect(path.length).toBeGreaterThan(3);
    expect(path.every((name) => name.length <= 201)).toBe(true);
    expect(pathToKey(path)).toBe(`x/${'A'.repeat(300)}`);
  });

  it('is needed: layout 1 merges keys like these (the counterexample it finds)', () => {
    const run = fc.check(noClash(keyToPathV1), { numRuns: 3000, seed: 11 });
    expect(run.failed).toBe(true);
    expect(clash(foldPath(keyToPathV1('t/TENA/x')), foldPath(keyToPathV1('t/tenA/x')))).toBe(true);
    expect(clash(foldPath(keyToPathV1('t/tenA./x')), foldPath(keyToPathV1('t/tenA/x')))).toBe(true);
  });
});

describe('a layout-2 tree of look-alike keys, moved to layout 3', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'hefesto-paths-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const lookAlikes = [
    't/TENA/s/run-1/seg/1',
    't/tenA/s/run-1/seg/1',
    't/tena/s/run-1/seg/1',
    't/tenA./s/run-1/seg/1',
    't/tena/s/Run-1/seg/1',
    't/tena/s/run:1/seg/1',
    't/tena/s/CON/seg/1',
    't/tena/s/con/seg/1',
    't/tena/s/nul.x/seg/1',
    't/tena/s/a./seg/1',
    't/tena/s/a/seg/1',
  ];

  /** Writes `keys` as layout 2 wrote them (keyToPath), with LAYOUT = 2. */
  const writeLayout2 = (keys: string[]) => {
    for (const key of keys) {
      const path = join(dir, 'objects', ...keyToPath(key));
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, key);
    }
    writeFileSync(join(dir, 'LAYOUT'), '2\n');
  };

  it('keeps every look-alike key apart, with its own bytes', async () => {
    writeLayout2(lookAlikes);
    const store = new LocalObjectStore({ dir });
    try {
      for (const key of lookAlikes) {
        expect(new TextDecoder().decode((await store.get(key))?.body)).toBe(key);
      }
      const tenA = (await store.list('t/tenA/')).items.map((i) => i.key);
      expect(tenA).toEqual(['t/tenA/s/run-1/seg/1']);
      expect((await store.list('')).items.map((i) => i.key)).toEqual([...lookAlikes].sort());
    } finally {
      store.close();
    }
  });

  it('moves only objects: a stray file or directory in the tree is not a key', async () => {
    writeLayout2(['t/A/x']);
    writeFileSync(join(dir, 'objects', 't', '.DS_Store'), 'finder');
    mkdirSync(join(dir, 'objects', 't', 'A'));
    writeFileSync(join(dir, 'objects', 't', 'A', 'x#'), 'not the encoding of any key');
    const store = new LocalObjectStore({ dir });
    try {
      expect((await store.list('')).items.map((i) => i.key)).toEqual(['t/A/x']);
    } finally {
      store.close();
    }
  });
});
