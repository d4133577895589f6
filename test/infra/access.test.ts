import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { FUNCTION_ACCESS } from '../../infra/access.js';
import { esbuildOptions, type FunctionName, REPO_ROOT } from '../../infra/bundling.js';

/**
 * Least privilege that follows the code: the storage port operations that appear in the
 * source files with code in a function's bundle (esbuild's metafile, same options as the
 * stack) must be exactly the ones the stack grants it. Ports and adapters are left out of the scan:
 * they define every operation; the services call them as `records.*` / `objects.*`, and a
 * transaction's items are `{ kind: 'put' | 'update' | 'delete' | 'check' }`.
 */

const OBJECT_CALL = /\bobjects\.(get|head|list|putIfAbsent|putIfMatch|delete)\(/g;
const RECORD_CALL = /\brecords\.(get|put|update|delete|transact|query)\(/g;
const TRANSACT_ITEM = /\bkind: '(put|update|delete|check)'/g;

/** Source files with code in the bundle (after tree shaking), ports and adapters left out. */
const bundledSources = async (name: FunctionName): Promise<string[]> => {
  const result = await build({
    ...esbuildOptions(name, join(REPO_ROOT, 'cdk.out', 'scan', name, 'index.js')),
    write: false,
    metafile: true,
  });
  const output = Object.values(result.metafile.outputs).find((o) => o.entryPoint !== undefined);
  return Object.entries(output?.inputs ?? {})
    .filter(([file, input]) => input.bytesInOutput > 0 && /^(shared|functions)\//.test(file))
    .map(([file]) => file)
    .filter((file) => !/^shared\/(ports|adapters)\//.test(file));
};

const portOpsOf = async (name: FunctionName) => {
  const objects = new Set<string>();
  const records = new Set<string>();
  for (const file of await bundledSources(name)) {
    const src = readFileSync(join(REPO_ROOT, file), 'utf8');
    for (const m of src.matchAll(OBJECT_CALL)) objects.add(m[1] as string);
    for (const m of src.matchAll(RECORD_CALL)) records.add(m[1] as string);
    for (const m of src.matchAll(TRANSACT_ITEM)) records.add(m[1] as string);
  }
  return { objects: [...objects].sort(), records: [...records].sort() };
};

describe.each(Object.keys(FUNCTION_ACCESS) as FunctionName[])('the %s function', (name) => {
  it('is granted exactly the storage operations its bundled code calls', async () => {
    const called = await portOpsOf(name);
    const granted = FUNCTION_ACCESS[name];
    expect({ objects: [...granted.objects].sort(), records: [...granted.records].sort() }).toEqual(
      called,
    );
  });
});
