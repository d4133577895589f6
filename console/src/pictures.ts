import { showBidiControls } from './bidi.js';

/**
 * Pictures in plain SVG, built node by node (createElementNS, text as text: no markup from
 * strings, so Trusted Types need no policy) and styled by classes from the stylesheet (the
 * CSP allows no style attributes): a run's path through its nodes, and line charts.
 */

const NS = 'http://www.w3.org/2000/svg';

type Attrs = Record<string, string | number | undefined>;

export const svg = <K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Array<SVGElement | string>
): SVGElementTagNameMap[K] => {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) node.setAttribute(k, String(v));
  for (const c of children)
    node.append(typeof c === 'string' ? document.createTextNode(showBidiControls(c)) : c);
  return node;
};

/** The `<defs>` of an arrow-head marker `id`, which the pictures' edges end with. */
export const arrowDefs = (id: string): SVGElement =>
  svg(
    'defs',
    {},
    svg(
      'marker',
      {
        id,
        viewBox: '0 0 10 10',
        refX: 9,
        refY: 5,
        markerWidth: 7,
        markerHeight: 7,
        orient: 'auto-start-reverse',
      },
      svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrow-head' }),
    ),
  );

export interface PathNode {
  /** What the box says: the node that ran. */
  name: string;
  /** Under it: the step and seq. */
  sub: string;
  interrupted?: boolean;
  failed?: boolean;
  /** A checkpoint more than one branch continues. */
  forked?: boolean;
  /** The one shown in the steps' detail. */
  current?: boolean;
  /** A tooltip. */
  title?: string;
}

const BOX_W = 132;
const BOX_H = 46;
const GAP = 26;
const PER_ROW = 6;

/**
 * The path a run took: one box per step in order, left to right and wrapping, an arrow
 * between each two; interrupts, failures and forks marked by a class and a sign in the box.
 * Accessible as a list: a title and a description saying the path in words.
 */
export const pathPicture = (
  nodes: PathNode[],
  label: string,
  forkedFrom?: string,
): SVGSVGElement => {
  const rows = Math.max(1, Math.ceil(nodes.length / PER_ROW));
  const cols = Math.min(PER_ROW, Math.max(1, nodes.length));
  const top = forkedFrom ? 22 : 4;
  const width = cols * (BOX_W + GAP) + 8;
  const height = top + rows * (BOX_H + GAP) + 4;
  const words = nodes.map(
    (n) =>
      `${n.name}${n.interrupted ? ' (interrupted)' : ''}${n.failed ? ' (failed)' : ''}${n.forked ? ' (forked)' : ''}`,
  );
  const root = svg(
    'svg',
    {
      class: 'path-picture',
      viewBox: `0 0 ${width} ${height}`,
      width,
      height,
      role: 'img',
      'aria-label': `${label}: ${words.join(' → ') || 'no steps'}`,
    },
    svg('title', {}, label),
    arrowDefs('arrow'),
  );
  if (forkedFrom)
    root.append(svg('text', { x: 4, y: 14, class: 'fork-origin' }, `↱ forked from ${forkedFrom}`));
  nodes.forEach((n, i) => {
    const row = Math.floor(i / PER_ROW);
    const col = i % PER_ROW;
    const x = 4 + col * (BOX_W + GAP);
    const y = top + row * (BOX_H + GAP);
    const cls = [
      'step-box',
      n.interrupted && 'interrupted',
      n.failed && 'failed',
      n.forked && 'forked',
      n.current && 'current',
    ]
      .filter(Boolean)
      .join(' ');
    const mark = n.interrupted ? '‖ ' : n.failed ? '✖ ' : n.forked ? '↱ ' : '';
    const g = svg(
      'g',
      { class: cls, 'data-node': n.name },
      svg('rect', { x, y, width: BOX_W, height: BOX_H, rx: 6 }),
      svg('text', { x: x + 8, y: y + 19, class: 'name' }, `${mark}${n.name}`.slice(0, 20)),
      svg('text', { x: x + 8, y: y + 36, class: 'sub' }, n.sub.slice(0, 22)),
    );
    if (n.title) g.prepend(svg('title', {}, n.title));
    root.append(g);
    if (i === nodes.length - 1) return;
    if (col < PER_ROW - 1) {
      root.append(
        svg('line', {
          x1: x + BOX_W,
          y1: y + BOX_H / 2,
          x2: x + BOX_W + GAP - 2,
          y2: y + BOX_H / 2,
          class: 'edge',
          'marker-end': 'url(#arrow)',
        }),
      );
    } else {
      // To the start of the next row.
      const ny = y + BOX_H + GAP;
      root.append(
        svg('path', {
          d: `M ${x + BOX_W / 2} ${y + BOX_H} L ${x + BOX_W / 2} ${y + BOX_H + GAP / 2} L ${4 + BOX_W / 2} ${y + BOX_H + GAP / 2} L ${4 + BOX_W / 2} ${ny - 2}`,
          class: 'edge',
          fill: 'none',
          'marker-end': 'url(#arrow)',
        }),
      );
    }
  });
  return root;
};

