/**
 * Splits the integration and end-to-end files into shards of about equal wall time, for
 * `vitest run --project integration --shard=i/n` (hack/test.sh runs the shards side by side, each
 * vitest process with its own shared control plane from test/support/global-setup.ts).
 *
 * Vitest's own sharding cuts the files into equal counts by a hash of their path, so one shard could
 * get Argo CD, the fleets and the tenancy boundary together. Here each file weighs what it took in a
 * measured run (E2E_SECONDS; a file not listed weighs DEFAULT_SECONDS), and the heaviest file goes to
 * the lightest shard first (longest-processing-time scheduling): with two shards the longer one is at
 * most 4/3 of the best split. Pure; the sequencer below is the edge vitest calls.
 */
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Wall seconds per file, as vitest reported them in a warm `make test` on a 2-core machine with two
 * shards side by side (2026-11-28; the late wave's files in one shard). Under the other
 * shard's load a file takes up to three times what it takes alone (tenancy-boundary, kubectl-bound).
 * Refresh with `npx tsx hack/e2e-seconds.ts` after a run.
 */
export const E2E_SECONDS: Readonly<Record<string, number>> = {
  'test/e2e/tenancy-boundary.test.ts': 670,
  'test/e2e/kubectl-plugin.test.ts': 270,
  'test/e2e/argocd.test.ts': 252,
  'test/e2e/fleet-giveback.test.ts': 184,
  'test/e2e/image.test.ts': 134,
  'test/e2e/argocd-fleet.test.ts': 125,
  'test/e2e/plan.test.ts': 122,
  'test/e2e/controller-process.test.ts': 107,
  'test/e2e/fleet-race.test.ts': 101,
  'test/e2e/controller-failover.test.ts': 99,
  'test/e2e/controlplane-restarts.test.ts': 88,
  'test/e2e/real-cluster-promise.test.ts': 87,
  'test/e2e/headroom-replicas.test.ts': 87,
  'test/e2e/fleet-hub-policy.test.ts': 86,
  'test/e2e/allow-lists-policy.test.ts': 160,
  'test/e2e/deletion-lifecycle.test.ts': 80,
  'test/e2e/allow-lists-attacks.test.ts': 80,
  'test/e2e/allow-lists-differential.test.ts': 80,
  'test/e2e/allow-lists-down.test.ts': 60,
  'test/e2e/allow-list-params.test.ts': 45,
  'test/e2e/volume-binding.test.ts': 45,
  'test/e2e/webhook-rolling.test.ts': 76,
  'test/e2e/fleet-shares.test.ts': 71,
  'test/e2e/pre-commit.test.ts': 70,
  'test/e2e/headroom-race.test.ts': 69,
  'test/e2e/allow-lists.test.ts': 63,
  'test/e2e/upgrade.test.ts': 63,
  'test/e2e/device-budgets.test.ts': 58,
  'test/e2e/release.test.ts': 58,
  'test/e2e/argocd-appprojects.test.ts': 57,
  'test/e2e/controller.test.ts': 52,
  'test/e2e/deletion-blocking.test.ts': 51,
  'test/e2e/older-kubernetes.test.ts': 50,
  'test/e2e/visibility.test.ts': 49,
  'test/e2e/budget-view.test.ts': 45,
  'test/e2e/chart-install.test.ts': 42,
  'test/e2e/current-kubernetes.test.ts': 37,
  'test/e2e/deployment-args.test.ts': 37,
  'test/e2e/priority-tiers.test.ts': 37,
  'test/e2e/controller-apiserver-restart.test.ts': 35,
  'test/e2e/bursts.test.ts': 34,
  'test/e2e/cert-rotation-apiserver-client.test.ts': 29,
  'test/e2e/npm-package.test.ts': 29,
  'test/e2e/webhook-apiserver-restart.test.ts': 27,
  'test/e2e/plan-fleet.test.ts': 27,
  'test/e2e/webhook.test.ts': 26,
  'test/e2e/controller-writes-reviews.test.ts': 25,
  'test/e2e/rules-apiserver.test.ts': 20,
  'test/e2e/cert-rotation.test.ts': 20,
  'test/e2e/cost-budget.test.ts': 19,
  'test/e2e/namespace-policies.test.ts': 19,
  'test/e2e/project-metrics.test.ts': 14,
  'test/e2e/chart.test.ts': 12,
  'test/integration/lean-client.test.ts': 11,
  'test/integration/controlplane.test.ts': 11,
  'test/integration/fleet-hub-io.test.ts': 9,
  'test/integration/informer-readiness.test.ts': 8,
  'test/e2e/manifests.test.ts': 8,
  'test/e2e/argocd-health.test.ts': 8,
  'test/e2e/controller-leader.test.ts': 7,
  'test/e2e/webhook-client-auth.test.ts': 5,
  'test/e2e/prometheus-rules.test.ts': 4,
  'test/e2e/chart-metrics.test.ts': 2,
  'test/integration/kubeconfig.test.ts': 0,
};
export const DEFAULT_SECONDS = 15;

/**
 * The files that need a tool of make test's late builds (crane, promtool, syft, Argo CD: hack/test.sh
 * builds them at low priority while the other files run). The late wave runs them once those are
 * built. A file missing here still passes: the build scripts hold a lock per pin, so a test asking
 * for a tool still being built waits for it (only that file's shard waits longer).
 */
export const LATE_TOOL_FILES: readonly string[] = [
  'test/e2e/argocd.test.ts',
  'test/e2e/argocd-appprojects.test.ts',
  'test/e2e/argocd-fleet.test.ts',
  'test/e2e/argocd-health.test.ts',
  'test/e2e/image.test.ts',
  'test/e2e/prometheus-rules.test.ts',
  'test/e2e/release.test.ts',
];

/** Which files a wave runs: `early` all but LATE_TOOL_FILES, `late` only those, `all` every file. */
export type E2eWave = 'early' | 'late' | 'all';

export function filesOfWave(files: readonly string[], wave: E2eWave): string[] {
  if (wave === 'all') return [...files];
  const late = new Set(LATE_TOOL_FILES);
  return files.filter((f) => late.has(f) === (wave === 'late'));
}

/** TG_E2E_WAVE (set by hack/test.sh), else `all`; anything else is refused. */
export function waveOf(value: string | undefined): E2eWave {
  if (value === undefined || value === '' || value === 'all') return 'all';
  if (value === 'early' || value === 'late') return value;
  throw new Error(`TG_E2E_WAVE="${value}" is not a wave; allowed: early, late, all`);
}

/** Which of `count` shards (0-based) each file goes to: heaviest first, each to the lightest shard so far. */
export function assignShards(
  files: readonly string[],
  count: number,
  seconds: Readonly<Record<string, number>> = E2E_SECONDS,
): Map<string, number> {
  if (!Number.isInteger(count) || count < 1) throw new Error(`shard count must be a positive integer, got ${count}`);
  const weight = (file: string): number => seconds[file] ?? DEFAULT_SECONDS;
  // Ties broken by name, so every shard process computes the same split.
  const ordered = [...new Set(files)].sort((a, b) => weight(b) - weight(a) || (a < b ? -1 : a > b ? 1 : 0));
  const load = new Array<number>(count).fill(0);
  const out = new Map<string, number>();
  for (const file of ordered) {
    let lightest = 0;
    for (let i = 1; i < count; i++) if (load[i]! < load[lightest]!) lightest = i;
    out.set(file, lightest);
    load[lightest]! += weight(file);
  }
  return out;
}

/**
 * vitest's sequencer for `--shard=i/n`: the files of TG_E2E_WAVE's wave, split by `assignShards` (the
 * index is 1-based); sorts as vitest does.
 */
export class WeightedShardSequencer extends BaseSequencer {
  override async shard(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { index, count } = this.ctx.config.shard!;
    const root = this.ctx.config.root;
    const path = (spec: TestSpecification): string => relative(root, spec.moduleId).split('\\').join('/');
    const inWave = new Set(filesOfWave(files.map(path), waveOf(process.env.TG_E2E_WAVE)));
    const shards = assignShards([...inWave], count);
    return files.filter((spec) => shards.get(path(spec)) === index - 1);
  }
}
