import { describe, expect, it } from 'vitest';
import { showBidiControls } from '../../console/src/bidi.js';

/** The console's rendering of bidi control characters (console/src/bidi.ts). */
describe('showBidiControls', () => {
  it.each([
    ['\u202A', '⟨U+202A⟩'],
    ['\u202B', '⟨U+202B⟩'],
    ['\u202C', '⟨U+202C⟩'],
    ['\u202D', '⟨U+202D⟩'],
    ['\u202E', '⟨U+202E⟩'],
    ['\u2066', '⟨U+2066⟩'],
    ['\u2067', '⟨U+2067⟩'],
    ['\u2068', '⟨U+2068⟩'],
    ['\u2069', '⟨U+2069⟩'],
    ['\u200E', '⟨U+200E⟩'],
    ['\u200F', '⟨U+200F⟩'],
    ['\u061C', '⟨U+061C⟩'],
  ])('shows %j as %s', (ch, marker) => {
    expect(showBidiControls(`a${ch}b${ch}`)).toBe(`a${marker}b${marker}`);
  });

  it('leaves other text alone: RTL letters, joiners, emoji, the marker characters themselves', () => {
    for (const text of ['plain', 'שלום עולם', 'مرحبا', 'a\u200Db', '👩‍💻', '⟨U+202E⟩', '']) {
      expect(showBidiControls(text)).toBe(text);
    }
  });
});
