/**
 * The one-line summary of an event in the timeline: a checkpoint (`hefesto.delta`) by its ops,
 * `set /messages, delete /x`, rather than the start of its JSON (which is its digests); other
 * events by their JSON. Cut to `max` characters. No DOM: the unit tests import it.
 */
export const eventSummary = (type: string, payload: unknown, max = 120): string => {
  const ops = (payload as { ops?: unknown } | null)?.ops;
  const text =
    type === 'hefesto.delta' && Array.isArray(ops)
      ? ops
          .map((o) => {
            const { op, path } = (o ?? {}) as { op?: unknown; path?: unknown };
            return `${String(op)} ${typeof path === 'string' && path !== '' ? path : '(root)'}`;
          })
          .join(', ') || 'no ops'
      : (JSON.stringify(payload) ?? 'undefined');
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
};
