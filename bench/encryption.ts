/**
 * Encryption at rest of events (docs/privacy.md; issue 28): server CPU per append with the
 * stream keys (event format 2: commitment, sealing of the segment's payloads) against the same
 * run without them (format 1), and the bytes of the stored segments. In process, memory
 * stores, so the figure is the service's own CPU (process.cpuUsage), both runs interleaved
 * in rounds so that the machine's load falls on both alike.
 *
 * Then the same per checkpoint (a LangGraph-like turn: a label, its meta, one message set
 * into the state, a base every 25 checkpoints, and the superstep's pending write), interleaved
 * the same way. What a checkpoint seals today is its event (the delta's payload), its
 * pending write's value and, every 25th, its base's object (a chunked base's root object);
 * the chunks and large values stored beside the chain are not encrypted yet
 * (docs/privacy.md), so the figure is the cost of what is built, not of the whole design.
 *
 *   npx tsx bench/encryption.ts [appends per round = 2000] [rounds = 5] [checkpoints per round = 500]
 */
import { MemoryKeyWrapper } from '../shared/adapters/memory/memory-key-wrapper.js';
import { MemoryObjectStore } from '../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../shared/adapters/memory/memory-record-store.js';
import { StreamKeyring } from '../shared/chain/stream-keyring.js';
import { Ledger } from '../shared/ledger/ledger.js';
import { FakeSigner, KeyRing } from '../shared/ports/signer.js';

const appends = Number(process.argv[2] ?? 2000);
const rounds = Number(process.argv[3] ?? 5);
const checkpoints = Number(process.argv[4] ?? 500);
const signing = new KeyRing(new FakeSigner('bench'));
// A chat turn's observation, about the size of the 1,000-turn chat's (641 B of JSON).
const turn = (i: number) => ({
  type: 'model.output',
  payload: {
    role: 'assistant',
    turn: i,
    content: `Turn ${i}: ${'the refund was approved after checking the order history; '.repeat(9)}`,
  },
});

const run = async (encrypted: boolean) => {
  const objects = new MemoryObjectStore();
  const records = new MemoryRecordStore();
  const keyring = encrypted ? new StreamKeyring(records, new MemoryKeyWrapper()) : undefined;
  const ledger = new Ledger(
    { objects, records, clock: { now: () => Date.now() }, keyring },
    { signing },
  );
  // warm: the stream exists and its key is cached
  await ledger.appender.append({ tenant: 'acme', stream: 'run-1', events: [turn(0)] });
  const start = process.cpuUsage();
  for (let i = 1; i <= appends; i++) {
    await ledger.appender.append({ tenant: 'acme', stream: 'run-1', events: [turn(i)] });
  }
  const cpu = process.cpuUsage(start);
  let bytes = 0;
  let after: string | undefined;
  do {
    const page = await objects.list('t/acme/s/run-1/seg/', after === undefined ? {} : { after });
    for (const o of page.items) bytes += o.size;
    after = page.next;
  } while (after !== undefined);
  return { usPerAppend: (cpu.user + cpu.system) / appends, bytesPerAppend: bytes / (appends + 1) };
};

/** One LangGraph-like checkpoint (and its pending write) per turn on a fresh stream. */
const runCheckpoints = async (encrypted: boolean) => {
  const objects = new MemoryObjectStore();
  const records = new MemoryRecordStore();
  const keyring = encrypted ? new StreamKeyring(records, new MemoryKeyWrapper()) : undefined;
  const ledger = new Ledger(
    { objects, records, clock: { now: () => Date.now() }, keyring },
    { signing },
  );
  const at = { tenant: 'acme', stream: 'thread-1' };
  let digest = (await ledger.appender.readHead(at.tenant, at.stream)).stateDigest;
  let parent: string | undefined;
  const step = async (i: number) => {
    const label = `ckpt-${String(i).padStart(8, '0')}`;
    const { payload } = turn(i);
    const ops =
      i === 0
        ? [{ op: 'set' as const, path: '/messages', value: [payload] }]
        : [{ op: 'set' as const, path: `/messages/${i}`, value: payload }];
    const result = await ledger.checkpoints.checkpoint({
      ...at,
      ops,
      baseDigest: digest,
      label,
      meta: { step: i, source: 'loop' },
      ...(parent === undefined ? {} : { parentLabel: parent }),
    });
    digest = result.stateDigest;
    parent = label;
    // the superstep's pending write (LangGraph putWrites), sealed on an encrypted stream
    await ledger.pendingWrites.put(at.tenant, at.stream, label, {
      taskId: `task-${i}`,
      taskPath: '~__pregel_pull, agent',
      writes: [{ idx: 0, channel: 'messages', value: payload }],
    });
  };
  await step(0); // warm: the stream exists and its key is cached
  const start = process.cpuUsage();
  for (let i = 1; i <= checkpoints; i++) await step(i);
  const cpu = process.cpuUsage(start);
  return (cpu.user + cpu.system) / checkpoints;
};

const results = {
  plain: [] as number[],
  encrypted: [] as number[],
  bytes: { plain: 0, encrypted: 0 },
};
for (let r = 0; r < rounds; r++) {
  for (const encrypted of r % 2 === 0 ? [false, true] : [true, false]) {
    const got = await run(encrypted);
    (encrypted ? results.encrypted : results.plain).push(got.usPerAppend);
    results.bytes[encrypted ? 'encrypted' : 'plain'] = got.bytesPerAppend;
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const plain = median(results.plain);
const encrypted = median(results.encrypted);
console.log(`appends per round ${appends}, rounds ${rounds} (medians)`);
console.log(
  `server CPU per append: plain ${plain.toFixed(1)} µs, encrypted ${encrypted.toFixed(1)} µs (${(((encrypted - plain) / plain) * 100).toFixed(1)} %)`,
);
console.log(
  `segment bytes per append (unmerged, one event each): plain ${results.bytes.plain.toFixed(0)} B, encrypted ${results.bytes.encrypted.toFixed(0)} B`,
);

const ckpt = { plain: [] as number[], encrypted: [] as number[] };
for (let r = 0; r < rounds; r++) {
  for (const encrypted of r % 2 === 0 ? [false, true] : [true, false]) {
    (encrypted ? ckpt.encrypted : ckpt.plain).push(await runCheckpoints(encrypted));
  }
}
const cPlain = median(ckpt.plain);
const cEncrypted = median(ckpt.encrypted);
const over = ((cEncrypted - cPlain) / cPlain) * 100;
console.log(`checkpoints per round ${checkpoints}, rounds ${rounds} (medians)`);
console.log(
  `server CPU per checkpoint: plain ${cPlain.toFixed(1)} µs, encrypted ${cEncrypted.toFixed(1)} µs (${over.toFixed(1)} %; budget 15 %: ${over <= 15 ? 'within' : 'over'}; events, pending writes and base objects sealed, chunks not yet)`,
);
