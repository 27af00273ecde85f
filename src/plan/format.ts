/**
 * A Plan for people: a terminal table, Markdown for a pull-request comment (stable and diff-friendly:
 * no times, no colours, sorted), and JSON. Pure: strings in, strings out.
 */
import { cmp, decimal, formatMoney } from '../validate/cost.js';
import type { CostLine, FleetRollup, Plan, PlanEntry, PlanFinding, ProjectRollup, ResourceLine } from './types.js';

export type PlanFormat = 'table' | 'markdown' | 'json';

export function formatPlan(plan: Plan, format: PlanFormat): string {
  if (format === 'json') return JSON.stringify(plan, null, 2) + '\n';
  if (format === 'markdown') return planMarkdown(plan);
  return planTable(plan);
}

/** `█████░░░░░ 52%`: the headroom left of the budget, ten cells; over budget shows no cell filled. */
export function headroomBar(percent: number | undefined, width = 10): string {
  if (percent === undefined) return '';
  const filled = Math.max(0, Math.min(width, Math.round((percent / 100) * width)));
  return `${'█'.repeat(filled)}${'░'.repeat(width - filled)} ${percent}%`;
}

function arrow(before: string | undefined, after: string | undefined): string {
  const b = before ?? '—';
  const a = after ?? '—';
  return b === a ? a : `${b} → ${a}`;
}

function headroomText(r: { headroomAfter?: string; headroomPercent?: number }): string {
  if (r.headroomAfter === undefined) return '—';
  if (r.headroomPercent === undefined) return r.headroomAfter;
  return r.headroomAfter.startsWith('-')
    ? `${r.headroomAfter} ${headroomBar(r.headroomPercent)} over budget`
    : `${r.headroomAfter} ${headroomBar(r.headroomPercent)}`;
}

/** "ResourceQuota a/b: " before a message that does not start with it already. */
function objectPrefix(f: PlanFinding): string {
  return f.object && !f.message.toLowerCase().startsWith(f.object.toLowerCase()) ? `${f.object}: ` : '';
}

function title(e: PlanEntry): string {
  return `${e.project} on ${e.cluster || '(unnamed cluster)'} (tenant ${e.tenant}) — ${e.change}`;
}

function namespaceNotes(e: PlanEntry): string[] {
  const n = e.namespaces;
  const out: string[] = [];
  if (n.added.length) out.push(`added ${n.added.join(', ')}`);
  if (n.removed.length) out.push(`removed ${n.removed.join(', ')}`);
  if (n.changed.length) out.push(`quota changed ${n.changed.join(', ')}`);
  if (n.selfService.length) out.push(`self-service ${n.selfService.join(', ')}`);
  const count = n.countBefore === n.countAfter ? `${n.countAfter}` : `${n.countBefore} → ${n.countAfter}`;
  out.push(`count ${count}${n.maxNamespaces !== undefined ? ` of max ${n.maxNamespaces}` : ''}`);
  return out;
}

/** "+$230.00/month; $1,580.00 of $1,500.00 (over the cost budget)", "+$0.00/month; $1,350.00/month". */
export function costText(c: CostLine): string {
  const money = (amount: string) => formatMoney(decimal(amount), c.currency);
  const change = c.change.startsWith('-') ? money(c.change) : `+${money(c.change)}`;
  if (c.budget === undefined) return `${change}/month; ${money(c.after)}/month`;
  const over = cmp(decimal(c.after), decimal(c.budget)) > 0;
  return `${change}/month; ${money(c.after)} of ${money(c.budget)}${over ? ' (over the cost budget)' : ''}`;
}

function summary(plan: Plan): string {
  const refused = [
    ...plan.entries.filter((e) => e.findings.length > 0),
    ...(plan.fleet ?? []).filter((f) => f.findings.length > 0),
  ];
  const clusters = plan.clusters.map((c) => c.name || '(unnamed)').join(', ');
  const scope = plan.changed
    ? `${plan.entries.length} project × cluster change(s)`
    : `no change; ${plan.entries.length} project × cluster(s) as they are`;
  const verdict = refused.length
    ? `${refused.length} sync(s) would be refused or lose pods (${plan.findings} finding(s))`
    : 'every sync would be admitted';
  return `${scope} against ${plan.base ? `base ${plan.base}` : 'the live Projects'} on ${clusters}: ${verdict}`;
}

