/** kubectl tenantgate why: denials → rule ids, titles (as docs/rules.md has them), what fits, what to change. */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RULE_HELP } from '../../src/kubectl/rules.js';
import { findings, objectName, verdictOf, whyText } from '../../src/kubectl/why.js';
import { REPO_ROOT } from '../support/paths.js';

const Q1 =
  'Error from server (Forbidden): error when creating "STDIN": admission webhook "quotas.tenantgate.io" denied the request: [Q1] ResourceQuota payments-batch/big asks requests.cpu 30, project payments has 20 of which 2 are allocated to other namespaces: at most 18 fits\n[Q2] ResourceQuota payments-batch/big leaves pods without a quota, but project payments budgets it: every namespace needs an unscoped ResourceQuota covering pods, requests.cpu\n';

describe('rule titles', () => {
  it('every rule id has the title of its heading in docs/rules.md, and every heading has an entry', async () => {
    const doc = await readFile(join(REPO_ROOT, 'docs', 'rules.md'), 'utf8');
    const headings = Object.fromEntries([...doc.matchAll(/^### ([A-Z][0-9]+) — (.+)$/gm)].map((m) => [m[1]!, m[2]!]));
    expect(Object.keys(RULE_HELP).sort()).toEqual(Object.keys(headings).sort());
    for (const [id, help] of Object.entries(RULE_HELP)) expect(help!.title, id).toBe(headings[id]);
  });
});

describe('findings', () => {
  it('splits a denial into one finding per rule id, with the Q1 message\'s "at most X fits"', () => {
    const f = findings(Q1);
    expect(f.map((x) => x.rule)).toEqual(['Q1', 'Q2']);
    expect(f[0]!.message).toBe(
      'ResourceQuota payments-batch/big asks requests.cpu 30, project payments has 20 of which 2 are allocated to other namespaces: at most 18 fits',
    );
    expect(f[0]!.fits).toEqual({ resource: 'requests.cpu', atMost: '18' });
    expect(f[0]!.title).toBe("the namespaces' quotas fit the budget");
    expect(f[1]!.fits).toBeUndefined();
  });
  it('"nothing fits" is at most 0; a namespaceDefaults ask keeps its resource', () => {
    const [f] = findings(
      '[Q1] Namespace p-x asks requests.cpu 2 (namespaceDefaults), project p has 4 of which 5 are allocated to other namespaces: nothing fits (the other namespaces already use 1 more than the budget)',
    );
    expect(f!.fits).toEqual({ resource: 'requests.cpu', atMost: '0' });
  });
  it('ignores brackets that are not rule ids', () => {
    expect(findings('[Z9] nothing [q1] here [notanid]')).toEqual([]);
    expect(findings('[Q9] a rule newer than the table')[0]).toMatchObject({ rule: 'Q9', title: 'see docs/rules.md' });
  });
});

describe('verdictOf', () => {
  it('a refused dry run carries its denials; warnings are kept apart', () => {
    const v = verdictOf('ResourceQuota payments-batch/big', {
      exitCode: 1,
      stderr: `Warning: [Q4] project payments: requests.cpu headroom 1 of 20 left\n${Q1}`,
    });
    expect(v.admitted).toBe(false);
    expect(v.denials.map((d) => d.rule)).toEqual(['Q1', 'Q2']);
    expect(v.warnings.map((w) => w.rule)).toEqual(['Q4']);
    expect(v.error).toBeUndefined();
  });
  it('a refusal without a rule id (RBAC) is kept as kubectl said it', () => {
    const stderr =
      'Error from server (Forbidden): error when creating "STDIN": resourcequotas is forbidden: User "dave" cannot create resource "resourcequotas" in API group "" in the namespace "payments-batch"\n';
    const v = verdictOf('ResourceQuota payments-batch/big', { exitCode: 1, stderr });
    expect(v).toMatchObject({ admitted: false, denials: [], error: stderr.trim() });
  });
  it('an admitted object', () => {
    expect(verdictOf('ConfigMap a/b', { exitCode: 0, stderr: '' })).toEqual({
      object: 'ConfigMap a/b',
      admitted: true,
      denials: [],
      warnings: [],
    });
  });
});

describe('the report', () => {
  it('names each object, each rule with its title, the message, what fits and what to change', () => {
    const text = whyText([
      verdictOf('ResourceQuota payments-batch/big', { exitCode: 1, stderr: Q1 }),
      verdictOf('ConfigMap payments-batch/c', { exitCode: 0, stderr: '' }),
    ]);
    expect(text).toContain(
      "ResourceQuota payments-batch/big: refused\n  [Q1] the namespaces' quotas fit the budget\n      ResourceQuota payments-batch/big asks requests.cpu 30",
    );
    expect(text).toContain('      fits: requests.cpu at most 18\n      change: ask for no more than fits');
    expect(text).toContain('ConfigMap payments-batch/c: admitted');
    expect(text).toContain('1 of 2 objects would be refused.');
  });
  it("objects are named by kind, namespace (the file's, else -n) and name", () => {
    expect(objectName({ kind: 'ResourceQuota', metadata: { name: 'q' } }, 'ns1', 0)).toBe('ResourceQuota ns1/q');
    expect(objectName({ kind: 'ResourceQuota', metadata: { name: 'q', namespace: 'ns2' } }, 'ns1', 0)).toBe(
      'ResourceQuota ns2/q',
    );
    expect(objectName({ kind: 'Namespace', metadata: { name: 'n' } }, 'ns1', 0)).toBe('Namespace n');
    expect(objectName({}, undefined, 2)).toBe('document 3 ?');
  });
});
