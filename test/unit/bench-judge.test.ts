/** The benchmarks' `--check` (bench/lib/judge.ts): a target a scaled-down run cannot judge fails it unless skipped. */
import { describe, expect, it } from 'vitest';
import { judgeTargets, skippedTargets, type TargetJudgement } from '../../bench/lib/judge.js';
import { renderTargets } from '../../bench/targets/render.js';
import { webhookTargets } from '../../bench/targets/webhook.js';

const met: TargetJudgement = {
  id: 'P2',
  target: 'render of 10,000 projects < 3000 ms',
  judged: true,
  met: true,
  value: '1640 ms',
};
const missed: TargetJudgement = {
  id: 'P2',
  target: '20k/10k render time ≤ 2.3 ×',
  judged: true,
  met: false,
  value: '2.50 ×',
};
const notJudged: TargetJudgement = {
  id: 'P3',
  target: 'webhook RSS < 300 MB',
  judged: false,
  met: false,
  note: 'not run (BENCH_WEBHOOK_RSS=0)',
};

describe('judgeTargets', () => {
  it('fails --check on a missed target and on one not judged, printing "not judged" with the reason', () => {
    const judged = judgeTargets([met, missed, notJudged], []);
    expect(judged.missed).toEqual([
      'P2 20k/10k render time ≤ 2.3 ×: 2.50 ×',
      'P3 webhook RSS < 300 MB: not judged (not run (BENCH_WEBHOOK_RSS=0))',
    ]);
    expect(judged.lines).toEqual([
      'P2 render of 10,000 projects < 3000 ms: 1640 ms — MET',
      'P2 20k/10k render time ≤ 2.3 ×: 2.50 × — MISSED',
      'P3 webhook RSS < 300 MB: not judged (not run (BENCH_WEBHOOK_RSS=0)) — fails --check unless skipped (--skip P3)',
    ]);
  });

  it('passes a target not judged only when its id is skipped, and never a missed one', () => {
    expect(judgeTargets([met, notJudged], ['p3'])).toEqual({
      lines: [
        'P2 render of 10,000 projects < 3000 ms: 1640 ms — MET',
        'P3 webhook RSS < 300 MB: not judged (not run (BENCH_WEBHOOK_RSS=0)) — skipped (--skip P3)',
      ],
      missed: [],
    });
    expect(judgeTargets([notJudged], ['P1']).missed).toHaveLength(1);
    expect(judgeTargets([missed], ['P2']).missed).toEqual(['P2 20k/10k render time ≤ 2.3 ×: 2.50 ×']);
  });

  it('reads the ids to skip from BENCH_SKIP (what `npm run bench -- … --skip P1,P3` sets)', () => {
    expect(skippedTargets({ BENCH_SKIP: ' p1, P3 ,,' })).toEqual(['P1', 'P3']);
    expect(skippedTargets({})).toEqual([]);
  });
});

describe('P2 (bench/targets/render.ts)', () => {
  const size = (projects: number, bestMs: number) => ({ projects, bestMs });

  it('judges both targets with the 10,000- and 20,000-project sizes', () => {
    const targets = renderTargets([size(1000, 150), size(10000, 1640), size(20000, 2700)]);
    expect(targets.map((t) => [t.judged, t.met, t.value])).toEqual([
      [true, true, '1640 ms'],
      [true, true, '1.65 ×'],
    ]);
    expect(renderTargets([size(10000, 3100), size(20000, 8000)]).map((t) => t.met)).toEqual([false, false]);
  });

  it('judges neither with smaller sizes only: --check fails unless P2 is skipped', () => {
    const targets = renderTargets([size(1000, 150)]);
    expect(targets.map((t) => t.judged)).toEqual([false, false]);
    expect(targets[0]!.note).toBe('no 10,000-project size; sizes rendered: 1000 (BENCH_RENDER_SIZES)');
    expect(judgeTargets(targets, []).missed).toHaveLength(2);
    expect(judgeTargets(targets, ['P2']).missed).toEqual([]);
    // 10,000 alone: that target judged, the doubling not.
    expect(renderTargets([size(10000, 1640)]).map((t) => t.judged)).toEqual([true, false]);
  });
});

describe('P1 and P3 (bench/targets/webhook.ts)', () => {
  const p1 = (over: { quietMachine?: boolean; throughputRatio?: number } = {}) => ({
    ratio: { namespaceCreate: over.throughputRatio ?? 0.9, quotaUpdate: 0.95, expressFloor: 1 },
    cpuRatio: { namespaceCreate: 0.6, quotaUpdate: 0.55, expressFloor: 1 },
    p99Ms: { 'tenantgate Namespace CREATE': 1.2 },
    verdictErrors: 0,
    loadAverage: { start: over.quietMachine === false ? 5.1 : 0.8, end: 1 },
    met: {
      throughput: (over.throughputRatio ?? 0.9) >= 0.7,
      cpuPerRequest: true,
      latency: true,
      verdicts: true,
      quietMachine: over.quietMachine ?? true,
    },
  });
  const p3 = (fullScaleMeasured: boolean, fullScaleMB = 250) => ({
    fullScaleMB,
    fullScaleMeasured,
    scale: fullScaleMeasured ? 1 : 0.4,
    met: fullScaleMB < 300,
  });
  const judged = (targets: TargetJudgement[]) =>
    targets.map((t) => `${t.id} ${t.judged ? (t.met ? 'met' : 'missed') : 'not judged'}`);

  it('judges every target of a full run', () => {
    expect(judged(webhookTargets(p1(), p3(true)))).toEqual(['P1 met', 'P1 met', 'P1 met', 'P1 met', 'P3 met']);
    expect(judged(webhookTargets(p1(), p3(true, 320)))).toEqual(['P1 met', 'P1 met', 'P1 met', 'P1 met', 'P3 missed']);
  });

  it('judges nothing of a part switched off or scaled down: --check fails unless it is skipped', () => {
    const p1Only = webhookTargets(p1(), undefined);
    expect(judged(p1Only).at(-1)).toBe('P3 not judged');
    expect(judgeTargets(p1Only, []).missed).toEqual([
      'P3 webhook RSS < 300 MB at 10,000 projects / 50,000 namespaces / 50,000 quotas: not judged (not run (BENCH_WEBHOOK_RSS=0))',
    ]);
    expect(judgeTargets(p1Only, ['P3']).missed).toEqual([]);
    const p3Only = webhookTargets(undefined, p3(true));
    expect(judged(p3Only)).toEqual(['P1 not judged', 'P1 not judged', 'P1 not judged', 'P1 not judged', 'P3 met']);
    expect(judgeTargets(p3Only, ['P1']).missed).toEqual([]);
    const extrapolated = webhookTargets(p1(), p3(false));
    expect(judged(extrapolated).at(-1)).toBe('P3 not judged');
    expect(extrapolated.at(-1)).toMatchObject({
      value: '250 MB extrapolated',
      note: expect.stringMatching(/^measured at scale 0.4 only/),
    });
  });

  it("leaves P1's timings unjudged on a busy machine or without an unsaturated client round, its verdicts judged", () => {
    expect(judged(webhookTargets(p1({ quietMachine: false }), p3(true)))).toEqual([
      'P1 not judged',
      'P1 not judged',
      'P1 not judged',
      'P1 met',
      'P3 met',
    ]);
    const saturated = webhookTargets(p1({ throughputRatio: Number.NaN }), p3(true));
    expect(saturated[0]).toMatchObject({ judged: false, note: 'no round with an unsaturated client' });
  });
});
