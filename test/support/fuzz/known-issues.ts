import type { Exchange, Failure } from './runner.js';

/**
 * Failures the fuzz test finds that are known and being fixed elsewhere. A failure that
 * matches one is reported (with the exact request) but does not fail the test; each entry
 * names who fixes it, and goes away with the fix: the test says when an entry matched
 * nothing, so that a fixed issue cannot keep masking a new one.
 */
export interface KnownIssue {
  id: string;
  /** Who fixes it (issue item and branch). */
  owner: string;
  description: string;
  /** `earlier`: the exchanges of the same run before this one (what it may have stored). */
  matches(failure: Failure, earlier: Exchange[]): boolean;
}

const problemCode = (f: Failure): string | undefined => {
  try {
    return (JSON.parse(f.response) as { code?: string }).code;
  } catch {
    return undefined;
  }
};

const EFFECT_ROUTE =
  /\/(effects\/\{effectKey\}\/(begin|complete|fail)|sagas\/\{sagaId\}\/compensate)$/;
const STREAM_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** A request to an effect or saga route with a stream id the one stream id schema refuses. */
const oddEffectStream = (r: Failure['request']) =>
  EFFECT_ROUTE.test(r.op) && !STREAM_ID.test(r.params.streamId ?? '');

/** Deeper than JSON serialization survives (issue 11 item 6 measured 5,000). */
const DEEP = 1000;

export const KNOWN_ISSUES: KnownIssue[] = [
  {
    id: 'h3-deep-json',
    owner: 'issue 11 item 6, branch h3-tamper (JSON depth limit)',
    description:
      'A body nested thousands of levels deep is accepted; its write (checkpoint, effect) or ' +
      'every later read of it (events, state) answers 500.',
    matches: (f, earlier) =>
      f.kind === 'server-error' &&
      (f.request.depth >= DEEP || earlier.some((e) => e.request.depth >= DEEP && e.status < 300)),
  },
  {
    id: 'h1-effect-stream-id',
    owner: 'issue 11 item 2, branch h1-effects (effect and saga routes validate streamId)',
    description:
      'Effect and saga routes take any string as streamId (a%20b, a%2Fb, x%23s%23y): the ' +
      'effect is recorded under it, and finishing it fails or writes under another key layout.',
    matches: (f, earlier) =>
      oddEffectStream(f.request) ||
      (f.kind === 'server-error' &&
        earlier.some((e) => oddEffectStream(e.request) && e.status < 300)),
  },
  {
    id: 'h1-effect-key-collision',
    owner: 'issue 11 item 1, branch h1-effects (effect keys scoped by stream)',
    description:
      'An effect key finished on one stream of a tenant makes finishing it on another answer ' +
      '422 ErrIdempotencyKeyReused, after the effect record was already marked finished.',
    matches: (f) => EFFECT_ROUTE.test(f.request.op) && problemCode(f) === 'ErrIdempotencyKeyReused',
  },
  {
    id: 'fork-orphan-snapshot',
    owner: 'unassigned (Checkpointer.fork, shared/services/checkpoint.ts)',
    description:
      'A fork onto an existing newStreamId answers 409 ErrStreamExists but has already written ' +
      'the new stream’s base snapshot object (snap/0…0-<digest>) under the existing stream.',
    matches: (f) =>
      f.kind === 'write-on-4xx' &&
      f.request.op === 'POST /v1/streams/{streamId}/fork' &&
      problemCode(f) === 'ErrStreamExists' &&
      f.detail.split('; ').every((c) => /^created object t\/[^/]+\/s\/[^/]+\/snap\//.test(c)),
  },
];

export const knownIssueOf = (failure: Failure, earlier: Exchange[]): KnownIssue | undefined =>
  KNOWN_ISSUES.find((issue) => issue.matches(failure, earlier));
