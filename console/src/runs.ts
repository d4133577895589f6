import type { CopiedWrite } from '../../shared/domain/copy-thread.js';
/**
 * What the console knows of agent frameworks, read from what they store through the public
 * API (no DOM: the unit tests import it).
 *
 * LangGraph (HefestoSaver, packages/langgraph): one stream per (thread, namespace) named
 * `{prefix}.{thread}.{ns}` (each part escaped: letters, digits and `-` kept, any other
 * character `:` + its UTF-8 bytes in hex; stream-ids.ts), one labelled checkpoint per step,
 * the state `{thread, ns, ckpt, values: {channel: encoded}}` where encoded is `{j: JSON}`,
 * `{t: type, b: base64}` or `{r: ref}`. LangGraph JS's checkpoint metadata holds `source`,
 * `step` and `parents` only, so the node that ran and the nodes next are derived:
 *   - ran: the nodes whose `versions_seen` changed from the parent checkpoint;
 *   - writes: the parent's pending writes of those tasks (their task paths name the node);
 *   - next: the nodes whose trigger channel (`branch:to:<node>`, `__start__`) holds a value
 *     with a version newer than the one the node last saw;
 *   - interrupts: the checkpoint's own pending writes on `__interrupt__` (and `__error__`).
 *
 * OpenAI Agents (HefestoSession, packages/openai-agents): the session's stream holds
 * `{items: [...], life}`; its items are the SDK's input items.
 */

export type RunStatus = 'running' | 'interrupted' | 'done' | 'failed';

/** A pending write as the tuple routes answer it (the copy procedure's own type). */
export type StoredWrite = CopiedWrite;

/** A checkpoint as GET …/tuple(s) answers it, with its state made whole. */
export interface Tuple {
  checkpoint: {
    label: string;
    seq: number;
    meta?: unknown;
    parentLabel?: string;
    createdAt?: number;
  };
  seq: number;
  state: Record<string, unknown>;
  writes: StoredWrite[];
}

// ——— stream ids ———

/** UTF-8 bytes of a character from its lead byte. */
const utf8Length = (lead: number): number =>
  lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;

