/**
 * Device budgets (docs/budgets.md#devices): extended resources (`requests.nvidia.com/gpu`) and DRA keys
 * (`<deviceclass>.deviceclass.resource.k8s.io/devices`, `count/resourceclaims.resource.k8s.io`) are
 * budgeted, covered (Q2) and defaulted as `requests.cpu` is — through validate, the webhook's rules,
 * the controller's default quotas, render, plan and the budget view — and the quota keys Kubernetes
 * refuses or never counts are S1 (src/validate/rules/quota-keys.ts, docs/adr/0067-budgets.md).
 */
import { TEST_NOW } from '../support/instant.js';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { planDefaultQuotas } from '../../src/controller/defaults.js';
import { projectSeries } from '../../src/controller/project-metrics.js';
import { planChange } from '../../src/plan/plan.js';
import { renderProjectsLazily } from '../../src/render/render.js';
import { reviewNamespace, reviewProject, reviewResourceQuota } from '../../src/validate/admission.js';
import { validateDeclarations } from '../../src/validate/offline.js';
import {
  checkLimitRangeKeys,
  checkQuotaKeys,
  limitRangeNameProblem,
  quotaNameProblem,
  quotaValueProblem,
} from '../../src/validate/rules/quota-keys.js';
import { Quantity } from '../../src/quantity/quantity.js';
import { validateProjectSchema } from '../../src/validate/schema/validate-schema.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import type { Project, ProjectSpec, ResourceList } from '../../src/validate/types.js';
import { budgetObject } from '../../src/view/api.js';
import { aNamespace, aProject, aQuota, aUser, reviewContext } from '../support/fixtures.js';

const GPU = 'requests.nvidia.com/gpu';
const DEV = 'gpu.example.com.deviceclass.resource.k8s.io/devices';
const CLAIMS = 'count/resourceclaims.resource.k8s.io';

const ADMIN = aUser('kubernetes-admin', ['system:masters']);
const ALICE = aUser('alice', ['acme:ml-admins']);

/** Project ml: 8 GPUs, 4 DRA devices, 10 claims, 16 CPUs; defaults 2 / 1 / 3 / 4. */
function ml(spec: Partial<ProjectSpec> = {}): Project {
  return aProject('ml', {
    owners: [{ kind: 'Group', name: 'acme:ml-admins' }],
    quota: { hard: { 'requests.cpu': '16', [GPU]: '8', [DEV]: '4', [CLAIMS]: '10' } },
    namespaceDefaults: { quota: { hard: { 'requests.cpu': '4', [GPU]: '2', [DEV]: '1', [CLAIMS]: '3' } } },
    ...spec,
  });
}

const hard = (cpu: string, gpu: string, dev: string, claims: string): ResourceList => ({
  'requests.cpu': cpu,
  [GPU]: gpu,
  [DEV]: dev,
  [CLAIMS]: claims,
});

