/**
 * A progress report on stderr for long operations, without a dependency: on a terminal one
 * line redrawn in place (bar, percentage, rate, time left); otherwise (a pipe, a log file, CI)
 * plain lines, so logs stay short: one per 10 % step but at most one a second, one at least
 * every `lineEveryMs`, and a last one (a task shorter than a second prints only that).
 */

export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

export interface ProgressOptions {
  /** What is progressing, e.g. `export run-1`. */
  label: string;
  /** How many units make 100 %; may be updated later. */
  total: number;
  stream: ProgressStream;
  /** The unit in rates and counts. Default `events`. */
  unit?: string;
  now?: () => number;
  /** Terminal: least time between redraws. Default 100 ms. */
  redrawMs?: number;
  /** Plain lines: most time between lines. Default 10 s. */
  lineEveryMs?: number;
}

const BAR_WIDTH = 30;

/** `[#########.........]`, `width` cells wide inside the brackets. */
export const bar = (fraction: number, width: number): string => {
  const filled = Math.round(Math.min(1, Math.max(0, fraction)) * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
};

/** 950, 12.3k, 4.1M */
export const compact = (n: number): string => {
  if (n < 1_000) return String(Math.round(n));
  if (n < 1_000_000) return `${(n / 1_000).toFixed(1)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
};

const duration = (ms: number): string => {
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
};

export class Progress {
  readonly #o: Required<ProgressOptions>;
  readonly #start: number;
  #done = 0;
  #lastDraw = Number.NEGATIVE_INFINITY;
  #lastDecile = 0;
  #finished = false;

  constructor(options: ProgressOptions) {
    this.#o = {
      unit: 'events',
      now: Date.now,
      redrawMs: 100,
      lineEveryMs: 10_000,
      ...options,
    };
    this.#start = this.#o.now();
    if (!this.#tty) this.#lastDraw = this.#start;
  }

  get #tty(): boolean {
    return this.#o.stream.isTTY === true;
  }

  /** Records that `done` units of `total` (default: the total so far) are done. */
  update(done: number, total = this.#o.total): void {
    this.#done = done;
    this.#o.total = total;
    const now = this.#o.now();
    if (this.#tty) {
      if (now - this.#lastDraw >= this.#o.redrawMs) this.#draw(now);
      return;
    }
    const decile = total > 0 ? Math.floor((10 * done) / total) : 0;
    const since = now - this.#lastDraw;
    if (
      done < total &&
      ((decile > this.#lastDecile && since >= 1000) || since >= this.#o.lineEveryMs)
    ) {
      this.#lastDecile = decile;
      this.#lastDraw = now;
      this.#o.stream.write(`${this.#plain()}\n`);
    }
  }

  /** The last report: a full redraw and a newline, or a final line. */
  finish(suffix = 'done'): void {
    if (this.#finished) return;
    this.#finished = true;
    const now = this.#o.now();
    if (this.#tty) {
      this.#draw(now);
      this.#o.stream.write(` ${suffix}\n`);
    } else {
      this.#o.stream.write(`${this.#plain()} ${suffix} in ${duration(now - this.#start)}\n`);
    }
  }

  #plain(): string {
    const { label, total, unit } = this.#o;
    return `${label}: ${this.#done}/${total} ${unit} (${this.#percent()}%)`;
  }

  #percent(): number {
    const { total } = this.#o;
    return total > 0 ? Math.floor((100 * Math.min(this.#done, total)) / total) : 100;
  }

  #draw(now: number): void {
    this.#lastDraw = now;
    const { label, total, unit } = this.#o;
    const elapsed = Math.max(1, now - this.#start);
    const rate = (this.#done * 1000) / elapsed;
    const left =
      rate > 0 && total > this.#done
        ? ` ETA ${duration(((total - this.#done) / rate) * 1000)}`
        : '';
    const fraction = total > 0 ? this.#done / total : 1;
    const text = ` ${String(this.#percent()).padStart(3)}% ${this.#done}/${total} ${compact(rate)} ${unit}/s${left}`;
    const room = (this.#o.stream.columns ?? 80) - label.length - text.length - 4;
    const cells = Math.max(0, Math.min(BAR_WIDTH, room));
    const drawn = cells >= 5 ? `${label} ${bar(fraction, cells)}${text}` : `${label}${text}`;
    // \r and erase-line: redraw in place.
    this.#o.stream.write(`\r\x1b[2K${drawn}`);
  }
}
