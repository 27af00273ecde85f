/**
 * The snapshot memoises each project's observed shares, so Q1 adds up a project's other namespaces
 * once per cache change rather than once per request. A memo that outlived a change of the Project,
 * of a namespace's label or of a quota would let Q1 count stale numbers and admit an overspend. These
 * tests drive a MemorySnapshot through random write sequences (as the informers would) and compare
 * every memoised sum with the same sum computed without the memo, with and without pending
 * allocations; then they check the Q1 decision itself.
 */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import { aNamespace, aQuota, reviewContext } from '../support/fixtures.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { reviewResourceQuota } from '../../src/validate/admission.js';
import { formatResources, parseResources } from '../../src/validate/resource-lists.js';
import { othersTotal, type PendingAllocations } from '../../src/validate/shares.js';
import type { Resources } from '../../src/validate/types.js';
import type { UserInfo } from '../../src/validate/rules/tenancy.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Project, Snapshot } from '../../src/validate/types.js';
import { seededRandom } from '../support/replica-race/attempts.js';

const PROJECTS = ['alpha', 'beta', 'gamma'];
const NAMESPACES = Array.from({ length: 8 }, (_, i) => `ns-${i}`);
const VALUES = ['1', '2', '500m', '1.5', '3', '2Gi', '1000Mi', '0'];