// ---------------------------------------------------------------------------------------------
// Terminal
// ---------------------------------------------------------------------------------------------

function table(header: string[], rows: string[][], indent = '  '): string[] {
  const widths = header.map((h, i) => Math.max([...h].length, ...rows.map((r) => [...(r[i] ?? '')].length)));
  const line = (cells: string[]) =>
    indent +
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c + ' '.repeat(widths[i]! - [...c].length)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

function resourceRows(lines: ResourceLine[]): string[][] {
  return lines.map((r) => [
    r.resource,
    arrow(r.budgetBefore, r.budgetAfter),
    arrow(r.allocatedBefore, r.allocatedAfter),
    r.used,
    headroomText(r),
  ]);
}

export function planTable(plan: Plan): string {
  const out: string[] = [`tenantgate plan: ${summary(plan)}`];
  for (const e of plan.entries) {
    out.push('', `${e.findings.length ? '✗' : '✓'} ${title(e)}`);
    if (e.resources.length)
      out.push(...table(['RESOURCE', 'BUDGET', 'ALLOCATED', 'USED', 'HEADROOM AFTER'], resourceRows(e.resources)));
    out.push(`  namespaces: ${namespaceNotes(e).join('; ')}`);
    for (const b of e.bursts ?? []) out.push(`  burst ${b}`);
    if (e.cost) out.push(`  cost: ${costText(e.cost)}`);
    for (const f of e.findings) out.push(`  [${f.rule}] ${objectPrefix(f)}${f.message}`);
    for (const w of e.warnings ?? []) out.push(`  Warning: [${w.rule}] ${objectPrefix(w)}${w.message}`);
  }
  for (const r of plan.rollup) out.push('', ...rollupTable(r));
  for (const f of plan.fleet ?? []) {
    out.push('', `${f.findings.length ? '✗' : '✓'} ${fleetTitle(f)}`, ...table(...fleetRows(f)));
    for (const finding of f.findings) out.push(`  [${finding.rule}] ${finding.message}`);
  }
  return out.join('\n') + '\n';
}

function fleetTitle(f: FleetRollup): string {
  const hub = {
    'not-read': 'shares not read (no --hub)',
    missing: 'no FleetBudget on the hub yet: nobody holds a share',
    read: 'shares from the hub',
    unreadable: `the hub's FleetBudget is unreadable: ${(f.hubProblems ?? []).join('; ')}`,
  }[f.hub];
  return (
    `fleet ${f.project} on ${f.members.join(' + ')}` +
    `${f.formerMembers?.length ? ` (leaving: ${f.formerMembers.join(', ')})` : ''} — ${hub}`
  );
}

/** RESOURCE FLEET BUDGET ALLOCATED USED HEADROOM [SHARES POOL] then per member "allocated [share s]". */
function fleetRows(f: FleetRollup): [string[], string[][]] {
  const withHub = f.hub === 'read';
  const members = [...f.members, ...(f.formerMembers ?? [])];
  const header = [
    'RESOURCE',
    'FLEET BUDGET',
    'ALLOCATED',
    'USED',
    'HEADROOM',
    ...(withHub ? ['SHARES', 'POOL'] : []),
    ...members.map((m) => `ON ${m}`),
  ];
  const rows = f.resources.map((l) => [
    l.resource,
    arrow(l.budgetBefore, l.budgetAfter),
    l.allocated,
    l.used,
    headroomText({
      headroomAfter: l.headroom,
      ...(l.headroomPercent !== undefined ? { headroomPercent: l.headroomPercent } : {}),
    }),
    ...(withHub ? [l.shares ?? '—', l.pool ?? '—'] : []),
    ...members.map((m) => memberCell(l.perMember[m])),
  ]);
  return [header, rows];
}

function memberCell(m: FleetRollup['resources'][number]['perMember'][string] | undefined): string {
  if (!m) return '—';
  const held = m.allocated !== undefined ? `${m.allocated}${m.counted === 'declared' ? ' (declared)' : ''}` : '—';
  if (m.share === undefined) return held;
  return `${held} of share ${m.share}${m.lendable && m.lendable !== '0' ? ` (${m.lendable} offered)` : ''}`;
}

function rollupTable(r: ProjectRollup): string[] {
  const header = ['RESOURCE', 'BUDGET', 'ALLOCATED', 'USED', 'HEADROOM', ...r.clusters.map((c) => `ON ${c}`)];
  const rows = r.resources.map((l) => [
    l.resource,
    l.budget ?? '—',
    l.allocated,
    l.used,
    headroomText({
      ...(l.headroom ? { headroomAfter: l.headroom } : {}),
      ...(l.headroomPercent !== undefined ? { headroomPercent: l.headroomPercent } : {}),
    }),
    ...r.clusters.map((c) => l.perCluster[c]?.headroom ?? '—'),
  ]);
  return [`Σ ${r.project} on ${r.clusters.join(' + ')}`, ...table(header, rows)];
}

// ---------------------------------------------------------------------------------------------
// Markdown
// ---------------------------------------------------------------------------------------------

/** Table cells: a pipe would end the cell, a newline the row. */
function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function mdTable(header: string[], rows: string[][]): string[] {
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => ' --- ').join('|')}|`,
    ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`),
  ];
}

