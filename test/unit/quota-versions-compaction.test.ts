/**
 * compactVersions (src/webhook/headroom/quota-versions.ts) leaves out recorded versions of a quota that no
 * reader needs. Two oracles, on random lists (absent versions, unscoped, `scopes` and priority-class-tier
 * versions, any subset of resources, limits in mixed units, unparsable limits):
 *  - computed here from the versions alone, without the product's readers: what any reader may depend
 *    on is the same after compaction — the first version, whether one is absent, each (scope, resources
 *    named) class, per class and resource the smallest and the largest limit by value, and every version
 *    whose limits do not all parse;
 *  - every reader of a version list — envelope (what the rules count for the quota), lowestQuotas (the
 *    lowest any replica may count), uncoveredCeiling (the most a possibly-absent quota may let a
 *    namespace hold) and replacedCeiling (the most a namespace re-created under a lagging cache may
 *    hold) — computes the same from the compacted list as from the whole one.
 */
import fc from 'fast-check';
import { Quantity } from '../../src/quantity/quantity.js';
import { describe, expect, it } from 'vitest';
import type { LedgerQuotaWrite } from '../../src/ledger/ledger.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { parseResources } from '../../src/validate/resource-lists.js';
import {
  compactVersions,
  envelope,
  lowestQuotas,
  replacedCeiling,
  uncoveredCeiling,
  unionVersions,
} from '../../src/webhook/headroom/quota-versions.js';

