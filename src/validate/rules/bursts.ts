/**
 * B1 and B2 (docs/rules.md#bursts): a burst's declaration, and no ended burst added or changed. Pure:
 * the instant is an argument (the webhook and the CLI pass the process clock's, src/clock.ts).
 */
import { canonicalJson } from '../../canonical-json.js';
import { Quantity } from '../../quantity/quantity.js';
import { bursts, burstPhase, instantOf } from '../bursts.js';
import type { FieldPath, Project, ResourceList, Violation } from '../types.js';

/** The resources a project budgets on any cluster (spec.quota.hard and every spec.clusters[].quota.hard). */
function budgetedResources(project: Project, cluster: string | undefined): Set<string> {
  const lists: Array<ResourceList | undefined> = [];
  const clusters = project.spec.clusters ?? {};
  if (cluster) lists.push(clusters[cluster]?.quota?.hard ?? project.spec.quota?.hard);
  else {
    lists.push(project.spec.quota?.hard);
    for (const c of Object.keys(clusters)) lists.push(clusters[c]?.quota?.hard);
  }
  const out = new Set<string>();
  for (const l of lists) for (const r of Object.keys(l ?? {})) out.add(r);
  return out;
}

/**
 * B1: a burst's declaration makes sense: RFC 3339 `from` and `until` with from < until, a unique name,
 * a positive increase of resources the project budgets (on the burst's cluster), and a `namespace`
 * the project declares.
 */
export function checkBurstDeclarations(project: Project): Violation[] {
  const out: Violation[] = [];
  const name = project.metadata?.name ?? '';
  const seen = new Map<string, number>();
  const declared = new Set((project.spec.namespaces ?? []).map((n) => n?.name));
  bursts(project).forEach((b, i) => {
    if (!b || typeof b !== 'object') return;
    const at = (...rest: Array<string | number>): FieldPath => ['spec', 'bursts', i, ...rest];
    const subject = `Project ${name}: spec.bursts[${i}] (${b.name})`;
    const first = seen.get(b.name);
    if (first !== undefined)
      out.push({
        rule: 'B1',
        path: at('name'),
        message:
          `${subject}: name ${JSON.stringify(b.name)} is also spec.bursts[${first}]'s; burst names are unique in a ` +
          `project`,
      });
    else seen.set(b.name, i);
    const from = instantOf(b.from);
    const until = instantOf(b.until);
    for (const [field, raw, ms] of [
      ['from', b.from, from],
      ['until', b.until, until],
    ] as const) {
      if (ms === undefined)
        out.push({
          rule: 'B1',
          path: at(field),
          message:
            `${subject}: ${field} is ${JSON.stringify(raw)}, which is not an RFC 3339 instant (allowed: e.g. ` +
            `"2026-12-01T00:00:00Z")`,
        });
    }
    if (from !== undefined && until !== undefined && from >= until) {
      out.push({
        rule: 'B1',
        path: at('until'),
        message:
          `${subject}: until ${b.until} is not after from ${b.from}; a burst lasts from \`from\` (included) to ` +
          `\`until\` (excluded)`,
      });
    }
    if (b.cluster && !project.spec.clusters?.[b.cluster]) {
      out.push({
        rule: 'B1',
        path: at('cluster'),
        message: `${subject}: cluster ${JSON.stringify(b.cluster)} is not in spec.clusters (allowed: ${
          Object.keys(project.spec.clusters ?? {})
            .sort()
            .join(', ') || 'none: leave cluster out'
        })`,
      });
    }
    const budgeted = budgetedResources(project, b.cluster || undefined);
    const hard = b.quota?.hard ?? {};
    if (Object.keys(hard).length === 0)
      out.push({
        rule: 'B1',
        path: at('quota', 'hard'),
        message:
          `${subject}: quota.hard is empty; a burst raises at least one resource the project budgets (` +
          `${[...budgeted].sort().join(', ') || 'none'})`,
      });
    for (const [r, raw] of Object.entries(hard)) {
      if (!budgeted.has(r)) {
        out.push({
          rule: 'B1',
          path: at('quota', 'hard', r),
          message:
            `${subject}: quota.hard raises ${r}, which the project does not budget` +
            `${b.cluster ? ` on cluster ${b.cluster}` : ''} (allowed: ${[...budgeted].sort().join(', ') || 'none'})`,
        });
        continue;
      }
      const q = Quantity.tryParse(raw);
      if (q && q.sign() <= 0)
        out.push({
          rule: 'B1',
          path: at('quota', 'hard', r),
          message: `${subject}: quota.hard.${r} is ${String(raw)}; a burst raises by a positive quantity`,
        });
    }
    if (b.namespace !== undefined && !declared.has(b.namespace)) {
      out.push({
        rule: 'B1',
        path: at('namespace'),
        message:
          `${subject}: namespace ${JSON.stringify(b.namespace)} is not declared in spec.namespaces (allowed: ` +
          `${[...declared].sort().join(', ') || 'none: leave namespace out'})`,
      });
    }
  });
  return out;
}

/**
 * B2: a burst that has ended at `at` cannot be added or changed, and a burst that had ended cannot be
 * changed (into a new window): the pull request approved it once, for its window. Unchanged or removed
 * is fine. `previous` is the Project before the change (undefined on create).
 */
export function checkEndedBursts(previous: Project | undefined, project: Project, at: number): Violation[] {
  const out: Violation[] = [];
  const name = project.metadata?.name ?? '';
  const before = new Map(
    bursts(previous ?? ({ spec: {} } as Project))
      .filter((b) => b && typeof b.name === 'string')
      .map((b) => [b.name, b]),
  );
  const when = new Date(Math.floor(at / 1000) * 1000).toISOString().replace(/\.000Z$/, 'Z');
  bursts(project).forEach((b, i) => {
    if (!b || typeof b !== 'object') return;
    const old = before.get(b.name);
    if (old && canonicalJson(old) === canonicalJson(b)) return;
    const subject = `Project ${name}: spec.bursts[${i}] (${b.name})`;
    if (old && burstPhase(old, at) === 'ended') {
      out.push({
        rule: 'B2',
        path: ['spec', 'bursts', i],
        message:
          `${subject} ended at ${old.until} and cannot be changed (now ${when}); keep it as it was or remove it, ` +
          `and declare a new burst with a new name for a new window`,
      });
    } else if (
      burstPhase(b, at) === 'ended' &&
      instantOf(b.until) !== undefined &&
      instantOf(b.from) !== undefined &&
      instantOf(b.from)! < instantOf(b.until)!
    ) {
      out.push({
        rule: 'B2',
        path: ['spec', 'bursts', i, 'until'],
        message:
          `${subject}: until ${b.until} has passed (now ${when}); a burst that has ended cannot be ` +
          `${old ? 'changed' : 'added'}`,
      });
    }
  });
  return out;
}
