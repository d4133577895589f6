/**
 * A setup file of the vitest config: in CI (`CI` set) every fast-check property without a seed
 * of its own runs from one fixed seed, so a CI failure is the same failure on every re-run and
 * on a laptop; locally each run draws a new seed (more cases over time). A failing property
 * prints its seed and shrink path; HEFESTO_FC_SEED=<seed> replays it (add `path` to the
 * property's options to go straight to the shrunk case). The API fuzz test
 * (test/http/fuzz.test.ts) has its own seed, fixed in CI the same way.
 */
const FIXED_SEED = 20_261_202;

const given = process.env.HEFESTO_FC_SEED;
const seed =
  given !== undefined && given !== '' ? Number(given) : process.env.CI ? FIXED_SEED : undefined;
if (seed !== undefined) {
  if (!Number.isInteger(seed)) throw new Error(`HEFESTO_FC_SEED must be an integer, got ${given}`);
  // Loaded only then: most test files use no property, and this file runs before every one.
  const { default: fc } = await import('fast-check');
  fc.configureGlobal({ ...fc.readConfigureGlobal(), seed });
}
