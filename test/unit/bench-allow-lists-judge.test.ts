/**
 * `npm run bench -- allow-lists` (bench/comparisons/allow-lists.ts): its arms, AL1 and AL2, the webhook arm's
 * registrations, the one-check policy.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import {
  allowListTargets,
  cpuRatios,
  FLOOR_ARM,
  floorPolicy,
  registrations,
  summarise,
  type Round,
} from '../../bench/comparisons/allow-lists.js';
import { judgeTargets } from '../../bench/lib/judge.js';
import { REPO_ROOT } from '../support/paths.js';

const round = (arm: Round['arm'], n: number, cpu: number, calls = 0): Round => ({
  arm,
  round: n,
  loadStart: 1,
  loadEnd: 1,
  p50: 10 + n,
  p99: 40,
  apiserverCpuPer1000: cpu,
  benchProcessCpuPer1000: 1,
  webhookCallsPerCreate: calls,
  errors: 0,
});

const run = (policiesCpu: number[], neitherCpu: number[], policiesCalls = 0): Round[] =>
  policiesCpu.flatMap((cpu, i) => [
    round('policies', i + 1, cpu, policiesCalls),
    round('webhook', i + 1, 9, 1),
    round('neither', i + 1, neitherCpu[i]!),
  ]);

describe('allow-lists bench judge', () => {
  it('meets AL1 and AL2 when the policies call no webhook and cost at most 1.10 × neither', () => {
    const targets = allowListTargets(run([6.3, 6.6, 6.2], [6, 6, 6]));
    expect(targets.map((t) => [t.id, t.judged, t.met])).toEqual([
      ['AL1', true, true],
      ['AL2', true, true],
    ]);
    expect(targets[1]!.value).toBe('1.050 × (median of 3 rounds: 1.05, 1.10, 1.03)');
    expect(judgeTargets(targets, []).missed).toEqual([]);
  });

  it('misses AL2 on the median of the per-round ratios above 1.10, and AL1 on any webhook call', () => {
    const expensive = allowListTargets(run([6.7, 7.0, 6.0], [6, 6, 6]));
    expect(expensive.map((t) => t.met)).toEqual([true, false]);
    const calling = allowListTargets(run([6, 6, 6], [6, 6, 6], 1));
    expect(calling.map((t) => t.met)).toEqual([false, true]);
    expect(judgeTargets(calling, []).missed).toEqual([
      'AL1 policies: no webhook call per pod create: 1.000 per create (the most of 3 rounds)',
    ]);
  });

  it('does not judge AL2 without a round of both arms, and fails --check on it unless skipped', () => {
    const targets = allowListTargets([round('policies', 1, 5), round('neither', 2, 5)]);
    expect(cpuRatios([round('policies', 1, 5), round('neither', 2, 5)])).toEqual([]);
    expect(targets.map((t) => [t.id, t.judged])).toEqual([
      ['AL1', true],
      ['AL2', false],
    ]);
    expect(judgeTargets(targets, []).missed).toHaveLength(1);
    expect(judgeTargets(targets, ['AL2']).missed).toEqual([]);
  });

  it('summarises each arm by its medians over rounds', () => {
    const summary = summarise(run([6, 8, 7], [5, 5, 6]));
    expect(summary.map((a) => [a.arm, a.apiserverCpuPer1000, a.p50, a.webhookCallsPerCreate])).toEqual([
      ['policies', 7, 12, 0],
      ['webhook', 9, 12, 1],
      ['neither', 5, 12, 0],
    ]);
  });

  it('summarises the one-check policy arm only when it ran, and judges AL2 against neither whatever it cost', () => {
    const withFloor = [
      ...run([6, 6, 6], [5, 5, 5]),
      round(FLOOR_ARM, 1, 5.5),
      round(FLOOR_ARM, 2, 5.6),
      round(FLOOR_ARM, 3, 5.4),
    ];
    expect(summarise(withFloor).map((a) => a.arm)).toEqual(['policies', 'webhook', 'neither', FLOOR_ARM]);
    expect(summarise(withFloor)[3]!.apiserverCpuPer1000).toBe(5.5);
    expect(cpuRatios(withFloor)).toEqual([1.2, 1.2, 1.2]);
  });

  it("binds the one-check policy like the shipped ones: the namespace's AllowList, Deny when it is missing", () => {
    const shipped = parseAllDocuments(
      readFileSync(join(REPO_ROOT, 'manifests', 'policies', 'allow-lists.yaml'), 'utf8'),
    ).map((d) => d.toJS() as { kind: string; metadata: { name: string }; spec: Record<string, unknown> });
    const pods = (kind: string) =>
      shipped.find((d) => d.kind === kind && d.metadata.name === 'tenantgate-allow-pods')!.spec;
    const [policy, binding] = floorPolicy() as Array<{ spec: Record<string, unknown> }>;
    expect(policy!.spec.paramKind).toEqual(pods('ValidatingAdmissionPolicy').paramKind);
    expect((policy!.spec.matchConstraints as { namespaceSelector: unknown }).namespaceSelector).toEqual(
      (pods('ValidatingAdmissionPolicy').matchConstraints as { namespaceSelector: unknown }).namespaceSelector,
    );
    expect(binding!.spec.paramRef).toEqual(pods('ValidatingAdmissionPolicyBinding').paramRef);
    // Without parameters: the same match, no parameters asked for, a check that reads none.
    const [bare, bareBinding] = floorPolicy(false) as Array<{ spec: Record<string, unknown> }>;
    expect(bare!.spec.matchConstraints).toEqual(policy!.spec.matchConstraints);
    expect(bare!.spec.paramKind).toBeUndefined();
    expect(bareBinding!.spec.paramRef).toBeUndefined();
    expect(JSON.stringify(bare!.spec.validations)).not.toContain('params');
  });

  it('adds pods back to the shipped allow entry for the webhook arm only', () => {
    const shipped = readFileSync(join(REPO_ROOT, 'manifests', 'webhook', 'webhook-configurations.yaml'), 'utf8');
    const podRules = (text: string) =>
      parseAllDocuments(text)
        .map(
          (d) =>
            d.toJS() as {
              kind: string;
              webhooks: Array<{ name: string; rules: Array<{ apiGroups: string[]; resources: string[] }> }>;
            },
        )
        .filter((d) => d.kind === 'ValidatingWebhookConfiguration')
        .flatMap((d) => d.webhooks.filter((w) => w.name === 'allow.tenantgate.io'))
        .flatMap((w) => w.rules.filter((r) => r.apiGroups.includes('') && r.resources.includes('pods')));
    expect(podRules(registrations(shipped, false)), 'the shipped allow entry matches no pods (ADR 0095)').toEqual([]);
    expect(podRules(registrations(shipped, true))).toHaveLength(1);
  });
});