export function planMarkdown(plan: Plan): string {
  const out: string[] = ['## tenantgate plan', '', summary(plan)];
  for (const e of plan.entries) {
    out.push('', `### ${e.findings.length ? '❌' : '✅'} ${title(e)}`, '');
    if (e.resources.length)
      out.push(
        ...mdTable(
          ['resource', 'budget', 'allocated', 'used', 'headroom after'],
          resourceRows(e.resources).map((r) => r.map((c, i) => (i === 4 && c !== '—' ? `\`${c}\`` : c))),
        ),
        '',
      );
    out.push(`Namespaces: ${namespaceNotes(e).join('; ')}.`);
    if (e.bursts?.length) out.push('', 'Bursts:', '', ...e.bursts.map((b) => `- ${cell(b)}`));
    if (e.cost) out.push('', `Cost: ${costText(e.cost)}.`);
    if (e.findings.length) {
      out.push('', 'Findings:', '');
      for (const f of e.findings)
        out.push(
          `- **[${f.rule}]** ${cell(objectPrefix(f) + f.message)}` +
            `${f.by === 'plan' ? ' _(found by plan; the webhook admits it)_' : ''}`,
        );
    }
    if (e.warnings?.length) {
      out.push('', 'Warnings:', '');
      for (const w of e.warnings) out.push(`- ⚠️ **[${w.rule}]** ${cell(objectPrefix(w) + w.message)}`);
    }
  }
  for (const r of plan.rollup) {
    out.push('', `### Σ ${r.project} on ${r.clusters.join(' + ')}`, '');
    out.push(
      ...mdTable(
        ['resource', 'budget', 'allocated', 'used', 'headroom', ...r.clusters],
        r.resources.map((l) => [
          l.resource,
          l.budget ?? '—',
          l.allocated,
          l.used,
          l.headroom
            ? `\`${headroomText({
                headroomAfter: l.headroom,
                ...(l.headroomPercent !== undefined ? { headroomPercent: l.headroomPercent } : {}),
              })}\``
            : '—',
          ...r.clusters.map((c) => l.perCluster[c]?.headroom ?? '—'),
        ]),
      ),
    );
  }
  for (const f of plan.fleet ?? []) {
    const [header, rows] = fleetRows(f);
    out.push(
      '',
      `### ${f.findings.length ? '❌' : '✅'} ${fleetTitle(f)}`,
      '',
      ...mdTable(
        header.map((h) => h.toLowerCase()),
        rows,
      ),
    );
    if (f.findings.length) {
      out.push('', 'Findings:', '');
      for (const finding of f.findings) out.push(`- **[${finding.rule}]** ${cell(finding.message)} _(found by plan)_`);
    }
  }
  const times = plan.clusters.filter((c) => c.takenAt).map((c) => `${c.name} ${c.takenAt}`);
  if (times.length) out.push('', `<sub>live state: ${times.join(', ')}</sub>`);
  return out.join('\n') + '\n';
}