function project(name: string, budget: string, defaults: string): Project {
  return {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name },
    spec: {
      tenant: 'acme',
      owners: [{ kind: 'User', name: 'alice' }],
      quota: { hard: { 'requests.cpu': budget, 'requests.memory': '64Gi' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': defaults } } },
    },
  };
}

/** The same snapshot seen without its memos: every sum computed afresh. */
function withoutMemo(s: MemorySnapshot): Snapshot {
  return {
    projects: () => s.projects(),
    project: (n) => s.project(n),
    namespace: (n) => s.namespace(n),
    namespacesOfProject: (p) => s.namespacesOfProject(p),
    quotasInNamespace: (n) => s.quotasInNamespace(n),
  };
}

const text = (r: Resources) => Object.fromEntries([...r].map(([k, q]) => [k, q.toString()]));

function pendingOf(entries: Map<string, { project: string; resources: Resources }>): PendingAllocations {
  return {
    allocation: (ns) => entries.get(ns)?.resources,
    namespaces: (p) => [...entries].filter(([, e]) => e.project === p).map(([ns]) => ns),
  };
}

describe('project shares memo', () => {
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    it(`matches the sum without memo after every write (seed ${seed}, 400 steps)`, () => {
      const rnd = seededRandom(seed);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
      const s = new MemorySnapshot();
      const fresh = withoutMemo(s);
      for (const p of PROJECTS) s.upsertProject(project(p, pick(['10', '20', '40']), pick(['1', '2'])));
      let compared = 0;
      for (let step = 0; step < 400; step++) {
        const op = rnd();
        if (op < 0.1) s.upsertProject(project(pick(PROJECTS), pick(['10', '20', '40']), pick(['1', '2', '250m'])));
        else if (op < 0.13) s.deleteProject(pick(PROJECTS));
        else if (op < 0.35)
          s.upsertNamespace(
            aNamespace(
              pick(NAMESPACES),
              rnd() < 0.8 ? { project: pick(PROJECTS), labels: { team: pick(['a', 'b']) } } : {},
            ),
          );
        else if (op < 0.42) s.deleteNamespace(pick(NAMESPACES));
        else if (op < 0.7)
          s.upsertQuota(
            aQuota(
              pick(NAMESPACES),
              { 'requests.cpu': pick(VALUES), ...(rnd() < 0.3 ? { 'requests.memory': pick(['1Gi', '512Mi']) } : {}) },
              { name: pick(['tenantgate-quota', 'extra']), ...(rnd() < 0.2 ? { scopes: ['BestEffort'] } : {}) },
            ),
          );
        else if (op < 0.8) {
          // A status-only rewrite (the quota controller's), or the same limits as a number.
          const ns = pick(NAMESPACES);
          const current = [...s.quotasInNamespace(ns)];
          if (current.length) {
            const q = pick(current);
            const hard =
              rnd() < 0.2 && q.spec?.hard?.['requests.cpu'] === '2' ? { 'requests.cpu': 2 } : { ...q.spec?.hard };
            s.upsertQuota({
              ...q,
              spec: { ...q.spec, hard },
              status: { hard, used: { 'requests.cpu': pick(VALUES) } },
            });
          }
        } else s.deleteQuota(pick(NAMESPACES), pick(['tenantgate-quota', 'extra']));

        const pending = new Map<string, { project: string; resources: Resources }>();
        if (rnd() < 0.3)
          pending.set(pick(NAMESPACES), {
            project: pick(PROJECTS),
            resources: parseResources({ 'requests.cpu': pick(VALUES) }),
          });
        for (const name of PROJECTS) {
          const p = s.project(name);
          if (!p) continue;
          for (const ns of [...NAMESPACES, 'new-namespace']) {
            for (const pend of [undefined, pendingOf(pending)]) {
              const memoised = othersTotal(s, p, '', TEST_NOW, ns, pend);
              const expected = othersTotal(fresh, p, '', TEST_NOW, ns, pend);
              expect(
                text(memoised),
                `seed ${seed} step ${step} project ${name} namespace ${ns}${pend ? ' (pending)' : ''}`,
              ).toEqual(text(expected));
              compared += 1;
            }
          }
        }
      }
      expect(compared).toBeGreaterThan(1000);
    });
  }

  it('is not used for a Project object the snapshot does not hold (a copy being reviewed)', () => {
    const s = MemorySnapshot.of({
      projects: [project('alpha', '10', '1')],
      namespaces: [aNamespace('ns-0', { project: 'alpha' })],
      quotas: [aQuota('ns-0', { 'requests.cpu': '4' })],
    });
    const held = s.project('alpha')!;
    expect(s.projectSharesOf(held, '', TEST_NOW)).toBe(s.projectSharesOf(held, '', TEST_NOW));
    const copy = project('alpha', '10', '1');
    expect(s.projectSharesOf(copy, '', TEST_NOW)).not.toBe(s.projectSharesOf(copy, '', TEST_NOW));
    expect(s.projectSharesOf(held, 'other-cluster', TEST_NOW)).not.toBe(s.projectSharesOf(held, '', TEST_NOW));
  });

  it('keeps the memo across status-only quota updates and label-preserving namespace updates', () => {
    const s = MemorySnapshot.of({
      projects: [project('alpha', '10', '1')],
      namespaces: [aNamespace('ns-0', { project: 'alpha' })],
      quotas: [aQuota('ns-0', { 'requests.cpu': '4' })],
    });
    const held = s.project('alpha')!;
    const memo = s.projectSharesOf(held, '', TEST_NOW);
    s.upsertQuota(aQuota('ns-0', { 'requests.cpu': '4' }, { used: { 'requests.cpu': '3' } }));
    s.upsertNamespace(aNamespace('ns-0', { project: 'alpha', labels: { team: 'payments' } }));
    expect(s.projectSharesOf(held, '', TEST_NOW)).toBe(memo);
    s.upsertQuota(aQuota('ns-0', { 'requests.cpu': '5' }));
    expect(s.projectSharesOf(held, '', TEST_NOW)).not.toBe(memo);
    expect(formatResources(othersTotal(s, held, '', TEST_NOW, 'other'))).toEqual({ 'requests.cpu': '5' });
  });

  it('counts usage above the quota: a status update that raises the hold replaces the memo', () => {
    const s = MemorySnapshot.of({
      projects: [project('alpha', '10', '1')],
      namespaces: [aNamespace('ns-0', { project: 'alpha' })],
      quotas: [aQuota('ns-0', { 'requests.cpu': '4' }, { used: { 'requests.cpu': '4' } })],
    });
    const held = s.project('alpha')!;
    const memo = s.projectSharesOf(held, '', TEST_NOW);
    expect(formatResources(othersTotal(s, held, '', TEST_NOW, 'other'))).toEqual({ 'requests.cpu': '4' });
    // The quota was lowered to 1 while 4 CPUs of pods run: the apiserver evicts nothing.
    s.upsertQuota({
      ...aQuota('ns-0', { 'requests.cpu': '1' }),
      status: { hard: { 'requests.cpu': '1' }, used: { 'requests.cpu': '4' } },
    });
    expect(formatResources(othersTotal(s, held, '', TEST_NOW, 'other'))).toEqual({ 'requests.cpu': '4' });
    s.upsertQuota({
      ...aQuota('ns-0', { 'requests.cpu': '1' }),
      status: { hard: { 'requests.cpu': '1' }, used: { 'requests.cpu': '6' } },
    });
    expect(s.projectSharesOf(held, '', TEST_NOW)).not.toBe(memo);
    expect(formatResources(othersTotal(s, held, '', TEST_NOW, 'other'))).toEqual({ 'requests.cpu': '6' });
    s.upsertQuota({
      ...aQuota('ns-0', { 'requests.cpu': '1' }),
      status: { hard: { 'requests.cpu': '1' }, used: { 'requests.cpu': '0' } },
    });
    expect(formatResources(othersTotal(s, held, '', TEST_NOW, 'other'))).toEqual({ 'requests.cpu': '1' });
  });

  it('Q1 sees a quota raised in another namespace right after a decision memoised the old sum', () => {
    const s = MemorySnapshot.of({
      projects: [project('alpha', '10', '1')],
      namespaces: [aNamespace('alpha-a', { project: 'alpha' }), aNamespace('alpha-b', { project: 'alpha' })],
      quotas: [
        aQuota('alpha-a', { 'requests.cpu': '4', 'requests.memory': '1Gi' }),
        aQuota('alpha-b', { 'requests.cpu': '4', 'requests.memory': '1Gi' }),
      ],
    });
    const ctx = reviewContext({ username: 'alice', groups: [] } as UserInfo, s, { ...DEFAULT_CONFIG });
    const raise = (ns: string, cpu: string) =>
      reviewResourceQuota(
        ctx,
        'UPDATE',
        ns,
        aQuota(ns, { 'requests.cpu': cpu, 'requests.memory': '1Gi' }),
        aQuota(ns, { 'requests.cpu': '4', 'requests.memory': '1Gi' }),
      );
    expect(raise('alpha-a', '6').violations).toEqual([]); // 6 + 4 ≤ 10, and the sum for alpha-a is memoised
    s.upsertQuota(aQuota('alpha-b', { 'requests.cpu': '5', 'requests.memory': '1Gi' }));
    const after = raise('alpha-a', '6'); // 6 + 5 > 10
    expect(after.violations.map((v) => v.rule)).toEqual(['Q1']);
    expect(after.violations[0]!.message).toMatch(/of which 5 are allocated to other namespaces: at most 5 fits/);
    expect(formatResources(othersTotal(s, s.project('alpha')!, '', TEST_NOW, 'alpha-a'))).toEqual({
      'requests.cpu': '5',
      'requests.memory': '1Gi',
    });
  });
});

