import { describe, expect, it } from 'vitest';
import {
  activeBursts,
  burstPhase,
  classifyBursts,
  namespaceRaise,
  nextTransition,
  withActiveBursts,
} from '../../src/validate/bursts.js';
import { checkBurstDeclarations, checkEndedBursts } from '../../src/validate/rules/bursts.js';
import { budgetList, budgetOf } from '../../src/validate/budget/layers.js';
import { fixedClock, getProcessClock, setProcessClock, processNow } from '../../src/clock.js';
import { parseInstant } from '../../src/clock.js';
import { fileClock } from '../support/test-clock/file-clock.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Burst, Project } from '../../src/validate/types.js';

const T = (s: string) => Date.parse(s);
const FROM = '2026-12-01T00:00:00Z';
const UNTIL = '2026-12-03T00:00:00Z';

const burst = (extra: Partial<Burst> = {}): Burst => ({
  name: 'black-friday',
  from: FROM,
  until: UNTIL,
  reason: 'Black Friday traffic',
  quota: { hard: { 'requests.cpu': '8' } },
  ...extra,
});

const project = (bursts: Burst[] = [burst()], extra: Partial<Project['spec']> = {}): Project => ({
  apiVersion: 'tenantgate.io/v1alpha1',
  kind: 'Project',
  metadata: { name: 'ml' },
  spec: {
    tenant: 'research',
    quota: { hard: { 'requests.cpu': '80', 'requests.memory': '320Gi' } },
    namespaces: [{ name: 'ml-serving', quota: { hard: { 'requests.cpu': '16', 'requests.memory': '64Gi' } } }],
    bursts,
    ...extra,
  },
});

describe('phases and the active set', () => {
  it('a burst is upcoming before from, active from `from` (included) to `until` (excluded), ended after', () => {
    const b = burst();
    expect(burstPhase(b, T(FROM) - 1)).toBe('upcoming');
    expect(burstPhase(b, T(FROM))).toBe('active');
    expect(burstPhase(b, T(UNTIL) - 1)).toBe('active');
    expect(burstPhase(b, T(UNTIL))).toBe('ended');
    expect(burstPhase(burst({ from: 'tomorrow' }), T(FROM))).toBe('ended'); // invalid: never active
  });

  it('classifies the bursts of a project', () => {
    const p = project([
      burst({ name: 'old', from: '2026-01-01T00:00:00Z', until: '2026-01-02T00:00:00Z' }),
      burst(),
      burst({ name: 'later', from: '2027-01-01T00:00:00Z', until: '2027-01-02T00:00:00Z' }),
    ]);
    const c = classifyBursts(p, T('2026-12-02T00:00:00Z'));
    expect(c.ended.map((b) => b.name)).toEqual(['old']);
    expect(c.active.map((b) => b.name)).toEqual(['black-friday']);
    expect(c.upcoming.map((b) => b.name)).toEqual(['later']);
  });

  it('a burst naming a cluster is active on that cluster only', () => {
    const p = project([burst({ cluster: 'prod-eu' })], { clusters: { 'prod-eu': {} } });
    expect(activeBursts(p, 'prod-eu', T(FROM))).toHaveLength(1);
    expect(activeBursts(p, 'prod-us', T(FROM))).toHaveLength(0);
  });

  it('the next transition is the nearest from or until after the instant', () => {
    const p = project([burst(), burst({ name: 'b', from: '2026-12-02T00:00:00Z', until: '2026-12-05T00:00:00Z' })]);
    expect(nextTransition(p, T('2026-11-01T00:00:00Z'))).toBe(T(FROM));
    expect(nextTransition(p, T(FROM))).toBe(T('2026-12-02T00:00:00Z'));
    expect(nextTransition(p, T('2026-12-02T00:00:00Z'))).toBe(T(UNTIL));
    expect(nextTransition(p, T(UNTIL))).toBe(T('2026-12-05T00:00:00Z'));
    expect(nextTransition(p, T('2026-12-05T00:00:00Z'))).toBeUndefined();
    expect(nextTransition(project([]), 0)).toBeUndefined();
  });
});

