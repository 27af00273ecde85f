import { describe, expect, it } from 'vitest';
import { within } from '../../src/deadline.js';

const later = () => {
  let fail!: (e: Error) => void;
  let succeed!: (v: string) => void;
  const promise = new Promise<string>((resolve, reject) => ((succeed = resolve), (fail = reject)));
  return { promise, fail, succeed };
};
const expired = () => new Error('deadline passed');
const tick = (ms = 10) => new Promise((r) => setTimeout(r, ms));

describe('within', () => {
  it('settles as the call does while there is time', async () => {
    const call = later();
    const bounded = within(call.promise, 1000, undefined, expired);
    call.succeed('stored');
    await expect(bounded).resolves.toBe('stored');
  });

  it('rejects with the deadline error when no time is left, and the late failure of the call is no unhandled rejection', async () => {
    const call = later();
    await expect(within(call.promise, 0, undefined, expired)).rejects.toThrow('deadline passed');
    // vitest fails the run on an unhandled rejection: this one must be caught by within.
    call.fail(new Error('403 Forbidden'));
    await tick();
  });

  it('rejects once the deadline passes or the signal aborts, whatever the call does later', async () => {
    const slow = later();
    await expect(within(slow.promise, 5, undefined, expired)).rejects.toThrow('deadline passed');
    slow.fail(new Error('late'));
    const aborted = later();
    const controller = new AbortController();
    const bounded = within(aborted.promise, 1000, controller.signal, expired);
    controller.abort();
    await expect(bounded).rejects.toThrow('deadline passed');
    aborted.fail(new Error('late'));
    await tick();
  });
});