export interface Series {
  /** x (a seq) and y. */
  points: Array<[number, number]>;
  title: string;
  /** How a y value reads (bytes, per second). */
  unit: (y: number) => string;
}

const W = 560;
const H = 180;
const PAD = { l: 64, r: 12, t: 24, b: 30 };

/** A line chart of one series over seq, with its axes' ends labelled and a dot per point. */
export const lineChart = (s: Series, className: string): SVGSVGElement => {
  const xs = s.points.map((p) => p[0]);
  const ys = s.points.map((p) => p[1]);
  const x0 = Math.min(...xs, 0);
  const x1 = Math.max(...xs, x0 + 1);
  const y1 = Math.max(...ys, 1);
  const px = (x: number) => PAD.l + ((x - x0) / (x1 - x0)) * (W - PAD.l - PAD.r);
  const py = (y: number) => H - PAD.b - (y / y1) * (H - PAD.t - PAD.b);
  const last = s.points.at(-1);
  const root = svg(
    'svg',
    {
      class: `chart ${className}`,
      viewBox: `0 0 ${W} ${H}`,
      role: 'img',
      'aria-label': `${s.title}: ${s.points.length} points, max ${s.unit(y1)}${last ? `, last ${s.unit(last[1])} at seq ${last[0]}` : ''}`,
    },
    svg('title', {}, s.title),
    svg('text', { x: PAD.l, y: 14, class: 'chart-title' }, s.title),
    svg('line', { x1: PAD.l, y1: H - PAD.b, x2: W - PAD.r, y2: H - PAD.b, class: 'axis' }),
    svg('line', { x1: PAD.l, y1: PAD.t, x2: PAD.l, y2: H - PAD.b, class: 'axis' }),
    svg('text', { x: PAD.l - 6, y: PAD.t + 4, class: 'tick end' }, s.unit(y1)),
    svg('text', { x: PAD.l - 6, y: H - PAD.b, class: 'tick end' }, s.unit(0)),
    svg('text', { x: PAD.l, y: H - 10, class: 'tick' }, `seq ${x0}`),
    svg('text', { x: W - PAD.r, y: H - 10, class: 'tick end' }, `seq ${x1}`),
  );
  if (s.points.length > 0) {
    root.append(
      svg('polyline', {
        class: 'series',
        fill: 'none',
        points: s.points.map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(' '),
      }),
    );
    for (const [x, y] of s.points.slice(-400))
      root.append(
        svg(
          'circle',
          { class: 'dot', cx: px(x).toFixed(1), cy: py(y).toFixed(1), r: 2.5 },
          svg('title', {}, `seq ${x}: ${s.unit(y)}`),
        ),
      );
  }
  return root;
};

export const bytes = (n: number): string =>
  n >= 1024 * 1024
    ? `${(n / 1024 / 1024).toFixed(1)} MB`
    : n >= 1024
      ? `${(n / 1024).toFixed(1)} KB`
      : `${Math.round(n)} B`;

export const perSecond = (n: number): string => `${n >= 10 ? Math.round(n) : n.toFixed(1)}/s`;

/**
 * Time between events over seq: at each event, the milliseconds since the one before it (the
 * run's latency per step as the ledger saw it: a model call, a tool, a human's answer).
 */
export const gapsOf = (events: Array<{ seq: number; ts: number }>): Array<[number, number]> =>
  events
    .slice(1)
    .map(
      (e, i) => [e.seq, Math.max(0, e.ts - (events[i] as { ts: number }).ts)] as [number, number],
    );

/** Milliseconds, or seconds past 10 s. */
export const millis = (n: number): string =>
  n >= 10_000 ? `${(n / 1000).toFixed(1)} s` : `${Math.round(n)} ms`;

/**
 * Events per second over seq: at each event, the rate over the window of up to `window`
 * events before it (by their timestamps; a window within one millisecond counts as 1 ms).
 */
export const eventRate = (
  events: Array<{ seq: number; ts: number }>,
  window = 10,
): Array<[number, number]> =>
  events.slice(1).map((e, i) => {
    const from = events[Math.max(0, i + 1 - window)] as { ts: number };
    const n = Math.min(window, i + 1);
    return [e.seq, n / (Math.max(1, e.ts - from.ts) / 1000)];
  });
