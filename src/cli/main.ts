#!/usr/bin/env node
/** The `tenantgate` command: validate, render, webhook, controller, certs. */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/load.js';
import { runRender } from './render.js';
import { runValidate } from './validate.js';

const USAGE = `usage:
  tenantgate validate [--config tenantgate.yaml] [--base GIT-REF | --previous PATH] [--output text|json] PATH...
  tenantgate render [--format yaml|json] [DIR]  (Argo CD CMP: ARGOCD_ENV_CLUSTER selects the cluster;
                                               the plugin uses --format json: JSON documents in a YAML stream)
  tenantgate webhook [--config F] [--port 8443] [--cert F] [--key F] [--kubeconfig F]
  tenantgate controller [--config F] [--kubeconfig F] [--metrics-port 8080] …   (tenantgate controller --help: every flag)
  tenantgate certs generate [--dir certs] [--service tenantgate-webhook] [--namespace tenantgate-system]
  tenantgate --version
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'validate': {
      const { values, positionals } = parseArgs({
        args: rest,
        allowPositionals: true,
        options: { config: { type: 'string' }, base: { type: 'string' }, previous: { type: 'string', multiple: true }, output: { type: 'string', default: 'text' } },
      });
      if (positionals.length === 0) throw new UsageError('validate needs at least one file or directory');
      if (values.output !== 'text' && values.output !== 'json') throw new UsageError(`--output is ${values.output}; allowed: text, json`);
      return runValidate(positionals, await loadConfig(values.config), { output: values.output, base: values.base, previous: values.previous });
    }
    case 'render': {
      const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: { format: { type: 'string', default: 'yaml' } } });
      if (values.format !== 'yaml' && values.format !== 'json') throw new UsageError(`--format is ${values.format}; allowed: yaml, json`);
      return runRender(positionals[0] ?? '.', values.format);
    }
    case 'webhook': {
      const { runWebhook } = await import('../webhook/main.js');
      return runWebhook(rest);
    }
    case 'controller': {
      const { runController } = await import('../controller/main.js');
      return runController(rest);
    }
    case 'certs': {
      const { runCerts } = await import('./certs.js');
      return runCerts(rest);
    }
    case '--version':
    case '-V': {
      const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
      process.stdout.write(`${version}\n`);
      return 0;
    }
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
}

class UsageError extends Error {}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`tenantgate: ${message}\n`);
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) process.stderr.write(USAGE);
    process.exitCode = 2;
  },
);
