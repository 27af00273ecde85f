/**
 * The chart's monitoring pieces as tests read them: the PrometheusRule's groups rendered by helm, the
 * Grafana dashboard's queries, the pinned promtool, and the metric names a PromQL expression selects.
 */
import { execa } from 'execa';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { CHART_DIR, helmTemplate } from '../../hack/chart-manifests.js';
import { REPO_ROOT } from './paths.js';

export interface RuleGroup {
  name: string;
  rules: Array<{
    alert?: string;
    record?: string;
    expr: string;
    for?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  }>;
}

/** The pinned promtool (hack/promtool), built on first use like helm. */
export async function promtoolBinary(): Promise<string> {
  const { stdout } = await execa(join(REPO_ROOT, 'hack', 'build-go-tool.sh'), ['promtool'], { timeout: 1_800_000 });
  return stdout.trim().split('\n').at(-1)!;
}

/** The rule groups of the chart's PrometheusRule, rendered with prometheusRules.enabled and `args`. */
export async function renderedRuleGroups(helm: string, args: string[] = []): Promise<RuleGroup[]> {
  const out = await helmTemplate(['--set', 'prometheusRules.enabled=true', ...args], helm);
  const rules = parseAllDocuments(out)
    .map((d) => d.toJS() as { kind?: string; spec?: { groups?: RuleGroup[] } } | null)
    .filter((o) => o?.kind === 'PrometheusRule');
  if (rules.length !== 1)
    throw new Error(
      `expected one PrometheusRule in the chart with prometheusRules.enabled=true, found ${rules.length}`,
    );
  return rules[0]!.spec?.groups ?? [];
}

export interface DashboardQuery {
  panel: string;
  expr: string;
}

/** Every PromQL query of the dashboard (panels, nested rows, template variables). */
export async function dashboardQueries(): Promise<DashboardQuery[]> {
  const dashboard = JSON.parse(await readFile(join(CHART_DIR, 'files', 'dashboards', 'tenantgate.json'), 'utf8')) as {
    panels: Array<{ title: string; targets?: Array<{ expr: string }>; panels?: unknown[] }>;
    templating: { list: Array<{ name: string; query?: string | { query: string } }> };
  };
  const out: DashboardQuery[] = [];
  const visit = (panels: typeof dashboard.panels) => {
    for (const p of panels) {
      for (const t of p.targets ?? []) out.push({ panel: p.title, expr: t.expr });
      if (p.panels) visit(p.panels as typeof dashboard.panels);
    }
  };
  visit(dashboard.panels);
  for (const v of dashboard.templating.list) {
    const q = typeof v.query === 'string' ? v.query : v.query?.query;
    const m = q ? /^label_values\((.*),\s*\w+\)$/.exec(q) : null;
    if (m) out.push({ panel: `variable ${v.name}`, expr: m[1]! });
  }
  return out;
}

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan', 'Inf', 'NaN']);

/**
 * The metric names a PromQL expression selects: identifiers outside strings, label matchers, range and
 * subquery brackets and grouping clauses that are neither functions/aggregations (followed by "(")
 * nor binary keywords. Enough for the expressions of this chart; not a PromQL parser.
 */
export function metricNames(expr: string): Set<string> {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const m of bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const after = bare.slice(m.index + m[0].length);
    if (/^\s*\(/.test(after) || KEYWORDS.has(m[0])) continue;
    // A number's exponent (1e9) is not a name.
    if (m.index > 0 && /[0-9.]/.test(bare[m.index - 1]!)) continue;
    names.add(m[0]);
  }
  return names;
}

/** The metric names of a Prometheus text exposition that carry samples (histograms as _bucket, _sum, _count). */
export function exportedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([A-Za-z_:][A-Za-z0-9_:]*)/.exec(line);
    if (m) names.add(m[1]!);
  }
  return names;
}