describe('withActiveBursts: the budget with active bursts, cached by identity', () => {
  it('adds an active burst to the budget; outside the window the budget itself is returned', () => {
    const p = project();
    const budget = p.spec.quota!.hard!;
    expect(withActiveBursts(p, '', budget, T(FROM) - 1)).toBe(budget);
    expect(withActiveBursts(p, '', budget, T(UNTIL))).toBe(budget);
    expect(withActiveBursts(p, '', budget, T(FROM))).toEqual({ 'requests.cpu': '88', 'requests.memory': '320Gi' });
  });

  it('returns the same object for the same spec, budget and active set, a different one when the set changes', () => {
    const p = project([
      burst(),
      burst({
        name: 'b',
        from: '2026-12-02T00:00:00Z',
        until: '2026-12-05T00:00:00Z',
        quota: { hard: { 'requests.memory': '32Gi' } },
      }),
    ]);
    const budget = p.spec.quota!.hard!;
    const first = withActiveBursts(p, '', budget, T(FROM));
    expect(withActiveBursts(p, '', budget, T(FROM) + 3_600_000)).toBe(first); // same set, an hour later
    const both = withActiveBursts(p, '', budget, T('2026-12-02T00:00:00Z'));
    expect(both).not.toBe(first);
    expect(both).toEqual({ 'requests.cpu': '88', 'requests.memory': '352Gi' });
    expect(withActiveBursts(p, '', budget, T('2026-12-02T12:00:00Z'))).toBe(both);
    // the parse cache keyed by identity then parses once: budgetOf returns the same Map
    expect(budgetOf(p, '', T(FROM))).toBe(budgetOf(p, '', T(FROM) + 1));
  });

  it('a project without bursts gets its declared budget object back (no allocation)', () => {
    const p = project([]);
    expect(budgetList(p, '', 0)).toBe(p.spec.quota!.hard);
  });

  it('ignores a burst resource the budget does not have (B1 refuses it)', () => {
    const p = project([burst({ quota: { hard: { 'requests.nvidia.com/gpu': '2', 'requests.cpu': '500m' } } })]);
    expect(withActiveBursts(p, '', p.spec.quota!.hard!, T(FROM))).toEqual({
      'requests.cpu': '80500m',
      'requests.memory': '320Gi',
    });
  });

  it('budgetOf decides at the instant it is given', () => {
    const p = project();
    expect(budgetOf(p, '', T(FROM)).get('requests.cpu')?.toString()).toBe('88');
    expect(budgetOf(p, '', T(UNTIL)).get('requests.cpu')?.toString()).toBe('80');
  });

  it('processNow reads the clock the process installed (what the edges hand to budgetOf)', () => {
    const before = getProcessClock();
    try {
      setProcessClock(fixedClock(T(FROM)));
      // eslint-disable-next-line no-restricted-syntax -- processNow is the function under test here
      expect(processNow()).toBe(T(FROM));
    } finally {
      setProcessClock(before);
    }
  });

  it('namespaceRaise sums the active bursts naming the namespace', () => {
    const p = project([
      burst({ namespace: 'ml-serving' }),
      burst({ name: 'b', namespace: 'ml-serving', quota: { hard: { 'requests.cpu': '2' } } }),
      burst({ name: 'c' }),
    ]);
    expect(namespaceRaise(p, '', 'ml-serving', T(FROM))).toEqual({ 'requests.cpu': '10' });
    expect(namespaceRaise(p, '', 'ml-serving', T(UNTIL))).toEqual({});
  });
});

