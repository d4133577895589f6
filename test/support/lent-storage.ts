/**
 * What a test file's setup drops after its tests: the bucket and table pairs that
 * `lendTestStorage` (test/support/aws.ts) made for it. Kept apart from aws.ts so the setup file
 * of every test file does not load the AWS SDK.
 */
const drops: Array<() => Promise<void>> = [];

/** Registers a way to drop what a file made; run once by `dropLentStorage`. */
export const onDrop = (drop: () => Promise<void>): void => {
  drops.push(drop);
};

/** Runs (and forgets) every registered drop. */
export const dropLentStorage = async (): Promise<void> => {
  await Promise.all(drops.splice(0).map((drop) => drop()));
};
