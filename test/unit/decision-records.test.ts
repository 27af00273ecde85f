/** Which decisions keep a record of their own under --allowed-decisions (src/webhook/decision-records.ts). */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { decisionRecords, keepsOwnRecord, type DecisionSummary } from '../../src/webhook/decision-records.js';
import type { AdmissionDecision } from '../../src/webhook/server.js';

const decision = (over: Partial<AdmissionDecision> = {}): AdmissionDecision => ({
  uid: 'u',
  path: 'validate',
  kind: 'Namespace',
  name: 'shop-dev',
  user: 'alice',
  operation: 'CREATE',
  dryRun: false,
  verdict: 'allowed',
  rules: [],
  ms: 1.5,
  ...over,
});

afterEach(() => vi.useRealTimers());

describe('decision records', () => {
  it('all: every decision is written as it comes, none summarised', () => {
    const written: AdmissionDecision[] = [];
    const summaries: DecisionSummary[] = [];
    const r = decisionRecords(
      (d) => written.push(d),
      (s) => summaries.push(s),
      { allowed: 'all' },
    );
    const ds = [
      decision(),
      decision({ verdict: 'patched', path: 'mutate' }),
      decision({ verdict: 'denied', rules: ['T4'], code: 403 }),
    ];
    for (const d of ds) r.record(d);
    r.stop();
    expect(written).toEqual(ds);
    expect(summaries).toEqual([]);
  });

  it('summary: denials, errors, warnings and slow decisions keep their own record; the rest are counted', () => {
    expect(keepsOwnRecord(decision(), 250)).toBe(false);
    expect(keepsOwnRecord(decision({ verdict: 'patched' }), 250)).toBe(false);
    expect(keepsOwnRecord(decision({ verdict: 'denied', rules: ['Q1'], code: 403 }), 250)).toBe(true);
    expect(keepsOwnRecord(decision({ verdict: 'denied', code: 503 }), 250)).toBe(true); // not ready
    expect(keepsOwnRecord(decision({ verdict: 'denied', code: 500 }), 250)).toBe(true); // rules failed
    expect(keepsOwnRecord(decision({ rules: ['Q4'] }), 250)).toBe(true); // admitted with a warning
    expect(keepsOwnRecord(decision({ ms: 250 }), 250)).toBe(true);
    expect(keepsOwnRecord(decision({ ms: 249.9 }), 250)).toBe(false);
  });

  it('summary: one summary record per interval with the counts by path, operation, kind, verdict and dry run; quiet when idle', () => {
    vi.useFakeTimers();
    let clock = 1_000_000;
    const written: AdmissionDecision[] = [];
    const summaries: DecisionSummary[] = [];
    const r = decisionRecords(
      (d) => written.push(d),
      (s) => summaries.push(s),
      { allowed: 'summary', slowMs: 100, intervalMs: 10_000, now: () => clock },
    );
    const denial = decision({ verdict: 'denied', rules: ['T4'], code: 403 });
    r.record(decision({ ms: 3 }));
    r.record(decision({ ms: 7 }));
    r.record(decision({ path: 'mutate', verdict: 'patched', ms: 1 }));
    r.record(decision({ dryRun: true, ms: 2 }));
    r.record(denial);
    r.record(decision({ ms: 120, uid: 'slow' }));
    expect(written.map((d) => (d.uid === 'slow' ? 'slow' : d.verdict))).toEqual(['denied', 'slow']);
    expect(summaries).toEqual([]);
    clock += 10_000;
    vi.advanceTimersByTime(10_000);
    expect(summaries).toEqual([
      {
        seconds: 10,
        decisions: 4,
        maxMs: 7,
        counts: [
          { path: 'validate', operation: 'CREATE', kind: 'Namespace', verdict: 'allowed', dryRun: false, n: 2 },
          { path: 'mutate', operation: 'CREATE', kind: 'Namespace', verdict: 'patched', dryRun: false, n: 1 },
          { path: 'validate', operation: 'CREATE', kind: 'Namespace', verdict: 'allowed', dryRun: true, n: 1 },
        ],
      },
    ]);
    // Nothing counted: no record, and the timer stops until the next counted decision.
    vi.advanceTimersByTime(30_000);
    expect(summaries).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
    r.record(decision({ kind: 'ResourceQuota', operation: 'UPDATE' }));
    expect(vi.getTimerCount()).toBe(1);
    clock += 4_000;
    r.stop(); // shutdown: what was counted is written at once
    expect(summaries[1]).toMatchObject({
      decisions: 1,
      seconds: 4,
      counts: [{ kind: 'ResourceQuota', operation: 'UPDATE', n: 1 }],
    });
    expect(vi.getTimerCount()).toBe(0);
  });
});
