import { durableWriterStats } from '../../shared/adapters/local/durable-writer.js';
import { LocalObjectStore } from '../../shared/adapters/local/local-object-store.js';
import { bodyOf } from './vacuum-crash-bodies.js';

/**
 * Child of vacuum-crash.test.ts: fills a data directory with objects, then deletes most of
 * them (the writer thread vacuums after those commits) while putting new ones, printing each
 * acknowledged put and the writer's vacuum count, until its parent kills it with SIGKILL.
 */

const dir = process.argv[2] ?? '';

const store = new LocalObjectStore({ dir });
const old = Array.from({ length: 400 }, (_, i) => `t/a/s/x/seg/${String(i).padStart(4, '0')}`);
for (let i = 0; i < old.length; i += 20) {
  await Promise.all(old.slice(i, i + 20).map((k) => store.putIfAbsent(k, bodyOf(k))));
}
console.log('filled');
let n = 0;
const keep = (async () => {
  for (;;) {
    const key = `t/a/s/x/keep/${String(n).padStart(5, '0')}`;
    await store.putIfAbsent(key, bodyOf(key, 2048));
    console.log(`acked ${key}`);
    n++;
  }
})();
for (let i = 0; i < old.length; i += 10) {
  await Promise.all(old.slice(i, i + 10).map((k) => store.delete(k)));
  console.log(`deleted ${i + 10} vacuums ${(await durableWriterStats()).vacuums}`);
}
await keep;