describe('device keys are budget keys like requests.cpu (offline: validate and render)', () => {
  it('the schema accepts extended-resource and DRA keys; declarations that fit give no finding', () => {
    const p = ml({
      namespaces: [{ name: 'ml-train', quota: { hard: hard('8', '6', '3', '7') } }, { name: 'ml-serve' }],
    });
    expect(validateProjectSchema(p)).toEqual([]);
    expect(checkQuotaKeys(p)).toEqual([]);
    expect(validateDeclarations([p], DEFAULT_CONFIG, TEST_NOW)).toEqual([]);
  });

  it('Q1 per device key, exact: 6 + 3 GPUs over 8, 3 + 2 devices over 4, defaults counted and named', () => {
    const p = ml({
      namespaces: [
        { name: 'ml-train', quota: { hard: hard('8', '6', '3', '7') } },
        { name: 'ml-serve', quota: { hard: hard('4', '3', '2', '3') } },
        { name: 'ml-dev' },
      ],
    });
    const v = validateDeclarations([p], DEFAULT_CONFIG, TEST_NOW);
    expect(v.map((x) => [x.rule, x.path])).toEqual([
      ['Q1', ['spec', 'quota', 'hard', CLAIMS]],
      ['Q1', ['spec', 'quota', 'hard', DEV]],
      ['Q1', ['spec', 'quota', 'hard', GPU]],
    ]);
    expect(v[1]!.message).toBe(
      `project ml: namespaces allocate ${DEV} 6 but the budget is 4 (ml-train 3, ml-serve 2, ml-dev 1 (defaults)): 2 over`,
    );
    expect(v[2]!.message).toBe(
      `project ml: namespaces allocate ${GPU} 11 but the budget is 8 (ml-train 6, ml-serve 3, ml-dev 2 (defaults)): 3 over`,
    );
    expect(v[0]!.message).toContain(`${CLAIMS} 13 but the budget is 10`);
  });

  it('Q2: a declared quota without the budgeted device key leaves it uncovered; the default covers it', () => {
    const p = ml({
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '4', [GPU]: '2', [CLAIMS]: '3' } } },
      namespaces: [{ name: 'ml-train', quota: { hard: { 'requests.cpu': '8', [GPU]: '2', [CLAIMS]: '3' } } }],
    });
    const v = validateDeclarations([p], DEFAULT_CONFIG, TEST_NOW);
    expect(v.map((x) => x.rule)).toEqual(['Q2']);
    expect(v[0]!.message).toContain(DEV);
    // with the device class in the defaults, the namespace without a declared quota is covered
    expect(validateDeclarations([ml({ namespaces: [{ name: 'ml-dev' }] })], DEFAULT_CONFIG, TEST_NOW)).toEqual([]);
  });

  it('render: the quota carries the device keys as declared, the LimitRange defaults the extended resource by its container name', () => {
    const p = ml({
      namespaces: [{ name: 'ml-train', quota: { hard: hard('8', '6', '3', '7') } }, { name: 'ml-dev' }],
      namespaceDefaults: {
        quota: { hard: hard('4', '2', '1', '3') },
        limitRange: {
          default: { 'nvidia.com/gpu': '1', cpu: '1' },
          defaultRequest: { 'nvidia.com/gpu': '1', cpu: '500m' },
          max: { 'nvidia.com/gpu': '2' },
        },
      },
    });
    expect(validateDeclarations([p], DEFAULT_CONFIG, TEST_NOW)).toEqual([]);
    const objects = [...renderProjectsLazily([p], DEFAULT_CONFIG, { at: TEST_NOW, cluster: '' })];
    const quota = (ns: string) =>
      objects.find(
        (o) => o.kind === 'ResourceQuota' && (o.metadata as { namespace: string }).namespace === ns,
      ) as unknown as { spec: { hard: ResourceList } };
    expect(quota('ml-train').spec.hard).toEqual({ [CLAIMS]: '7', [DEV]: '3', 'requests.cpu': '8', [GPU]: '6' });
    expect(Object.keys(quota('ml-train').spec.hard)).toEqual([CLAIMS, DEV, 'requests.cpu', GPU]); // sorted, as render sorts every key
    expect(quota('ml-dev').spec.hard).toEqual(hard('4', '2', '1', '3'));
    const lr = objects.find(
      (o) => o.kind === 'LimitRange' && (o.metadata as { namespace: string }).namespace === 'ml-dev',
    ) as unknown as { spec: { limits: unknown[] } };
    expect(lr.spec.limits).toEqual([
      {
        type: 'Container',
        default: { cpu: '1', 'nvidia.com/gpu': '1' },
        defaultRequest: { cpu: '500m', 'nvidia.com/gpu': '1' },
        max: { 'nvidia.com/gpu': '2' },
      },
    ]);
  });
});

