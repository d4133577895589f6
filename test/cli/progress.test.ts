import { describe, expect, it } from 'vitest';
import { bar, Progress } from '../../cli/progress.js';

const recorder = (isTTY: boolean) => {
  const out: string[] = [];
  return { out, stream: { isTTY, columns: 100, write: (s: string) => out.push(s) } };
};

describe('Progress', () => {
  describe('on a terminal', () => {
    it('redraws one line in place and ends it with a newline', () => {
      const { out, stream } = recorder(true);
      let now = 0;
      const progress = new Progress({ label: 'export run-1', total: 4000, stream, now: () => now });

      for (const done of [1000, 2000, 3000, 4000]) {
        now += 500;
        progress.update(done);
      }
      progress.finish();

      expect(out[0]).toBe(
        '\r\x1b[2Kexport run-1 [########......................]  25% 1000/4000 2.0k events/s ETA 1.5s',
      );
      expect(out.every((s) => s.startsWith('\r\x1b[2K') || s === ' done\n')).toBe(true);
      expect(out.at(-1)).toBe(' done\n');
    });

    it('redraws at most every redrawMs', () => {
      const { out, stream } = recorder(true);
      const progress = new Progress({ label: 'x', total: 100, stream, now: () => 1000 });

      for (let done = 1; done <= 100; done++) progress.update(done);

      expect(out).toHaveLength(1);
    });
  });

  describe('in a pipe or log', () => {
    it('writes a line per 10 % step, at most one a second, then a last line', () => {
      const { out, stream } = recorder(false);
      let now = 0;
      const progress = new Progress({ label: 'verify run-1', total: 100, stream, now: () => now });

      for (let done = 1; done <= 100; done++) {
        now += 250;
        progress.update(done);
      }
      progress.finish('ok');

      expect(out).toHaveLength(10);
      expect(out[0]).toBe('verify run-1: 10/100 events (10%)\n');
      expect(out.at(-1)).toBe('verify run-1: 100/100 events (100%) ok in 25s\n');
    });

    it('writes only the last line for a task shorter than a second', () => {
      const { out, stream } = recorder(false);
      let now = 0;
      const progress = new Progress({ label: 'export x', total: 10, stream, now: () => now });

      for (let done = 1; done <= 10; done++) {
        now += 10;
        progress.update(done);
      }
      progress.finish();

      expect(out).toEqual(['export x: 10/10 events (100%) done in 0.1s\n']);
    });
  });
});

describe('bar', () => {
  it('fills cells in proportion and clamps', () => {
    expect(bar(0.5, 10)).toBe('[#####.....]');
    expect(bar(2, 4)).toBe('[####]');
    expect(bar(-1, 4)).toBe('[....]');
  });
});
