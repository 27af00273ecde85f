/**
 * `npm run bench -- shipped`, its in-flight part (bench/targets/shipped-in-flight.ts): the hot project at
 * each rate is judged against the bare webhook at the same rate (at least 99 % admitted, p99 at most twice
 * the bare webhook's), the sync against admitting all.
 */
import { describe, expect, it } from 'vitest';
import { judgeInFlight, type InFlightRun, type InFlightMode } from '../../bench/targets/shipped-in-flight.js';

const run = (
  mode: InFlightMode,
  scenario: InFlightRun['scenario'],
  opts: { rate?: number; offered?: number; admitted?: number; p99?: number; q5?: number } = {},
): InFlightRun => {
  const offered = opts.offered ?? 1000;
  return {
    scenario,
    mode,
    ...(opts.rate !== undefined ? { rate: opts.rate } : {}),
    offered,
    counts: { admitted: opts.admitted ?? offered, ...(opts.q5 ? { 'denied Q5': opts.q5 } : {}) },
    seconds: 15,
    latencyMs: { n: offered, p50: 5, p90: 10, p99: opts.p99 ?? 40, max: 100, mean: 6 },
    ledger: { maxEntries: 1, maxBytes: 300, samples: 10 },
    reservationOutcomes: {},
    errorSamples: [],
    flowControl: {},
    q5Reasons: {},
  };
};

describe('the in-flight judge', () => {
  it('a hot project within twice the bare webhook’s p99 at the same rate, and 99 % admitted, is met', () => {
    const runs = [
      run('bare webhook', 'hot project', { rate: 100, p99: 40 }),
      run('bare webhook', 'hot project', { rate: 70, p99: 30 }),
      run('settlement on', 'hot project', { rate: 100, p99: 80, admitted: 990 }),
      run('settlement on', 'hot project', { rate: 70, p99: 60 }),
      run('settlement on', 'sync'),
    ];
    expect(judgeInFlight(runs)).toEqual([]);
  });

  it('compares each rate with the bare webhook at that rate, not at another', () => {
    const missed = judgeInFlight([
      run('bare webhook', 'hot project', { rate: 100, p99: 40 }),
      run('bare webhook', 'hot project', { rate: 70, p99: 30 }),
      run('settlement on', 'hot project', { rate: 70, p99: 61 }),
    ]);
    expect(missed).toHaveLength(1);
    expect(missed[0]).toContain('hot project at 70/s: p99 61 ms, want ≤ 60 ms');
  });

  it('fewer than 99 % admitted, a [Q5] or a sync that does not admit all is missed', () => {
    const missed = judgeInFlight([
      run('bare webhook', 'hot project', { rate: 100 }),
      run('settlement on', 'hot project', { rate: 100, admitted: 989, q5: 11 }),
      run('settlement on', 'sync', { admitted: 999 }),
    ]);
    expect(missed).toEqual([
      'hot project at 100/s: 11 refused with [Q5], want 0',
      'hot project at 100/s: 989 of 1000 admitted, want at least 990',
      'sync: 999 of 1000 admitted, want at least 1000',
    ]);
  });

  it('a bare webhook that itself admits less than 99 % is named: the floor, not tenantgate', () => {
    expect(judgeInFlight([run('bare webhook', 'hot project', { rate: 200, admitted: 700 })])).toEqual([
      'hot project at 200/s, bare webhook: 700 of 1000 admitted (the floor itself)',
    ]);
  });

  it('without a bare webhook in the run, the hot project’s p99 is held to 0.5 s', () => {
    expect(judgeInFlight([run('settlement on', 'hot project', { rate: 100, p99: 499 })])).toEqual([]);
    expect(judgeInFlight([run('settlement on', 'hot project', { rate: 100, p99: 501 })])[0]).toContain(
      'p99 501 ms, want ≤ 500 ms',
    );
  });
});
