/**
 * The graph's shape, recorded on a thread when the saver opts in (`saver.recordGraph(graph)`):
 * its nodes and edges as the compiled graph's `getGraph()` draws them, so the console draws the
 * whole graph with the path a run took through it, where LangGraph's checkpoints alone only
 * say which nodes ran. The shape is kept in the thread's state at `/graph` (a field the
 * state digest, and so the chain, binds: served verified like the rest of the state), written
 * by the first put and again only when it changes (a put writes what changed).
 *
 *   {"v": 1, "nodes": ["__start__", "agent", …], "edges": [{"source": "agent", "target": "tools", "conditional": true}, …]}
 */

/**
 * A graph's nodes and edges as the saver records them.
 *
 * @example
 * ```ts
 * const shape: GraphShape = { v: 1, nodes: ['__start__', 'agent', '__end__'], edges: [{ source: '__start__', target: 'agent' }] };
 * ```
 */
export interface GraphShape {
  v: 1;
  nodes: string[];
  edges: Array<{ source: string; target: string; conditional?: true }>;
}

/**
 * What `graphShapeOf` reads: a compiled graph (`StateGraph.compile()`), or anything with a
 * `getGraph()` that answers nodes by id and edges.
 *
 * @example
 * ```ts
 * const drawable: DrawableGraph = builder.compile({ checkpointer: saver });
 * ```
 */
export interface DrawableGraph {
  getGraph(): {
    nodes: Record<string, { id: string }>;
    edges: Array<{ source: string; target: string; conditional?: boolean }>;
  };
}

/**
 * The most nodes and edges a recorded shape holds (a larger graph is refused when it opts
 * in, so every put stays small).
 *
 * @example
 * ```ts
 * if (nodes.length > MAX_GRAPH_NODES) console.warn('too large to record');
 * ```
 */
export const MAX_GRAPH_NODES = 256;
export const MAX_GRAPH_EDGES = 1024;
/** The longest node id a shape holds (UTF-16 code units). */
const MAX_NODE_ID = 256;

/**
 * The shape of a compiled graph: its nodes (getGraph's order, `__start__` first) and its
 * edges, each once.
 *
 * @example
 * ```ts
 * const shape = graphShapeOf(builder.compile());
 * ```
 */
export const graphShapeOf = (graph: DrawableGraph): GraphShape => {
  const drawn = graph.getGraph();
  const nodes = Object.values(drawn.nodes).map((n) => n.id);
  const seen = new Set<string>();
  const edges: GraphShape['edges'] = [];
  for (const e of drawn.edges) {
    const key = JSON.stringify([e.source, e.target]);
    if (seen.has(key)) continue;
    seen.add(key);
    edges.push({
      source: e.source,
      target: e.target,
      ...(e.conditional ? { conditional: true } : {}),
    });
  }
  if (nodes.length > MAX_GRAPH_NODES || edges.length > MAX_GRAPH_EDGES)
    throw new RangeError(
      `a graph of ${nodes.length} nodes and ${edges.length} edges is too large to record (at most ${MAX_GRAPH_NODES} and ${MAX_GRAPH_EDGES})`,
    );
  if (nodes.some((n) => n.length > MAX_NODE_ID))
    throw new RangeError(`a node id is longer than ${MAX_NODE_ID} characters`);
  return { v: 1, nodes, edges };
};
