/** Reads the configuration file from disk (the I/O edge of config.ts). */
import { readFile } from 'node:fs/promises';
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
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new ConfigError(`--config ${path}: cannot be read: ${(err as Error).message}`);
    if (options.optional) {
      options.log?.(`${path} does not exist: using the built-in configuration (--config-optional)`);
      return DEFAULT_CONFIG;
    }
    throw new ConfigError(`--config ${path}: no such file; mount the tenantgate-config ConfigMap there, or pass --config-optional to run with the built-in defaults`);
  }
  return parseConfig(text, path);
}
