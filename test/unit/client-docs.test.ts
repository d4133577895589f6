import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Every export of the client SDK carries TSDoc with an example (the SDK's docs live there). */

const dir = 'shared/client';

const undocumented = (file: string): string[] => {
  const lines = readFileSync(join(dir, file), 'utf8').split('\n');
  const missing: string[] = [];
  for (const [i, line] of lines.entries()) {
    const m = /^export (?:const|class|interface|type|function|async function) (\w+)/.exec(line);
    if (!m) continue;
    // Walk back over the TSDoc block that ends right above the export.
    let j = i - 1;
    if (!lines[j]?.trim().endsWith('*/')) {
      missing.push(`${file}: ${m[1]}`);
      continue;
    }
    let doc = '';
    while (j >= 0 && !lines[j]?.trim().startsWith('/**')) doc = `${lines[j--]}\n${doc}`;
    if (!doc.includes('@example')) missing.push(`${file}: ${m[1]}`);
  }
  return missing;
};

describe('client SDK docs', () => {
  it('has TSDoc with an @example on every export', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));
    expect(files.flatMap(undocumented)).toEqual([]);
  });
});
