/**
 * Bidirectional control characters shown as what they are. U+202A–U+202E (embeddings and
 * overrides), U+2066–U+2069 (isolates), U+200E/U+200F (marks) and U+061C (Arabic letter
 * mark) reorder the text around them when rendered: an event payload holding U+202E could
 * make "txt.exe" read as "exe.txt", or a hash, seq or status beside it read as something it
 * is not (the "Trojan Source" trick). The console renders no user data raw: each such
 * character becomes a visible marker, `⟨U+202E⟩`, so the text reads in the order it is
 * stored and the character is still there to see. dom.ts applies it to every text node and
 * title it makes; other text set directly goes through it too.
 */

const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

const marker = (ch: string): string =>
  `⟨U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}⟩`;

export const showBidiControls = (text: string): string => text.replace(BIDI_CONTROLS, marker);