/** `:` + the hex of one character's UTF-8 bytes, back to the character (stream-ids.ts). */
const unescapePart = (part: string): string => {
  const bytes: number[] = [];
  for (let i = 0; i < part.length; ) {
    const lead = part[i] === ':' ? Number.parseInt(part.slice(i + 1, i + 3), 16) : Number.NaN;
    if (Number.isNaN(lead)) {
      bytes.push(part.charCodeAt(i));
      i += 1;
      continue;
    }
    const n = utf8Length(lead);
    for (let k = 0; k < n; k++)
      bytes.push(Number.parseInt(part.slice(i + 1 + 2 * k, i + 3 + 2 * k), 16));
    i += 1 + 2 * n;
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
};

const escapePart = (part: string): string => {
  let out = '';
  for (const ch of part) {
    if (/^[A-Za-z0-9-]$/.test(ch)) out += ch;
    else
      out += `:${[...new TextEncoder().encode(ch)].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
  }
  return out;
};

/** A LangGraph thread's stream id, as HefestoSaver names it (short parts only). */
export const threadStreamId = (threadId: string, ns = '', prefix = 'lg'): string =>
  `${prefix}.${escapePart(threadId)}.${escapePart(ns)}`;

/**
 * The stream of a thread's resume requests, `{thread stream}.resume` (stream-ids.ts
 * resumeStreamOf): its own, so a resume is recorded while a worker holds the thread's lease.
 */
export const resumeStreamOf = (threadStream: string): string => `${threadStream}.resume`;

/**
 * The thread and namespace of a stream named as HefestoSaver names them, or undefined. A
 * hashed part (`h-` + 32 hex digits: a name too long to escape) is shown as it is.
 */
export const parseThreadStream = (
  streamId: string,
  prefix = 'lg',
): { threadId: string; ns: string } | undefined => {
  if (!streamId.startsWith(`${prefix}.`)) return undefined;
  const parts = streamId.slice(prefix.length + 1).split('.');
  if (parts.length !== 2) return undefined;
  const [thread = '', ns = ''] = parts;
  if (thread === '' || !/^[A-Za-z0-9:-]*$/.test(thread) || !/^[A-Za-z0-9:-]*$/.test(ns))
    return undefined;
  return { threadId: unescapePart(thread), ns: unescapePart(ns) };
};

/** Checkpoint ids that do not fit a label are stored as `x.` + hex (stream-ids.ts). */
export const checkpointIdOf = (label: string): string =>
  label.startsWith('x.')
    ? new TextDecoder().decode(
        new Uint8Array((label.slice(2).match(/../g) ?? []).map((b) => Number.parseInt(b, 16))),
      )
    : label;

// ——— state ops (the server's set / delete, docs/ledger-format.md) ———

const unescapeToken = (t: string) => t.replace(/~1/g, '/').replace(/~0/g, '~');

const UNSAFE_TOKENS = new Set(['__proto__', 'constructor', 'prototype']);

/** Applies a delta's ops to `state` in place (set: add or replace; delete; `-` appends). */
export const applyOps = (state: Record<string, unknown>, ops: unknown[]): void => {
  for (const raw of ops) {
    const op = raw as { op?: string; path?: string; value?: unknown; ref?: unknown };
    if (typeof op.path !== 'string' || !op.path.startsWith('/')) continue;
    const tokens = op.path.slice(1).split('/').map(unescapeToken);
    const last = tokens.pop() as string;
    // A hostile delta must not reach Object.prototype: only own properties are followed and
    // the names that lead to a prototype are refused.
    if ([...tokens, last].some((t) => UNSAFE_TOKENS.has(t))) continue;
    let parent: unknown = state;
    for (const t of tokens) {
      parent =
        parent !== null && typeof parent === 'object' && Object.hasOwn(parent, t)
          ? (parent as Record<string, unknown>)[t]
          : undefined;
    }
    if (parent === null || typeof parent !== 'object') continue;
    const value = op.ref !== undefined ? { r: op.ref } : structuredClone(op.value);
    if (Array.isArray(parent)) {
      const i = last === '-' ? parent.length : Number(last);
      if (op.op === 'delete') parent.splice(i, 1);
      else if (i < parent.length) parent[i] = value;
      else parent.push(value);
    } else if (op.op === 'delete') delete (parent as Record<string, unknown>)[last];
    else (parent as Record<string, unknown>)[last] = value;
  }
};

interface PageTuple extends Omit<Tuple, 'state'> {
  state?: Record<string, unknown>;
  deltas?: Array<{ seq: number; ops: unknown[] }>;
}

/**
 * A GET …/tuples page (newest first) with every state made whole: the oldest comes whole,
 * each newer one as the ops from the one after it in the page, unless it is whole too.
 */
export const wholeStates = (page: PageTuple[]): Tuple[] => {
  const out: Tuple[] = [];
  let below: Record<string, unknown> | undefined;
  for (let i = page.length - 1; i >= 0; i--) {
    const t = page[i] as PageTuple;
    let state: Record<string, unknown>;
    if (t.state) state = structuredClone(t.state);
    else {
      state = structuredClone(below ?? {});
      for (const d of t.deltas ?? []) applyOps(state, d.ops);
    }
    below = state;
    out.unshift({ checkpoint: t.checkpoint, seq: t.seq, writes: t.writes, state });
  }
  return out;
};

// ——— channel values ———

/** A channel value as JSON: `{j}` as it is; binary and by-ref values named, not decoded. */
export const decodeValue = (encoded: unknown): unknown => {
  const e = (encoded ?? {}) as { j?: unknown; t?: string; b?: string; r?: { size?: number } };
  if ('j' in e) return e.j;
  if (typeof e.t === 'string')
    return { $binary: e.t, bytes: Math.floor(((e.b ?? '').length * 3) / 4) };
  if (e.r) return { $byRef: true, bytes: e.r.size ?? 0 };
  return encoded;
};

/** The graph's channels at a checkpoint, decoded to JSON (internal `branch:to:` left out). */
export const channelsOf = (state: Record<string, unknown>): Record<string, unknown> => {
  const out: Record<string, unknown> = {};
  const values = (state.values ?? {}) as Record<string, unknown>;
  for (const k of Object.keys(values).sort()) {
    if (k.startsWith('branch:to:')) continue;
    out[k] = decodeValue(values[k]);
  }
  return out;
};

// ——— steps ———

interface Ckpt {
  id?: string;
  ts?: string;
  channel_versions?: Record<string, unknown>;
  versions_seen?: Record<string, Record<string, unknown>>;
}

const ckptOf = (t: Tuple | undefined): Ckpt => (t?.state.ckpt ?? {}) as Ckpt;

const newer = (a: unknown, b: unknown): boolean => {
  if (b === undefined) return a !== undefined;
  if (typeof a === 'number' && typeof b === 'number') return a > b;
  return String(a) > String(b);
};

/** The node a task path names: `~__pregel_pull, agent` → agent. */
export const nodeOfTaskPath = (taskPath: string): string => {
  const parts = taskPath.split(',').map((p) => p.trim());
  return parts[1] ?? parts[0] ?? taskPath;
};

export interface Interrupt {
  node: string;
  taskId: string;
  id?: string;
  value: unknown;
}

export interface Step {
  label: string;
  checkpointId: string;
  parentLabel?: string;
  seq: number;
  step: number | undefined;
  source: string | undefined;
  ts: string | undefined;
  /** The nodes that ran to make this checkpoint. */
  ran: string[];
  /** What they wrote, by channel. */
  writes: Array<{ node: string; channel: string; value: unknown }>;
  /** The nodes to run next from this checkpoint. */
  next: string[];
  interrupts: Interrupt[];
  errors: Array<{ node: string; value: unknown }>;
  /** More than one checkpoint continues this one (time travel in the thread). */
  forked: boolean;
  channels: Record<string, unknown>;
  /** Bytes of the stored state (its JSON): the state-size chart. */
  size: number;
}

const metaOf = (t: Tuple) =>
  (t.checkpoint.meta ?? {}) as { step?: unknown; source?: unknown; writes?: unknown };

/** The thread's steps, oldest first, from its tuples (any order). */
export const stepsOf = (tuples: Tuple[]): Step[] => {
  const sorted = [...tuples].sort((a, b) => a.seq - b.seq);
  const byLabel = new Map(sorted.map((t) => [t.checkpoint.label, t]));
  const children = new Map<string, number>();
  for (const t of sorted) {
    const p = t.checkpoint.parentLabel;
    if (p) children.set(p, (children.get(p) ?? 0) + 1);
  }
  return sorted.map((t) => {
    const ck = ckptOf(t);
    const parent = t.checkpoint.parentLabel ? byLabel.get(t.checkpoint.parentLabel) : undefined;
    const seenBefore = ckptOf(parent).versions_seen ?? {};
    const seen = ck.versions_seen ?? {};
    // `__interrupt__` is LangGraph's record of the interrupts seen, not a node.
    const ran = Object.keys(seen).filter(
      (node) =>
        node !== '__interrupt__' && JSON.stringify(seen[node]) !== JSON.stringify(seenBefore[node]),
    );
    const writes = (parent?.writes ?? [])
      .filter((w) => !w.channel.startsWith('__') && !w.channel.startsWith('branch:to:'))
      .filter((w) => ran.length === 0 || ran.includes(nodeOfTaskPath(w.taskPath)))
      .map((w) => ({
        node: nodeOfTaskPath(w.taskPath),
        channel: w.channel,
        value: w.ref ? { $byRef: true, bytes: w.ref.size } : decodeValue(w.value),
      }));
    const versions = ck.channel_versions ?? {};
    const values = (t.state.values ?? {}) as Record<string, unknown>;
    const next = Object.keys(versions)
      .map((ch) =>
        ch.startsWith('branch:to:') ? ch.slice('branch:to:'.length) : ch === '__start__' ? ch : '',
      )
      .filter((node) => {
        if (node === '') return false;
        const ch = node === '__start__' ? node : `branch:to:${node}`;
        // A trigger the node consumed is emptied (its value gone from the checkpoint) and
        // versioned on: only one that holds a value and is newer than the node saw triggers.
        return ch in values && newer(versions[ch], seen[node]?.[ch]);
      });
    const own = (w: StoredWrite) => ({
      node: nodeOfTaskPath(w.taskPath),
      value: w.ref ? { $byRef: true } : decodeValue(w.value),
    });
    const interrupts = t.writes
      .filter((w) => w.channel === '__interrupt__')
      .flatMap((w) => {
        const { node, value } = own(w);
        const list = Array.isArray(value) ? value : [value];
        return list.map((i) => {
          const it = (i ?? {}) as { id?: string; value?: unknown };
          return { node, taskId: w.taskId, id: it.id, value: 'value' in it ? it.value : i };
        });
      });
    const errors = t.writes.filter((w) => w.channel === '__error__').map(own);
    const meta = metaOf(t);
    return {
      label: t.checkpoint.label,
      checkpointId: checkpointIdOf(t.checkpoint.label),
      parentLabel: t.checkpoint.parentLabel,
      seq: t.seq,
      step: typeof meta.step === 'number' ? meta.step : undefined,
      source: typeof meta.source === 'string' ? meta.source : undefined,
      ts: ck.ts,
      ran: ran.length > 0 ? ran : meta.source === 'input' ? ['__input__'] : [],
      writes,
      next,
      interrupts,
      errors,
      forked: (children.get(t.checkpoint.label) ?? 0) > 1,
      channels: channelsOf(t.state),
      size: new TextEncoder().encode(JSON.stringify(t.state)).length,
    };
  });
};

/** The chain of steps from the first to `head` along parent labels (the path it took). */
export const pathTo = (steps: Step[], head: Step | undefined): Step[] => {
  const byLabel = new Map(steps.map((s) => [s.label, s]));
  const out: Step[] = [];
  for (let s = head; s; s = s.parentLabel ? byLabel.get(s.parentLabel) : undefined) {
    out.unshift(s);
    if (out.length > steps.length) break;
  }
  return out;
};

/** A run's status from its newest checkpoint. */
export const statusOf = (head: Step | undefined, resumeAsked = false): RunStatus => {
  if (!head) return 'running';
  if (head.errors.length > 0) return 'failed';
  if (head.interrupts.length > 0 && !resumeAsked) return 'interrupted';
  return head.next.length === 0 ? 'done' : 'running';
};

// ——— messages ———

export interface ChatMessage {
  role: string;
  text: string;
  toolCalls: Array<{ id?: string; name: string; args: string }>;
  toolCallId?: string;
  name?: string;
}

const textOf = (content: unknown): string => {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((p) => {
        const part = (p ?? {}) as { text?: unknown; type?: unknown; refusal?: unknown };
        if (typeof part.text === 'string') return part.text;
        if (typeof part.refusal === 'string') return part.refusal;
        return `[${String(part.type ?? 'part')}]`;
      })
      .join('');
  if (content && typeof content === 'object' && 'text' in content)
    return String((content as { text: unknown }).text);
  return content === undefined ? '' : JSON.stringify(content);
};

const LC_ROLES: Record<string, string> = {
  HumanMessage: 'user',
  HumanMessageChunk: 'user',
  AIMessage: 'assistant',
  AIMessageChunk: 'assistant',
  ToolMessage: 'tool',
  ToolMessageChunk: 'tool',
  SystemMessage: 'system',
  FunctionMessage: 'tool',
  ChatMessage: 'chat',
};
const TYPE_ROLES: Record<string, string> = {
  human: 'user',
  ai: 'assistant',
  tool: 'tool',
  system: 'system',
};

/** A LangChain message (serialized `{lc, type: 'constructor', id, kwargs}` or plain). */
export const langchainMessage = (m: unknown): ChatMessage => {
  const msg = (m ?? {}) as { lc?: unknown; id?: unknown; kwargs?: unknown; type?: unknown };
  const serialized = msg.lc !== undefined && Array.isArray(msg.id);
  const body = (serialized ? msg.kwargs : msg) as {
    content?: unknown;
    tool_calls?: unknown;
    tool_call_id?: unknown;
    name?: unknown;
    role?: unknown;
    type?: unknown;
  };
  const cls = serialized ? String((msg.id as unknown[]).at(-1)) : '';
  const role =
    LC_ROLES[cls] ??
    (typeof body.role === 'string' ? body.role : TYPE_ROLES[String(body.type)]) ??
    'message';
  const calls = Array.isArray(body.tool_calls) ? body.tool_calls : [];
  return {
    role,
    text: textOf(body.content),
    toolCalls: calls.map((c) => {
      const call = (c ?? {}) as { id?: unknown; name?: unknown; args?: unknown };
      return {
        id: typeof call.id === 'string' ? call.id : undefined,
        name: String(call.name ?? '?'),
        args: JSON.stringify(call.args ?? {}),
      };
    }),
    toolCallId: typeof body.tool_call_id === 'string' ? body.tool_call_id : undefined,
    name: typeof body.name === 'string' ? body.name : undefined,
  };
};

/** An OpenAI Agents SDK input item. */
export const agentsItem = (item: unknown): ChatMessage => {
  const it = (item ?? {}) as Record<string, unknown>;
  if (it.type === 'function_call' || it.type === 'hosted_tool_call' || it.type === 'computer_call')
    return {
      role: 'assistant',
      text: '',
      toolCalls: [
        {
          id: typeof it.callId === 'string' ? it.callId : undefined,
          name: String(it.name ?? it.type),
          args:
            typeof it.arguments === 'string' ? it.arguments : JSON.stringify(it.arguments ?? {}),
        },
      ],
    };
  if (it.type === 'function_call_result' || it.type === 'computer_call_result')
    return {
      role: 'tool',
      text: textOf(it.output),
      toolCalls: [],
      toolCallId: typeof it.callId === 'string' ? it.callId : undefined,
      name: typeof it.name === 'string' ? it.name : undefined,
    };
  if (it.type === 'reasoning')
    return { role: 'reasoning', text: textOf(it.content), toolCalls: [] };
  return {
    role: typeof it.role === 'string' ? it.role : String(it.type ?? 'item'),
    text: textOf(it.content),
    toolCalls: [],
  };
};

/** The messages channel of a LangGraph checkpoint as a transcript. */
export const transcriptOf = (channels: Record<string, unknown>): ChatMessage[] => {
  const messages = channels.messages;
  return Array.isArray(messages) ? messages.map(langchainMessage) : [];
};

/** An OpenAI Agents session's status from its items: a tool call with no result is running. */
export const sessionStatus = (items: unknown[]): RunStatus => {
  const calls = new Set<string>();
  for (const raw of items) {
    const it = (raw ?? {}) as { type?: unknown; callId?: unknown };
    if (it.type === 'function_call' && typeof it.callId === 'string') calls.add(it.callId);
    if (it.type === 'function_call_result' && typeof it.callId === 'string')
      calls.delete(it.callId);
  }
  if (calls.size > 0) return 'running';
  const last = agentsItem(items.at(-1));
  return last.role === 'assistant' ? 'done' : 'running';
};

/** Whether a state is an OpenAI Agents session's: `{items: [...], life}`. */
export const isSessionState = (state: unknown): boolean => {
  const s = (state ?? {}) as Record<string, unknown>;
  return Array.isArray(s.items) && typeof s.life === 'number';
};

// ——— resume requests (packages/langgraph/src/resume-requests.ts writes and reads them) ———

/** The event type of a resume value recorded for the thread's worker. */
export const RESUME_EVENT = 'lg.resume';
/** The event type a thread copy starts with (packages/langgraph/src/copy-thread.ts). */
export const COPY_EVENT = 'lg.copy';

const isLangchainMessage = (v: unknown): boolean => {
  const m = (v ?? {}) as { lc?: unknown; id?: unknown };
  return m.lc !== undefined && Array.isArray(m.id) && String(m.id.at(-1)).endsWith('Message');
};

/**
 * A channel value in one line: LangChain messages as `assistant: text [tool f]`, anything
 * else as its JSON; cut to `max` characters.
 */
export const valueSummary = (value: unknown, max = 120): string => {
  const list = Array.isArray(value) ? value : [value];
  const text =
    list.length > 0 && list.every(isLangchainMessage)
      ? list
          .map((m) => {
            const c = langchainMessage(m);
            const tools = c.toolCalls.map((t) => ` [tool ${t.name}]`).join('');
            return `${c.role}: ${c.text}${tools}`;
          })
          .join(' · ')
      : (JSON.stringify(value) ?? 'undefined');
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
};

// ——— the graph's shape (HefestoSaver's opt-in: packages/langgraph/src/graph-shape.ts) ———

/** A graph's nodes and edges, as `saver.recordGraph(graph)` keeps them at the state's `/graph`. */
export interface GraphShape {
  nodes: string[];
  edges: Array<{ source: string; target: string; conditional: boolean }>;
}

/** What a shape may hold at most to be drawn (the saver's own limits). */
const MAX_SHAPE_NODES = 256;
const MAX_SHAPE_EDGES = 1024;

/**
 * The shape a checkpoint's (verified) state records, when it is one the saver wrote (`v: 1`,
 * within its limits, edges between its nodes); anything else is no shape (the path alone).
 */
export const graphShapeOf = (
  state: Record<string, unknown> | undefined,
): GraphShape | undefined => {
  const g = state?.graph as { v?: unknown; nodes?: unknown; edges?: unknown } | undefined;
  if (g?.v !== 1 || !Array.isArray(g.nodes) || !Array.isArray(g.edges)) return undefined;
  if (g.nodes.length > MAX_SHAPE_NODES || g.edges.length > MAX_SHAPE_EDGES) return undefined;
  if (!g.nodes.every((n): n is string => typeof n === 'string')) return undefined;
  const nodes = [...new Set(g.nodes)];
  const known = new Set(nodes);
  const edges: GraphShape['edges'] = [];
  for (const e of g.edges as Array<{ source?: unknown; target?: unknown; conditional?: unknown }>) {
    if (typeof e?.source !== 'string' || typeof e.target !== 'string') return undefined;
    if (!known.has(e.source) || !known.has(e.target)) return undefined;
    edges.push({ source: e.source, target: e.target, conditional: e.conditional === true });
  }
  return { nodes, edges };
};

/**
 * Where a run went through its graph: the nodes that ran and the edges it took between the
 * nodes of one step and those of the next (the path's steps in order, `__start__` first and
 * `__end__` last when the run is done), and the nodes to run next.
 */
export const visitedIn = (
  shape: GraphShape,
  path: Step[],
  next: string[],
  done: boolean,
): { nodes: Set<string>; edges: Set<string>; next: Set<string> } => {
  const known = new Set(shape.nodes);
  const layers: string[][] = [];
  if (known.has('__start__')) layers.push(['__start__']);
  for (const s of path) {
    const ran = s.ran.filter((n) => known.has(n) && n !== '__start__');
    if (ran.length > 0) layers.push(ran);
  }
  if (done && known.has('__end__')) layers.push(['__end__']);
  const has = new Set(shape.edges.map((e) => edgeKey(e.source, e.target)));
  const edges = new Set<string>();
  for (let i = 1; i < layers.length; i++)
    for (const a of layers[i - 1] ?? [])
      for (const b of layers[i] ?? []) if (has.has(edgeKey(a, b))) edges.add(edgeKey(a, b));
  return {
    nodes: new Set(layers.flat()),
    edges,
    next: new Set(next.filter((n) => known.has(n))),
  };
};

/** The key of an edge in `visitedIn`'s set. */
export const edgeKey = (source: string, target: string): string => JSON.stringify([source, target]);
