/**
 * The flag helpers `tenantgate webhook` and `tenantgate controller` use. The options they produce are
 * declared by what runs them (src/runtime-options.ts, src/webhook/options.ts, src/controller/options.ts):
 * nothing outside src/cli imports src/cli.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { LOG_DEFAULTS, LOG_FORMATS, LOG_LEVELS } from '../log.js';

/** One integer parser for every numeric flag: the flag, the value and the allowed range in the error. */
export function integerIn(min: number, max: number) {
  return (raw: string): number => {
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(`${JSON.stringify(raw)} is not allowed: an integer from ${min} to ${max}`);
    return n;
  };
}

/** The options every long-running command shares. */
export function withRuntimeOptions(cmd: Command): Command {
  return cmd
    .option('--config <file>', 'tenantgate.yaml (without it: the built-in defaults)')
    .option('--config-optional', 'a --config file that does not exist means the built-in defaults')
    .option('--kubeconfig <file>', 'else KUBECONFIG, ~/.kube/config, or the in-cluster service account')
    .addOption(
      new Option('--log-level <level>', 'least severe level logged').choices(LOG_LEVELS).default(LOG_DEFAULTS.level),
    )
    .addOption(
      new Option('--log-format <format>', 'json in the cluster, pretty at a terminal')
        .choices(LOG_FORMATS)
        .default(LOG_DEFAULTS.format),
    );
}

export type { RuntimeOptions } from '../runtime-options.js';
export type { WebhookCliOptions } from '../webhook/options.js';
export type { ControllerCliOptions } from '../controller/options.js';
