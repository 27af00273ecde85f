import { describe, expect, it } from 'vitest';
import { type PodComparison, judgePods } from '../../bench/comparisons/peers/pods.js';

const counted = { start: 1, end: 1, counted: true };
const busy = { start: 9, end: 9, counted: false };
const tally = { refused: 0, errors: 0, firstRefusal: '', firstError: '' };
const skewed = { admitted: 2, refused: 38, errors: 0, firstRefusal: '', firstError: '', used: 2 };
const settings = {
  raceRounds: 2,
  raceConcurrent: 40,
  raceBudget: 10,
  burst: 1000,
  burstRoom: 600,
  burstConcurrency: 50,
  rate: 10,
  steadyS: 30,
  idleS: 10,
  nsBurst: 50,
  settleMs: 0,
};

function race(engine: string, usedPerRound: number[]) {
  return {
    engine,
    rounds: usedPerRound.length,
    concurrent: 40,
    budgetCpu: 10,
    admittedPerRound: usedPerRound,
    usedPerRound,
    overspentRounds: usedPerRound.filter((u) => u > 10).length,
    maxOverspendCpu: Math.max(0, ...usedPerRound.map((u) => u - 10)),
    ...tally,
    skewed,
    load: counted,
  };
}
function burst(engine: string, wallS: number, usedCpu: number, load = counted) {
  return {
    engine,
    sent: 1000,
    room: 600,
    concurrency: 50,
    wallS,
    usedCpu,
    overspendCpu: Math.max(0, usedCpu - 600),
    admitted: usedCpu,
    ...tally,
    load,
  };
}
function steady(engine: string, cpuMsPerAdmittedPod: number, load = counted) {
  return {
    engine,
    rate: 10,
    durationS: 30,
    sent: 300,
    admitted: 300,
    ...tally,
    latencyMs: { n: 300, p50: 1, p90: 1, p99: 1, max: 1, mean: 1 },
    cpuSeconds: {},
    idlePerSecond: {},
    cpuMsPerAdmittedPod,
    load,
  };
}
function comparison(over: Partial<PodComparison>): PodComparison {
  return { settings, race: [], burst: [], steady: [], namespaces: [], errors: [], ...over };
}
const byName = (targets: ReturnType<typeof judgePods>, word: string) => targets.find((t) => t.target.includes(word))!;

describe('judgePods (bench/comparisons/peers/pods.ts)', () => {
  it('meets every target when tenantgate holds the budget and is cheap and fast enough against Capsule', () => {
    const targets = judgePods(
      comparison({
        race: [race('tenantgate (ledger on, shipped)', [10, 10]), race('capsule (chart: client QPS 20)', [10, 10])],
        burst: [burst('tenantgate (ledger on, shipped)', 4, 600), burst('capsule (chart: client QPS 20)', 60, 600)],
        steady: [
          steady('tenantgate (ledger on, shipped)', 10),
          steady('capsule (chart: client QPS 20)', 40),
          steady('no engine (Kubernetes quota only)', 1),
        ],
      }),
    );
    expect(targets.map((t) => [t.judged, t.met])).toEqual([
      [true, true],
      [true, true],
      [true, true],
    ]);
  });

  it('misses 0 overspend when one race round has more in use than the budget, whatever the load', () => {
    const t = byName(
      judgePods(
        comparison({
          race: [{ ...race('tenantgate (ledger on, shipped)', [10, 11]), load: busy }],
          burst: [burst('tenantgate (ledger on, shipped)', 4, 600, busy)],
        }),
      ),
      'overspend',
    );
    expect(t).toMatchObject({ judged: true, met: false });
  });

  it('misses 0 overspend when the burst leaves more in use than its room', () => {
    const t = byName(
      judgePods(
        comparison({
          race: [race('tenantgate (ledger on, shipped)', [10])],
          burst: [burst('tenantgate (ledger on, shipped)', 4, 601)],
        }),
      ),
      'overspend',
    );
    expect(t).toMatchObject({ judged: true, met: false });
  });

  it('judges CPU per pod against Capsule’s cheapest counted row, never against the Kubernetes-only floor', () => {
    const t = byName(
      judgePods(
        comparison({
          steady: [
            steady('tenantgate (ledger on, shipped)', 20),
            steady('capsule (chart: client QPS 20)', 40),
            steady('capsule (client QPS raised)', 70),
            steady('no engine (Kubernetes quota only)', 1),
          ],
        }),
      ),
      'CPU per admitted pod',
    );
    expect(t).toMatchObject({ judged: true, met: false });
    expect(t.value).toContain('20 vs 40 (capsule (chart: client QPS 20)): 0.5');
  });

  it('prefers a counted Capsule row to a cheaper one started above the load limit', () => {
    const t = byName(
      judgePods(
        comparison({
          steady: [
            steady('tenantgate (ledger on, shipped)', 20),
            steady('capsule (chart: client QPS 20)', 30, busy),
            steady('capsule (client QPS raised)', 60),
          ],
        }),
      ),
      'CPU per admitted pod',
    );
    expect(t).toMatchObject({ judged: true, met: true });
    expect(t.value).toContain('(capsule (client QPS raised))');
  });

  it('does not judge a timing target on rows started above the load limit, but says what was measured', () => {
    const t = byName(
      judgePods(
        comparison({
          burst: [
            burst('tenantgate (ledger on, shipped)', 4, 600, busy),
            burst('capsule (chart: client QPS 20)', 60, 600, busy),
          ],
        }),
      ),
      'burst wall time',
    );
    expect(t.judged).toBe(false);
    expect(t.met).toBe(false);
    expect(t.note).toContain('load 9');
    expect(t.value).toContain('4 vs 60');
  });

  it('does not judge anything that was not run', () => {
    expect(judgePods(comparison({})).every((t) => !t.judged && !t.met)).toBe(true);
  });
});
