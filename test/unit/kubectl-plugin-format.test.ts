/** kubectl tenantgate's human and machine output: bars, aligned columns, 80-column fit, stable JSON/YAML. */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { bar, headroomText, machine, namespacesTable, projectsTable, table } from '../../src/kubectl/format.js';
import { budgetFromObjects, projectRow } from '../../src/kubectl/model.js';
import { isProjectObject, parseSource } from '../../src/validate/source.js';
import type { NamespaceObject, Project, ResourceQuotaObject } from '../../src/validate/types.js';
import { REPO_ROOT } from '../support/paths.js';

async function example(name: string): Promise<Project> {
  const file = join(REPO_ROOT, 'examples', 'gitops', 'acme.yaml');
  const docs = parseSource(file, await readFile(file, 'utf8'))
    .documents.map((d) => d.object)
    .filter(isProjectObject);
  return docs.find((p) => p.metadata.name === name)!;
}

const ns = (name: string, project: string): NamespaceObject => ({
  metadata: { name, labels: { 'tenantgate.io/project': project, 'tenantgate.io/tenant': 'acme' } },
  status: { phase: 'Active' },
});
const quota = (namespace: string, hard: Record<string, string>, used: Record<string, string>): ResourceQuotaObject => ({
  metadata: { name: 'tenantgate-quota', namespace },
  spec: { hard },
  status: { hard, used },
});

describe('bar', () => {
  it('fills cells in proportion, as in requests.cpu ███████░░░ 7/10', () => {
    expect(bar('7', '10', 10)).toBe('███████░░░');
    expect(bar('0', '10', 10)).toBe('░░░░░░░░░░');
    expect(bar('10', '10', 10)).toBe('██████████');
    expect(bar('4Gi', '64Gi', 16)).toBe('█░░░░░░░░░░░░░░░');
  });
  it('never hides a use above zero, never shows a full bar below the limit, and is full when over', () => {
    expect(bar('1m', '100', 10)).toBe('█░░░░░░░░░');
    expect(bar('99999m', '100', 10)).toBe('█████████░');
    expect(bar('30', '20', 10)).toBe('██████████');
  });
  it('without a limit: empty when nothing is held, full otherwise', () => {
    expect(bar('0', undefined, 5)).toBe('░░░░░');
    expect(bar('2', undefined, 5)).toBe('█████');
  });
});

describe('table', () => {
  it('aligns every column to its widest cell, three spaces apart, with no trailing blanks', () => {
    expect(
      table(
        ['NAME', 'X'],
        [
          ['a', '1'],
          ['longer', '22'],
        ],
      ),
    ).toBe('NAME     X\na        1\nlonger   22\n');
  });
  it('counts a bar cell by characters, not bytes', () => {
    const t = table(
      ['A', 'B'],
      [
        ['█░', 'x'],
        ['abcd', 'y'],
      ],
    ).split('\n');
    expect(t[1]!.indexOf('x')).toBe(t[2]!.indexOf('y'));
  });
});

describe('headroom', () => {
  it('shows per resource allocated/budget with a bar, used and headroom, and per namespace used/hard, within 80 columns', async () => {
    const payments = await example('payments');
    const b = budgetFromObjects(
      payments,
      [ns('payments-batch', 'payments'), ns('payments-ledger', 'payments')],
      [
        quota(
          'payments-batch',
          { 'requests.cpu': '2', 'requests.memory': '4Gi', 'limits.cpu': '4', pods: '20' },
          { 'requests.cpu': '500m', pods: '1' },
        ),
        quota(
          'payments-ledger',
          { 'requests.cpu': '2', 'requests.memory': '8Gi', 'limits.cpu': '4', pods: '30' },
          { 'requests.cpu': '0' },
        ),
      ],
      '',
    );
    const text = headroomText(b, 80);
    const lines = text.split('\n');
    for (const line of lines) expect([...line].length, line).toBeLessThanOrEqual(80);
    expect(lines[0]).toBe('Project payments  tenant acme  cluster (unnamed)');
    const cpu = lines.find((l) => l.startsWith('requests.cpu'))!;
    expect(cpu).toMatch(/^requests\.cpu\s+████░{16} 4\/20\s+500m\s+16$/);
    expect(lines.find((l) => l.startsWith('pods'))).toMatch(/█+░+ 50\/200\s+1\s+150$/);
    // The bars of one section start in one column.
    const resourceRows = lines.slice(3, 7);
    expect(new Set(resourceRows.map((l) => l.search(/[█░]/))).size).toBe(1);
    expect(lines.find((l) => l.startsWith('payments-batch'))).toMatch(/^payments-batch\s+limits\.cpu\s+░+ 0\/4\s+4$/);
    expect(text).toMatch(/\n\s+requests\.cpu\s+█████░+ 500m\/2\s+2\n/);
    expect(text.endsWith('8Gi\n')).toBe(true);
    expect(text).toContain('NAMESPACE');
  });

  it('narrows the bars in a narrow terminal and marks namespaces counted with namespaceDefaults', async () => {
    const web = await example('web');
    const b = budgetFromObjects(web, [ns('web-staging', 'web')], [], '');
    const text = headroomText(b, 60);
    for (const line of text.split('\n')) expect([...line].length, line).toBeLessThanOrEqual(60);
    expect(text).toContain('web-staging*');
    expect(text).toContain('counted with namespaceDefaults');
    // The burst's sentence is broken at spaces, not cut.
    expect(text.replace(/\n  /g, ' ')).toContain(
      'burst black-friday-2030 (from 2030-11-29T00:00:00Z until 2030-12-03T00:00:00Z): +4 requests.cpu on namespace web-frontend',
    );
  });
});

describe('projects and namespaces tables, machine output', () => {
  it('lists projects with their namespace count, phase and budget use', async () => {
    const payments = {
      ...(await example('payments')),
      status: { phase: 'Active' as const, budgetUse: 'requests.cpu 4/20' },
    };
    const row = projectRow(payments, [
      ns('payments-batch', 'payments'),
      ns('payments-ledger', 'payments'),
      ns('web-x', 'web'),
    ]);
    expect(row.namespaces).toEqual(['payments-batch', 'payments-ledger']);
    expect(projectsTable([row])).toBe(
      'NAME       TENANT   NAMESPACES   PHASE    BUDGET USE\npayments   acme     2            Active   requests.cpu 4/20\n',
    );
    expect(projectsTable([])).toMatch(/you own none/);
    expect(namespacesTable([{ name: 'payments-batch', project: 'payments', tenant: 'acme', phase: 'Active' }])).toBe(
      'NAME             PROJECT    TENANT   STATUS\npayments-batch   payments   acme     Active\n',
    );
  });

  it('-o json and -o yaml print the same document, byte for byte the same on every run', async () => {
    const b = budgetFromObjects(await example('web'), [ns('web-staging', 'web')], [], '');
    expect(machine(b, 'json')).toBe(machine(JSON.parse(machine(b, 'json')), 'json'));
    expect(parse(machine(b, 'yaml'))).toEqual(JSON.parse(machine(b, 'json')));
    expect(Object.keys(JSON.parse(machine(b, 'json')) as object)).toEqual([
      'project',
      'tenant',
      'cluster',
      'resources',
      'namespaces',
      'bursts',
    ]);
  });
});
