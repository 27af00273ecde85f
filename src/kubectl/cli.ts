/**
 * `kubectl tenantgate`'s commands (the executable is src/cli/kubectl-plugin.ts): a tenant's view of its projects,
 * budgets and namespaces, and why the webhook would refuse a file. It runs the real kubectl for every request
 * (docs/adr/0030-what-tenants-see.md) and reads the budget view API where the cluster serves
 * it, else the objects themselves (docs/kubectl-plugin.md).
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { readFile } from 'node:fs/promises';
import { parseAllDocuments } from 'yaml';
import { KUBECTL_FLAG_OPTIONS, type KubectlFlags } from './flags.js';
import {
  headroomText,
  machine,
  namespacesTable,
  NO_PROJECTS,
  OUTPUTS,
  projectsTable,
  type NamespaceRow,
  type Output,
} from './format.js';
import { Kubectl } from './kubectl.js';
import { BudgetSource, DEFAULT_SOURCE, SOURCES, type SourceName } from './source.js';
import { findings, objectName, verdictOf, whyText, type Verdict } from './why.js';
import { releaseFleetMember, releaseText } from './fleet-release.js';
import { resumeDeletions, resumeText } from './resume-deletions.js';
import { deletionRows, deletionsText } from './deletions.js';
import { DEFAULT_ALIVE_WITHIN_SECONDS } from '../fleet/member-heartbeat.js';
import { LABEL_PROJECT, LABEL_TENANT, type NamespaceObject, type Project } from '../validate/types.js';
import { cmpStr } from '../order.js';

type CommonOptions = KubectlFlags & { output?: Output; source?: SourceName; clusterName?: string };

export interface PluginIo {
  out(text: string): void;
  err(text: string): void;
  columns(): number;
}

const processIo: PluginIo = {
  out: (t) => void process.stdout.write(t),
  err: (t) => void process.stderr.write(t),
  columns: () => process.stdout.columns || Number(process.env.COLUMNS) || 80,
};

function withKubectlFlags(cmd: Command): Command {
  for (const [flags, description] of KUBECTL_FLAG_OPTIONS) {
    if (flags.startsWith('--as-group'))
      cmd.option(flags, description, (v: string, prev: string[] = []) => [...prev, v]);
    else cmd.option(flags, description);
  }
  return cmd;
}

function withOutput(cmd: Command): Command {
  return cmd.addOption(
    new Option('-o, --output <format>', 'machine-readable output instead of the table').choices(OUTPUTS),
  );
}

function withSource(cmd: Command): Command {
  return cmd
    .addOption(
      new Option(
        '--source <source>',
        'the budget view API, the objects themselves, or the view when the cluster serves it',
      )
        .choices(SOURCES)
        .default(DEFAULT_SOURCE),
    )
    .option(
      '--cluster-name <name>',
      "tenantgate's name of this cluster (clusterName in tenantgate.yaml), for the direct path; default: as the " +
        "Project's status counts it",
    );
}

function source(o: CommonOptions, io: PluginIo): BudgetSource {
  return new BudgetSource(new Kubectl(o), o.source ?? DEFAULT_SOURCE, o.clusterName, (m) => io.err(`${m}\n`));
}

async function namespaceRows(src: BudgetSource, projects: string[]): Promise<NamespaceRow[]> {
  if (projects.length === 0) return [];
  const namespaces = await src.projectNamespaces(`${LABEL_PROJECT} in (${projects.join(',')})`);
  return namespaces
    .map((n) => ({
      name: n.metadata.name ?? '',
      project: n.metadata.labels?.[LABEL_PROJECT] ?? '',
      tenant: n.metadata.labels?.[LABEL_TENANT] ?? '',
      phase: n.status?.phase ?? '',
    }))
    .sort((a, b) => cmpStr(a.name, b.name));
}

async function readDocuments(file: string): Promise<unknown[]> {
  const text =
    file === '-' ? await new Response(process.stdin as unknown as ReadableStream).text() : await readFile(file, 'utf8');
  const docs = parseAllDocuments(text);
  const out: unknown[] = [];
  for (const [i, d] of docs.entries()) {
    if (d.errors.length > 0) throw new Error(`${file}: document ${i + 1} is not valid YAML: ${d.errors[0]!.message}`);
    const js: unknown = d.toJS();
    if (js === null || js === undefined) continue;
    const items =
      (js as { kind?: string; items?: unknown[] }).kind?.endsWith('List') &&
      Array.isArray((js as { items?: unknown[] }).items)
        ? (js as { items: unknown[] }).items
        : [js];
    for (const item of items) {
      if (typeof item !== 'object' || Array.isArray(item))
        throw new Error(
          `${file}: document ${i + 1} is ${JSON.stringify(item).slice(0, 60)}, expected a Kubernetes object ` +
            `(apiVersion, kind, metadata)`,
        );
      out.push(item);
    }
  }
  return out;
}

// A flat table: one entry per command, each its flags and a one-line action.
// eslint-disable-next-line max-lines-per-function
function program(io: PluginIo = processIo, status: { code: number } = { code: 0 }): Command {
  const root = new Command('kubectl tenantgate')
    .description(
      'tenantgate for tenants: your projects, their budgets and namespaces, and why the webhook would refuse a file',
    )
    .showHelpAfterError('(kubectl tenantgate <command> --help shows every option)')
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .exitOverride();

  withSource(
    withOutput(
      withKubectlFlags(
        root.command('projects').description('the projects you own (a Project lists its owners in spec.owners)'),
      ),
    ),
  ).action(async (o: CommonOptions) => {
    const rows = await source(o, io).projects();
    io.out(o.output ? machine({ projects: rows }, o.output) : projectsTable(rows));
  });

  withSource(
    withOutput(
      withKubectlFlags(
        root
          .command('headroom')
          .description(
            "a project's budget: per resource allocated/budget, used and headroom; per namespace used/hard and " +
              'its share',
          ),
      ),
    ),
  )
    .argument('[project]', 'one of your projects (default: every project you own)')
    .action(async (project: string | undefined, o: CommonOptions) => {
      const src = source(o, io);
      const names = project ? [project] : (await src.projects()).map((p) => p.name);
      const budgets = [];
      for (const name of names) budgets.push(await src.budget(name));
      if (o.output) io.out(machine(project ? budgets[0] : { budgets }, o.output));
      else if (budgets.length === 0) io.out(NO_PROJECTS);
      else io.out(budgets.map((b) => headroomText(b, io.columns())).join('\n'));
    });

  withSource(
    withOutput(withKubectlFlags(root.command('namespaces').description('the namespaces of your projects'))),
  ).action(async (o: CommonOptions) => {
    const src = source(o, io);
    const rows = await namespaceRows(
      src,
      (await src.projects()).map((p) => p.name),
    );
    io.out(o.output ? machine({ namespaces: rows }, o.output) : namespacesTable(rows));
  });

  withOutput(
    withKubectlFlags(
      root
        .command('why')
        .description(
          "server-side dry run of a file's objects: which rules refuse them, what fits and what to change (exit " +
            '1 when one is refused)',
        ),
    ),
  )
    .requiredOption('-f, --filename <file>', "a YAML or JSON file of objects ('-': stdin)")
    .action(async (o: CommonOptions & { filename: string }) => {
      const kubectl = new Kubectl(o);
      const verdicts: Verdict[] = [];
      for (const [i, doc] of (await readDocuments(o.filename)).entries()) {
        const run = await kubectl.run(['apply', '--dry-run=server', '-o', 'name', '-f', '-'], {
          input: JSON.stringify(doc),
          namespaced: true,
        });
        verdicts.push(verdictOf(objectName(doc, o.namespace, i), run));
      }
      io.out(o.output ? machine({ objects: verdicts }, o.output) : whyText(verdicts));
      if (verdicts.some((v) => !v.admitted)) status.code = 1;
    });

  const create = root.command('create').description('create objects for a project');
  withOutput(
    withKubectlFlags(
      create
        .command('namespace')
        .description(
          'create a namespace of one of your projects, with its tenantgate.io/project and tenantgate.io/tenant labels',
        ),
    ),
  )
    .argument('<name>', 'the namespace (<project>-<suffix> by default)')
    .requiredOption('--project <project>', 'the project it belongs to')
    .addOption(
      new Option('--dry-run <mode>', "kubectl's: server checks it with the webhook and stores nothing")
        .choices(['none', 'server', 'client'])
        .default('none'),
    )
    .action(async (name: string, o: CommonOptions & { project: string; dryRun: string }) => {
      const kubectl = new Kubectl(o);
      const project = await kubectl.json<Project>(['get', 'projects.tenantgate.io', o.project]).catch((err: Error) => {
        throw new Error(`Project ${o.project}: ${err.message}`);
      });
      const namespace: NamespaceObject = {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, labels: { [LABEL_PROJECT]: o.project, [LABEL_TENANT]: project.spec.tenant } },
      };
      const run = await kubectl.run(
        ['create', '-f', '-', `--dry-run=${o.dryRun}`, ...(o.output ? ['-o', o.output] : [])],
        { input: JSON.stringify(namespace) },
      );
      io.out(run.stdout);
      if (run.exitCode !== 0) {
        io.err(run.stderr);
        for (const f of findings(run.stderr)) io.err(`  [${f.rule}] ${f.title}: ${f.change}\n`);
        status.code = 1;
      } else if (run.stderr) io.err(run.stderr);
    });

  const fleet = root
    .command('fleet')
    .description("the fleet's hub (docs/fleet.md): operator commands on the FleetBudgets");
  withOutput(
    withKubectlFlags(
      fleet
        .command('release')
        .description(
          'on the hub, as tenantgate-fleet-operator: a member cluster that is gone gives up its share of a ' +
            "project's fleet budget (its writes are refused from then on)",
        ),
    ),
  )
    .argument('<project>', 'the Project (its FleetBudget in tenantgate-fleet)')
    .argument('<cluster>', 'the member cluster to release')
    .option('--force', 'release even though the member was heard from recently (its heartbeat Lease on the hub)')
    .option(
      '--alive-within <seconds>',
      `a member whose heartbeat was renewed within this many seconds still runs and is not released without ` +
        `--force (default ${DEFAULT_ALIVE_WITHIN_SECONDS})`,
      (v) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 0)
          throw new InvalidArgumentError(`--alive-within ${v}: allowed: a whole number of seconds, 0 or more`);
        return n;
      },
    )
    .action(async (project: string, cluster: string, o: CommonOptions & { force?: boolean; aliveWithin?: number }) => {
      const outcome = await releaseFleetMember(new Kubectl(o), project, cluster, {
        ...(o.force ? { force: true } : {}),
        ...(o.aliveWithin !== undefined ? { aliveWithinSeconds: o.aliveWithin } : {}),
      });
      io.out(o.output ? machine({ project, cluster, ...outcome }, o.output) : releaseText(project, cluster, outcome));
    });

  withOutput(
    withKubectlFlags(
      root
        .command('deletions')
        .description(
          'the Projects being deleted: paused by the breaker, waiting for a confirmation (what each namespace ' +
            'holds, and how to confirm), or cascading (docs/deletion.md)',
        ),
    ),
  ).action(async (o: CommonOptions) => {
    const list = await new Kubectl(o).json<{ items?: Project[] }>(['get', 'projects.tenantgate.io']);
    const rows = deletionRows(list.items ?? []);
    io.out(o.output ? machine(rows, o.output) : deletionsText(rows));
  });

  withOutput(
    withKubectlFlags(
      root
        .command('resume-deletions')
        .description('as an operator: the deletion breaker (rule D2, docs/deletion.md) lets the paused cascades go on'),
    ),
  )
    .option(
      '--tenantgate-namespace <namespace>',
      "tenantgate's namespace, where the breaker's ConfigMap is",
      'tenantgate-system',
    )
    .action(async (o: CommonOptions & { tenantgateNamespace: string }) => {
      const outcome = await resumeDeletions(new Kubectl(o), o.tenantgateNamespace);
      io.out(o.output ? machine(outcome, o.output) : resumeText(o.tenantgateNamespace, outcome));
    });

  return root;
}

export async function main(argv: string[], io: PluginIo = processIo): Promise<number> {
  try {
    const status = { code: 0 };
    await program(io, status).parseAsync(argv, { from: 'user' });
    return status.code;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    io.err(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
