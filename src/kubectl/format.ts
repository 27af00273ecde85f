/**
 * Human output of `kubectl tenantgate`: aligned columns as kubectl prints them and text bars, fitted to
 * the terminal's width; machine output (-o json|yaml) as stable documents. Pure.
 */
import { stringify } from 'yaml';
import { Quantity } from '../quantity/quantity.js';
import type { ProjectBudgetJson, ProjectRow } from './model.js';
import { burstJsonLine } from '../validate/bursts.js';
import { decimal, formatMoney } from '../validate/cost.js';

export const OUTPUTS = ['json', 'yaml'] as const;
export type Output = (typeof OUTPUTS)[number];

const FULL = '█';
const EMPTY = '░';

/**
 * A bar of `width` cells for value/limit: ceil for any use above zero (a used cell is never hidden), full when over.
 */
export function bar(value: string | undefined, limit: string | undefined, width: number): string {
  const v = Quantity.tryParse(value ?? '0');
  const l = Quantity.tryParse(limit ?? '');
  if (!v || !l || l.sign() <= 0) return (v && v.sign() > 0 ? FULL : EMPTY).repeat(width);
  if (v.cmp(l) >= 0) return FULL.repeat(width);
  const ratio = v.asApproximateFloat64() / l.asApproximateFloat64();
  const filled = v.sign() <= 0 ? 0 : Math.min(width - 1, Math.max(1, Math.round(ratio * width)));
  return FULL.repeat(filled) + EMPTY.repeat(width - filled);
}

