/**
 * `tenantgate plan [DIR] --base REF (--cluster NAME=CONTEXT | --snapshot FILE)…`: the I/O of the plan
 * (git, the clusters or snapshot files); the planning is src/plan/.
 */
import type * as k8s from '@kubernetes/client-node';
import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { processNow } from '../clock.js';
import { ConfigError, DEFAULT_CONFIG, parseConfig, type TenantgateConfig } from '../config/config.js';
import { formatPlan, type PlanFormat } from '../plan/format.js';
import { planChange, planFails } from '../plan/plan.js';
import { liveStateOf, parseSnapshot, SnapshotFileError } from '../plan/snapshot-file.js';
import type { LiveState } from '../plan/types.js';
import type { HubShareRecord } from '../plan/fleet.js';
import {
  FLEET_NAMESPACE,
  FLEET_PLURAL,
  parseFleetBudget,
  type FleetBudgetObject,
} from '../fleet/fleet-budget-object.js';
import { LeanApiClient } from '../kube/lean-client.js';
import { statusCode } from '../kube/errors.js';
import { isProjectObject, parseSource } from '../validate/source.js';
import type { Project } from '../validate/types.js';
import { cannotRead, kubeConfigFor, readSnapshot, UsageError } from './snapshot.js';
import { readSources } from './sources.js';
import { checkDocuments, formatFinding } from './validate.js';

export interface PlanCliOptions {
  base?: string;
  cluster: string[];
  snapshot: string[];
  kubeconfig?: string;
  /** The fleet's hub context: FleetBudgets read for the shares (docs/plan.md). */
  hub?: string;
  config?: string;
  output: PlanFormat;
  all?: boolean;
}

/** `--cluster NAME=CONTEXT` (NAME may be empty: the unnamed cluster). */
export function parseClusterFlag(raw: string): { name: string; context: string } {
  const at = raw.indexOf('=');
  const name = at < 0 ? '' : raw.slice(0, at);
  const context = at < 0 ? '' : raw.slice(at + 1);
  if (at < 0 || context === '' || !/^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$/.test(name)) {
    throw new UsageError(
      `--cluster ${JSON.stringify(raw)} is not allowed: NAME=CONTEXT, NAME the cluster's name in spec.clusters ` +
        `(a DNS label, or empty) and CONTEXT a kubeconfig context, e.g. --cluster prod-eu=admin@prod-eu`,
    );
  }
  return { name, context };
}

/** The Project files of DIR at a git revision (files deleted since included). */
async function baseProjects(dir: string, ref: string): Promise<Project[]> {
  const verified = await execa('git', ['-C', dir, 'rev-parse', '--verify', '--quiet', `${ref}^{commit}`], {
    reject: false,
  });
  if (verified.exitCode !== 0)
    throw new UsageError(`--base ${JSON.stringify(ref)}: not a commit of the git repository at ${dir}`);
  const listed = await execa('git', ['-C', dir, 'ls-tree', '-r', '--name-only', ref, '--', '.'], { reject: false });
  if (listed.exitCode !== 0)
    throw new UsageError(
      `--base ${JSON.stringify(ref)}: cannot list ${dir} at that revision: ${String(listed.stderr).trim()}`,
    );
  const out: Project[] = [];
  for (const file of String(listed.stdout)
    .split('\n')
    .filter((f) => /\.ya?ml$/i.test(f) && !/(^|\/)(tenantgate\.ya?ml|kustomization\.ya?ml)$/.test(f))) {
    const shown = await execa('git', ['-C', dir, 'show', `${ref}:./${file}`], { reject: false });
    if (shown.exitCode !== 0) continue;
    for (const doc of parseSource(file, String(shown.stdout)).documents)
      if (isProjectObject(doc.object)) out.push(doc.object);
  }
  return out;
}

async function loadPlanConfig(root: string, file?: string): Promise<TenantgateConfig> {
  const path = file ?? join(root, 'tenantgate.yaml');
  if (!file && !existsSync(path)) return DEFAULT_CONFIG;
  return parseConfig(await readFile(path, 'utf8'), path);
}

