#!/usr/bin/env python3
"""Move-only layout step (issue 23): git mv files per MAPPING, rewrite relative import
specifiers and repo-relative path mentions. Run from the repo root. Usage: move.py [--dry]"""
import os, re, subprocess, sys, json

ROOMS = {
  'chain': ['layout', 'storage-keys', 'storage-kinds', 'storage-kinds-model', 'storage-kinds-objects', 'storage-kinds-records', 'tampered', 'chain-head', 'reader', 'state-binding', 'label-binding'],
  'leases': ['leases'],
  'commit': ['append', 'append-model', 'commit-extras', 'idem-receipt', 'lease-orphans', 'labels',
             'stream-list', 'stream-delete', 'repair'],
  'state': ['memory-pool', 'frozen-writes', 'writes-binding', 'writes-verify', 'checkpoint', 'chunk-store', 'pending-writes', 'snapshot-v2', 'state', 'state-origin',
            'state-read', 'values', 'working-state', 'loop-turns', 'drain'],
  'proofs': ['tree-leaves', 'tree-commit', 'tree-source', 'tree-tiles', 'proofs', 'witness'],
  'effects': ['effect-binding', 'effects', 'effect-events', 'effect-list', 'effect-model'],
  'compaction': ['compactor', 'compact-gc', 'compact-lease', 'compact-merge', 'compact-retention',
                 'compact-types', 'chunk-gc', 'retention'],
  'keys': ['keys', 'signing-keys'],
  'verify': ['verifier'],
  'ledger': ['ledger'],
}
EXTRA = {'shared/domain/limits.ts': 'shared/domain/limits.ts'}
EXTRA.update(json.loads(os.environ.get('MOVE_EXTRA', '{}')))  # {"old/path.ts": "new/path.ts"}

def mapping():
    m = {}
    svc = sorted(os.listdir('shared/services')) if os.path.isdir('shared/services') else []
    where = {n: r for r, ns in ROOMS.items() for n in ns}
    for f in svc:
        name = re.sub(r'\.(ts|mjs|js)$', '', f)
        if name not in where:
            sys.exit(f'no room for shared/services/{f}')
        m[f'shared/services/{f}'] = f'shared/{where[name]}/{f}'
    m.update({k: v for k, v in EXTRA.items() if os.path.exists(k)})
    return m

CODE = re.compile(r'\.(ts|tsx|mts|mjs|js|cjs)$')
SPEC = re.compile(r"""((?:\bfrom|\bimport|\bimport\s*\(|\bvi\.mock\s*\(|\bvi\.importActual\s*(?:<[^>]*>)?\s*\(|\brequire\s*\(|new\s+URL\s*\()\s*)(['"])(\.{1,2}/[^'"]*)\2""")

def resolve(base_dir, spec):
    t = os.path.normpath(os.path.join(base_dir, spec))
    for cand, kind in [(t, 'same'), (re.sub(r'\.js$', '.ts', t), 'js2ts'), (re.sub(r'\.js$', '.tsx', t), 'js2tsx'),
                       (t + '.ts', 'add'), (os.path.join(t, 'index.ts'), 'index')]:
        if os.path.isfile(cand): return cand, kind
    return None, None

def rel(from_dir, target):
    r = os.path.relpath(target, from_dir)
    return r if r.startswith('.') else './' + r

def main():
    dry = '--dry' in sys.argv
    m = mapping()
    files = subprocess.run(['git', 'ls-files'], capture_output=True, text=True, check=True).stdout.split()
    files = [f for f in files if os.path.isfile(f)]
    changed = {}
    for f in files:
        if f.endswith(('.png', '.lock', 'package-lock.json', '.gz', '.woff2', '.ico')): continue
        try: text = open(f, encoding='utf-8').read()
        except UnicodeDecodeError: continue
        new_f = m.get(f, f)
        out = text
        if CODE.search(f):
            def sub(mt):
                spec = mt.group(3)
                target, kind = resolve(os.path.dirname(f), spec)
                if target is None: return mt.group(0)
                new_t = m.get(target, target)
                if new_t == target and new_f == f: return mt.group(0)
                suffix = {'same': '', 'js2ts': '', 'js2tsx': '', 'add': '', 'index': ''}[kind]
                if kind == 'same': ns = rel(os.path.dirname(new_f), new_t)
                elif kind in ('js2ts', 'js2tsx'): ns = re.sub(r'\.tsx?$', '.js', rel(os.path.dirname(new_f), new_t))
                elif kind == 'add': ns = rel(os.path.dirname(new_f), new_t)[:-3]
                else: ns = rel(os.path.dirname(new_f), os.path.dirname(new_t))
                return mt.group(1) + mt.group(2) + ns + mt.group(2)
            out = SPEC.sub(sub, out)
        for old, new in m.items():
            if old in out:
                out = re.sub(r'(?<![\w/.-])' + re.escape(old) + r'(?![\w.-])', new, out)
        if out != text: changed[f] = out
    print(f'{len(m)} files moved, {len(changed)} files rewritten')
    if dry:
        for f in sorted(changed): print('  rewrite', f)
        return
    for f, out in changed.items():
        open(f, 'w', encoding='utf-8').write(out)
    for old, new in m.items():
        os.makedirs(os.path.dirname(new), exist_ok=True)
        subprocess.run(['git', 'mv', old, new], check=True)
    if os.path.isdir('shared/services') and not os.listdir('shared/services'): os.rmdir('shared/services')

main()
