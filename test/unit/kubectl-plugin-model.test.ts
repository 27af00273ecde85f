/** kubectl tenantgate's model: identity, ownership, kubectl's flags, both data paths giving the same budget, the commands' --help. */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/kubectl/cli.js';
import { kubectlArgs } from '../../src/kubectl/flags.js';
import {
  budgetFromObjects,
  budgetFromView,
  clusterFromStatus,
  identityFromReview,
  projectRowFromView,
} from '../../src/kubectl/model.js';
import { isOwner } from '../../src/validate/rules/tenancy.js';
import { isProjectObject, parseSource } from '../../src/validate/source.js';
import type { Project } from '../../src/validate/types.js';
import { REPO_ROOT } from '../support/paths.js';

async function examples(): Promise<Project[]> {
  const out: Project[] = [];
  for (const f of ['acme.yaml', 'globex.yaml', 'initech.yaml']) {
    const file = join(REPO_ROOT, 'examples', 'gitops', f);
    out.push(
      ...parseSource(file, await readFile(file, 'utf8'))
        .documents.map((d) => d.object)
        .filter(isProjectObject),
    );
  }
  return out;
}

describe('who owns what', () => {
  it('reads the SelfSubjectReview of `kubectl auth whoami -o json`, and says what is wrong with another answer', () => {
    expect(
      identityFromReview({
        kind: 'SelfSubjectReview',
        status: { userInfo: { username: 'bob', groups: ['tenants', 'system:authenticated'] } },
      }),
    ).toEqual({ username: 'bob', groups: ['tenants', 'system:authenticated'] });
    expect(() => identityFromReview({ status: {} })).toThrow(/status\.userInfo\.username is undefined/);
  });
  it('a project is mine by my user, one of my groups or my ServiceAccount', async () => {
    const all = await examples();
    const mine = (username: string, groups: string[] = []) =>
      all.filter((p) => isOwner(p, { username, groups })).map((p) => p.metadata.name);
    expect(mine('alice@acme.example')).toEqual(['payments']);
    expect(mine('x', ['acme:web-admins'])).toEqual(['web']);
    expect(mine('system:serviceaccount:ci:deployer')).toEqual(['payments']);
    expect(mine('bob', ['globex:admins'])).toEqual(['data', 'ml']);
    expect(mine('carol')).toEqual(['reports']);
    expect(mine('dave', ['tenants'])).toEqual([]);
  });
});

describe("kubectl's flags", () => {
  it("are passed on in kubectl's own syntax, -n only where asked", () => {
    const flags = {
      kubeconfig: '/k',
      context: 'c',
      namespace: 'ns',
      as: 'alice',
      asGroup: ['g1', 'g2'],
      requestTimeout: '5s',
      insecureSkipTlsVerify: true,
    };
    expect(kubectlArgs(flags)).toEqual([
      '--kubeconfig=/k',
      '--context=c',
      '--namespace=ns',
      '--as=alice',
      '--as-group=g1',
      '--as-group=g2',
      '--request-timeout=5s',
      '--insecure-skip-tls-verify=true',
    ]);
    expect(kubectlArgs(flags, false)).not.toContain('--namespace=ns');
    expect(kubectlArgs({})).toEqual([]);
  });
});

describe('the two data paths', () => {
  it('a Budget of the view API reads as the same JSON the objects give through projectBudget', async () => {
    const payments = (await examples()).find((p) => p.metadata.name === 'payments')!;
    const ns = (name: string) => ({ metadata: { name, labels: { 'tenantgate.io/project': 'payments' } } });
    const direct = budgetFromObjects(
      payments,
      [ns('payments-ledger'), ns('payments-batch')],
      [
        {
          metadata: { name: 'q', namespace: 'payments-batch' },
          spec: { hard: { 'requests.cpu': '3' } },
          status: { used: { 'requests.cpu': '1' } },
        },
      ],
      '',
    );
    // What the view serves in payments-batch (the contract: the budget JSON plus this namespace's share, namespaces in any order).
    const served = {
      apiVersion: 'view.tenantgate.io/v1alpha1',
      kind: 'Budget',
      metadata: { name: 'payments', namespace: 'payments-batch' },
      ...direct,
      namespace: direct.namespaces[0],
      namespaces: [...direct.namespaces].reverse(),
    };
    expect(budgetFromView(JSON.parse(JSON.stringify(served)))).toEqual(direct);
    expect(direct.resources.find((r) => r.resource === 'requests.cpu')).toEqual({
      resource: 'requests.cpu',
      budget: '20',
      allocated: '5',
      used: '1',
      headroom: '15',
    });
    expect(() => budgetFromView({ metadata: { name: 'p', namespace: 'n' }, project: 'p' })).toThrow(
      'Budget n/p: resources is undefined, expected a list',
    );
  });
  it('an OwnedProject reads as a projects row', () => {
    expect(
      projectRowFromView({
        metadata: { name: 'ml' },
        tenant: 'globex',
        owners: [{ kind: 'User', name: 'bob' }],
        namespaces: ['ml-serving', 'ml-a'],
        phase: 'Active',
        budgetUse: 'pods 1/2',
      }),
    ).toEqual({
      name: 'ml',
      tenant: 'globex',
      owners: [{ kind: 'User', name: 'bob' }],
      namespaces: ['ml-a', 'ml-serving'],
      phase: 'Active',
      budgetUse: 'pods 1/2',
    });
    expect(() => projectRowFromView({ metadata: {} })).toThrow(/metadata\.name is undefined/);
  });
  it('the direct path counts for the cluster the controller counted (allocated + headroom in the status)', async () => {
    const payments = (await examples()).find((p) => p.metadata.name === 'payments')!;
    const onEu = {
      ...payments,
      status: {
        allocated: { 'requests.cpu': '8', 'requests.memory': '16Gi', 'limits.cpu': '16', pods: '50' },
        headroom: { 'requests.cpu': '4', 'requests.memory': '16Gi', 'limits.cpu': '8', pods: '50' },
      },
    };
    expect(clusterFromStatus(onEu)).toBe('prod-eu');
    const unnamed = {
      ...payments,
      status: {
        allocated: { 'requests.cpu': '4' },
        headroom: { 'requests.cpu': '16', 'requests.memory': '64Gi', 'limits.cpu': '40', pods: '200' },
      },
    };
    expect(clusterFromStatus(unnamed)).toBe('');
    expect(clusterFromStatus({ ...payments, status: {} })).toBe('');
  });
});

describe('--help', () => {
  it("every command has one, with kubectl's flags and -o", async () => {
    for (const cmd of [
      ['projects'],
      ['headroom'],
      ['namespaces'],
      ['why'],
      ['create', 'namespace'],
      ['fleet', 'release'],
    ]) {
      let out = '';
      const code = await main([...cmd, '--help'], {
        out: (t) => void (out += t),
        err: (t) => void (out += t),
        columns: () => 80,
      });
      expect(code, cmd.join(' ')).toBe(0);
      for (const flag of ['--kubeconfig', '--context', '-n, --namespace', '--as <user>', '--as-group', '-o, --output'])
        expect(out, `${cmd.join(' ')} ${flag}`).toContain(flag);
    }
  });
  it('bad input names the option, the value and what is allowed', async () => {
    let err = '';
    const code = await main(['projects', '-o', 'table'], {
      out: () => {},
      err: (t) => void (err += t),
      columns: () => 80,
    });
    expect(code).not.toBe(0);
    expect(err).toMatch(/option '-o, --output <format>' argument 'table' is invalid\. Allowed choices are json, yaml/);
  });
});
