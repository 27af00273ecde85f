#!/usr/bin/env node
/**
 * The `tenantgate` command (commander): validate, render, certs generate, snapshot, plan; the
 * long-running webhook and controller commands are in webhook.ts and controller.ts.
 */
import { Command, CommanderError, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { discoverConfig, loadConfig } from '../config/load.js';
import { DEFAULT_CONFIG } from '../config/config.js';
import { WEBHOOK_SERVICE_NAME } from '../certs/webhook-service.js';
import { fixedClock, parseInstant, setProcessClock } from '../clock.js';
import { registerControllerCommand } from './controller.js';
import { registerWebhookCommand } from './webhook.js';
import type { PlanCliOptions } from './plan.js';
import { runRender } from './render.js';
import { runValidate } from './validate.js';

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/**
 * The action of a command whose module `load` imports only when the command runs (no other command loads it), its
 * exit code the one the module's runner resolves to.
 */
function lazily<O>(load: () => Promise<(o: O) => Promise<number>>): (o: O) => Promise<void> {
  return async (o) => {
    const run = await load();
    process.exitCode = await run(o);
  };
}

// A flat table: one entry per command, each its flags and a one-line action.
export function program(): Command {
  const root = new Command('tenantgate')
    .description('Multi-tenancy for shared Kubernetes clusters: projects, namespaces and quota budgets')
    .version(version(), '-v, --version')
    .showHelpAfterError('(tenantgate <command> --help shows every option)')
    .exitOverride();

  root
    .command('validate')
    .description('check Project files offline (pre-commit, CI); findings as file:line:col: [RULE] message')
    .argument('<paths...>', 'files or directories')
    .option(
      '--config <file>',
      'tenantgate.yaml (default: ./tenantgate.yaml, else the one in or next to the first argument that has one, ' +
        'else the built-in defaults)',
    )
    .option('--base <ref>', 'compare with the files at this git revision (T1)')
    .option(
      '--previous <path>',
      'compare with this file or directory on disk (T1; repeatable)',
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .addOption(
      new Option('--output <format>', 'findings as text on stderr or JSON on stdout')
        .choices(['text', 'json'])
        .default('text'),
    )
    .option(
      '--now <instant>',
      'decide at this RFC 3339 instant instead of the clock: which bursts are active or have ended (B2)',
    )
    .action(
      async (
        paths: string[],
        o: { config?: string; base?: string; previous?: string[]; output: 'text' | 'json'; now?: string },
      ) => {
        if (o.now) setProcessClock(fixedClock(parseInstant(o.now, '--now')));
        process.exitCode = await runValidate(paths, await loadConfig(o.config ?? discoverConfig(paths)), {
          output: o.output,
          ...(o.base ? { base: o.base } : {}),
          ...(o.previous?.length ? { previous: o.previous } : {}),
        });
      },
    );

  root
    .command('render')
    .description(
      'the Argo CD config-management plugin: Projects → the objects to apply (ARGOCD_ENV_CLUSTER selects the cluster)',
    )
    .argument('[dir]', 'source directory', '.')
    .addOption(
      new Option('--format <format>', 'block YAML, or JSON documents in a YAML stream (the plugin uses json)')
        .choices(['yaml', 'json'])
        .default('yaml'),
    )
    .option(
      '--app-projects',
      'also one Argo CD AppProject per tenant (docs/argocd.md; the plugin: ARGOCD_ENV_APP_PROJECTS=true)',
      false,
    )
    .option(
      '--fleet-hub',
      "render for the fleet's hub: also each fleet-budgeted Project's FleetBudget (docs/fleet.md; the plugin: " +
        'ARGOCD_ENV_FLEET_HUB=true)',
      false,
    )
    .action(async (dir: string, o: { format: 'yaml' | 'json'; appProjects: boolean; fleetHub: boolean }) => {
      process.exitCode = await runRender(dir, o.format, { appProjects: o.appProjects, fleetHub: o.fleetHub });
    });

  registerWebhookCommand(root);
  registerControllerCommand(root);

  root
    .command('certs')
    .description('certificates for the webhook')
    .command('generate')
    .description('write a CA and a serving certificate for the webhook Service (and 127.0.0.1); print the caBundle')
    .option('--dir <dir>', 'where to write them', 'certs')
    .option('--service <name>', 'webhook Service name', WEBHOOK_SERVICE_NAME)
    .option('--namespace <namespace>', "tenantgate's namespace", DEFAULT_CONFIG.systemNamespace)
    .option(
      '--client',
      "also a client CA (the webhook's --client-ca), the apiserver's client certificate, and the kubeconfig and " +
        'AdmissionConfiguration that make the apiserver present it (--admission-control-config-file)',
    )
    .action(lazily(async () => (await import('./certs.js')).runCerts));

  root
    .command('snapshot')
    .description(
      "read one cluster's Projects, project namespaces and their ResourceQuotas (read-only) into a file for " +
        '`plan --snapshot`',
    )
    .requiredOption('--context <context>', 'kubeconfig context of the cluster')
    .option('--kubeconfig <file>', 'else KUBECONFIG or ~/.kube/config')
    .option('--cluster <name>', "the cluster's name in spec.clusters (default: the context's name)")
    .option('-o, --output <file>', 'write here (default: stdout)')
    .addOption(
      new Option('--format <format>', 'file format (default: json for a .json file, else yaml)')
        .choices(['yaml', 'json'])
        .default('yaml'),
    )
    .action(lazily(async () => (await import('./snapshot.js')).runSnapshot));

  root
    .command('plan')
    .description(
      'what a change does to every budget on every cluster before it merges; exit 1 when a sync would be refused ' +
        '(docs/plan.md)',
    )
    .argument('[dir]', 'the Project files (the working tree)', '.')
    .option('--base <ref>', 'compare with DIR at this git revision (default: the live Projects)')
    .option(
      '--cluster <name=context>',
      'live state of cluster NAME from a kubeconfig context (repeatable)',
      (v: string, all: string[]) => [...all, v],
      [] as string[],
    )
    .option(
      '--snapshot <file>',
      'live state from a `tenantgate snapshot` file (repeatable)',
      (v: string, all: string[]) => [...all, v],
      [] as string[],
    )
    .option('--kubeconfig <file>', 'for --cluster and --hub (else KUBECONFIG or ~/.kube/config)')
    .option(
      '--hub <context>',
      "the fleet's hub (a kubeconfig context): read each fleet-budgeted Project's FleetBudget for the members' " +
        'shares, and refuse [F2] a fleet budget below them',
    )
    .option('--config <file>', 'tenantgate.yaml (default: DIR/tenantgate.yaml, else the built-in defaults)')
    .option('--all', 'every project of DIR, changed or not')
    .option(
      '--now <instant>',
      'plan at this RFC 3339 instant instead of the clock: which bursts are active or have ended (B2)',
    )
    .addOption(
      new Option('--output <format>', 'a terminal table, Markdown for a pull-request comment, or JSON')
        .choices(['table', 'markdown', 'json'])
        .default('table'),
    )
    .action(async (dir: string, o: PlanCliOptions & { now?: string }) => {
      if (o.now) setProcessClock(fixedClock(parseInstant(o.now, '--now')));
      const { runPlan } = await import('./plan.js');
      process.exitCode = await runPlan(dir, o);
    });

  return root;
}

async function main(argv: string[]): Promise<void> {
  const root = program();
  for (const cmd of [root, ...root.commands, ...root.commands.flatMap((c) => c.commands)]) cmd.exitOverride();
  try {
    if (argv.length === 0) {
      root.outputHelp();
      process.exitCode = 2;
      return;
    }
    await root.parseAsync(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version "exit" with code 0; usage errors (already printed) with 2.
      process.exitCode = err.exitCode === 0 ? 0 : 2;
      return;
    }
    process.stderr.write(`tenantgate: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 2;
  }
}

await main(process.argv.slice(2));
