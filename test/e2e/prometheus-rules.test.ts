/**
 * The chart's PrometheusRule checked and unit-tested by the real promtool (hack/promtool, built from Go
 * modules): the rule groups as helm renders them are written to a rules file, `promtool check rules`
 * accepts them, and `promtool test rules` runs test/prometheus/*.test.yaml (input series, expected
 * alerts with their labels and annotations, firing and not-firing cases) against them. Needs no
 * cluster; it lives with the e2e tests because it needs helm and promtool, which `make test-integration` builds.
 */
import { execa } from 'execa';
import { copyFile, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { CHART_DIR, helmBinary, helmTemplate } from '../../hack/chart-manifests.js';
import { REPO_ROOT } from '../support/paths.js';
import { metricNames, promtoolBinary, renderedRuleGroups, type RuleGroup } from '../support/monitoring.js';

const TESTS_DIR = join(REPO_ROOT, 'test', 'prometheus');
let helm: string;
let promtool: string;
let groups: RuleGroup[];
let testFiles: string[];

/** A directory with the rendered rules as tenantgate-rules.yaml (the name the test files load) and the test files. */
async function workDir(ruleGroups: RuleGroup[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tg-promtool-'));
  await writeFile(join(dir, 'tenantgate-rules.yaml'), stringify({ groups: ruleGroups }));
  for (const f of testFiles) await copyFile(join(TESTS_DIR, f), join(dir, f));
  return dir;
}

beforeAll(async () => {
  [helm, promtool] = await Promise.all([helmBinary(), promtoolBinary()]);
  // With the fleet-wide group (off by default: only for a Prometheus that scrapes every fleet member).
  groups = await renderedRuleGroups(helm, ['--set', 'prometheusRules.fleetWide=true']);
  testFiles = (await readdir(TESTS_DIR)).filter((f) => f.endsWith('.test.yaml')).sort();
}, 1_800_000);

describe('the chart with prometheusRules.enabled', () => {
  it('renders thirteen alerts in four groups, each with a severity, a summary and a description', () => {
    expect(groups.map((g) => g.name)).toEqual([
      'tenantgate.projects',
      'tenantgate.webhook',
      'tenantgate.fleet',
      'tenantgate.fleet-wide',
    ]);
    const alerts = groups.flatMap((g) => g.rules);
    expect(alerts.map((r) => r.alert)).toEqual([
      'TenantgateProjectHeadroomLow',
      'TenantgateProjectOverBudget',
      'TenantgateCascadeStuck',
      'TenantgateProjectDeletionWaiting',
      'TenantgateDeletionBreakerTripped',
      'TenantgateBurstEndingSoon',
      'TenantgateProjectOverBudgetAfterBurst',
      'TenantgateLedgerDenialsRising',
      'TenantgateWebhookErrors',
      'TenantgateWebhookAbsent',
      'TenantgateFleetHubUnreachable',
      'TenantgateFleetEnforcedAboveRecord',
      'TenantgateFleetShareOrphaned',
    ]);
    for (const r of alerts) {
      expect(r.labels?.severity, r.alert).toMatch(/^(warning|critical)$/);
      expect(r.annotations?.summary, r.alert).toBeTruthy();
      expect(r.annotations?.description, r.alert).toBeTruthy();
    }
  });

  it('selects only tenantgate metrics, and `up` for the absent webhook', () => {
    const names = new Set(groups.flatMap((g) => g.rules.flatMap((r) => [...metricNames(r.expr)])));
    expect([...names].filter((n) => !n.startsWith('tenantgate_'))).toEqual(['up']);
    expect(names).toContain('tenantgate_project_headroom');
  });

  it('leaves the fleet-wide group out by default (a per-cluster Prometheus never sees the other members report)', async () => {
    const plain = await renderedRuleGroups(helm);
    expect(plain.map((g) => g.name)).toEqual(['tenantgate.projects', 'tenantgate.webhook', 'tenantgate.fleet']);
  });

  it('renders nothing for monitoring by default', async () => {
    const out = await helmTemplate([], helm);
    expect(out).not.toContain('kind: PrometheusRule');
    expect(out).not.toContain('grafana_dashboard');
  });

  it('takes its thresholds and the webhook job from values, and refuses values outside the schema naming the field', async () => {
    const custom = await renderedRuleGroups(helm, [
      '--set-json',
      'prometheusRules.headroomWarningRatio=0.25',
      '--set',
      'prometheusRules.cascadeStuckFor=30m',
      '--set',
      'prometheusRules.webhookJob=tg-webhook',
    ]);
    const rule = (name: string) => custom.flatMap((g) => g.rules).find((r) => r.alert === name)!;
    expect(rule('TenantgateProjectHeadroomLow').expr).toContain('< 0.25');
    expect(rule('TenantgateCascadeStuck').for).toBe('30m');
    expect(rule('TenantgateWebhookAbsent').expr).toBe('absent(up{job=~"tg-webhook"} == 1)');
    // --set-json: helm's --set would pass 2 as a string.
    for (const [field, value] of [
      ['headroomWarningRatio', '2'],
      ['cascadeStuckFor', '"ten-minutes"'],
    ] as const) {
      const bad = await execa(
        helm,
        [
          'template',
          CHART_DIR,
          '--set',
          'prometheusRules.enabled=true',
          '--set-json',
          `prometheusRules.${field}=${value}`,
        ],
        { reject: false },
      );
      expect(bad.exitCode, `${field}=${value}`).not.toBe(0);
      expect(bad.stderr).toContain(`/prometheusRules/${field}`);
      expect(bad.stderr).not.toContain('got string, want number');
    }
  });
});

describe('the chart with dashboard.enabled', () => {
  it('renders the dashboard JSON in a ConfigMap labelled for the Grafana sidecar, with extra labels and annotations', async () => {
    const out = await helmTemplate(
      [
        '--set',
        'dashboard.enabled=true',
        '--set',
        'dashboard.annotations.grafana_folder=Platform',
        '--set',
        'dashboard.labels.team=platform',
      ],
      helm,
    );
    const cm = parseAllDocuments(out)
      .map(
        (d) =>
          d.toJS() as {
            kind?: string;
            metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
            data?: Record<string, string>;
          } | null,
      )
      .find((o) => o?.kind === 'ConfigMap' && o.metadata.name === 'tenantgate-dashboard');
    expect(cm?.metadata.labels).toMatchObject({ grafana_dashboard: '1', team: 'platform' });
    expect(cm?.metadata.annotations).toEqual({ grafana_folder: 'Platform' });
    const file = JSON.parse(await readFile(join(CHART_DIR, 'files', 'dashboards', 'tenantgate.json'), 'utf8')) as {
      uid: string;
    };
    expect(JSON.parse(cm!.data!['tenantgate.json']!)).toEqual(file);
    expect(file.uid).toBe('tenantgate');
  });
});

describe('promtool', () => {
  it('check rules accepts the rendered rules', async () => {
    const dir = await workDir(groups);
    const r = await execa(promtool, ['check', 'rules', join(dir, 'tenantgate-rules.yaml')], { reject: false });
    expect(r.exitCode, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('SUCCESS: 13 rules found');
  });

  it('every alert has a test where it fires and one where it stays silent', async () => {
    const firing = new Set<string>();
    const silent = new Set<string>();
    for (const f of testFiles) {
      const doc = parse(await readFile(join(TESTS_DIR, f), 'utf8')) as {
        tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts?: unknown[] }> }>;
      };
      for (const t of doc.tests)
        for (const a of t.alert_rule_test ?? []) ((a.exp_alerts ?? []).length > 0 ? firing : silent).add(a.alertname);
    }
    const alerts = groups.flatMap((g) => g.rules.map((r) => r.alert!)).sort();
    expect([...firing].sort()).toEqual(alerts);
    expect([...silent].sort()).toEqual(alerts);
  });

  it('test rules passes test/prometheus/*.test.yaml', async () => {
    const dir = await workDir(groups);
    const r = await execa(promtool, ['test', 'rules', ...testFiles.map((f) => join(dir, f))], { reject: false });
    expect(r.exitCode, r.stdout + r.stderr).toBe(0);
    expect(r.stdout.match(/SUCCESS/g)?.length).toBe(testFiles.length);
  });

  it('the same tests fail against rules rendered with other thresholds (the tests see the values)', async () => {
    const dir = await workDir(
      await renderedRuleGroups(helm, [
        '--set-json',
        'prometheusRules.headroomWarningRatio=0.01',
        '--set',
        'prometheusRules.cascadeStuckFor=20m',
        '--set',
        'prometheusRules.fleetWide=true',
        '--set',
        'prometheusRules.fleetHubUnreachableFor=20m',
        '--set',
        'prometheusRules.fleetShareOrphanedFor=3h',
        '--set',
        'prometheusRules.fleetEnforcedAboveRecordFor=30m',
      ]),
    );
    const r = await execa(promtool, ['test', 'rules', join(dir, 'projects.test.yaml'), join(dir, 'fleet.test.yaml')], {
      reject: false,
    });
    expect(r.exitCode).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/TenantgateProjectHeadroomLow/);
    expect(r.stdout + r.stderr).toMatch(/TenantgateCascadeStuck/);
    expect(r.stdout + r.stderr).toMatch(/TenantgateFleetHubUnreachable/);
    expect(r.stdout + r.stderr).toMatch(/TenantgateFleetShareOrphaned/);
    expect(r.stdout + r.stderr).toMatch(/TenantgateFleetEnforcedAboveRecord/);
  });
});
