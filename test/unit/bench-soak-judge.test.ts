/** The soak bench's judge (bench/targets/soak.ts, ADR 0012): the slope of heap after GC and the memory request. */
import { describe, expect, it } from 'vitest';
import { leastSquares } from '../../bench/lib/memory.js';
import { SLOPE_LIMIT_MB_PER_MIN, judge } from '../../bench/targets/soak.js';

/** One sample a minute for `minutes + 1` minutes; heap = 40 + slope × minute + the given wobble. */
function samples(minutes: number, slope: number, wobble: (m: number) => number, rssMB = 120, workingSetMB = 70) {
  return Array.from({ length: minutes + 1 }, (_, m) => ({
    minute: m,
    load1: 1,
    requests: m * 300,
    processes: { 'webhook-0': { heapMB: 40 + slope * m + wobble(m), gcMs: 10, rssMB, workingSetMB } },
  }));
}

describe('leastSquares', () => {
  it('recovers a line exactly, with no standard error', () => {
    const fit = leastSquares([0, 1, 2, 3].map((x) => ({ x, y: 2 + 0.5 * x })));
    expect(fit.slope).toBeCloseTo(0.5, 12);
    expect(fit.intercept).toBeCloseTo(2, 12);
    expect(fit.standardError).toBeCloseTo(0, 12);
  });

  it('gives the textbook slope and standard error for scattered points', () => {
    // y = 1, 3, 2, 5, 4 at x = 0..4: slope 0.8, residuals sum of squares 3.6, sxx 10 → SE √(3.6/3/10).
    const fit = leastSquares([1, 3, 2, 5, 4].map((y, x) => ({ x, y })));
    expect(fit.slope).toBeCloseTo(0.8, 12);
    expect(fit.standardError).toBeCloseTo(Math.sqrt(3.6 / 3 / 10), 12);
  });
});

describe('the soak judge', () => {
  const wobble = (m: number) => (m % 2 === 0 ? 0.1 : -0.1);

  it('calls a heap level when it only wobbles around a constant', () => {
    const j = judge('webhook-0', 'webhook', samples(30, 0, wobble), 10, 192, 5);
    expect(j.level).toBe('level');
    expect(j.points).toBe(21);
    expect(j.windowMinutes).toBe(20);
    expect(j.underRequest).toBe(true);
  });

  it('calls a heap growing at twice the limit growing, and gives the growth per 1,000 requests', () => {
    const j = judge('webhook-0', 'webhook', samples(30, 2 * SLOPE_LIMIT_MB_PER_MIN, wobble), 10, 192, 5);
    expect(j.level).toBe('growing');
    expect(j.slopeMBPerMin).toBeCloseTo(0.1, 2);
    // 0.1 MB a minute at 300 requests a minute.
    expect(j.slopeMBPer1000Requests).toBeCloseTo(0.333, 2);
  });

  it('judges only the window: a warm-up climb before it does not count', () => {
    const warmUp = samples(30, 0, (m) => (m < 10 ? -5 + m * 0.5 : wobble(m)));
    expect(judge('webhook-0', 'webhook', warmUp, 10, 192, 5).level).toBe('level');
  });

  it('refuses to judge a slope it cannot resolve', () => {
    const noisy = samples(30, 0, (m) => (m % 2 === 0 ? 3 : -3));
    expect(judge('webhook-0', 'webhook', noisy, 10, 192, 5).level).toBe('too noisy to judge');
  });

  it('flags VmRSS or the working set at or above the request', () => {
    expect(judge('webhook-0', 'webhook', samples(30, 0, wobble, 200, 70), 10, 192, 5).underRequest).toBe(false);
    expect(judge('webhook-0', 'webhook', samples(30, 0, wobble, 120, 192), 10, 192, 5).underRequest).toBe(false);
  });
});