/** Columns padded to the widest cell, separated by three spaces as kubectl's printers do; no trailing blanks. */
export function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => [...(r[i] ?? '')].length)));
  return (
    all
      .map((r) =>
        r
          .map((cell, i) => (i === r.length - 1 ? cell : cell + ' '.repeat(widths[i]! - [...cell].length)))
          .join('   ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

export function machine(data: unknown, output: Output): string {
  return output === 'json' ? JSON.stringify(data, null, 2) + '\n' : stringify(data);
}

/** What `projects` and `headroom` say to a caller who owns no project. */
export const NO_PROJECTS = 'No projects: you own none (a Project lists its owners in spec.owners).\n';

export function projectsTable(rows: readonly ProjectRow[]): string {
  if (rows.length === 0) return NO_PROJECTS;
  return table(
    ['NAME', 'TENANT', 'NAMESPACES', 'PHASE', 'BUDGET USE'],
    rows.map((r) => [r.name, r.tenant, String(r.namespaces.length), r.phase || '-', r.budgetUse || '-']),
  );
}

export interface NamespaceRow {
  name: string;
  project: string;
  tenant: string;
  phase: string;
}

export function namespacesTable(rows: readonly NamespaceRow[]): string {
  if (rows.length === 0) return 'No namespaces in your projects.\n';
  return table(
    ['NAME', 'PROJECT', 'TENANT', 'STATUS'],
    rows.map((r) => [r.name, r.project, r.tenant, r.phase || '-']),
  );
}

const ratio = (a: string, b: string | undefined) => `${a}/${b ?? '-'}`;

/**
 * `kubectl tenantgate headroom`: per resource allocated/budget as a bar, used and headroom; then per
 * namespace and resource used/hard as a bar and the namespace's allocated share. At most `columns` wide.
 */
export function headroomText(b: ProjectBudgetJson, columns = 80): string {
  const lines: string[] = [];
  lines.push(`Project ${b.project}  tenant ${b.tenant}  cluster ${b.cluster || '(unnamed)'}`);
  if (b.resources.length === 0) {
    lines.push('', 'No budget and nothing allocated.');
    if (b.fleet) lines.push('', ...fleetLines(b.fleet));
    return lines.join('\n') + '\n';
  }
  // Resource section: RESOURCE  BAR ALLOCATED/BUDGET  USED  HEADROOM
  const resW = Math.max(8, ...b.resources.map((r) => r.resource.length));
  const ratios = b.resources.map((r) => ratio(r.allocated, r.budget));
  const ratioW = Math.max(...ratios.map((s) => s.length));
  const usedW = Math.max(4, ...b.resources.map((r) => r.used.length));
  const roomW = Math.max(8, ...b.resources.map((r) => (r.headroom ?? '-').length));
  const fixed = resW + 3 + 1 + ratioW + 3 + usedW + 3 + roomW;
  const barW = Math.max(5, Math.min(20, columns - fixed));
  const rRows = b.resources.map((r, i) => [
    r.resource,
    `${bar(r.allocated, r.budget, barW)} ${ratios[i]!}`,
    r.used,
    r.headroom ?? '-',
  ]);
  lines.push('', table(['RESOURCE', 'ALLOCATED/BUDGET', 'USED', 'HEADROOM'], rRows).trimEnd());
  // Namespace section: NAMESPACE  RESOURCE  BAR USED/HARD  ALLOCATED
  if (b.namespaces.length > 0) {
    const nsRows: string[][] = [];
    const nsNames = b.namespaces.map((n) => n.namespace + (n.defaulted ? '*' : ''));
    const nsW = Math.max(9, ...nsNames.map((s) => s.length));
    const entries = b.namespaces.map((n) => {
      const names = [...new Set([...Object.keys(n.allocated), ...Object.keys(n.hard), ...Object.keys(n.used)])].sort();
      return names.map((r) => ({ r, used: n.used[r] ?? '0', hard: n.hard[r], allocated: n.allocated[r] ?? '-' }));
    });
    const flat = entries.flat();
    const nResW = Math.max(8, ...flat.map((e) => e.r.length));
    const nRatioW = Math.max(...flat.map((e) => ratio(e.used, e.hard).length), 1);
    const nFixed = nsW + 3 + nResW + 3 + 1 + nRatioW + 3 + Math.max(9, ...flat.map((e) => e.allocated.length));
    const nBarW = Math.max(5, Math.min(20, columns - nFixed));
    b.namespaces.forEach((_, i) => {
      entries[i]!.forEach((e, j) =>
        nsRows.push([
          j === 0 ? nsNames[i]! : '',
          e.r,
          `${bar(e.used, e.hard, nBarW)} ${ratio(e.used, e.hard)}`,
          e.allocated,
        ]),
      );
    });
    lines.push('', table(['NAMESPACE', 'RESOURCE', 'USED/HARD', 'ALLOCATED'], nsRows).trimEnd());
    if (b.namespaces.some((n) => n.defaulted))
      lines.push('', '* not yet covered by a quota: counted with namespaceDefaults');
  }
  if (b.cost) lines.push('', ...wrapped(costLine(b.cost), columns));
  if (b.bursts?.length) lines.push('', ...b.bursts.flatMap((burst) => wrapped(burstJsonLine(burst), columns)));
  if (b.fleet) lines.push('', ...fleetLines(b.fleet));
  return lines.join('\n') + '\n';
}

/**
 * A sentence broken at spaces into lines of at most `columns` characters, the later ones indented by
 * two (a word longer than a line stays whole on its own line).
 */
function wrapped(text: string, columns: number): string[] {
  const out: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    const candidate = line === '' ? word : `${line} ${word}`;
    if ([...candidate].length <= columns || line.trim() === '') line = candidate;
    else {
      out.push(line);
      line = `  ${word}`;
    }
  }
  if (line !== '') out.push(line);
  return out;
}

/** "Cost $1,350.00/month of $1,500.00 (requests.cpu $920.00, requests.memory $430.00): $150.00 left". */
export function costLine(c: NonNullable<ProjectBudgetJson['cost']>): string {
  const money = (amount: string) => formatMoney(decimal(amount), c.currency);
  const parts = Object.entries(c.resources)
    .map(([r, amount]) => `${r} ${money(amount)}`)
    .join(', ');
  const of = c.budget !== undefined ? ` of ${money(c.budget)}` : '';
  const left =
    c.headroom === undefined
      ? ''
      : c.headroom.startsWith('-')
        ? `: ${money(c.headroom.slice(1))} over the cost budget`
        : `: ${money(c.headroom)} left`;
  return `Cost ${money(c.monthly)}/month${of}${parts ? ` (${parts})` : ''}${left}`;
}

/**
 * The fleet part (docs/kubectl-plugin.md): per resource the fleet budget, what this cluster enforces (E)
 * and holds, its share, the room here and in the fleet; then each member's share. Numbers as the
 * controller last read them from the hub (observedAt).
 */
function fleetLines(f: NonNullable<ProjectBudgetJson['fleet']>): string[] {
  const when = f.observedAt
    ? `shares as last read from the hub at ${f.observedAt}`
    : 'shares not read from the hub yet';
  const out = [`Fleet budget shared by ${f.members.join(', ')} (${when})`];
  out.push(
    table(
      ['RESOURCE', 'FLEET BUDGET', 'SHARE HERE', 'ENFORCED', 'ALLOCATED', 'HEADROOM HERE', 'FLEET HEADROOM'],
      f.resources.map((r) => [
        r.resource,
        r.fleetBudget,
        r.share !== undefined ? `${r.share}${r.lendable && r.lendable !== '0' ? ` (${r.lendable} offered)` : ''}` : '-',
        r.enforced ?? '-',
        r.allocated,
        r.headroomHere ?? '-',
        r.fleetHeadroom ?? '-',
      ]),
    ).trimEnd(),
  );
  if (f.clusters.length > 0) {
    const rows = f.clusters.flatMap((c) =>
      Object.keys(c.share).map((r, i) => [i === 0 ? c.cluster : '', r, c.share[r]!, c.lendable[r] ?? '0']),
    );
    out.push('', table(['CLUSTER', 'RESOURCE', 'SHARE', 'OFFERED'], rows).trimEnd());
  }
  return out;
}
