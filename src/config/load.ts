/** Reads the configuration file from disk (the I/O edge of config.ts). */
import { readFile } from 'node:fs/promises';
import { DEFAULT_CONFIG, parseConfig, type TenantgateConfig } from './config.js';

export async function loadConfig(path: string | undefined): Promise<TenantgateConfig> {
  if (!path) return DEFAULT_CONFIG;
  return parseConfig(await readFile(path, 'utf8'), path);
}