describe('B1: the declaration', () => {
  it('a valid burst has no finding', () => {
    expect(checkBurstDeclarations(project([burst({ namespace: 'ml-serving' })]))).toEqual([]);
  });

  it('names from ≥ until, a non-RFC 3339 instant, an unbudgeted resource, an undeclared namespace and a duplicate name', () => {
    const vs = checkBurstDeclarations(
      project([
        burst({ until: FROM }),
        burst({
          name: 'b',
          from: '2026-12-01',
          quota: { hard: { 'requests.nvidia.com/gpu': '1' } },
          namespace: 'ml-batch',
        }),
        burst({ name: 'b' }),
      ]),
    );
    const messages = vs.map((v) => v.message);
    expect(vs.every((v) => v.rule === 'B1')).toBe(true);
    expect(messages).toContain(
      'Project ml: spec.bursts[0] (black-friday): until 2026-12-01T00:00:00Z is not after from 2026-12-01T00:00:00Z; a burst lasts from `from` (included) to `until` (excluded)',
    );
    expect(messages).toContain(
      'Project ml: spec.bursts[1] (b): from is "2026-12-01", which is not an RFC 3339 instant (allowed: e.g. "2026-12-01T00:00:00Z")',
    );
    expect(messages).toContain(
      'Project ml: spec.bursts[1] (b): quota.hard raises requests.nvidia.com/gpu, which the project does not budget (allowed: requests.cpu, requests.memory)',
    );
    expect(messages).toContain(
      'Project ml: spec.bursts[1] (b): namespace "ml-batch" is not declared in spec.namespaces (allowed: ml-serving)',
    );
    expect(messages).toContain(
      `Project ml: spec.bursts[2] (b): name "b" is also spec.bursts[1]'s; burst names are unique in a project`,
    );
    expect(vs.find((v) => v.message.includes('ml-batch'))?.path).toEqual(['spec', 'bursts', 1, 'namespace']);
  });
});

describe('B2: an ended burst cannot be added or changed', () => {
  const after = T('2026-12-04T00:00:00Z');
  it('unchanged or removed is fine', () => {
    const old = project([burst()]);
    expect(checkEndedBursts(old, project([burst()]), after)).toEqual([]);
    expect(checkEndedBursts(old, project([]), after)).toEqual([]);
  });

  it('adding an ended burst is refused', () => {
    const vs = checkEndedBursts(project([]), project([burst()]), after);
    expect(vs).toEqual([
      {
        rule: 'B2',
        path: ['spec', 'bursts', 0, 'until'],
        message:
          'Project ml: spec.bursts[0] (black-friday): until 2026-12-03T00:00:00Z has passed (now 2026-12-04T00:00:00Z); a burst that has ended cannot be added',
      },
    ]);
    expect(checkEndedBursts(undefined, project([burst()]), after)).toHaveLength(1); // create
  });

  it("changing an ended burst's until, even into the future, is refused", () => {
    const vs = checkEndedBursts(project([burst()]), project([burst({ until: '2026-12-10T00:00:00Z' })]), after);
    expect(vs.map((v) => v.message)).toEqual([
      'Project ml: spec.bursts[0] (black-friday) ended at 2026-12-03T00:00:00Z and cannot be changed (now 2026-12-04T00:00:00Z); keep it as it was or remove it, and declare a new burst with a new name for a new window',
    ]);
  });

  it('changing an active or upcoming burst is fine; a new name for a new window too', () => {
    expect(
      checkEndedBursts(
        project([burst()]),
        project([burst({ until: '2026-12-10T00:00:00Z' })]),
        T('2026-12-02T00:00:00Z'),
      ),
    ).toEqual([]);
    expect(
      checkEndedBursts(
        project([burst()]),
        project([burst(), burst({ name: 'again', from: '2026-12-05T00:00:00Z', until: '2026-12-06T00:00:00Z' })]),
        after,
      ),
    ).toEqual([]);
  });
});

describe('the test clock file', () => {
  it('parses RFC 3339 and says where a bad value came from', () => {
    expect(parseInstant('2026-12-01T00:00:00Z\n', 'f')).toBe(T(FROM));
    expect(() => parseInstant('2026-12-01', '/tmp/clock')).toThrow(
      '/tmp/clock: "2026-12-01" is not an RFC 3339 instant (e.g. 2026-12-01T00:00:00Z)',
    );
  });

  it("runs from the file's instant at real speed, and follows a rewrite", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-clock-'));
    const file = join(dir, 'clock');
    writeFileSync(file, `${FROM}\n`);
    const clock = fileClock(file);
    const first = clock.now();
    expect(first - T(FROM)).toBeGreaterThanOrEqual(0);
    expect(first - T(FROM)).toBeLessThan(5_000);
    await new Promise((r) => setTimeout(r, 150));
    expect(clock.now()).toBeGreaterThan(first); // it runs
    writeFileSync(file, `${UNTIL}\n`);
    await new Promise((r) => setTimeout(r, 150));
    expect(clock.now() - T(UNTIL)).toBeGreaterThanOrEqual(0);
    expect(clock.now() - T(UNTIL)).toBeLessThan(5_000);
    rmSync(dir, { recursive: true });
  });
});