async function liveStates(
  o: PlanCliOptions,
  clusters: ReadonlyArray<{ flag: string; name: string; context: string }>,
): Promise<LiveState[]> {
  const out: LiveState[] = [];
  for (const { flag, name, context } of clusters) {
    const kc = kubeConfigFor(context, o.kubeconfig, `--cluster ${JSON.stringify(flag)}`);
    const doc = await readSnapshot(kc, name).catch((err: unknown) => {
      throw cannotRead(`cluster ${name} (context ${context})`, err);
    });
    out.push(liveStateOf(doc, `context ${context}`));
  }
  for (const file of o.snapshot) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      throw new UsageError(
        `--snapshot ${JSON.stringify(file)}: ` +
          `${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`,
      );
    }
    try {
      out.push(liveStateOf(parseSnapshot(text, file), `snapshot ${file}`));
    } catch (err) {
      if (err instanceof SnapshotFileError) throw new UsageError(`--snapshot ${err.message}`);
      throw err;
    }
  }
  const seen = new Map<string, string>();
  for (const l of out) {
    const from = l.source ?? '';
    if (seen.has(l.cluster))
      throw new UsageError(
        `cluster ${JSON.stringify(l.cluster)} is given twice (${seen.get(l.cluster)} and ${from}); each cluster ` +
          `once, by --cluster or --snapshot`,
      );
    seen.set(l.cluster, from);
  }
  return out;
}

/** Each fleet-budgeted Project's FleetBudget on the hub, read into a ledger (read-only: get fleetbudgets). */
async function hubShareRecords(
  o: PlanCliOptions,
  kc: k8s.KubeConfig | undefined,
  projects: Project[],
): Promise<Map<string, HubShareRecord> | undefined> {
  if (!kc) return undefined;
  const api = new LeanApiClient(kc);
  const out = new Map<string, HubShareRecord>();
  try {
    for (const p of projects.filter((x) => x.spec.fleet)) {
      const name = p.metadata.name ?? '';
      let object: FleetBudgetObject;
      try {
        object = await api.call<FleetBudgetObject>(
          'GET',
          `/apis/tenantgate.io/v1alpha1/namespaces/${FLEET_NAMESPACE}/${FLEET_PLURAL}/${encodeURIComponent(name)}`,
        );
      } catch (err) {
        if (statusCode(err) === 404) {
          out.set(name, { state: 'missing' });
          continue;
        }
        throw cannotRead(`FleetBudget ${FLEET_NAMESPACE}/${name} on the hub (context ${o.hub})`, err);
      }
      const parsed = parseFleetBudget(object);
      // Fail closed: a plan that cannot read the shares must not say the change fits them.
      if (!parsed.ok)
        throw new Error(
          `cannot read FleetBudget ${FLEET_NAMESPACE}/${name} on the hub (context ${o.hub}): ` +
            `${parsed.problems.join('; ')}`,
        );
      out.set(name, { state: 'read', record: parsed.record });
    }
  } finally {
    api.close();
  }
  return out;
}

export async function runPlan(dir: string, o: PlanCliOptions): Promise<number> {
  try {
    if (o.cluster.length === 0 && o.snapshot.length === 0)
      throw new UsageError(
        'no live state: give --cluster NAME=CONTEXT or --snapshot FILE (repeatable) for every cluster to plan for',
      );
    const root = resolve(dir);
    if (!existsSync(root) || !(await stat(root)).isDirectory())
      throw new UsageError(`DIR ${JSON.stringify(dir)}: not a directory`);
    const clusters = o.cluster.map((flag) => ({ flag, ...parseClusterFlag(flag) }));
    const config = await loadPlanConfig(root, o.config);
    const base = o.base ? await baseProjects(root, o.base) : undefined;
    const sources = await readSources([root], root);
    const at = processNow();
    const checked = checkDocuments(sources.documents, sources.problems, config, at, base ?? []);
    if (checked.findings.length > 0) {
      // Render refuses such a tree: the sync fails before any object reaches a cluster.
      process.stderr.write(
        `tenantgate plan: the declarations in ${dir} do not validate; render (and so every sync) would fail:\n`,
      );
      for (const f of checked.findings) process.stderr.write(formatFinding(f) + '\n');
      return 1;
    }
    const hubKc = o.hub ? kubeConfigFor(o.hub, o.kubeconfig, `--hub ${JSON.stringify(o.hub)}`) : undefined;
    const live = await liveStates(o, clusters);
    const after = checked.projects.map((p) => p.project);
    const hub = await hubShareRecords(o, hubKc, after);
    const plan = planChange({
      config,
      after,
      live,
      at,
      ...(hub ? { hub } : {}),
      ...(base ? { base: { ref: o.base!, projects: base } } : {}),
      ...(o.all ? { all: true } : {}),
    });
    process.stdout.write(formatPlan(plan, o.output));
    return planFails(plan) ? 1 : 0;
  } catch (err) {
    process.stderr.write(`tenantgate plan: ${(err as Error).message}\n`);
    return err instanceof UsageError || err instanceof ConfigError ? 2 : 3;
  }
}
