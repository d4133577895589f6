/**
 * A small benchmark harness: runs `fn` in batches and reports the median per-call time of
 * the batches. Medians over several batches tolerate the noise of a shared machine; compare
 * figures only within one run.
 */
export interface Measurement {
  name: string;
  medianUs: number;
  p90Us: number;
  batches: number;
  perBatch: number;
}

const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

export const measure = (
  name: string,
  fn: () => unknown,
  options: { batches?: number; perBatch?: number; warmup?: number } = {},
): Measurement => {
  const { batches = 21, perBatch = 200, warmup = 200 } = options;
  for (let i = 0; i < warmup; i++) fn();
  const samples: number[] = [];
  for (let b = 0; b < batches; b++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < perBatch; i++) fn();
    samples.push(Number(process.hrtime.bigint() - start) / 1000 / perBatch);
  }
  samples.sort((a, b) => a - b);
  return {
    name,
    medianUs: quantile(samples, 0.5),
    p90Us: quantile(samples, 0.9),
    batches,
    perBatch,
  };
};

export const measureAsync = async (
  name: string,
  fn: () => Promise<unknown>,
  options: { batches?: number; perBatch?: number; warmup?: number } = {},
): Promise<Measurement> => {
  const { batches = 11, perBatch = 20, warmup = 10 } = options;
  for (let i = 0; i < warmup; i++) await fn();
  const samples: number[] = [];
  for (let b = 0; b < batches; b++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < perBatch; i++) await fn();
    samples.push(Number(process.hrtime.bigint() - start) / 1000 / perBatch);
  }
  samples.sort((a, b) => a - b);
  return {
    name,
    medianUs: quantile(samples, 0.5),
    p90Us: quantile(samples, 0.9),
    batches,
    perBatch,
  };
};

export const fmt = (us: number): string =>
  us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(2)} µs`;

export const printTable = (title: string, rows: Array<Record<string, string | number>>): void => {
  console.log(`\n## ${title}\n`);
  const first = rows[0];
  if (!first) return;
  const cols = Object.keys(first);
  console.log(`| ${cols.join(' | ')} |`);
  console.log(`| ${cols.map(() => '---').join(' | ')} |`);
  for (const row of rows) console.log(`| ${cols.map((c) => String(row[c] ?? '')).join(' | ')} |`);
};