describe('device keys in the webhook rules (Q1 counted by usage, Q2, defaults) and the controller', () => {
  const snap = (used: ResourceList = {}) =>
    MemorySnapshot.of({
      projects: [ml()],
      namespaces: [aNamespace('ml-a', { project: 'ml' }), aNamespace('ml-b', { project: 'ml' })],
      quotas: [
        aQuota('ml-a', hard('4', '4', '2', '5'), {
          used: { 'requests.cpu': '0', [GPU]: '0', [DEV]: '0', [CLAIMS]: '0', ...used },
        }),
        aQuota('ml-b', hard('4', '2', '2', '5')),
      ],
    });

  it('Q1: raising ml-b to 3 devices is refused while ml-a holds 2; lowering ml-a frees nothing its claims still use', () => {
    const raise = (s: MemorySnapshot, dev: string) =>
      reviewResourceQuota(
        reviewContext(ALICE, s),
        'UPDATE',
        'ml-b',
        aQuota('ml-b', hard('4', '2', dev, '5')),
        aQuota('ml-b', hard('4', '2', '2', '5')),
      );
    const refused = raise(snap(), '3');
    expect(refused.violations.map((v) => v.rule)).toEqual(['Q1']);
    expect(refused.violations[0]!.message).toBe(
      `ResourceQuota ml-b/tenantgate-quota asks ${DEV} 3, project ml has 4 of which 2 are allocated to other namespaces: at most 2 fits`,
    );
    expect(raise(snap(), '2').violations).toEqual([]);
    // ml-a's quota lowered to 0 devices while its claims use 2: still held, the raise still refused, the message says why
    const lowered = MemorySnapshot.of({
      projects: [ml()],
      namespaces: [aNamespace('ml-a', { project: 'ml' }), aNamespace('ml-b', { project: 'ml' })],
      quotas: [
        aQuota('ml-a', hard('4', '4', '0', '5'), { used: { [DEV]: '2', [CLAIMS]: '2' } }),
        aQuota('ml-b', hard('4', '2', '2', '5')),
      ],
    });
    const held = raise(lowered, '3');
    expect(held.violations.map((v) => v.rule)).toEqual(['Q1']);
    expect(held.violations[0]!.message).toContain(
      'counted by usage: ml-a holds gpu.example.com.deviceclass.resource.k8s.io/devices 2 (its quota says 0; in use or still enforced)',
    );
  });

  it('Q1 for the extended resource: 4 + 5 GPUs over 8; Q2: a quota that drops the device key is refused', () => {
    const s = snap();
    const gpu = reviewResourceQuota(
      reviewContext(ALICE, s),
      'UPDATE',
      'ml-b',
      aQuota('ml-b', hard('4', '5', '2', '5')),
      aQuota('ml-b', hard('4', '2', '2', '5')),
    );
    expect(gpu.violations.map((v) => v.rule)).toEqual(['Q1']);
    expect(gpu.violations[0]!.message).toContain(
      `asks ${GPU} 5, project ml has 8 of which 4 are allocated to other namespaces: at most 4 fits`,
    );
    const { [DEV]: _dropped, ...withoutDev } = hard('4', '2', '2', '5');
    const q2 = reviewResourceQuota(
      reviewContext(ALICE, s),
      'UPDATE',
      'ml-b',
      aQuota('ml-b', withoutDev),
      aQuota('ml-b', hard('4', '2', '2', '5')),
    );
    expect(q2.violations.map((v) => v.rule)).toEqual(['Q2']);
    expect(q2.violations[0]!.message).toContain(DEV);
  });

  it('a new namespace counts with the device defaults: a third namespace would take devices 1 of 0 left', () => {
    const s = MemorySnapshot.of({
      projects: [ml()],
      namespaces: [aNamespace('ml-a', { project: 'ml' }), aNamespace('ml-b', { project: 'ml' })],
      quotas: [aQuota('ml-a', hard('4', '2', '2', '3')), aQuota('ml-b', hard('4', '2', '2', '3'))],
    });
    const v = reviewNamespace(reviewContext(ALICE, s), 'CREATE', aNamespace('ml-c', { project: 'ml' }), undefined);
    expect(v.violations.map((x) => x.rule)).toEqual(['Q1']);
    expect(v.violations[0]!.message).toContain(DEV);
  });

  it('the controller gives a namespace without a quota the device defaults when they fit, and says what is short when not', () => {
    const fits = MemorySnapshot.of({
      projects: [ml()],
      namespaces: [aNamespace('ml-a', { project: 'ml' }), aNamespace('ml-new', { project: 'ml' })],
      quotas: [aQuota('ml-a', hard('4', '4', '2', '5'))],
    });
    expect(planDefaultQuotas(ml(), fits, '', TEST_NOW).create).toEqual([
      { namespace: 'ml-new', hard: hard('4', '2', '1', '3') },
    ]);
    const full = MemorySnapshot.of({
      projects: [ml()],
      namespaces: [aNamespace('ml-a', { project: 'ml' }), aNamespace('ml-new', { project: 'ml' })],
      quotas: [aQuota('ml-a', hard('4', '4', '4', '5'))],
    });
    const plan = planDefaultQuotas(ml(), full, '', TEST_NOW);
    expect(plan.create).toEqual([]);
    expect(plan.blocked.get('ml-new')).toBe(
      `quota tenantgate-quota does not fit the project budget: ${DEV} 1 asked, 0 of 4 left`,
    );
  });

  it('the project metrics carry the device keys as the resource label, in whole devices', () => {
    const series = projectSeries(snap({ [DEV]: '2', [GPU]: '1' }), '');
    const of = (samples: Array<{ labels: Record<string, string>; value: number }>, resource: string) =>
      samples.find((x) => x.labels['resource'] === resource)?.value;
    expect([of(series.budget, DEV), of(series.allocated, DEV), of(series.used, DEV), of(series.headroom, DEV)]).toEqual(
      [4, 4, 2, 0],
    );
    expect([of(series.budget, GPU), of(series.allocated, GPU), of(series.used, GPU), of(series.headroom, GPU)]).toEqual(
      [8, 6, 1, 2],
    );
    expect([of(series.budget, CLAIMS), of(series.allocated, CLAIMS)]).toEqual([10, 10]);
  });

  it('the budget view and plan show the device keys with their budget, allocation and use', () => {
    const s = snap({ [DEV]: '2', [CLAIMS]: '2' });
    const b = budgetObject(s, ml(), 'ml-a', '', TEST_NOW);
    expect(b.resources.find((r) => r.resource === DEV)).toEqual({
      resource: DEV,
      budget: '4',
      allocated: '4',
      used: '2',
      headroom: '0',
    });
    expect(b.namespace.used).toMatchObject({ [DEV]: '2', [CLAIMS]: '2' });
    const live = {
      cluster: 'local',
      projects: [ml()],
      namespaces: [aNamespace('ml-a', { project: 'ml' }), aNamespace('ml-b', { project: 'ml' })],
      quotas: [
        aQuota('ml-a', hard('4', '4', '2', '5'), { used: { [DEV]: '2' } }),
        aQuota('ml-b', hard('4', '2', '2', '5')),
      ],
    };
    const lowered = ml({ quota: { hard: { 'requests.cpu': '16', [GPU]: '8', [DEV]: '3', [CLAIMS]: '10' } } });
    const plan = planChange({
      at: TEST_NOW,
      config: DEFAULT_CONFIG,
      base: { ref: 'main', projects: [ml()] },
      after: [lowered],
      live: [live],
    });
    const e = plan.entries[0]!;
    expect(e.resources.find((r) => r.resource === DEV)).toMatchObject({
      budgetBefore: '4',
      budgetAfter: '3',
      allocatedAfter: '4',
      used: '2',
      headroomAfter: '-1',
    });
    expect(e.findings.map((f) => f.rule)).toEqual(['Q1']);
  });
});

