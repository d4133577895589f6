import { arrowDefs, svg } from './pictures.js';
import { edgeKey, type GraphShape } from './runs.js';

/**
 * The whole graph of a run whose saver recorded its shape (`saver.recordGraph`), with the path
 * the run took through it: plain SVG as pictures.ts (no markup from strings, classes only).
 * Nodes stand in columns by their distance from `__start__` (`__end__` last), in the order
 * the graph lists them; an edge to a later column is a straight arrow, one back (a loop) a
 * curve under the boxes; conditional edges are dashed. Nodes and edges the run took are
 * `taken`, the nodes to run next `next` (`interrupted` when it waits on an interrupt); the
 * rest are drawn faint.
 */

const BOX_W = 120;
const BOX_H = 34;
const COL_GAP = 44;
const ROW_GAP = 18;

const columnsOf = (shape: GraphShape): Map<string, number> => {
  const out = new Map<string, number>();
  const next = new Map<string, string[]>();
  for (const e of shape.edges) next.set(e.source, [...(next.get(e.source) ?? []), e.target]);
  const queue = shape.nodes.includes('__start__') ? ['__start__'] : shape.nodes.slice(0, 1);
  for (const n of queue) out.set(n, 0);
  for (let i = 0; i < queue.length; i++) {
    const n = queue[i] as string;
    for (const t of next.get(n) ?? []) {
      if (out.has(t) || t === '__end__') continue;
      out.set(t, (out.get(n) ?? 0) + 1);
      queue.push(t);
    }
  }
  let last = Math.max(0, ...out.values());
  for (const n of shape.nodes) if (!out.has(n) && n !== '__end__') out.set(n, ++last);
  if (shape.nodes.includes('__end__')) out.set('__end__', last + 1);
  return out;
};

export interface GraphVisit {
  nodes: Set<string>;
  edges: Set<string>;
  next: Set<string>;
  interrupted: boolean;
}

export const graphPicture = (
  shape: GraphShape,
  visit: GraphVisit,
  label: string,
  forkedFrom?: string,
): SVGSVGElement => {
  const columns = columnsOf(shape);
  const rows = new Map<string, number>();
  const perColumn = new Map<number, number>();
  for (const n of shape.nodes) {
    const c = columns.get(n) ?? 0;
    rows.set(n, perColumn.get(c) ?? 0);
    perColumn.set(c, (perColumn.get(c) ?? 0) + 1);
  }
  const top = forkedFrom ? 22 : 4;
  const cols = Math.max(1, ...[...perColumn.keys()].map((c) => c + 1));
  const tallest = Math.max(1, ...perColumn.values());
  const width = cols * (BOX_W + COL_GAP) - COL_GAP + 8;
  const loops = shape.edges.some(
    (e) => (columns.get(e.target) ?? 0) <= (columns.get(e.source) ?? 0),
  );
  const height = top + tallest * (BOX_H + ROW_GAP) + (loops ? 40 : 0);
  const at = (n: string) => ({
    x: 4 + (columns.get(n) ?? 0) * (BOX_W + COL_GAP),
    y: top + (rows.get(n) ?? 0) * (BOX_H + ROW_GAP),
  });
  const taken = shape.nodes.filter((n) => visit.nodes.has(n));
  const next = shape.nodes.filter((n) => visit.next.has(n));
  const root = svg(
    'svg',
    {
      class: 'path-picture graph-picture',
      viewBox: `0 0 ${width} ${height}`,
      width,
      height,
      role: 'img',
      'aria-label':
        `${label}: ${shape.nodes.length} nodes; visited ${taken.join(', ') || 'none'}` +
        `${next.length > 0 ? `; next ${next.join(', ')}${visit.interrupted ? ' (interrupted)' : ''}` : ''}`,
    },
    svg('title', {}, label),
    arrowDefs('graph-arrow'),
  );
  if (forkedFrom)
    root.append(svg('text', { x: 4, y: 14, class: 'fork-origin' }, `↱ forked from ${forkedFrom}`));
  for (const e of shape.edges) {
    const a = at(e.source);
    const b = at(e.target);
    const forward = (columns.get(e.target) ?? 0) > (columns.get(e.source) ?? 0);
    const d = forward
      ? `M ${a.x + BOX_W} ${a.y + BOX_H / 2} L ${b.x - 2} ${b.y + BOX_H / 2}`
      : `M ${a.x + BOX_W / 2} ${a.y + BOX_H} C ${a.x + BOX_W / 2} ${a.y + BOX_H + 34} ${b.x + BOX_W / 2} ${b.y + BOX_H + 34} ${b.x + BOX_W / 2} ${b.y + BOX_H + 2}`;
    const cls = [
      'edge',
      e.conditional && 'conditional',
      visit.edges.has(edgeKey(e.source, e.target)) && 'taken',
    ]
      .filter(Boolean)
      .join(' ');
    root.append(
      svg(
        'path',
        {
          d,
          class: cls,
          fill: 'none',
          'marker-end': 'url(#graph-arrow)',
          'data-edge': `${e.source}→${e.target}`,
        },
        svg('title', {}, `${e.source} → ${e.target}${e.conditional ? ' (conditional)' : ''}`),
      ),
    );
  }
  for (const n of shape.nodes) {
    const { x, y } = at(n);
    const isNext = visit.next.has(n);
    const cls = [
      'graph-node',
      visit.nodes.has(n) ? 'taken' : 'untaken',
      isNext && 'next',
      isNext && visit.interrupted && 'interrupted',
    ]
      .filter(Boolean)
      .join(' ');
    const mark = isNext ? (visit.interrupted ? '‖ ' : '▸ ') : '';
    root.append(
      svg(
        'g',
        { class: cls, 'data-node': n },
        svg('title', {}, `${n}${visit.nodes.has(n) ? ': ran' : ''}${isNext ? ': next' : ''}`),
        svg('rect', { x, y, width: BOX_W, height: BOX_H, rx: 6 }),
        svg('text', { x: x + 8, y: y + 22, class: 'name' }, `${mark}${n}`.slice(0, 18)),
      ),
    );
  }
  return root;
};
