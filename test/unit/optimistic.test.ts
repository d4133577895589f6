import { describe, expect, it } from 'vitest';
import { ConflictError, SeqConflictError, UnavailableError } from '../../shared/domain/errors.js';
import { optimistic, RETRY } from '../../shared/domain/optimistic.js';

const giveUp = () => {
  throw new UnavailableError('kept changing');
};

describe('optimistic (the one CAS loop)', () => {
  it('answers the first attempt that does not lose', async () => {
    const seen: number[] = [];
    const out = await optimistic(
      async (n) => {
        seen.push(n);
        if (n < 2) throw new ConflictError('lost');
        return 'won';
      },
      { attempts: 5, exhausted: giveUp },
    );
    expect(out).toBe('won');
    expect(seen).toEqual([0, 1, 2]);
  });

  it('starts over when an attempt answers RETRY', async () => {
    let calls = 0;
    const out = await optimistic(async () => (++calls < 3 ? RETRY : calls), {
      attempts: 5,
      exhausted: giveUp,
    });
    expect(out).toBe(3);
  });

  it('answers exhausted() after `attempts` lost attempts, and no more attempts', async () => {
    let calls = 0;
    await expect(
      optimistic(
        async () => {
          calls++;
          throw new ConflictError('lost');
        },
        { attempts: 4, exhausted: giveUp },
      ),
    ).rejects.toBeInstanceOf(UnavailableError);
    expect(calls).toBe(4);
    expect(await optimistic(async () => RETRY, { attempts: 2, exhausted: () => 'fallback' })).toBe(
      'fallback',
    );
  });

  it('throws any other error at once, without another attempt', async () => {
    let calls = 0;
    const boom = new Error('disk');
    await expect(
      optimistic(
        async () => {
          calls++;
          throw boom;
        },
        { attempts: 5, exhausted: giveUp },
      ),
    ).rejects.toBe(boom);
    expect(calls).toBe(1);
  });

  it('retries what retryOn names instead of ConflictError', async () => {
    let calls = 0;
    const out = await optimistic(
      async () => {
        if (++calls === 1) throw new SeqConflictError(1, 2);
        return calls;
      },
      { attempts: 3, retryOn: (e) => e instanceof SeqConflictError, exhausted: giveUp },
    );
    expect(out).toBe(2);
    await expect(
      optimistic(
        async () => {
          throw new ConflictError('not named');
        },
        { attempts: 3, retryOn: (e) => e instanceof SeqConflictError, exhausted: giveUp },
      ),
    ).rejects.toBeInstanceOf(ConflictError);
  });
});