describe('S1: quota keys Kubernetes refuses or never counts (src/validate/rules/quota-keys.ts)', () => {
  it('accepts every form a quota evaluator counts', () => {
    for (const name of [
      GPU,
      DEV,
      CLAIMS,
      'count/pods',
      'requests.cpu',
      'limits.memory',
      'pods',
      'hugepages-2Mi',
      'requests.hugepages-1Gi',
      'services.loadbalancers',
      'gold.storageclass.storage.k8s.io/requests.storage',
      'gold.storageclass.storage.k8s.io/persistentvolumeclaims',
      'requests.deviceclass.resource.kubernetes.io/gpu.example.com',
    ]) {
      expect(quotaNameProblem(name), name).toBeUndefined();
    }
  });

  it('refuses limits.<extended>, a bare extended resource, a non-standard bare name and a non-qualified name, saying what is allowed', () => {
    expect(quotaNameProblem('limits.nvidia.com/gpu')).toBe(
      "is accepted by the apiserver but never counted by Kubernetes' quota: an extended resource is counted only as requests.<name> (no overcommit, so no limits.); allowed: requests.nvidia.com/gpu",
    );
    expect(quotaNameProblem('nvidia.com/gpu')).toContain('never counted');
    expect(quotaNameProblem('nvidia.com/gpu')).toContain(
      '(for the extended resource nvidia.com/gpu: requests.nvidia.com/gpu)',
    );
    expect(quotaNameProblem('gpu.example.com.deviceclass.resource.k8s.io/device')).toContain(
      '<deviceclass>.deviceclass.resource.k8s.io/devices',
    );
    expect(quotaNameProblem('.deviceclass.resource.k8s.io/devices')).toBeDefined();
    expect(quotaNameProblem('gpus')).toContain(
      'refused by the apiserver in a ResourceQuota (must be a standard resource for quota',
    );
    expect(quotaNameProblem('resourceclaims.resource.k8s.io')).toContain('refused by the apiserver');
    expect(quotaNameProblem('requests.nvidia.com/gpu/x')).toContain('is not a resource name the apiserver accepts');
  });

  it('refuses negative values and fractions of whole-unit resources (devices, claims, pods, bare extended), not of requests.<extended>', () => {
    const p = (name: string, v: string) => quotaValueProblem(name, Quantity.parse(v));
    expect(p(DEV, '1.5')).toBe(
      `must be a whole number: Kubernetes counts ${DEV} in whole units (the apiserver refuses a fraction in a ResourceQuota)`,
    );
    expect(p(CLAIMS, '500m')).toBeDefined();
    expect(p('pods', '2.5')).toBeDefined();
    expect(p(DEV, '2')).toBeUndefined();
    expect(p('requests.cpu', '1.5')).toBeUndefined();
    expect(p(GPU, '1.5')).toBeUndefined(); // the apiserver accepts it (a pod asks whole GPUs anyway)
    expect(p(GPU, '-1')).toBe('must be 0 or more (the apiserver refuses a negative quota)');
  });

  it('validate names the field, the value and what is allowed, in every quota list of the spec', () => {
    const p = ml({
      quota: { hard: { 'requests.cpu': '16', 'limits.nvidia.com/gpu': '8', [DEV]: '4' } },
      namespaceDefaults: { quota: { hard: { 'requests.cpu': '4', [DEV]: '0.5' } } },
      namespaces: [{ name: 'ml-train', quota: { hard: { 'requests.cpu': '4', 'nvidia.com/gpu': '2', [DEV]: '1' } } }],
    });
    const v = validateDeclarations([p], DEFAULT_CONFIG, TEST_NOW).filter((x) => x.rule === 'S1');
    expect(v.map((x) => x.path)).toEqual([
      ['spec', 'quota', 'hard', 'limits.nvidia.com/gpu'],
      ['spec', 'namespaceDefaults', 'quota', 'hard', DEV],
      ['spec', 'namespaces', 0, 'quota', 'hard', 'nvidia.com/gpu'],
    ]);
    expect(v[0]!.message).toBe(
      'Project ml: spec.quota.hard[limits.nvidia.com/gpu] names "limits.nvidia.com/gpu", which is accepted by the apiserver but never counted by Kubernetes\' quota: an extended resource is counted only as requests.<name> (no overcommit, so no limits.); allowed: requests.nvidia.com/gpu',
    );
    expect(v[1]!.message).toBe(
      `Project ml: spec.namespaceDefaults.quota.hard[${DEV}] is "0.5", which must be a whole number: Kubernetes counts ${DEV} in whole units (the apiserver refuses a fraction in a ResourceQuota)`,
    );
    expect(v[2]!.message).toContain('spec.namespaces[0].quota.hard[nvidia.com/gpu] names "nvidia.com/gpu"');
  });

  it('checks the names in the fleet budget, tiers and bursts too, leaving their values to F1 and B1', () => {
    const p = ml({
      fleet: { quota: { hard: { 'nvidia.com/gpu': '8', [DEV]: '-1' } }, clusters: ['eu'] },
      tiers: { batch: { quota: { hard: { 'limits.nvidia.com/gpu': '2' } } } },
      bursts: [
        {
          name: 'demo',
          from: '2026-01-01T00:00:00Z',
          until: '2026-01-02T00:00:00Z',
          reason: 'demo',
          quota: { hard: { gpus: '1', [DEV]: '0.5' } },
        },
      ],
    });
    expect(checkQuotaKeys(p).map((v) => v.path)).toEqual([
      ['spec', 'fleet', 'quota', 'hard', 'nvidia.com/gpu'],
      ['spec', 'tiers', 'batch', 'quota', 'hard', 'limits.nvidia.com/gpu'],
      ['spec', 'bursts', 0, 'quota', 'hard', 'gpus'],
    ]);
  });

  it('plan reports a change to such a key as the webhook would refuse its sync: S1', () => {
    const live = {
      cluster: 'local',
      projects: [ml()],
      namespaces: [aNamespace('ml-a', { project: 'ml' })],
      quotas: [aQuota('ml-a', hard('4', '2', '1', '3'))],
    };
    const after = ml({
      quota: { hard: { 'requests.cpu': '16', 'limits.nvidia.com/gpu': '8', [DEV]: '4', [CLAIMS]: '10' } },
    });
    const plan = planChange({
      at: TEST_NOW,
      config: DEFAULT_CONFIG,
      base: { ref: 'main', projects: [ml()] },
      after: [after],
      live: [live],
    });
    expect(plan.entries[0]!.findings.map((f) => [f.rule, f.by])).toEqual([['S1', 'webhook']]);
    expect(plan.entries[0]!.findings[0]!.message).toContain('allowed: requests.nvidia.com/gpu');
  });

  it('namespaceDefaults.limitRange: container resource names, and an extended resource defaulted to one value', () => {
    for (const name of ['cpu', 'memory', 'ephemeral-storage', 'hugepages-2Mi', 'nvidia.com/gpu', 'example.com/fpga'])
      expect(limitRangeNameProblem(name), name).toBeUndefined();
    expect(limitRangeNameProblem('requests.nvidia.com/gpu')).toBe(
      "is refused by the apiserver in a LimitRange (doesn't follow extended resource name standard); a LimitRange names the extended resource itself: nvidia.com/gpu",
    );
    expect(limitRangeNameProblem('requests.cpu')).toContain('a LimitRange names a container resource: cpu');
    expect(limitRangeNameProblem('pods')).toContain('must be a standard resource for containers');
    const p = ml({
      namespaceDefaults: {
        quota: { hard: hard('4', '2', '1', '3') },
        limitRange: {
          default: { cpu: '1', 'nvidia.com/gpu': '2', 'requests.nvidia.com/gpu': '1' },
          defaultRequest: { cpu: '500m', 'nvidia.com/gpu': '1' },
        },
      },
    });
    const v = checkLimitRangeKeys(p);
    expect(v.map((x) => x.path)).toEqual([
      ['spec', 'namespaceDefaults', 'limitRange', 'default', 'requests.nvidia.com/gpu'],
      ['spec', 'namespaceDefaults', 'limitRange', 'defaultRequest', 'nvidia.com/gpu'],
    ]);
    expect(v[1]!.message).toBe(
      'Project ml: spec.namespaceDefaults.limitRange.defaultRequest[nvidia.com/gpu] is "1", but nvidia.com/gpu cannot be overcommitted: the apiserver refuses a LimitRange whose default ("2") and defaultRequest differ for it; allowed: the same value in both, or only default',
    );
    expect(validateDeclarations([p], DEFAULT_CONFIG, TEST_NOW).map((x) => x.rule)).toEqual(['S1', 'S1']);
    // cpu may differ (it can be overcommitted); equal GPU values pass
    expect(
      checkLimitRangeKeys(
        ml({
          namespaceDefaults: {
            limitRange: {
              default: { cpu: '1', 'nvidia.com/gpu': '1' },
              defaultRequest: { cpu: '100m', 'nvidia.com/gpu': '1' },
            },
          },
        }),
      ),
    ).toEqual([]);
  });

  it('the webhook refuses such a Project with S1 only, whoever writes it', () => {
    const s = MemorySnapshot.of({ projects: [], namespaces: [], quotas: [] });
    const bad = ml({ quota: { hard: { 'limits.nvidia.com/gpu': '8' } } });
    const verdict = reviewProject(reviewContext(ADMIN, s), 'CREATE', bad, undefined);
    expect(verdict.violations.map((v) => v.rule)).toEqual(['S1']);
    expect(verdict.violations[0]!.message).toContain('allowed: requests.nvidia.com/gpu');
    expect(reviewProject(reviewContext(ADMIN, s), 'CREATE', ml(), undefined).violations).toEqual([]);
  });
});
