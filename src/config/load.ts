/** Reads the configuration file from disk (the I/O edge of config.ts). */
import { existsSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ConfigError, DEFAULT_CONFIG, parseConfig, type TenantgateConfig } from './config.js';

export interface LoadOptions {
  /** A missing file means the built-in defaults (otherwise it is an error). */
  optional?: boolean;
  log?: (message: string) => void;
}

/**
 * No path: the defaults. A path that does not exist: a ConfigError naming it, unless `optional` —
 * the same for every command, so a ConfigMap that failed to mount never silently changes who is
 * privileged.
 */
export async function loadConfig(path: string | undefined, options: LoadOptions = {}): Promise<TenantgateConfig> {
  if (!path) return DEFAULT_CONFIG;
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new ConfigError(`--config ${path}: cannot be read: ${(err as Error).message}`);
    if (options.optional) {
      options.log?.(`${path} does not exist: using the built-in configuration (--config-optional)`);
      return DEFAULT_CONFIG;
    }
    throw new ConfigError(
      `--config ${path}: no such file; mount the tenantgate-config ConfigMap there, or pass --config-optional to ` +
        `run with the built-in defaults`,
    );
  }
  return parseConfig(text, path);
}

/**
 * The tenantgate.yaml `tenantgate validate` reads without --config, as render and plan read DIR/tenantgate.yaml:
 * ./tenantgate.yaml (a GitOps repository's root, where pre-commit runs), else the one in the first
 * argument that is a directory holding one or a file next to one; undefined: the built-in defaults.
 * Without it a Project's spec.costBudget could not be priced offline (C1, docs/budgets.md#cost).
 */
export function discoverConfig(paths: readonly string[], cwd = process.cwd()): string | undefined {
  const here = join(cwd, 'tenantgate.yaml');
  if (existsSync(here)) return here;
  for (const path of paths) {
    if (!existsSync(path)) continue;
    const candidate = join(statSync(path).isDirectory() ? path : dirname(path), 'tenantgate.yaml');
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}
