import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { type ServerType, serve } from '@hono/node-server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../cli/main.js';
import { headKey, SEGMENT_INDEX_PREFIX, streamPk } from '../../shared/chain/storage-keys.js';
import type { Item } from '../../shared/ports/record-store.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import { createHarness, events, type Harness, ROOT_KEY, STORE_FACTORIES } from '../http/harness.js';

/**
 * `hefesto export` puts the signed tree head at its last seq in the header, and `hefesto
 * verify-file` checks a file against a signed head (the header's or --head FILE), with the
 * server's keys or offline with --keys FILE: a truncated file, a file of a rewritten history
 * and a head of another key are refused.
 */

const sink = () => {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  return { stream, text: () => text };
};

describe.each(STORE_FACTORIES)('verify-file against a signed head on $name stores', (factory) => {
  let h: Harness;
  let server: ServerType;
  let url: string;
  let dir: string;
  const ring = new KeyRing(new FakeSigner('verify-file'));

  const cli = async (args: string[], online = true) => {
    const out = sink();
    const err = sink();
    const env: Record<string, string> = online ? { HEFESTO_URL: url, HEFESTO_KEY: ROOT_KEY } : {};
    const code = await runCli(args, env, { stdout: out.stream, stderr: err.stream });
    return { code, stdout: out.text(), stderr: err.text() };
  };
  const append = async (n: number) => {
    const res = await h.append(ROOT_KEY, 'run-1', events(n));
    expect(res.status).toBe(201);
    h.advance(1000);
    return ((await res.json()) as { treeHead: unknown }).treeHead;
  };
  const save = (name: string, value: unknown) => {
    const path = join(dir, name);
    writeFileSync(path, JSON.stringify(value));
    return path;
  };
  const exportTo = async (name: string) => {
    const out = join(dir, name);
    expect((await cli(['export', 'run-1', '--out', out])).code).toBe(0);
    return out;
  };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hefesto-vf-'));
    h = createHarness(factory, { ledger: { signing: ring } });
    server = serve({ fetch: h.app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterEach(async () => {
    await new Promise((resolve) => server.close(resolve));
    h.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("checks an export against the signed head in its header, with the server's or given keys", async () => {
    await append(3);
    await append(4);
    const file = await exportTo('run-1.ndjson');
    const header = JSON.parse(readFileSync(file, 'utf8').split('\n')[0] ?? '');
    expect(header.treeHead).toMatchObject({ treeSize: 7, streamId: 'run-1' });
    const online = await cli(['verify-file', file]);
    expect(online.stdout).toContain('signed tree head: size 7');
    expect(online.code).toBe(0);
    const keys = save('keys.json', ring.jwks());
    const offline = await cli(['verify-file', file, '--keys', keys], false);
    expect(offline.stdout).toContain('verified');
    expect(offline.code).toBe(0);
    // Keys that did not sign it: refused.
    const other = save('other.json', new KeyRing(new FakeSigner('other')).jwks());
    const refused = await cli(['verify-file', file, '--keys', other], false);
    expect(refused.stdout).toContain('unknown signing key');
    expect(refused.code).toBe(1);
  });

  it('checks a file against an earlier receipt (--head), and refuses a rewritten history or a truncated file', async () => {
    const early = save('early.json', await append(3));
    const backup = (await h.records.get(headKey('default', 'run-1'))) as Item;
    const later = save('later.json', await append(2));
    const file = await exportTo('a.ndjson');
    expect((await cli(['verify-file', file, '--head', early])).code).toBe(0);
    expect((await cli(['verify-file', file, '--head', later])).code).toBe(0);

    // A rewrite: the old head restored, its later segments deleted, other events appended.
    await h.records.put(backup);
    const page = await h.records.query(streamPk('default', 'run-1'), {
      skPrefix: SEGMENT_INDEX_PREFIX,
    });
    for (const item of page.items.filter((i) => Number(i.firstSeq) > 3)) {
      await h.records.delete({ pk: item.pk, sk: item.sk });
      await h.objects.delete(String(item.objectKey));
    }
    await append(4);
    const rewritten = await exportTo('b.ndjson');
    expect((await cli(['verify-file', rewritten])).code).toBe(0); // consistent with itself
    const bad = await cli(['verify-file', rewritten, '--head', later]);
    expect(bad.stdout).toContain('not the signed tree of 5 leaves (history rewritten)');
    expect(bad.code).toBe(1);
    expect((await cli(['verify-file', rewritten, '--head', early])).code).toBe(0); // common prefix

    // A file cut short of the head it is checked against.
    const short = await exportTo('c.ndjson');
    const lines = readFileSync(short, 'utf8').trimEnd().split('\n');
    const header = JSON.parse(lines[0] ?? '');
    const third = JSON.parse(lines[3] ?? '') as { hash: string };
    const cut = [
      JSON.stringify({ ...header, head: { seq: 3, hash: third.hash } }),
      ...lines.slice(1, 4),
    ];
    writeFileSync(short, `${cut.join('\n')}\n`);
    const truncated = await cli(['verify-file', short]);
    expect(truncated.stdout).toContain(
      'truncated: the file ends at seq 3, the signed tree has 7 leaves',
    );
    expect(truncated.code).toBe(1);
  });
});
