#!/usr/bin/env python3
"""After move.py: the few non-path edits the layout step needs (cycles, operator room)."""
import os, re, shutil
def edit(p, pairs):
    s = open(p).read()
    for a, b in pairs:
        assert a in s, (p, a); s = s.replace(a, b, 1)
    open(p, 'w').write(s)

# 1. mapLimit in its own file (state -> compaction arrow, the state/chunk-store/compact-types cycle).
p = 'shared/compaction/compact-types.ts'; s = open(p).read()
start = s.index("/** `fn` over every item, at most `limit` at a time; results in item order. */")
end = s.index("export const pastDeadline")
block = s[start:end]; s = s[:start] + s[end:]; open(p, 'w').write(s)
open('shared/domain/map-limit.ts', 'w').write(block.rstrip('\n') + '\n')
for p in ['shared/effects/effects.ts', 'shared/effects/effect-list.ts', 'shared/state/chunk-store.ts', 'shared/verify/verifier.ts']:
    edit(p, [("import { mapLimit } from '../compaction/compact-types.js';", "import { mapLimit } from '../domain/map-limit.js';")])
edit('shared/compaction/chunk-gc.ts', [("import { IO_CONCURRENCY, mapLimit } from './compact-types.js';", "import { mapLimit } from '../domain/map-limit.js';\nimport { IO_CONCURRENCY } from './compact-types.js';")])
for p in ['shared/compaction/compact-merge.ts', 'shared/compaction/compact-gc.ts', 'shared/compaction/compact-retention.ts']:
    s = open(p).read(); s = s.replace("  mapLimit,\n", "", 1); i = s.index("import ")
    open(p, 'w').write(s[:i] + "import { mapLimit } from '../domain/map-limit.js';\n" + s[i:])

# 2. client.ts <-> set-value.ts: WriteOptions into types.ts, set-value names what it needs.
p = 'shared/client/client.ts'; s = open(p).read()
m = re.search(r"(/\*\*(?:(?!\*/).)*?\*/\n)?export interface WriteOptions \{.*?\n\}\n", s, re.S)
block = m.group(0)
s = s.replace(block, "export type { WriteOptions } from './types.js';\n")
s = s.replace("  VerifyResult,\n} from './types.js';", "  VerifyResult,\n  WriteOptions,\n} from './types.js';", 1)
open(p, 'w').write(s)
t = 'shared/client/types.ts'; old = open(t).read(); open(t, 'w').write(old.rstrip('\n') + '\n\n' + block)
edit('shared/client/set-value.ts', [
  ("import type { HefestoClient, WriteOptions } from './client.js';\n", ""),
  ("import type { CheckpointResult, DeltaOp, Json } from './types.js';", "import type { CheckpointResult, DeltaOp, Json, WriteOptions } from './types.js';"),
  ("/**\n * {@link HefestoClient.setValue}: upload, then one checkpoint setting the ref.", """/**
 * What {@link setLargeValue} needs of a client: HefestoClient's `putValue` and `checkpoint`
 * (named here, not imported: client.ts imports this file).
 *
 * @example
 * ```ts
 * const writer: ValueWriter = new HefestoClient({ baseUrl, apiKey });
 * ```
 */
export interface ValueWriter {
  putValue(value: Json, options?: ValueTransferOptions): Promise<ValueRef>;
  checkpoint(
    streamId: string,
    delta: { ops: Array<DeltaOp | SetRefOp>; baseDigest: string; stateDigest?: string },
    options?: WriteOptions,
  ): Promise<CheckpointResult & { replayed: boolean }>;
}

/**
 * {@link HefestoClient.setValue}: upload, then one checkpoint setting the ref."""),
  ("  client: HefestoClient,\n  streamId: string,\n  path: string,", "  client: ValueWriter,\n  streamId: string,\n  path: string,"),
])

# 3. The operator room: the CLI imports no adapter or service directly.
os.makedirs('shared/operator', exist_ok=True)
files = {
 'witness.ts': "// The operator room (shared/operator/README.md): what the CLI's offline witness checks need.\nexport { LocalWitnessStore } from '../adapters/local/local-witness-store.js';\nexport type { WitnessStore } from '../ports/witness-store.js';\nexport { publishedHeads } from '../proofs/witness.js';\n",
 's3-witness.ts': "// The operator room (shared/operator/README.md): a witness bucket on S3. Its own file, so a\n// command imports it (and the AWS SDK) only when it reads an s3:// witness.\nexport { S3WitnessStore } from '../adapters/aws/s3-witness-store.js';\n",
 'signing-keys.ts': "// The operator room (shared/operator/README.md): rotating the embedded server's signing key\n// with the server stopped (`hefesto keys rotate-signing`).\nexport {\n  loadKeyRing,\n  retireLostKeys,\n  rotateSigningKeyFile,\n  SIGNING_KEY_FILE,\n} from '../adapters/local/signing-key-file.js';\nexport { checkSigningKeys, recordedSigningKeys } from '../keys/signing-keys.js';\n",
 'compaction.ts': "// The operator room (shared/operator/README.md): what `hefesto compact` reports.\nexport type { CompactionReport } from '../compaction/compactor.js';\n",
}
for n, c in files.items(): open(f'shared/operator/{n}', 'w').write(c)
edit('cli/commands/audit.ts', [
 ("import { LocalWitnessStore } from '../../shared/adapters/local/local-witness-store.js';\n", ""),
 ("import type { WitnessStore } from '../../shared/ports/witness-store.js';\nimport { publishedHeads } from '../../shared/proofs/witness.js';\n",
  "import { LocalWitnessStore, publishedHeads, type WitnessStore } from '../../shared/operator/witness.js';\n"),
 ("import('../../shared/adapters/aws/s3-witness-store.js')", "import('../../shared/operator/s3-witness.js')"),
])
edit('cli/commands/compact.ts', [("from '../../shared/compaction/compactor.js'", "from '../../shared/operator/compaction.js'")])
edit('cli/commands/keys.ts', [
 ("} from '../../shared/adapters/local/signing-key-file.js';", "  checkSigningKeys,\n  recordedSigningKeys,\n} from '../../shared/operator/signing-keys.js';"),
 ("import { checkSigningKeys, recordedSigningKeys } from '../../shared/keys/signing-keys.js';\n", ""),
])
shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'check-imports.mjs'), 'scripts/check-imports.mjs')
print('post edits done')