describe('the shares memo and the instant', () => {
  // A namespace first seen terminating without quotas counts the whole budget (terminatingWithoutQuota),
  // so its share, and every sum over it, follows the budget at the instant asked for: 10 CPUs, 15 while the burst runs.
  const DURING = Date.parse('2026-12-02T00:00:00Z');
  const AFTER = Date.parse('2026-12-05T00:00:00Z');
  const burst = {
    name: 'peak',
    from: '2026-12-01T00:00:00Z',
    until: '2026-12-03T00:00:00Z',
    reason: 'peak',
    quota: { hard: { 'requests.cpu': '5' } },
  };
  const web: Project = { ...project('web', '10', '1'), spec: { ...project('web', '10', '1').spec, bursts: [burst] } };
  const objects = () => ({
    projects: [web],
    namespaces: [
      { ...aNamespace('web-gone', { project: 'web' }), status: { phase: 'Terminating' } },
      aNamespace('web-live', { project: 'web' }),
    ],
    quotas: [aQuota('web-live', { 'requests.cpu': '2', 'requests.memory': '1Gi' })],
  });
  const cpu = (r: Resources) => r.get('requests.cpu')?.toString();

  it('a sum asked inside the burst and one asked after it differ through the same snapshot, whichever comes first', () => {
    const s = MemorySnapshot.of(objects());
    expect(cpu(othersTotal(s, web, '', DURING, 'web-live'))).toBe('15');
    expect(cpu(othersTotal(s, web, '', AFTER, 'web-live'))).toBe('10');
    expect(cpu(othersTotal(s, web, '', DURING, 'web-live'))).toBe('15');
    const t = MemorySnapshot.of(objects());
    expect(cpu(othersTotal(t, web, '', AFTER, 'web-live'))).toBe('10');
    expect(cpu(othersTotal(t, web, '', DURING, 'web-live'))).toBe('15');
  });

  it('the memo answers for another instant with the same budget (same active bursts) without recomputing', () => {
    const s = MemorySnapshot.of(objects());
    const first = s.projectSharesOf(web, '', DURING);
    expect(s.projectSharesOf(web, '', DURING + 60_000)).toBe(first);
    expect(s.projectSharesOf(web, '', AFTER)).not.toBe(first);
  });
});
