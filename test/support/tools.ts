/** Tools the tests use that `make kustomize` builds into .cache/tools (the product finds them on PATH). */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './paths.js';

/** The newest kustomize under .cache/tools, or undefined. */
export function cachedKustomize(): string | undefined {
  const tools = join(REPO_ROOT, '.cache', 'tools');
  if (!existsSync(tools)) return undefined;
  for (const entry of readdirSync(tools).sort().reverse()) {
    const bin = join(tools, entry, 'kustomize');
    if (entry.startsWith('kustomize-') && existsSync(bin)) return bin;
  }
  return undefined;
}
