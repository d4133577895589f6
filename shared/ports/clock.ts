/** Time and randomness are injected so the domain stays deterministic under test. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export interface IdSource {
  /** A new unique, URL-safe id. */
  newId(): string;
}

export const systemClock: Clock = { now: () => Date.now() };

/** Random UUIDs (the wiring's default id source). */
export const randomIds: IdSource = { newId: () => crypto.randomUUID() };