const TIER = { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In', values: ['high'] }] };

const limit = (resource: 'cpu' | 'memory') =>
  fc.oneof(
    {
      weight: 8,
      arbitrary: fc
        .integer({ min: 0, max: 40 })
        .map((n) => (resource === 'cpu' ? (n % 2 ? `${n * 100}m` : String(n / 10)) : n % 2 ? `${n * 64}Mi` : `${n}Gi`)),
    },
    { weight: 1, arbitrary: fc.constant('lots') },
  );

const version: fc.Arbitrary<LedgerQuotaWrite> = fc.oneof(
  { weight: 1, arbitrary: fc.constant(null) },
  {
    weight: 8,
    arbitrary: fc
      .record({
        cpu: fc.option(limit('cpu'), { nil: undefined }),
        memory: fc.option(limit('memory'), { nil: undefined }),
        scope: fc.constantFrom('none', 'tier', 'terminating'),
      })
      .map(({ cpu, memory, scope }) => {
        const hard: Record<string, string> = {};
        if (cpu !== undefined) hard['requests.cpu'] = cpu;
        if (memory !== undefined) hard['requests.memory'] = memory;
        const scoped =
          scope === 'tier' ? { scopeSelector: TIER } : scope === 'terminating' ? { scopes: ['Terminating'] } : {};
        return { spec: { hard, ...scoped } };
      }),
  },
);

/** A reader's result, compared by value (the same quantity may print as "1" or "1000m"). */
function valueOf(hard: Record<string, string | number> | undefined): Record<string, string> {
  return Object.fromEntries(
    [...parseResources(hard ?? {})].map(([r, q]) => [r, q.toString()]).sort(([a], [b]) => a!.localeCompare(b!)),
  );
}

/**
 * What a reader of a version list may depend on, computed from the list itself: its first version,
 * whether a version is absent, the versions whose limits do not all parse, and per class of versions
 * (scope, resources named) per resource the smallest and largest limit, by value.
 */
function facts(versions: readonly LedgerQuotaWrite[]) {
  const classes: Record<string, Record<string, { least: string; most: string }>> = {};
  const unparsable: LedgerQuotaWrite[] = [];
  for (const v of versions) {
    if (v === null) continue;
    const hard = v.spec.hard ?? {};
    const limits = Object.entries(hard).map(([r, raw]) => [r, Quantity.tryParse(raw)] as const);
    if (limits.some(([, q]) => q === undefined)) {
      unparsable.push(v);
      continue;
    }
    const key = JSON.stringify([v.spec.scopes ?? null, v.spec.scopeSelector ?? null, Object.keys(hard).sort()]);
    const bounds = (classes[key] ??= {});
    for (const [r, q] of limits) {
      const b = bounds[r];
      const least = b && Quantity.parse(b.least).cmp(q!) <= 0 ? b.least : q!.toString();
      const most = b && Quantity.parse(b.most).cmp(q!) >= 0 ? b.most : q!.toString();
      bounds[r] = { least, most };
    }
  }
  return { first: versions[0], absent: versions.includes(null), unparsable, classes };
}

function readers(versions: LedgerQuotaWrite[]) {
  const snapshot = new MemorySnapshot();
  const whole = envelope('ns', 'q', versions);
  const lowest = lowestQuotas(snapshot, 'ns', new Map([['q', versions]]));
  const ceiling = uncoveredCeiling(
    snapshot,
    'ns',
    new Map([['q', whole]]),
    new Map([['q', versions]]),
    { name: 'other', quota: null },
    parseResources({ 'requests.cpu': '100', 'requests.memory': '100Gi' }),
  );
  const replaced = replacedCeiling(
    snapshot,
    'ns',
    new Map([['q', whole]]),
    new Map([['q', versions]]),
    { name: 'other', quota: null },
    parseResources({ 'requests.cpu': '100', 'requests.memory': '100Gi' }),
  );
  const values = (list: ReadonlyMap<string, { toString(): string }> | undefined) =>
    list ? Object.fromEntries([...list].map(([r, q]) => [r, q.toString()])) : null;
  return {
    envelope:
      whole === null
        ? null
        : {
            scoped: whole.spec?.scopeSelector !== undefined || (whole.spec?.scopes?.length ?? 0) > 0,
            hard: valueOf(whole.spec?.hard),
          },
    lowest: lowest.map((q) => valueOf(q.spec?.hard)),
    ceiling: values(ceiling),
    replaced: values(replaced),
  };
}

describe('compactVersions: what every reader computes is unchanged', () => {
  it('for random version lists (2,000 runs)', () => {
    fc.assert(
      fc.property(fc.array(version, { minLength: 1, maxLength: 40 }), (versions) => {
        const compacted = compactVersions(versions);
        expect(compacted[0]).toBe(versions[0]);
        expect(facts(compacted)).toEqual(facts(versions));
        expect(readers(compacted)).toEqual(readers(versions));
      }),
      { numRuns: 2000 },
    );
  });

  it('bounds a quota raised step by step: 200 writes of one quota keep at most its extremes', () => {
    let versions: LedgerQuotaWrite[] = [];
    for (let i = 1; i <= 200; i++)
      versions = unionVersions(versions, [
        { spec: { hard: { 'requests.cpu': `${100 + 10 * i}m`, pods: String(10 + (i % 7)) } } },
        { spec: { hard: { 'requests.cpu': `${90 + 10 * i}m`, pods: String(10 + ((i + 6) % 7)) } } },
      ]);
    expect(versions.length).toBeLessThanOrEqual(5);
    const cpu = versions.map((v) => parseResources(v!.spec.hard).get('requests.cpu')!.toString());
    expect(cpu).toContain('100m');
    expect(cpu).toContain('2100m');
  });

  it('keeps every version when some limit does not parse, and one per scope and resource set', () => {
    const odd: LedgerQuotaWrite[] = [
      { spec: { hard: { 'requests.cpu': '1' } } },
      { spec: { hard: { 'requests.cpu': 'lots' } } },
      { spec: { hard: { 'requests.cpu': '2' } } },
      { spec: { hard: { 'requests.cpu': '3' } } },
      null,
      { spec: { hard: {} } },
      { spec: { hard: { 'requests.cpu': '2' }, scopeSelector: TIER } },
    ];
    const kept = compactVersions(odd);
    expect(kept).toContain(odd[1]);
    expect(kept).toContain(odd[4]);
    expect(kept).toContain(odd[5]);
    expect(kept).toContain(odd[6]);
    expect(kept).not.toContain(odd[2]); // neither the largest nor the smallest of its class
  });
});
