/**
 * `npm run bench -- policy-cost` (bench/experiments/policy-cost.ts): the Go benchmark's lines are read by
 * case, each case is judged against the shipped one of the same round, and the cases differ from the
 * shipped one only in what they are named for.
 */
import { describe, expect, it } from 'vitest';
import { cases, parseBenchmarkLines, ratiosToShipped } from '../../bench/experiments/policy-cost.js';

const OUTPUT = `goos: linux
goarch: amd64
pkg: tenantgate.io/bench/policycost
BenchmarkPolicyCost/00-shipped         	   20000	    100000 ns/op	   60000 B/op	     900 allocs/op
BenchmarkPolicyCost/01-with-managedFields-2   	   10000	    150000.5 ns/op	   90000 B/op	    1400 allocs/op
BenchmarkPolicyCost/06-one-check-no-parameters	   50000	     20000 ns/op	   10000 B/op	     200 allocs/op
PASS`;

describe('the policy-cost bench', () => {
  it("reads each case's time, bytes and allocations, names with dashes and a GOMAXPROCS suffix included", () => {
    expect(parseBenchmarkLines(OUTPUT)).toEqual([
      { name: 'shipped', nsPerOp: 100000, bytesPerOp: 60000, allocsPerOp: 900 },
      { name: 'with-managedFields', nsPerOp: 150000.5, bytesPerOp: 90000, allocsPerOp: 1400 },
      { name: 'one-check-no-parameters', nsPerOp: 20000, bytesPerOp: 10000, allocsPerOp: 200 },
    ]);
  });

  it('judges a case against the shipped one of the same round, the median of the rounds', () => {
    const round = (shipped: number, other: number) => [
      { name: 'shipped', nsPerOp: shipped, bytesPerOp: 0, allocsPerOp: 0 },
      { name: 'other', nsPerOp: other, bytesPerOp: 0, allocsPerOp: 0 },
    ];
    // The median of each round's own ratio (2.0, 1.5, 1.0, 1.2 → 1.35), not the ratio of the medians
    // (200 / 150 = 1.33): a round slow on both sides counts as one round.
    const ratios = ratiosToShipped([round(100, 200), round(100, 150), round(200, 200), round(1000, 1200)]);
    expect(ratios.get('shipped')).toBe(1);
    expect(ratios.get('other')).toBeCloseTo(1.35, 10);
  });

  it('each case changes one thing of the shipped one', () => {
    const all = cases();
    const byName = new Map(all.map((c) => [c.name, c]));
    const shipped = byName.get('shipped');
    expect(shipped).toBeDefined();
    const params = (name: string) => byName.get(name)?.params as { metadata: Record<string, unknown>; spec: object };
    // As the controller writes it: no managedFields, no last-applied annotation.
    expect(params('shipped').metadata.managedFields).toBeUndefined();
    expect(params('shipped').metadata.annotations).toBeUndefined();
    expect(params('with-managedFields').metadata.managedFields).toHaveLength(1);
    expect(params('with-managedFields').spec).toEqual(params('shipped').spec);
    expect(Object.keys(params('kubectl-apply').metadata.annotations as object)).toEqual([
      'kubectl.kubernetes.io/last-applied-configuration',
    ]);
    // Only the lists the pods policy reads: its registries and node selector, not the Services' lists.
    const podLists = Object.keys(params('pod-lists-only').spec);
    expect(podLists).toEqual(expect.arrayContaining(['registries', 'nodeSelector', 'priorityClasses']));
    expect(podLists).not.toContain('services');
    // Read in place: the shipped parameters, handed over differently; every other case as the API server does.
    expect(params('parameters-read-in-place')).toEqual(params('shipped'));
    expect(all.filter((c) => c.paramsAsContent).map((c) => c.name)).toEqual(['parameters-read-in-place']);
    expect(byName.get('one-check-no-parameters')?.params).toBeNull();
    expect(byName.get('one-check-no-parameters')?.policy.spec.paramKind).toBeUndefined();
    const messages = byName.get('no-messageExpression')?.policy.spec.validations.map((v) => v.messageExpression);
    expect(messages?.every((m) => m === undefined)).toBe(true);
    expect(shipped?.policy.spec.validations.every((v) => v.messageExpression !== undefined)).toBe(true);
  });
});
