/**
 * The engine's transport: a fetch-shaped function that hands each request to the app's own
 * handler in this process (so authentication, validation and errors are the HTTP path's),
 * counting the requests in flight so that close() can wait for them, and answering 503
 * ErrUnavailable once the engine is closing.
 */

export interface InProcessFetch {
  fetch: typeof fetch;
  /** The same handler, for the loopback listener (its requests are drained too). */
  handle(request: Request): Promise<Response>;
  /** Refuses new requests from now on; resolves once every request in flight has settled. */
  drain(): Promise<void>;
}

const closedAnswer = () =>
  new Response(
    JSON.stringify({
      type: 'urn:hefesto:problem:ErrUnavailable',
      title: 'Unavailable',
      status: 503,
      code: 'ErrUnavailable',
      detail: 'the embedded engine is closed',
    }),
    { status: 503, headers: { 'content-type': 'application/problem+json' } },
  );

export const inProcessFetch = (app: (request: Request) => Promise<Response>): InProcessFetch => {
  const inFlight = new Set<Promise<unknown>>();
  let closing = false;
  const handle = (request: Request): Promise<Response> => {
    if (closing) return Promise.resolve(closedAnswer());
    const answered = app(request);
    const settled = answered.then(
      () => undefined,
      () => undefined,
    );
    inFlight.add(settled);
    void settled.then(() => inFlight.delete(settled));
    return answered;
  };
  return {
    handle,
    fetch: (input, init) =>
      handle(input instanceof Request && init === undefined ? input : new Request(input, init)),
    drain: async () => {
      closing = true;
      while (inFlight.size > 0) await Promise.all(inFlight);
    },
  };
};
